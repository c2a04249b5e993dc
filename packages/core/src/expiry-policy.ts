/**
 * Credential expiry policies (docs/expiry.md): a maximum age per gateway, and per usage plan of a gateway, with a
 * warning before it and an action at it — `notify` (the events only), `disable` (off on every gateway, record kept)
 * or `revoke` (off every gateway, record deleted). Pure: what the config says and what it means for one credential.
 *
 * - {@link resolveExpiryPolicies} turns the config's `gateways.<name>.expiry` blocks into policies (defaults
 *   applied, problems named by YAML path): the config's check (`config.ts`) and the server use it;
 * - {@link credentialExpiry} decides one credential's expiry from its bindings and its APIs' plans;
 * - {@link expiryState} says where a credential is in its life from its record's expiry mark.
 *
 * The expiry pass that acts on them is `orchestration/expiry.ts`. Age counts from the record's `createdAt`.
 */
import type { CredentialRecord, ExpiryInfo } from "./credential-record.js";

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
export function resolveExpiryPolicies(gateways: Record<string, { expiry?: GatewayExpiryConfig }>): {
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
