/**
 * The expiry pass (docs/expiry.md): acts on the expiry policies of `expiry-policy.ts` (a maximum age per gateway
 * and per usage plan, a warning before it, an action at it).
 *
 * - {@link expiryPass} is `credhook serve`'s periodic pass: `credential.expiring` once at the warning time,
 *   `credential.expired` once at the expiry, then the action — each mark written under the app's lock with its
 *   event, so several instances on one PostgreSQL store never write an event twice.
 *
 * Age counts from the record's `createdAt`: neither an update nor a secret rotation (a replayed create of a
 * credential whose secret cannot be read back) resets it — the portal could otherwise extend a credential forever
 * by replaying its create. To renew, revoke and create anew.
 */
import { isCredhookError, isStoreFailure, PolicyViolation } from "../errors.js";
import type { CredentialRecord, ExpiryInfo } from "../credential-record.js";
import { credentialExpiry, type ExpiryPolicies, type ExpiryPolicy } from "../expiry-policy.js";
import { walkPages } from "../store-pages.js";
import type { OrchestrationContext } from "./context.js";
import { setCredentialEnabled } from "./disable.js";
import { revoke, revokeRequestFor } from "./revoke.js";

/** What one {@link expiryPass} did, and how many credentials are expiring or expired after it. */
export interface ExpiryPassResult {
  /** False when another instance's pass held the turn (nothing was done). */
  ran: boolean;
  /** `credential.expiring` events written. */
  warned: number;
  /** `credential.expired` events written. */
  expired: number;
  /** Actions completed (`disable` or `revoke`; a `notify` needs none). */
  acted: number;
  /** Actions that failed (logged; the next pass retries them). */
  failed: number;
  /** Live credentials past their warning time, not yet expired. */
  expiring: number;
  /** Credentials past their expiry still in the store (notified, disabled, or an action that failed). */
  expiredLive: number;
}

/** Records per page of the expiry pass's walk. */
export const EXPIRY_PAGE_SIZE = 500;

const DAY_MS = 86_400_000;

/**
 * The shortest age, ms, at which any of `policies` warns (`maxAgeDays − warnDays`, or `maxAgeDays` with no warning):
 * a credential younger than that has nothing due. Undefined without a policy.
 */
export function shortestWarningAgeMs(policies: ExpiryPolicies): number | undefined {
  const ages = Object.values(policies).flatMap((gw) =>
    [...(gw.policy ? [gw.policy] : []), ...Object.values(gw.plans)].map((p) => (p.maxAgeDays - p.warnDays) * DAY_MS),
  );
  return ages.length > 0 ? Math.min(...ages) : undefined;
}

/**
 * One expiry pass over the store's active records old enough for something to be due, oldest first, a page of
 * {@link EXPIRY_PAGE_SIZE} at a time: `store.listPage` with `status: "active"` and `createdBefore` the pass's time less
 * the policies' {@link shortestWarningAgeMs} (the state's index by creation time, a range that ends at the first
 * younger record; one page in memory, never every record; the pass runs hourly by default). One instance at a time
 * (the store's lock `credhook:expiry`). Each record is judged from its page first ({@link expiryStep}); only one with a
 * write or an action due is taken under its app's lock and read again (judged again from that read): the expiry mark
 * is brought to the config (no event), `credential.expiring` is written once from the warning time (not when the
 * credential is first seen already expired), `credential.expired` once at the expiry, then the action runs —
 * `disable` (reason `expired`; a gateway that cannot disable: revoke, logged at warn) or `revoke` (reason `expired`)
 * — and once it completed the mark's `actedAt` is written. A failed action is retried by the next pass; an action
 * completed is not repeated (an operator's `credhook enable` of an expired, disabled credential stands). Reads the
 * orchestrator's clock only.
 * @throws StoreUnavailable | LockLost (503): the store failed or a lock was lost — the pass stops there, the next one
 * goes on; a gateway's failure is logged and counted, not thrown
 */
export async function expiryPass(ctx: OrchestrationContext, policies: ExpiryPolicies): Promise<ExpiryPassResult> {
  const turn = await ctx.lock.tryRun("credhook:expiry", async () => {
    const result: ExpiryPassResult = {
      ran: true,
      warned: 0,
      expired: 0,
      acted: 0,
      failed: 0,
      expiring: 0,
      expiredLive: 0,
    };
    const now = ctx.nowIso();
    const age = shortestWarningAgeMs(policies);
    // Without a policy every record is walked: a mark not yet expired is removed.
    // Due at `now` ⇔ createdAt + age <= now; `createdBefore` is strict, hence the millisecond.
    const createdBefore = age === undefined ? undefined : new Date(Date.parse(now) - age + 1).toISOString();
    const pages = (after: string | undefined) =>
      ctx.store.listPage({
        status: "active",
        limit: EXPIRY_PAGE_SIZE,
        ...(createdBefore !== undefined ? { createdBefore } : {}),
        ...(after ? { after } : {}),
      });
    for await (const listed of walkPages(pages)) {
      const step = expiryStep(listed, policies, now);
      if (!step.write && !step.due) {
        count(step.mark, now, result);
        continue;
      }
      try {
        const due = await ctx.lock.run(listed.appKey, () => markExpiry(ctx, listed.id, policies, result));
        if (!due) continue;
        await act(ctx, due);
        result.acted += 1;
      } catch (err) {
        if (isStoreFailure(err)) throw err; // the store is away (or the lock lost): the next pass goes on
        result.failed += 1;
        ctx.logger.error(
          { credentialId: listed.id, appKey: listed.appKey, err: isCredhookError(err) ? err.message : String(err) },
          "expiry pass: a credential's expiry could not be handled; the next pass retries",
        );
      }
    }
    return result;
  });
  return turn.ran
    ? turn.value
    : { ran: false, warned: 0, expired: 0, acted: 0, failed: 0, expiring: 0, expiredLive: 0 };
}

/** What the pass does with one record at `now` ({@link expiryStep}). */
interface ExpiryStep {
  /** The record's mark after the step; undefined: none, removed, or kept with no policy left (then not counted). */
  mark: ExpiryInfo | undefined;
  /** The policy that decides the record's expiry now, when one does. */
  policy?: ExpiryPolicy;
  /** The write due: the event of `expired` or `expiring` with the mark, the mark alone, its removal; none. */
  write?: "expired" | "expiring" | "mark" | "unmark";
  /** Its action is due (expired, an action other than notify, not yet completed). */
  due: boolean;
}

/**
 * What the pass does with `rec` at `now` (ISO 8601), without writing: its mark brought to the policies (an expired
 * mark is kept as it was decided; without a policy, a mark not yet expired is removed), and the write and action due.
 * A pure function of the record: judged on a page's copy first, and again on the record read under the app's lock.
 */
function expiryStep(rec: CredentialRecord, policies: ExpiryPolicies, now: string): ExpiryStep {
  const decided = credentialExpiry(rec, policies);
  if (!decided) {
    // An expired mark is kept (written by no one), neither counted nor acted on.
    const unmark = rec.expiry !== undefined && !rec.expiry.expiredAt;
    return { mark: undefined, ...(unmark ? { write: "unmark" } : {}), due: false };
  }
  const { expiresAt, warnAt, policy } = decided;
  const mark: ExpiryInfo = rec.expiry?.expiredAt
    ? { ...rec.expiry } // expired: kept as it was decided, whatever the config says now
    : { ...rec.expiry, expiresAt, warnAt, action: policy.action, policy: policy.path };
  let write: ExpiryStep["write"];
  if (!mark.expiredAt && now >= mark.expiresAt) {
    mark.expiredAt = now;
    if (mark.action === "notify") mark.actedAt = now;
    write = "expired";
  } else if (!mark.expiredAt && !mark.warnedAt && mark.warnAt < mark.expiresAt && now >= mark.warnAt) {
    mark.warnedAt = now;
    write = "expiring";
  } else if (JSON.stringify(mark) !== JSON.stringify(rec.expiry ?? null)) {
    write = "mark"; // the config changed the credential's expiry: no event until it is due
  }
  return { mark, policy, ...(write ? { write } : {}), due: !!mark.expiredAt && !mark.actedAt };
}

/** Counts a mark's state at `now` into the pass's gauges: expired and still in the store, or past its warning time. */
function count(mark: ExpiryInfo | undefined, now: string, result: ExpiryPassResult): void {
  if (!mark) return;
  if (mark.expiredAt) result.expiredLive += 1;
  else if (now >= mark.warnAt) result.expiring += 1;
}

/**
 * Under the app's lock: re-reads the record, brings its expiry mark to the policies, writes `credential.expiring`
 * and `credential.expired` when due (each once), and counts its state ({@link expiryStep} on the read).
 * @returns the record when its action is due (expired, an action other than notify, not yet completed)
 */
async function markExpiry(
  ctx: OrchestrationContext,
  id: string,
  policies: ExpiryPolicies,
  result: ExpiryPassResult,
): Promise<CredentialRecord | undefined> {
  const rec = await ctx.store.get(id);
  if (!rec || rec.status !== "active") return undefined;
  const now = ctx.nowIso();
  const { mark, policy, write, due } = expiryStep(rec, policies, now);
  if (write) {
    rec.updatedAt = now;
    if (mark) rec.expiry = mark;
    else delete rec.expiry;
  }
  if (write === "expired" || write === "expiring") {
    const m = mark!;
    const data = {
      expiry: {
        expiresAt: m.expiresAt,
        action: m.action,
        policy: m.policy,
        ...(policy?.path === m.policy ? { maxAgeDays: policy.maxAgeDays, warnDays: policy.warnDays } : {}),
      },
    };
    await ctx.store.save(rec, [ctx.event(`credential.${write}`, rec, { reason: write, ...data })]);
    result[write === "expired" ? "expired" : "warned"] += 1;
    ctx.logger[write === "expired" ? "warn" : "info"](
      { credentialId: rec.id, appKey: rec.appKey, expiresAt: m.expiresAt, action: m.action, policy: m.policy },
      `credential ${write}`,
    );
  } else if (write) {
    await ctx.store.save(rec);
  }
  count(mark, now, result);
  return due ? rec : undefined;
}

/**
 * The expired credential's action, outside its app's lock (disable and revoke take it themselves), then its mark's
 * `actedAt` under the lock — unless the record is gone (revoked).
 * @throws the action's error (the next pass retries)
 */
async function act(ctx: OrchestrationContext, rec: CredentialRecord): Promise<void> {
  const reason = "expired";
  const revokeIt = () => revoke(ctx, revokeRequestFor(rec), { reason });
  if (rec.expiry!.action === "revoke") {
    await revokeIt();
    return;
  }
  try {
    await setCredentialEnabled(ctx, rec.id, false, { reason });
  } catch (err) {
    if (!(err instanceof PolicyViolation)) throw err;
    ctx.logger.warn(
      { credentialId: rec.id, appKey: rec.appKey, err: err.message },
      "expired credential: a gateway cannot disable it, so it is revoked instead",
    );
    await revokeIt();
    return;
  }
  await ctx.lock.run(rec.appKey, async () => {
    const fresh = await ctx.store.get(rec.id);
    if (!fresh?.expiry || fresh.expiry.actedAt) return;
    fresh.expiry.actedAt = ctx.nowIso();
    fresh.updatedAt = fresh.expiry.actedAt;
    await ctx.store.save(fresh);
  });
}
