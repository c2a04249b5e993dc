/**
 * Drift between the config and the stored credentials (docs/gateway-migration.md): the config says where each
 * API's credentials live (`routes:`), which gateways exist (`gateways:`) and what each usage plan is (a gateway's
 * plan options); a credential record says where its credential was put and with which plan definitions. Pure
 * functions over both — no store read, no cloud call: `credhook check-config`, `serve` (its start-up line and the
 * `credhook_credentials_drift` gauge) and `credhook apply --dry-run` count and list what differs.
 *
 * The kinds of drift ({@link DriftKind}):
 * - `moved`: an API of the credential is on another gateway than its route now names (or no route matches it);
 * - `gateway-missing`: the credential is bound on a gateway the config no longer has;
 * - `plans-changed`: a usage plan's definition on one of its gateways differs from the one the binding was made or
 *   last updated with (compared by fingerprint, {@link planFingerprint}). A binding without fingerprints (a record
 *   written before credhook kept them) is counted as `plansUnknown`, never as drift.
 */
import { createHash } from "node:crypto";
import type { CredentialRecord, GatewayBinding } from "./credential-record.js";
import type { GatewayApi, JsonValue } from "./provider.js";
import type { Gateway } from "./registry.js";
import type { Router } from "./routing.js";

/** The kinds of drift, in the order reports list them (see the module comment). */
export const DRIFT_KINDS = ["moved", "gateway-missing", "plans-changed"] as const;

/** One kind of drift: see the module comment. */
export type DriftKind = (typeof DRIFT_KINDS)[number];

/** What drift needs to know of the config: routes, gateway names and the plans' current fingerprints. */
export interface DriftTopology {
  /** The gateway the routes send `apiId` to, or undefined when no route matches. */
  resolve(apiId: string): string | undefined;
  /** Whether `gateway` is under `gateways:`. */
  configured(gateway: string): boolean;
  /** The fingerprint of plan `planId`'s definition on `gateway` now ({@link planFingerprint}); undefined: none to compare. */
  planFingerprint(gateway: string, planId: string): string | undefined;
}

/** An API whose route now names another gateway than the one its credential is on. */
export interface ApiMove {
  apiId: string;
  /** The gateway the credential holds the API on. */
  from: string;
  /** The gateway the routes now send it to; undefined: no route matches it any more. */
  to: string | undefined;
  /** The API's usage plans (the ones to carry over). */
  usagePlans: string[];
}

/** How one credential differs from the config ({@link credentialDrift}). */
export interface CredentialDrift {
  credentialId: string;
  appKey: string;
  /** Its kinds of drift, in {@link DRIFT_KINDS}' order; empty: it follows the config. */
  kinds: DriftKind[];
  /** Its APIs routed elsewhere. */
  moves: ApiMove[];
  /** The gateways it is bound on that the config does not have. */
  missingGateways: string[];
  /** The plans whose definition changed since its binding on that gateway was made or last updated. */
  changedPlans: Array<{ gateway: string; planId: string }>;
  /** True when a binding on a configured gateway has no fingerprints (written before credhook kept them): its plans' drift is unknown. */
  plansUnknown: boolean;
  /**
   * Its dual-homed bindings (`GatewayBinding.dualHomed`): gateways that still grant APIs `credhook apply` moved away,
   * until `credhook apply --prune`. Not drift (the operator keeps them on purpose while traffic switches): a "prune
   * pending" in `credhook apply --dry-run`, never counted as `moved` again.
   */
  dualHomed: Array<{ gateway: string; apiIds: string[] }>;
}

/** Counts over many credentials ({@link summarizeDrift}). */
export interface DriftSummary {
  /** Live records looked at (every status but `abandoned`). */
  live: number;
  /** Live records with each kind of drift (a record with two kinds counts in both). */
  counts: Record<DriftKind, number>;
  /** Live records whose plans' drift is unknown (no fingerprints). */
  plansUnknown: number;
  /** Each gateway the config does not have, with the number of live records still bound on it; empty when none. */
  stranded: Record<string, number>;
}

/** JSON with every object's keys sorted: one text per value, whatever order the YAML wrote the keys in. */
function canonicalJson(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * The fingerprint of a plan's definition: `sha256:` and the first 16 hex digits of the SHA-256 of its canonical
 * JSON (object keys sorted), so that the same definition written in another key order has the same fingerprint.
 */
export function planFingerprint(definition: JsonValue): string {
  return `sha256:${createHash("sha256").update(canonicalJson(definition), "utf8").digest("hex").slice(0, 16)}`;
}

/**
 * The fingerprints of the plans of `apis` on `gateway` now ({@link Provider.planDefinition}), by plan id, for a
 * binding made or updated with them; plans without a definition in the config are left out.
 * @returns undefined when none of them has a definition in the config (the binding then keeps none)
 */
export function planFingerprintsFor(
  gateway: Gateway | undefined,
  apis: readonly GatewayApi[],
): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  const define = gateway?.provider.planDefinition?.bind(gateway.provider);
  if (!define) return undefined;
  for (const planId of new Set(apis.flatMap((a) => a.usagePlans))) {
    const definition = define(planId);
    if (definition !== undefined) out[planId] = planFingerprint(definition);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The {@link DriftTopology} of the configured `gateways` and `router` (each plan's fingerprint computed once). */
export function driftTopology(gateways: ReadonlyMap<string, Gateway>, router: Pick<Router, "resolve">): DriftTopology {
  const fingerprints = new Map<string, string | undefined>();
  return {
    resolve: (apiId) => router.resolve(apiId),
    configured: (gateway) => gateways.has(gateway),
    planFingerprint(gateway, planId) {
      const key = `${gateway}\u0000${planId}`;
      if (!fingerprints.has(key)) {
        fingerprints.set(key, planFingerprintsFor(gateways.get(gateway), [{ id: "", usagePlans: [planId] }])?.[planId]);
      }
      return fingerprints.get(key);
    },
  };
}

/** The plans of `binding` whose definition differs now, and whether its fingerprints are unknown. */
function bindingPlans(
  topology: DriftTopology,
  rec: CredentialRecord,
  binding: GatewayBinding,
): { changed: string[]; unknown: boolean } {
  const plans = [...new Set(rec.apis.filter((a) => a.gateway === binding.gateway).flatMap((a) => a.usagePlans))];
  const kept = binding.planFingerprints;
  const current = plans.map((p) => ({ p, now: topology.planFingerprint(binding.gateway, p) }));
  if (!kept) return { changed: [], unknown: current.some((c) => c.now !== undefined) };
  // A plan with a definition now but none kept was defined outside the config then: changed, as any other.
  return { changed: current.filter((c) => c.now !== kept[c.p]).map((c) => c.p), unknown: false };
}

/**
 * How `rec` differs from the config `topology` describes (see the module comment). An `abandoned` record (a
 * create the portal never received) has no drift.
 */
export function credentialDrift(topology: DriftTopology, rec: CredentialRecord): CredentialDrift {
  const drift: CredentialDrift = {
    credentialId: rec.id,
    appKey: rec.appKey,
    kinds: [],
    moves: [],
    missingGateways: [],
    changedPlans: [],
    plansUnknown: false,
    dualHomed: [],
  };
  if (rec.status === "abandoned") return drift;
  for (const b of rec.bindings)
    if (b.dualHomed) drift.dualHomed.push({ gateway: b.gateway, apiIds: [...b.dualHomed.apiIds] });
  for (const api of rec.apis) {
    const to = topology.resolve(api.id);
    if (to !== api.gateway) drift.moves.push({ apiId: api.id, from: api.gateway, to, usagePlans: api.usagePlans });
  }
  for (const b of rec.bindings) {
    if (!topology.configured(b.gateway)) {
      drift.missingGateways.push(b.gateway);
      continue;
    }
    const plans = bindingPlans(topology, rec, b);
    drift.plansUnknown ||= plans.unknown;
    for (const planId of plans.changed) drift.changedPlans.push({ gateway: b.gateway, planId });
  }
  if (drift.moves.length > 0) drift.kinds.push("moved");
  if (drift.missingGateways.length > 0) drift.kinds.push("gateway-missing");
  if (drift.changedPlans.length > 0) drift.kinds.push("plans-changed");
  return drift;
}

/** An empty {@link DriftSummary}, to add records to with {@link addToSummary}. */
export function emptyDriftSummary(): DriftSummary {
  return { live: 0, counts: { moved: 0, "gateway-missing": 0, "plans-changed": 0 }, plansUnknown: 0, stranded: {} };
}

/** Adds one record's drift to `summary` (in place); an `abandoned` record is not live and adds nothing. */
export function addToSummary(summary: DriftSummary, rec: CredentialRecord, drift: CredentialDrift): void {
  if (rec.status === "abandoned") return;
  summary.live += 1;
  for (const kind of drift.kinds) summary.counts[kind] += 1;
  if (drift.plansUnknown) summary.plansUnknown += 1;
  for (const g of drift.missingGateways) summary.stranded[g] = (summary.stranded[g] ?? 0) + 1;
}

/**
 * The drift of every record of `records`, counted ({@link credentialDrift}, {@link addToSummary}).
 * @param records an array, or a paged walk of the store (`walkPages`): one page is held at a time
 */
export async function summarizeDrift(
  topology: DriftTopology,
  records: Iterable<CredentialRecord> | AsyncIterable<CredentialRecord>,
): Promise<DriftSummary> {
  const summary = emptyDriftSummary();
  for await (const rec of records) addToSummary(summary, rec, credentialDrift(topology, rec));
  return summary;
}

/**
 * The problems of a config that dropped gateways which still hold live credentials: one message per gateway,
 * naming the count and the way out. `check-config` and `serve` refuse such a config.
 * @returns empty when no live credential is bound on a gateway the config does not have
 */
export function strandedProblems(summary: DriftSummary): string[] {
  return Object.entries(summary.stranded).map(
    ([gateway, n]) =>
      `gateways.${gateway}: the config no longer has gateway '${gateway}', but ${n} live credential${n === 1 ? " is" : "s are"} still on it (a portal update or revoke of ${n === 1 ? "it" : "them"} could not reach it): put it back under gateways: with retired: true (no new credentials; updates and revokes still reach it) until none is left on it — \`credhook apply --dry-run\` lists ${n === 1 ? "it" : "them"}`,
  );
}

/** One line of counts: `moved=2 gateway-missing=0 plans-changed=1 (plans unknown: 3) of 120 live credentials`. */
export function describeDriftCounts(summary: DriftSummary): string {
  const counts = DRIFT_KINDS.map((k) => `${k}=${summary.counts[k]}`).join(" ");
  const unknown = summary.plansUnknown > 0 ? ` (plans unknown: ${summary.plansUnknown}, made before fingerprints)` : "";
  return `${counts}${unknown} of ${summary.live} live credential${summary.live === 1 ? "" : "s"}`;
}
