/**
 * `credhook reconcile`: finishes what crashes left unfinished (older than a
 * threshold, so live requests are left alone), cleans up abandoned creates,
 * revokes garbage (resources marked with an abandoned credential, or with a
 * live one on a gateway it is not bound to) and reports drift (a mark no
 * record explains), which it never deletes.
 */
import type { CredentialRecord } from "../credential-record.js";
import { driftEvent } from "../events.js";
import type { OwnedResource, Provider } from "../provider.js";
import { recordsById, walkPages } from "../store-pages.js";
import { PAGE_LIMIT_MAX } from "../store.js";
import { uniq } from "./api-sets.js";
import { abandonedRecords, sweepOne } from "./abandoned.js";
import { ownedPages, revokeOne } from "./revoke.js";
import type { OrchestrationContext } from "./context.js";
import { finishUnfinished } from "./recovery.js";
import { settleRecord, unsettledRecords } from "./settle.js";
import type { ReconcileEntry, ReconcileOptions, ReconcileReport } from "./types.js";

/**
 * Finishes what a crash (or a failed compensation) left unfinished, then
 * reports drift:
 * - a `revoking` record is revoked everywhere and deleted;
 * - a `pending` create is removed: its bindings, and any resource a gateway
 *   lists as owned by that credential id (created, but the crash came before
 *   the store heard of it), are revoked, and the record deleted — the portal
 *   never received that credential;
 * - a `pending` update is rolled back to the API set before it: gateways it
 *   was adding are revoked, the others updated back.
 * Then every gateway that can list credhook's resources is compared with the
 * store: a resource no live credential owns is reported (never deleted).
 *
 * @param options.dryRun report what would be done, change nothing
 * @param options.olderThanMs only records last written longer ago than this, ms (default 60000: leaves in-flight requests alone)
 */
export async function reconcile(ctx: OrchestrationContext, options: ReconcileOptions = {}): Promise<ReconcileReport> {
  const dryRun = options.dryRun ?? false;
  // Records written `olderThanMs` ago or earlier (inclusive: with 0, also one written in this very millisecond).
  const before = new Date(ctx.now() - (options.olderThanMs ?? 60_000) + 1).toISOString();
  const report: ReconcileReport = {
    dryRun,
    unfinished: [],
    abandoned: [],
    unsettled: [],
    skippedRecent: await ctx.store.countUnfinishedSince(before),
    orphans: [],
    garbage: [],
    unlistable: [],
  };
  await finishUnfinishedRecords(ctx, report, before);
  await cleanUpAbandonedCreates(ctx, report);
  await settleUnsettledUpdates(ctx, report);
  await reportDrift(ctx, report, before);
  return report;
}

/** The `pending` and `revoking` records last written before `before`, each finished under its app's lock ({@link finishUnfinished}). */
async function finishUnfinishedRecords(
  ctx: OrchestrationContext,
  report: ReconcileReport,
  before: string,
): Promise<void> {
  for (const rec of await ctx.store.listUnfinished(before)) {
    const entry = await ctx.lock.run(rec.appKey, async () => {
      const fresh = await ctx.store.get(rec.id);
      if (!fresh || fresh.updatedAt >= before || (fresh.status !== "pending" && fresh.status !== "revoking"))
        return undefined;
      return finishUnfinished(ctx, fresh, report.dryRun);
    });
    if (entry) report.unfinished.push(entry);
  }
}

/** Abandoned creates: no request owns them any more, whatever their age — a cleanup pass each, what it found is garbage. */
async function cleanUpAbandonedCreates(ctx: OrchestrationContext, report: ReconcileReport): Promise<void> {
  for await (const rec of abandonedRecords(ctx)) {
    const entry: ReconcileEntry = {
      credentialId: rec.id,
      appKey: rec.appKey,
      op: "create",
      action: "",
      gateways: uniq([...rec.bindings.map((b) => b.gateway), ...(rec.abandoned?.uncertain ?? [])]),
      errors: [],
    };
    if (report.dryRun) {
      entry.action = `would revoke ${rec.bindings.length} recorded resource(s) and search ${rec.abandoned?.uncertain.length ?? 0} gateway(s) for the credential's mark`;
    } else {
      const r = await ctx.lock.run(rec.appKey, () => sweepOne(ctx, rec.id));
      if (!r) continue;
      entry.errors.push(...r.errors);
      report.garbage.push(...r.found);
      entry.action = r.deleted
        ? `cleaned up (${r.revoked.length} resource(s) revoked), record deleted`
        : r.errors.length > 0
          ? "cleanup incomplete; run reconcile again"
          : `cleaned up (${r.revoked.length} resource(s) revoked); record kept until ${(await ctx.store.get(rec.id))?.abandoned?.settleUntil ?? "settled"} in case a late write lands`;
    }
    report.abandoned.push(entry);
  }
}

/** Failed or interrupted updates whose late writes may have landed: each gateway brought back to the record once settled. */
async function settleUnsettledUpdates(ctx: OrchestrationContext, report: ReconcileReport): Promise<void> {
  for await (const rec of unsettledRecords(ctx)) {
    const info = rec.unsettled!;
    const entry: ReconcileEntry = {
      credentialId: rec.id,
      appKey: rec.appKey,
      op: "update",
      action: "",
      gateways: info.gateways.map((g) => g.gateway),
      errors: [],
    };
    if (ctx.stillSettling(info.settleUntil))
      entry.action = `a failed update's writes may still land until ${info.settleUntil}; checked after that`;
    else if (report.dryRun)
      entry.action =
        "would bring these gateways back to the record (re-apply its API set; revoke its mark where it is not bound)";
    else {
      const r = await ctx.lock.run(rec.appKey, async () => {
        const fresh = await ctx.store.get(rec.id);
        return fresh?.status === "active" && fresh.unsettled ? settleRecord(ctx, fresh) : undefined;
      });
      if (!r) continue;
      entry.errors.push(...r.errors);
      entry.action =
        r.errors.length > 0
          ? "brought back in part; run reconcile again"
          : `brought back to the record${r.revoked.length > 0 ? ` (${r.revoked.length} resource(s) revoked)` : ""}`;
    }
    report.unsettled.push(entry);
  }
}

/** The key of a resource in {@link unheldResources}'s set: its gateway and native id. */
const heldKey = (gateway: string, nativeId: string) => `${gateway}\u0000${nativeId}`;

/**
 * Of `listed` (what `gateway` holds under credhook's mark, a page at a time), the resources no record binds, each
 * with the record its mark names, if any: a page's records are read by id at once ({@link recordsById}: one store
 * read where the store has `getMany`, one statement on PostgreSQL, instead of a round trip per resource; a page of
 * more than {@link PAGE_LIMIT_MAX} resources, a whole `listOwned`, in slices of that many). Bounded: a resource whose
 * marked record binds it is settled by that read as its page goes by; only the rest (drift and garbage: few, and
 * what reconcile reports) are kept, and looked for in every record by one paged walk after the listing (a page held).
 */
async function unheldResources(
  ctx: OrchestrationContext,
  gateway: string,
  listed: AsyncIterable<readonly OwnedResource[]>,
): Promise<Array<{ resource: OwnedResource; owner: CredentialRecord | undefined }>> {
  const candidates = new Map<string, { resource: OwnedResource; owner: CredentialRecord | undefined }>();
  for await (const listedPage of listed)
    for (let start = 0; start < listedPage.length; start += PAGE_LIMIT_MAX) {
      // A provider without pages lists everything as one: read in slices of a store page, a slice's records held.
      const page = listedPage.slice(start, start + PAGE_LIMIT_MAX);
      const owners = await recordsById(
        ctx.store,
        page.flatMap((r) => (r.credentialId ? [r.credentialId] : [])),
      );
      for (const r of page) {
        const owner = r.credentialId ? owners.get(r.credentialId) : undefined;
        if (owner?.bindings.some((b) => b.gateway === gateway && b.nativeId === r.nativeId)) continue;
        candidates.set(heldKey(gateway, r.nativeId), { resource: r, owner });
      }
    }
  if (candidates.size > 0)
    for await (const rec of walkPages((after) => ctx.store.listPage({ limit: 500, ...(after ? { after } : {}) })))
      for (const b of rec.bindings) candidates.delete(heldKey(b.gateway, b.nativeId));
  return [...candidates.values()];
}

/**
 * Drift: what gateways hold under credhook's mark that no credential record explains (listed afresh) — reported
 * as an orphan with a `credential.drift_found` event, never deleted; a resource marked with a credential whose
 * record says it is not there ({@link isGarbageOf}) is garbage, revoked under its app's lock. Reads the records a
 * listing page's marks name by id, a page's at once, and walks them in pages only for the resources no such read
 * explains; a gateway's listing is read a page at a time where its provider pages it
 * ({@link Provider.listOwnedPages}, the embedded provider's): memory stays a page of each and what the report lists,
 * whatever the store and the gateway hold.
 */
async function reportDrift(ctx: OrchestrationContext, report: ReconcileReport, before: string): Promise<void> {
  for (const gw of ctx.gateways.values()) {
    if (!gw.provider.listOwned && !gw.provider.listOwnedPages) {
      report.unlistable.push(gw.name);
      continue;
    }
    try {
      for (const { resource: r, owner } of await unheldResources(ctx, gw.name, ownedPages(gw.provider))) {
        if (owner && !isGarbageOf(owner, gw.name, before)) continue; // one resource of several, or an operation in flight
        if (!owner) {
          report.orphans.push({ gateway: gw.name, ...r });
          if (!report.dryRun) await ctx.store.outbox?.append([driftEvent(gw.name, r, ctx.nowIso())]);
          continue;
        }
        // Marked with a credential whose record says it is not there: an abandoned create's late write, or a failed update's.
        report.garbage.push({ gateway: gw.name, ...r });
        if (report.dryRun) continue;
        await ctx.lock.run(owner.appKey, async () => {
          const fresh = await ctx.store.get(owner.id);
          if (!fresh || !isGarbageOf(fresh, gw.name, before)) return;
          await revokeOne(ctx, gw.name, {
            credentialId: owner.id,
            credentialType: owner.credentialType,
            nativeId: r.nativeId,
            resources: {},
            app: owner.app,
          }).catch((err: unknown) => {
            report.unlistable.push(`${gw.name}: ${ctx.asTyped(err, gw.name).messages[0]}`);
          });
        });
      }
    } catch (err) {
      report.unlistable.push(`${gw.name}: ${ctx.asTyped(err, gw.name).messages[0]}`);
    }
  }
}

/**
 * True when a resource marked with `rec`'s credential id on `gateway`, and not
 * bound to it, is garbage: the record is abandoned, or it is settled
 * (`active`, last written before `before`) and holds nothing on that gateway.
 */
export function isGarbageOf(rec: CredentialRecord, gateway: string, before: string): boolean {
  if (rec.status === "abandoned") return true;
  return rec.status === "active" && rec.updatedAt < before && !rec.bindings.some((b) => b.gateway === gateway);
}
