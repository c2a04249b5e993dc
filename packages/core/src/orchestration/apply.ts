/**
 * `credhook apply` (docs/gateway-migration.md): what bringing the stored credentials to the config takes, per
 * credential — the APIs to move to the gateway their route now names, the plans whose definition changed, the
 * gateways the config lacks — whether it can be done without a new key, the provider calls it needs, and how long the
 * gateways' declared write rates let it take ({@link planApply}, pure); and the in-place update of a credential's
 * changed plans (`Orchestrator.applyPlanChanges`), through the portal's own update path (the app's lock, the journal, the
 * fencing, the rollback and the `credential.updated` event).
 */
import type { UpdateCredentialsRequest } from "../contract.js";
import { type ApiMove, credentialDrift, type DriftTopology } from "../drift.js";
import type { AppIdentity } from "../provider.js";
import type { CredentialRecord } from "../credential-record.js";
import type { GatewayTopology } from "./context.js";
import { revokeRequestFor } from "./revoke.js";

/** The provider operations {@link planApply} counts. */
export type ApplyOperation = "readSecret" | "create" | "update" | "revoke";

/** What {@link planApply} says of one credential that differs from the config. */
export interface ApplyEntry {
  credentialId: string;
  credentialType: CredentialRecord["credentialType"];
  /** The id the portal holds (apiKeyId / clientId). */
  publicId: string;
  app: AppIdentity;
  /** Its APIs routed elsewhere: each to be created on `to` with the same key value and its plans. */
  moves: ApiMove[];
  /** The plans whose definition changed, per gateway: updated in place. */
  changedPlans: Array<{ gateway: string; planId: string }>;
  /** Gateways it is bound on that the config lacks (check-config and serve refuse such a config). */
  missingGateways: string[];
  /**
   * Its dual-homed bindings, moved by an earlier `credhook apply` and kept on the gateway they left until traffic has
   * switched: `--prune` removes these APIs there (the credential itself where nothing else of it is left there).
   */
  prunePending: Array<{ gateway: string; apiIds: string[] }>;
  /**
   * Why its moves cannot be carried out without a new key (the portal's revoke and create): its value cannot be read
   * back from any of its gateways (the embedded provider keeps only a digest), it is a client secret (no gateway
   * imports one), the target generates its own values, is retired, or no route matches the API. Undefined: it can move.
   */
  cannotMove?: string;
  /** The provider calls it needs, by gateway and operation (a move: a read where the value is, a create where it goes, with `prune` a revoke where it leaves). */
  calls: Array<{ gateway: string; operation: ApplyOperation }>;
}

/** The calls on one gateway and how long its declared write rate lets them take. */
export interface GatewayEstimate {
  gateway: string;
  /** Provider calls on it, by operation. */
  calls: Partial<Record<ApplyOperation, number>>;
  /** Its provider's declared write rate (`ProviderCapabilities.writesPerSecond`); undefined: none declared. */
  writesPerSecond?: number;
  /** The least time its writes (create, update, revoke) take at that rate, seconds; undefined without a rate. */
  floorS?: number;
}

/** What {@link planApply} returns. */
export interface ApplyPlan {
  /** One entry per live credential that differs from the config, oldest first. */
  entries: ApplyEntry[];
  /** Live credentials looked at. */
  live: number;
  counts: {
    /** Credentials with an API to move that can move. */
    movable: number;
    /** Credentials with an API to move that cannot without a new key. */
    notMovable: number;
    /** Credentials whose plans changed (updated in place). */
    plansChanged: number;
    /** Credentials bound on a gateway the config lacks. */
    gatewayMissing: number;
    /** Credentials moved and still dual-homed: `--prune` removes them from the gateways they left. */
    prunePending: number;
  };
  /** The calls and the time floor per gateway; the run's floor is the largest (gateways work in parallel). */
  estimate: GatewayEstimate[];
  /** The largest {@link GatewayEstimate.floorS}, seconds; undefined when no gateway with calls declares a rate. */
  floorS?: number;
}

/** What planning needs beyond drift: the gateways' capabilities and retirement. */
export type ApplyTopology = DriftTopology & Pick<GatewayTopology, "describe">;

/** Why `rec`'s moves cannot be carried out without a new key, or undefined when they can. */
export function cannotMove(topology: ApplyTopology, rec: CredentialRecord, moves: ApiMove[]): string | undefined {
  const unrouted = moves.filter((m) => m.to === undefined).map((m) => m.apiId);
  if (unrouted.length > 0) return `no route matches ${unrouted.map((a) => `'${a}'`).join(", ")}`;
  if (rec.credentialType === "CLIENT_CREDENTIALS")
    return "a client secret: no gateway imports one, moving it needs a new secret";
  const reader = rec.bindings.find(
    (b) => topology.configured(b.gateway) && topology.describe(b.gateway).capabilities.readsBackSecret,
  );
  if (!reader) {
    return `its key value cannot be read back from ${rec.bindings.map((b) => `'${b.gateway}'`).join(", ")} (the embedded provider keeps only a digest): moving it needs a new key`;
  }
  for (const to of new Set(moves.map((m) => m.to!))) {
    const target = topology.describe(to);
    if (target.retired) return `gateway '${to}' is retired`;
    if (!target.capabilities.importsApiKeyValue)
      return `gateway '${to}' generates its own key values: it cannot import this one`;
  }
  return undefined;
}

/** The provider calls of one credential's entry (see {@link ApplyEntry.calls}). */
function callsOf(
  topology: ApplyTopology,
  rec: CredentialRecord,
  entry: Omit<ApplyEntry, "calls">,
  prune: boolean,
): ApplyEntry["calls"] {
  const calls: ApplyEntry["calls"] = [];
  const bound = new Set(rec.bindings.map((b) => b.gateway));
  if (entry.moves.length > 0 && !entry.cannotMove) {
    const targets = [...new Set(entry.moves.map((m) => m.to!))];
    const creates = targets.filter((g) => !bound.has(g));
    const reader = rec.bindings.find(
      (b) => topology.configured(b.gateway) && topology.describe(b.gateway).capabilities.readsBackSecret,
    )!;
    if (creates.length > 0) calls.push({ gateway: reader.gateway, operation: "readSecret" });
    for (const g of creates) calls.push({ gateway: g, operation: "create" });
    for (const g of targets.filter((t) => bound.has(t))) calls.push({ gateway: g, operation: "update" });
    if (prune) {
      const staying = new Set(rec.apis.filter((a) => !entry.moves.some((m) => m.apiId === a.id)).map((a) => a.gateway));
      for (const from of new Set(entry.moves.map((m) => m.from)))
        if (!staying.has(from) && topology.configured(from)) calls.push({ gateway: from, operation: "revoke" });
    }
  }
  for (const g of new Set(entry.changedPlans.map((c) => c.gateway))) calls.push({ gateway: g, operation: "update" });
  if (prune) {
    // A dual-homed binding: revoked where nothing else of the credential is left, else updated without the moved APIs.
    for (const { gateway } of entry.prunePending) {
      const alsoRouted = rec.apis.some((a) => a.gateway === gateway);
      if (topology.configured(gateway)) calls.push({ gateway, operation: alsoRouted ? "update" : "revoke" });
    }
  }
  return calls;
}

/** The calls of every entry per gateway, with each gateway's time floor at its declared write rate. */
function estimateOf(topology: ApplyTopology, entries: ApplyEntry[]): GatewayEstimate[] {
  const by = new Map<string, GatewayEstimate>();
  for (const { gateway, operation } of entries.flatMap((e) => e.calls)) {
    let e = by.get(gateway);
    if (!e) {
      const rate = topology.configured(gateway) ? topology.describe(gateway).capabilities.writesPerSecond : undefined;
      e = { gateway, calls: {}, ...(rate ? { writesPerSecond: rate } : {}) };
      by.set(gateway, e);
    }
    e.calls[operation] = (e.calls[operation] ?? 0) + 1;
  }
  for (const e of by.values()) {
    const writes = (e.calls.create ?? 0) + (e.calls.update ?? 0) + (e.calls.revoke ?? 0);
    if (e.writesPerSecond) e.floorS = writes / e.writesPerSecond;
  }
  return [...by.values()].sort((a, b) => a.gateway.localeCompare(b.gateway));
}

/**
 * What `rec` needs to follow the config ({@link ApplyEntry}); undefined when it follows it already (no drift, nothing
 * dual-homed) or is not live. Pure.
 * @param prune count the revoke of each moved credential on the gateway it leaves, and of each dual-homed binding
 */
export function applyEntryOf(topology: ApplyTopology, rec: CredentialRecord, prune: boolean): ApplyEntry | undefined {
  if (rec.status === "abandoned") return undefined;
  const drift = credentialDrift(topology, rec);
  if (drift.kinds.length === 0 && drift.dualHomed.length === 0) return undefined;
  const moves = drift.moves;
  const why = moves.length > 0 ? cannotMove(topology, rec, moves) : undefined;
  const entry = {
    credentialId: rec.id,
    credentialType: rec.credentialType,
    publicId: rec.publicId,
    app: rec.app,
    moves,
    changedPlans: drift.changedPlans,
    missingGateways: drift.missingGateways,
    prunePending: drift.dualHomed,
    ...(why ? { cannotMove: why } : {}),
  };
  return { ...entry, calls: callsOf(topology, rec, entry, prune) };
}

/**
 * What bringing `records` to the config takes (see the module comment): no store read, no cloud call.
 * @param records in the order to list them (the store's paged walk is oldest first); an array or a paged walk
 *   (`walkPages`): one page is held at a time, and only the entries of records that differ are kept
 * @param options.prune count the revoke of each moved credential on the gateway it leaves
 * @param options.limit at most this many entries (the first ones, oldest first): a canary batch
 */
export async function planApply(
  topology: ApplyTopology,
  records: Iterable<CredentialRecord> | AsyncIterable<CredentialRecord>,
  options: { prune?: boolean; limit?: number } = {},
): Promise<ApplyPlan> {
  const entries: ApplyEntry[] = [];
  let live = 0;
  for await (const rec of records) {
    if (rec.status === "abandoned") continue;
    live += 1;
    if (options.limit !== undefined && entries.length >= options.limit) continue;
    const entry = applyEntryOf(topology, rec, !!options.prune);
    if (entry) entries.push(entry);
  }
  const estimate = estimateOf(topology, entries);
  const floors = estimate.flatMap((e) => (e.floorS === undefined ? [] : [e.floorS]));
  return {
    entries,
    live,
    counts: {
      movable: entries.filter((e) => e.moves.length > 0 && !e.cannotMove).length,
      notMovable: entries.filter((e) => e.cannotMove).length,
      plansChanged: entries.filter((e) => e.changedPlans.length > 0).length,
      gatewayMissing: entries.filter((e) => e.missingGateways.length > 0).length,
      prunePending: entries.filter((e) => e.prunePending.length > 0).length,
    },
    estimate,
    ...(floors.length > 0 ? { floorS: Math.max(...floors) } : {}),
  };
}

/**
 * The portal's update request that re-applies `rec`'s API set as it is (every API and plan `NONE`): each gateway's
 * provider brings the credential to its plans' current definitions (a Kong consumer's rate-limiting plugin to the
 * plan's new limits), and the binding records their new fingerprints — `Orchestrator.applyPlanChanges`.
 */
export function reapplyRequestFor(rec: CredentialRecord): UpdateCredentialsRequest {
  return {
    ...revokeRequestFor(rec), // the same type, id and app
    apis: rec.apis.map((a) => ({
      id: a.id,
      action: "NONE" as const,
      usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
    })),
  } as UpdateCredentialsRequest;
}
