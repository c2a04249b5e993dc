/**
 * Credential expiry (docs/expiry.md): a maximum age per gateway, and per usage plan of a gateway, with a warning
 * before it and an action at it — `notify` (the events only), `disable` (off on every gateway, record kept) or
 * `revoke` (off every gateway, record deleted).
 *
 * - {@link resolveExpiryPolicies} turns the config's `gateways.<name>.expiry` blocks into policies (defaults
 *   applied, problems named by YAML path);
 * - {@link credentialExpiry} decides one credential's expiry from its bindings and its APIs' plans (pure);
 * - {@link expiryPass} is `credhook serve`'s periodic pass: `credential.expiring` once at the warning time,
 *   `credential.expired` once at the expiry, then the action — each mark written under the app's lock with its
 *   event, so several instances on one PostgreSQL store never write an event twice.
 *
 * Age counts from the record's `createdAt`: neither an update nor a secret rotation (a replayed create of a
 * credential whose secret cannot be read back) resets it — the portal could otherwise extend a credential forever
 * by replaying its create. To renew, revoke and create anew.
 */
import type { GatewayConfig } from "../config.js";
import { isCredhookError, isStoreFailure, PolicyViolation } from "../errors.js";
import type { CredentialRecord, ExpiryInfo } from "../store.js";
import type { OrchestrationContext } from "./context.js";
import { setCredentialEnabled } from "./disable.js";
import { revoke, revokeRequestFor } from "./revoke.js";

/** What happens to a credential at its expiry, weakest first: `notify` (events only), `disable`, `revoke`. */
export const EXPIRY_ACTIONS = ["notify", "disable", "revoke"] as const;

/** One of {@link EXPIRY_ACTIONS}. */
export type ExpiryAction = (typeof EXPIRY_ACTIONS)[number];

/** `gateways.<name>.expiry.plans.<plan>` as written: a usage plan's own maximum age. */
export interface PlanExpiryConfig {
  /** Maximum age of a credential whose APIs use this plan on this gateway, days (from its creation). 1 to 36500. */
  maxAgeDays: number;
  /** Days before the expiry that `credential.expiring` is written; 0: no warning. Below maxAgeDays. @default 7, or maxAgeDays − 1 when that is less */
  warnDays?: number;
  /** What happens at the expiry. @default the gateway block's `action` */
  action?: ExpiryAction;
}

/** `gateways.<name>.expiry` as written: the gateway's maximum age, and its usage plans' own ones. */
export interface GatewayExpiryConfig {
  /** Maximum age of every credential on this gateway, days (from its creation). 1 to 36500. Absent: only the plans listed expire. */
  maxAgeDays?: number;
  /** Days before the expiry that `credential.expiring` is written; 0: no warning. Below maxAgeDays. @default 7, or maxAgeDays − 1 when that is less */
  warnDays?: number;
  /** What happens at the expiry. @default "notify" */
  action?: ExpiryAction;
  /** Usage plans (their ids on this gateway, as the portal's requests name them) with their own maximum age. */
  plans?: Record<string, PlanExpiryConfig>;
}

/** One resolved expiry policy: every default applied. */
export interface ExpiryPolicy {
  /** The YAML path of the block it comes from (`gateways.aws-us.expiry`, `gateways.aws-us.expiry.plans.gold`). */
  path: string;
  /** Maximum age, days. */
  maxAgeDays: number;
  /** Warning before the expiry, days (0: none); less than maxAgeDays. */
  warnDays: number;
  action: ExpiryAction;
}

/** A gateway's resolved policies: its own (when it sets `maxAgeDays`) and its plans', by plan id. */
export interface GatewayExpiryPolicies {
  policy?: ExpiryPolicy;
  plans: Record<string, ExpiryPolicy>;
}

/** The resolved policies of every gateway that has any, by gateway name ({@link resolveExpiryPolicies}). */
export type ExpiryPolicies = Record<string, GatewayExpiryPolicies>;

/** The default warning, days: 7, or one day less than the maximum age when that is shorter. */
const defaultWarnDays = (maxAgeDays: number) => Math.min(7, maxAgeDays - 1);

/**
 * The expiry policies of the configured gateways, defaults applied: `warnDays` 7 (or `maxAgeDays` − 1 when less),
 * `action` `notify`; a plan's `action` defaults to its gateway block's. The schema has checked the shapes and ranges;
 * this checks what a schema cannot: `warnDays` below `maxAgeDays`, and a block that sets neither a maximum age nor a plan.
 * @returns the policies by gateway name (gateways without an `expiry` block are absent) and the problems, each
 * starting with its YAML path (empty: valid)
 */
export function resolveExpiryPolicies(gateways: Record<string, Pick<GatewayConfig, "expiry">>): {
  policies: ExpiryPolicies;
  problems: string[];
} {
  const policies: ExpiryPolicies = {};
  const problems: string[] = [];
  const resolve = (path: string, maxAgeDays: number, warnDays: number | undefined, action: ExpiryAction) => {
    const warn = warnDays ?? defaultWarnDays(maxAgeDays);
    if (warn >= maxAgeDays)
      problems.push(
        `${path}.warnDays (${warn}) must be less than ${path}.maxAgeDays (${maxAgeDays}): the warning comes before the expiry`,
      );
    return { path, maxAgeDays, warnDays: warn, action };
  };
  for (const [name, gw] of Object.entries(gateways)) {
    const block = gw.expiry;
    if (!block) continue;
    const path = `gateways.${name}.expiry`;
    const action = block.action ?? "notify";
    const plans = Object.entries(block.plans ?? {});
    if (block.maxAgeDays === undefined && plans.length === 0) {
      problems.push(`${path} must set maxAgeDays, or plans with their own maxAgeDays (without either nothing expires)`);
      continue;
    }
    if (block.maxAgeDays === undefined && block.warnDays !== undefined)
      problems.push(`${path}.warnDays is set without ${path}.maxAgeDays: give it to each plan instead`);
    policies[name] = {
      ...(block.maxAgeDays !== undefined ? { policy: resolve(path, block.maxAgeDays, block.warnDays, action) } : {}),
      plans: Object.fromEntries(
        plans.map(([plan, p]) => [
          plan,
          resolve(`${path}.plans.${plan}`, p.maxAgeDays, p.warnDays, p.action ?? action),
        ]),
      ),
    };
  }
  return { policies, problems };
}

/** One credential's expiry, as {@link credentialExpiry} decides it. */
export interface CredentialExpiry {
  /** ISO 8601 time it expires: `createdAt` + the policy's `maxAgeDays`. */
  expiresAt: string;
  /** ISO 8601 time `credential.expiring` is due: `expiresAt` − the policy's `warnDays` (equal to `expiresAt` with no warning). */
  warnAt: string;
  /** The policy that decided it (the earliest expiry; of equal ones, the strongest action). */
  policy: ExpiryPolicy;
}

const DAY_MS = 86_400_000;

/**
 * The expiry of `rec`: the earliest among the policies of the gateways it is bound to (or routed to, while a
 * create is under way) and of the usage plans its APIs use there; of policies that expire at the same time, the
 * strongest action wins (revoke > disable > notify), then the longest warning.
 * @returns undefined when no policy applies (the default: credentials do not expire)
 */
export function credentialExpiry(
  rec: Pick<CredentialRecord, "createdAt" | "apis" | "bindings">,
  policies: ExpiryPolicies,
): CredentialExpiry | undefined {
  const gateways = new Set([...rec.bindings.map((b) => b.gateway), ...rec.apis.map((a) => a.gateway)]);
  const candidates: ExpiryPolicy[] = [];
  for (const gateway of gateways) {
    const gw = policies[gateway];
    if (!gw) continue;
    if (gw.policy) candidates.push(gw.policy);
    for (const plan of new Set(rec.apis.filter((a) => a.gateway === gateway).flatMap((a) => a.usagePlans))) {
      const p = gw.plans[plan];
      if (p) candidates.push(p);
    }
  }
  const rank = (p: ExpiryPolicy) => EXPIRY_ACTIONS.indexOf(p.action);
  const best = candidates.sort(
    (a, b) => a.maxAgeDays - b.maxAgeDays || rank(b) - rank(a) || b.warnDays - a.warnDays,
  )[0];
  if (!best) return undefined;
  const expiresMs = Date.parse(rec.createdAt) + best.maxAgeDays * DAY_MS;
  return {
    expiresAt: new Date(expiresMs).toISOString(),
    warnAt: new Date(expiresMs - best.warnDays * DAY_MS).toISOString(),
    policy: best,
  };
}

/**
 * Where a credential is in its life at `now` (ISO 8601), from its record's expiry mark:
 * `expired` at or after `expiresAt`, `expiring` from `warnAt`, else `valid`; undefined without a mark.
 */
export function expiryState(
  expiry: Pick<ExpiryInfo, "expiresAt" | "warnAt"> | undefined,
  now: string,
): "valid" | "expiring" | "expired" | undefined {
  if (!expiry) return undefined;
  if (now >= expiry.expiresAt) return "expired";
  return now >= expiry.warnAt ? "expiring" : "valid";
}

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

/**
 * One expiry pass over the store's active records (`store.list`: one read of every record a pass, as `credhook
 * reconcile` does; the pass runs hourly by default). One instance at a time (the store's lock `credhook:expiry`);
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
    for (const listed of await ctx.store.list()) {
      if (listed.status !== "active") continue;
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
