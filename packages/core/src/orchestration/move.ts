/**
 * Moving credentials between gateways (`credhook apply`, docs/gateway-migration.md): an API whose route now names
 * another gateway gets the credential there with the same key value (read back from a gateway that can return it)
 * and its plans, while the gateway it leaves keeps granting it — the binding there is marked dual-homed
 * (`GatewayBinding.dualHomed`) — so that traffic can be switched at the operator's pace; a prune then removes the
 * dual-homed grants. Both go through the portal's own update machinery ({@link runUpdatePlan}): the app's lock, the
 * intent journaled before any cloud call, fencing before each call, add before remove, a rollback on failure, an
 * interrupted move rolled back by recovery (what it created found by the credential's mark) and an interrupted prune
 * finished, and the `credential.updated` event with the gateways before and after.
 *
 * {@link runApply} walks the store a page at a time and moves credentials concurrently; each gateway's provider
 * keeps its own quota (its rate limiter, shared across instances through the store's rate slots), and a gateway
 * whose circuit breaker is open pauses the credentials that need it instead of failing them.
 */
import { setTimeout as delay } from "node:timers/promises";
import { CircuitOpen, type CredhookError, ErrorCodes, isCredhookError, PolicyViolation, Throttled } from "../errors.js";
import { credentialDrift, type ApiMove } from "../drift.js";
import type { AppIdentity, GatewayApi } from "../provider.js";
import type { CredentialRecord, GatewayApiWithGateway } from "../credential-record.js";
import { walkPages } from "../store-pages.js";
import { changesBetween, groupByGateway, heldByGateway } from "./api-sets.js";
import { applyEntryOf, type ApplyEntry, type ApplyTopology, cannotMove, reapplyRequestFor } from "./apply.js";
import { assertNotRetired, type OrchestrationContext } from "./context.js";
import { assertNotDisabled } from "./disable.js";
import { dualHomedAfter, planUpdate, type UpdatePlan } from "./plan.js";
import { finishBeforeUse } from "./recovery.js";
import { settleRecord } from "./settle.js";
import { runUpdatePlan } from "./update.js";

/** What `credhook apply` did with one credential ({@link applyOne}). */
export interface ApplyResult {
  credentialId: string;
  app: AppIdentity;
  /**
   * - `moved`: created on the gateways its routes now name, same key value, kept on the ones it left (dual-homed);
   * - `pruned`: removed from the gateways it had left (only this, or after `moved` in the same run: see `steps`);
   * - `plans-updated`: its changed plans applied in place;
   * - `unchanged`: nothing to do (it follows the config; dual-homed without `--prune`);
   * - `not-movable`: its moves need a new key (`reason`); nothing changed;
   * - `left`: not done, on purpose (disabled, on a gateway the config lacks): `reason`;
   * - `failed`: a gateway or the store failed (`reason`); what was done is rolled back, the next run retries.
   */
  outcome: "moved" | "pruned" | "plans-updated" | "unchanged" | "not-movable" | "left" | "failed";
  /** Every step done, in order (a credential can be moved, updated in place and pruned in one run). */
  steps: Array<"moved" | "plans-updated" | "pruned">;
  /** Gateways it was created on (a move). */
  created?: string[];
  /** Gateways it was removed from (a prune). */
  removed?: string[];
  /** Gateways that still grant it as dual-homed after this run (`--prune` removes them). */
  dualHomed?: string[];
  /** Why it was not (entirely) done, secret-free. */
  reason?: string;
}

/** Options of {@link applyOne} and {@link runApply}. */
export interface ApplyRunOptions {
  /** Also remove each dual-homed credential from the gateways it left (moved in this run or an earlier one). @default false */
  prune?: boolean;
}

/** The API set after `moves` (each moved API on its new gateway), and each gateway's dual-homed API ids after it. */
function moved(
  rec: CredentialRecord,
  moves: ApiMove[],
): { apis: GatewayApiWithGateway[]; dual: Map<string, string[]> } {
  const apis = rec.apis.map((a) => {
    const m = moves.find((x) => x.apiId === a.id);
    return { ...a, usagePlans: [...a.usagePlans], ...(m?.to ? { gateway: m.to } : {}) };
  });
  const dual = dualHomedAfter(rec, apis);
  for (const m of moves) {
    if (!m.to || !rec.bindings.some((b) => b.gateway === m.from)) continue;
    const ids = dual.get(m.from) ?? [];
    if (!ids.includes(m.apiId)) dual.set(m.from, [...ids, m.apiId]);
  }
  return { apis, dual };
}

/** Whether two API sets of one gateway grant the same (ids and plans, in any order). */
function sameGrant(a: GatewayApi[] = [], b: GatewayApi[] = []): boolean {
  return changesBetween(a, b).every((c) => c.action === "NONE" && c.usagePlans.every((p) => p.action === "NONE"));
}

/** The update plan of a move or a prune from the API sets and dual-homed marks before and after. */
function planOf(
  rec: CredentialRecord,
  desiredApis: GatewayApiWithGateway[],
  previousGroups: Map<string, GatewayApi[]>,
  desiredGroups: Map<string, GatewayApi[]>,
  dualHomed: Map<string, string[]>,
): UpdatePlan {
  const bound = rec.bindings.map((b) => b.gateway);
  const desiredGateways = [...desiredGroups.keys()];
  return {
    desiredApis,
    previousGroups,
    desiredGroups,
    desiredGateways,
    toCreate: desiredGateways.filter((g) => !bound.includes(g)),
    toRemove: bound.filter((g) => !desiredGroups.has(g)),
    toUpdate: bound.filter((g) => desiredGroups.has(g) && !sameGrant(previousGroups.get(g), desiredGroups.get(g))),
    newApp: rec.app,
    renamed: false,
    changesFor: (g) => changesBetween(previousGroups.get(g) ?? [], desiredGroups.get(g) ?? []),
    dualHomed,
  };
}

/**
 * The plan of a move: each moved API created where its route now names (the credential created on a gateway it is
 * not on, updated on one it is on), kept where it was (that binding dual-homed); nothing is removed. A move back to
 * a gateway that still grants it dual-homed needs no call there: the mark goes, the other gateway becomes dual-homed.
 * @throws PolicyViolation (422) a gateway it would be created on is retired
 */
export function planMove(ctx: OrchestrationContext, rec: CredentialRecord, moves: ApiMove[]): UpdatePlan {
  const { apis, dual } = moved(rec, moves);
  const marked = rec.bindings.map((b) => ({
    gateway: b.gateway,
    ...(dual.has(b.gateway) ? { dualHomed: { apiIds: dual.get(b.gateway)!, since: "" } } : {}),
  }));
  const plan = planOf(rec, apis, heldByGateway(rec.apis, rec.bindings), heldByGateway(apis, marked), dual);
  assertNotRetired(ctx, plan.toCreate);
  return plan;
}

/**
 * The plan of a prune: the dual-homed grants removed — the credential revoked on a gateway where nothing else of it
 * is left, updated without the moved APIs where some of the app's APIs still route there; the API set is unchanged.
 */
export function planPrune(rec: CredentialRecord): UpdatePlan {
  return planOf(rec, rec.apis, heldByGateway(rec.apis, rec.bindings), groupByGateway(rec.apis), new Map());
}

/** The gateways a move or prune of `rec` calls: its bindings' and the routes' of its moved APIs. */
function gatewaysOf(rec: CredentialRecord, moves: ApiMove[]): string[] {
  return [...new Set([...rec.bindings.map((b) => b.gateway), ...moves.flatMap((m) => (m.to ? [m.to] : []))])];
}

/**
 * Brings one credential to the config under its app's lock (see the module comment): an interrupted operation of it
 * is finished first (recovery), then its moves are carried out, its changed plans applied in place, and with
 * `prune` its dual-homed grants removed — each step journaled and committed before the next.
 * @returns what was done; a credential that cannot move without a new key is `not-movable` and left untouched
 * @throws NotFound (404) it was revoked meanwhile
 * @throws CircuitOpen (503) a gateway it needs is known down: nothing was written ({@link runApply} waits and retries)
 * @throws what a gateway or the store throws, after the step's rollback
 */
export async function applyOne(
  ctx: OrchestrationContext,
  topology: ApplyTopology,
  credentialId: string,
  options: ApplyRunOptions = {},
): Promise<ApplyResult> {
  return ctx.lockedRecord(credentialId, async (found) => {
    let rec = found.status === "active" ? found : await finishBeforeUse(ctx, found);
    const result: ApplyResult = { credentialId, app: found.app, outcome: "unchanged", steps: [] };
    if (!rec) return { ...result, outcome: "left", reason: "an interrupted create of it was abandoned" };
    const drift = credentialDrift(topology, rec);
    if (drift.missingGateways.length > 0)
      return {
        ...result,
        outcome: "left",
        reason: `on gateway ${drift.missingGateways.join(", ")}, which the config lacks`,
      };
    const why = drift.moves.length > 0 ? cannotMove(topology, rec, drift.moves) : undefined;
    if (why) return { ...result, outcome: "not-movable", reason: why };
    if (rec.disabled && (drift.kinds.length > 0 || options.prune))
      return { ...result, outcome: "left", reason: "disabled: `credhook enable` it first" };
    ctx.circuits.assertClosed(gatewaysOf(rec, drift.moves)); // nothing written while a gateway it needs is known down
    if (rec.unsettled) await settleRecord(ctx, rec, true);
    if (drift.moves.length > 0) {
      const out = await runUpdatePlan(ctx, rec, planMove(ctx, rec, drift.moves));
      result.steps.push("moved");
      if (out.created) result.created = out.created;
      rec = (await ctx.store.get(credentialId))!;
    }
    if (drift.changedPlans.length > 0) {
      assertNotDisabled(rec, "update");
      await runUpdatePlan(ctx, rec, planUpdate(ctx, rec, reapplyRequestFor(rec)));
      result.steps.push("plans-updated");
      rec = (await ctx.store.get(credentialId))!;
    }
    if (options.prune && rec.bindings.some((b) => b.dualHomed)) {
      const out = await runUpdatePlan(ctx, rec, planPrune(rec), undefined, true);
      result.steps.push("pruned");
      result.removed = out.removed ?? [];
      rec = (await ctx.store.get(credentialId))!;
    }
    const dual = rec.bindings.filter((b) => b.dualHomed).map((b) => b.gateway);
    if (dual.length > 0) result.dualHomed = dual;
    result.outcome = result.steps.includes("moved")
      ? "moved"
      : result.steps.includes("pruned")
        ? "pruned"
        : result.steps.includes("plans-updated")
          ? "plans-updated"
          : "unchanged";
    return result;
  });
}

/** Options of {@link runApply}. */
export interface RunApplyOptions extends ApplyRunOptions {
  /** At most this many credentials that need something (oldest first): a canary batch. */
  limit?: number;
  /**
   * Credentials worked on at once. Each gateway's provider keeps its own quota (its limiter queues the calls), so
   * this only needs to keep the narrowest gateway busy. @default 16
   */
  concurrency?: number;
  /** Called with each credential's result as it comes (in completion order). */
  onResult?: (result: ApplyResult, entry: ApplyEntry) => void;
  /** Waits `ms` (a paused gateway's breaker, a full queue); tests inject their own. @default setTimeout */
  sleep?: (ms: number) => Promise<void>;
}

/** What {@link runApply} did, counted. */
export interface RunApplySummary {
  /** Credentials that needed something (entries of the plan), up to the limit. */
  considered: number;
  /** Results by outcome. */
  outcomes: Record<ApplyResult["outcome"], number>;
  /** True when `limit` stopped the walk before every credential that needed something was done. */
  limited: boolean;
  /** Times a credential waited for a gateway's breaker or quota before it was tried again. */
  paused: number;
}

/** The wait before retrying after `err`, ms, when it is a pause (an open breaker, a full quota queue); else undefined. */
function pauseOf(err: unknown): number | undefined {
  if (err instanceof CircuitOpen || (isCredhookError(err) && err.code === ErrorCodes.CIRCUIT_OPEN))
    return Math.max(1, (err as CircuitOpen).retryAfterS ?? 1) * 1000;
  if (err instanceof Throttled) return Math.max(1, err.retryAfterS) * 1000;
  return undefined;
}

/**
 * `credhook apply` without `--dry-run`: walks the live credentials a page at a time (oldest first), and for each that
 * differs from the config or is dual-homed ({@link applyEntryOf}) runs {@link applyOne}, `concurrency` at once. A
 * credential whose gateway's breaker is open, or whose gateway's quota queue is full, waits (`Retry-After`) and is
 * tried again — the run pauses on that gateway, it does not fail its credentials; a credential the key value cannot
 * be imported for is `not-movable`; any other failure is `failed` (rolled back; the next run retries it).
 */
export async function runApply(
  ctx: OrchestrationContext,
  topology: ApplyTopology,
  options: RunApplyOptions = {},
): Promise<RunApplySummary> {
  const sleep = options.sleep ?? ((ms: number) => delay(ms));
  const summary: RunApplySummary = {
    considered: 0,
    outcomes: { moved: 0, pruned: 0, "plans-updated": 0, unchanged: 0, "not-movable": 0, left: 0, failed: 0 },
    limited: false,
    paused: 0,
  };
  const one = async (entry: ApplyEntry): Promise<ApplyResult> => {
    for (;;) {
      try {
        return await applyOne(ctx, topology, entry.credentialId, options);
      } catch (err) {
        const wait = pauseOf(err);
        if (wait !== undefined) {
          summary.paused += 1;
          await sleep(wait);
          continue;
        }
        const typed = err as CredhookError;
        const reason = isCredhookError(err) ? typed.messages.join("; ") : String(err);
        const outcome = err instanceof PolicyViolation ? "not-movable" : "failed";
        return { credentialId: entry.credentialId, app: entry.app, outcome, steps: [], reason };
      }
    }
  };
  const running = new Set<Promise<void>>();
  const concurrency = Math.max(1, options.concurrency ?? 16);
  const records = walkPages((after) => ctx.store.listPage({ ...(after ? { after } : {}) }));
  for await (const rec of records) {
    const entry = applyEntryOf(topology, rec, !!options.prune);
    if (!entry) continue;
    const actionable = entry.moves.length + entry.changedPlans.length + entry.missingGateways.length > 0;
    if (!actionable && !options.prune) continue; // dual-homed only: nothing to do without --prune
    if (options.limit !== undefined && summary.considered >= options.limit) {
      summary.limited = true;
      break;
    }
    summary.considered += 1;
    const task = one(entry).then((r) => {
      summary.outcomes[r.outcome] += 1;
      options.onResult?.(r, entry);
    });
    const tracked = task.finally(() => running.delete(tracked));
    running.add(tracked);
    if (running.size >= concurrency) await Promise.race(running);
  }
  await Promise.all(running);
  return summary;
}
