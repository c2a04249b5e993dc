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
import { credentialExpiry, type ExpiryPolicies } from "../expiry-policy.js";
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

/**
 * One expiry pass over the store's active records, oldest first, a page of {@link EXPIRY_PAGE_SIZE} at a time
 * (`store.listPage` with `status: "active"`: the state's index by creation time; one page in memory, never every
 * record; the pass runs hourly by default). One instance at a time (the store's lock `credhook:expiry`);
 * each record under its app's lock, re-read: the expiry mark is brought to the config (no event), `credential.expiring`
 * is written once from the warning time (not when the credential is first seen already expired), `credential.expired`
 * once at the expiry, then the action runs — `disable` (reason `expired`; a gateway that cannot disable: revoke, logged
 * at warn) or `revoke` (reason `expired`) — and once it completed the mark's `actedAt` is written. A failed action
 * is retried by the next pass; an action completed is not repeated (an operator's `credhook enable` of an expired,
 * disabled credential stands). Reads the orchestrator's clock only.
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
    const pages = (after: string | undefined) =>
      ctx.store.listPage({ status: "active", limit: EXPIRY_PAGE_SIZE, ...(after ? { after } : {}) });
    for await (const listed of walkPages(pages)) {
      if (!credentialExpiry(listed, policies) && !listed.expiry) continue;
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

/**
 * Under the app's lock: re-reads the record, brings its expiry mark to the policies, writes `credential.expiring`
 * and `credential.expired` when due (each once), and counts its state.
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
  const decided = credentialExpiry(rec, policies);
  const now = ctx.nowIso();
  if (!decided) {
    // The policy was removed from the config: a credential not yet expired loses its mark; an expired one keeps it.
    if (rec.expiry && !rec.expiry.expiredAt) {
      delete rec.expiry;
      rec.updatedAt = now;
      await ctx.store.save(rec);
    }
    return undefined;
  }
  const { expiresAt, warnAt, policy } = decided;
  const before = JSON.stringify(rec.expiry ?? null);
  const mark: ExpiryInfo = rec.expiry?.expiredAt
    ? rec.expiry // expired: kept as it was decided, whatever the config says now
    : { ...rec.expiry, expiresAt, warnAt, action: policy.action, policy: policy.path };
  rec.expiry = mark;
  const data = () => ({
    expiry: {
      expiresAt: mark.expiresAt,
      action: mark.action,
      policy: mark.policy,
      ...(policy.path === mark.policy ? { maxAgeDays: policy.maxAgeDays, warnDays: policy.warnDays } : {}),
    },
  });
  /** Writes the record with the event of `reason` (its mark already set), counts it and logs it. */
  const announce = async (reason: "expiring" | "expired") => {
    rec.updatedAt = now;
    await ctx.store.save(rec, [ctx.event(`credential.${reason}`, rec, { reason, ...data() })]);
    result[reason === "expired" ? "expired" : "warned"] += 1;
    ctx.logger[reason === "expired" ? "warn" : "info"](
      { credentialId: rec.id, appKey: rec.appKey, expiresAt: mark.expiresAt, action: mark.action, policy: mark.policy },
      `credential ${reason}`,
    );
  };
  if (!mark.expiredAt && now >= mark.expiresAt) {
    mark.expiredAt = now;
    if (mark.action === "notify") mark.actedAt = now;
    await announce("expired");
  } else if (!mark.expiredAt && !mark.warnedAt && mark.warnAt < mark.expiresAt && now >= mark.warnAt) {
    mark.warnedAt = now;
    await announce("expiring");
  } else if (JSON.stringify(mark) !== before) {
    rec.updatedAt = now;
    await ctx.store.save(rec); // the config changed the credential's expiry: no event until it is due
  }
  if (mark.expiredAt) result.expiredLive += 1;
  else if (now >= mark.warnAt) result.expiring += 1;
  return mark.expiredAt && !mark.actedAt ? rec : undefined;
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
