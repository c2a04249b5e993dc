/**
 * Unsettled updates (docs/architecture.md, "Never an orphan"): a failed update is rolled
 * back in the request, but a write the client gave up on may still land
 * afterwards — a plan attached after the rollback detached it, a credential
 * created on a new gateway after the search found nothing there. The record
 * keeps those gateways ({@link UnsettledInfo}); once the settle window is
 * over, a pass brings each back to the record: the record's API set applied
 * again where the credential is bound, whatever carries its mark revoked
 * where it is not. Passes run in `credhook serve`'s sweep, before the app's
 * next update, and in `credhook reconcile`.
 */
import { isCredhookError } from "../errors.js";
import type { GatewayApi } from "../provider.js";
import type { CredentialRecord, UnsettledInfo } from "../credential-record.js";
import { walkPages } from "../store-pages.js";
import { changesBetween, heldByGateway } from "./api-sets.js";
import { sweepAbandoned } from "./abandoned.js";
import { revokeMarked, revokeOne } from "./revoke.js";
import type { OrchestrationContext } from "./context.js";
import type { SweepResult } from "./types.js";

/** What one convergence pass over an unsettled record did. */
export interface SettleResult {
  /** Gateways brought back to the record in this pass. */
  settled: string[];
  /** Resources revoked in this pass (marked with the credential on a gateway it is not bound to), as `gateway:nativeId`. */
  revoked: string[];
  /** Per-gateway failures, secret-free; the record keeps those gateways for the next pass. */
  errors: string[];
}

/**
 * Adds gateways to `rec.unsettled` (in memory; the caller saves): API sets
 * attempted on one gateway are merged, and the settle window ends at the
 * later of the two. `startedMs` is when the uncertain writes may have begun;
 * gateways whose provider says writes never land late settle at once.
 */
export function markUnsettled(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  entries: Array<{ gateway: string; attempted: GatewayApi[] }>,
  startedMs: number,
): void {
  if (entries.length === 0) return;
  const until = ctx.settleUntil(
    entries.map((e) => e.gateway),
    startedMs,
  );
  const info: UnsettledInfo = rec.unsettled ?? { gateways: [], settleUntil: until, attempts: 0 };
  for (const e of entries) {
    const known = info.gateways.find((g) => g.gateway === e.gateway);
    if (!known) {
      info.gateways.push({ gateway: e.gateway, attempted: structuredClone(e.attempted) });
      continue;
    }
    for (const api of e.attempted) {
      const have = known.attempted.find((a) => a.id === api.id);
      if (!have) known.attempted.push(structuredClone(api));
      else for (const p of api.usagePlans) if (!have.usagePlans.includes(p)) have.usagePlans.push(p);
    }
  }
  if (until > info.settleUntil) info.settleUntil = until;
  rec.unsettled = info;
}

/** The gateways the record wants the credential on: those its APIs route to, or its first binding's when it has no API left. */
function wantedGateways(rec: CredentialRecord): Set<string> {
  const routed = [...heldByGateway(rec.apis, rec.bindings).keys()]; // a dual-homed binding is wanted until pruned
  return new Set(routed.length > 0 ? routed : rec.bindings.slice(0, 1).map((b) => b.gateway));
}

/**
 * One convergence pass (the caller holds the app's lock and saves nothing):
 * does nothing before the settle window ends; then, for each unsettled
 * gateway, re-applies the record's API set (previous: what the uncertain write
 * asked for) or — where the credential should not be — revokes its bindings
 * there and whatever carries its mark. Gateways that fail stay for the next
 * pass; the field goes when none is left. Saves the record when it changed.
 * @param retries the request's bounded retries for each call
 * @returns undefined when the window is still open (nothing done)
 */
export async function settleRecord(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  retries = false,
): Promise<SettleResult | undefined> {
  const info = rec.unsettled;
  if (!info || ctx.stillSettling(info.settleUntil)) return undefined;
  const result: SettleResult = { settled: [], revoked: [], errors: [] };
  const wanted = wantedGateways(rec);
  const current = heldByGateway(rec.apis, rec.bindings);
  const left: UnsettledInfo["gateways"] = [];
  for (const entry of info.gateways) {
    const g = entry.gateway;
    try {
      if (wanted.has(g)) {
        const b = rec.bindings.find((x) => x.gateway === g);
        if (b) {
          const desired = current.get(g) ?? [];
          const res = await ctx.compensating(
            () =>
              ctx.gateway(g).provider.update({
                ...ctx.ref(rec, b),
                previous: entry.attempted,
                desired,
                changes: changesBetween(entry.attempted, desired),
              }),
            retries,
          );
          b.resources = res.resources ?? b.resources;
        }
      } else {
        for (const b of rec.bindings.filter((x) => x.gateway === g)) {
          await ctx.compensating(() => revokeOne(ctx, g, ctx.ref(rec, b)), retries);
          rec.bindings = rec.bindings.filter((x) => x !== b);
          result.revoked.push(`${g}:${b.nativeId}`);
        }
        for (const r of await revokeMarked(ctx, g, rec, entry.attempted, retries))
          result.revoked.push(`${g}:${r.nativeId}`);
      }
      result.settled.push(g);
    } catch (err) {
      left.push(entry);
      result.errors.push(`${g}: ${ctx.asTyped(err, g).messages[0]}`);
    }
  }
  info.attempts += 1;
  if (left.length === 0) delete rec.unsettled;
  else {
    info.gateways = left;
    info.lastErrors = result.errors;
  }
  rec.updatedAt = ctx.nowIso();
  await ctx.store.save(rec);
  if (result.revoked.length > 0 || result.errors.length > 0) {
    const log = result.errors.length > 0 ? ctx.logger.error.bind(ctx.logger) : ctx.logger.warn.bind(ctx.logger);
    log(
      { credentialId: rec.id, settled: result.settled, revoked: result.revoked, errors: result.errors },
      "unsettled update: gateways brought back to the record",
    );
  }
  return result;
}

/**
 * The records with unsettled gateways, earliest settle time first, a page at a time (`listUnsettledPage`: the store's
 * partial index of those records; one page held) — only those due at `dueAt` when given. A record settled behind the
 * walk is not seen again; a partly settled one keeps its settle time, hence its place.
 */
export function unsettledRecords(ctx: OrchestrationContext, dueAt?: string): AsyncGenerator<CredentialRecord> {
  return walkPages((after) =>
    ctx.store.listUnsettledPage({ ...(dueAt !== undefined ? { dueAt } : {}), ...(after ? { after } : {}) }),
  );
}

/**
 * One pass over every record with unsettled gateways whose window has ended,
 * each under its app's lock. Never throws: failures stay on the records. Reads only the due records, a page at a
 * time (`listUnsettledPage` with `dueAt`: the store's partial index of unsettled records), never every record.
 * @returns how many records were settled (field gone) and how many resources were revoked
 */
export async function sweepUnsettled(ctx: OrchestrationContext): Promise<{ settled: number; revoked: number }> {
  const out = { settled: 0, revoked: 0 };
  const dueAt = ctx.nowIso();
  for await (const rec of unsettledRecords(ctx, dueAt)) {
    if (rec.unsettled && ctx.stillSettling(rec.unsettled.settleUntil)) continue;
    await ctx.lock.run(rec.appKey, async () => {
      try {
        const fresh = await ctx.store.get(rec.id);
        if (!fresh || fresh.status !== "active") return;
        const r = await settleRecord(ctx, fresh);
        if (!r) return;
        out.revoked += r.revoked.length;
        if (r.errors.length === 0) out.settled += 1;
      } catch (err) {
        ctx.logger.error(
          { credentialId: rec.id, err: isCredhookError(err) ? err.messages[0] : String(err) },
          "unsettled update: pass failed",
        );
      }
    });
  }
  return out;
}

/**
 * The whole background sweep: abandoned creates ({@link sweepAbandoned}), then
 * unsettled updates ({@link sweepUnsettled}). Never throws.
 */
export async function sweep(ctx: OrchestrationContext): Promise<SweepResult> {
  const abandoned = await sweepAbandoned(ctx);
  const unsettled = await sweepUnsettled(ctx);
  return { ...abandoned, revoked: abandoned.revoked + unsettled.revoked, settled: unsettled.settled };
}
