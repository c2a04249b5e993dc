/**
 * Abandoned creates (docs/architecture.md, "Never an orphan"): a create that failed is
 * given up — the portal never receives its credential — and its record turns
 * `abandoned` before any cleanup, keeping every hint to find what exists.
 * Cleanup passes revoke the record's bindings and search the gateways where a
 * write may have landed unseen for the credential's mark; the record goes
 * only after a pass that fails nowhere once the settle window is over. The
 * revokes and searches it runs are revoke.ts's building blocks.
 */
import type { CredhookError } from "../errors.js";
import { isCredhookError } from "../errors.js";
import type { OwnedResource, ProviderResources } from "../provider.js";
import type { CredentialRecord } from "../credential-record.js";
import type { CredentialType } from "../contract.js";
import { walkPages } from "../store-pages.js";
import { groupByGateway, uniq } from "./api-sets.js";
import type { OrchestrationContext } from "./context.js";
import { markAbandoned } from "./journal.js";
import { findByCredential, revokeBindings, revokeOne } from "./revoke.js";
import type { AbandonedCleanup } from "./types.js";

/**
 * Gives up a failed create: the portal never receives this credential. The
 * record turns `abandoned` (durably, before any cleanup), keeping every hint
 * to find what exists — the bindings, what failing gateways reported as
 * `partial`, and the gateways where a write may have landed unseen — and
 * cleanup runs at once with the request's bounded retries. The record is
 * deleted only when nothing can be left (see {@link cleanupAbandoned}).
 */
export async function abandonCreate(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  failures: CredhookError[],
): Promise<void> {
  for (const f of failures) {
    if (
      f.partial &&
      f.gateway &&
      !rec.bindings.some((b) => b.gateway === f.gateway && b.nativeId === f.partial!.nativeId)
    ) {
      rec.bindings.push({
        gateway: f.gateway,
        nativeId: f.partial.nativeId,
        resources: f.partial.resources as ProviderResources,
      });
    }
  }
  const uncertain = uniq(failures.filter((f) => f.gateway && ctx.mayHaveLanded(f)).map((f) => f.gateway!));
  markAbandoned(
    rec,
    failures[0]!.messages[0] ?? failures[0]!.message,
    uncertain,
    ctx.settleUntil(uncertain, ctx.now()),
    ctx.nowIso(),
  );
  await ctx.store.save(rec, [ctx.event("credential.abandoned", rec, { reason: rec.abandoned!.reason })]);
  await cleanupAbandoned(ctx, rec, true);
}

/**
 * One cleanup pass over an abandoned create: revokes every binding, searches
 * each gateway where a write may have landed for resources carrying the
 * credential's mark ({@link Provider.findByCredential}) and revokes them.
 * The record is deleted when the pass failed nowhere and the settle window
 * is over; otherwise it is saved with what is left, for the next pass.
 * @param inRequest retry each call (bounded) within this call
 * @returns the resources revoked in this pass, and whether the record is gone
 */
export async function cleanupAbandoned(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  inRequest: boolean,
): Promise<AbandonedCleanup> {
  const info = rec.abandoned!;
  const errors: string[] = [];
  const revoked: Array<OwnedResource & { gateway: string }> = [];
  const left = await revokeBindings(ctx, rec, inRequest);
  for (const l of left) errors.push(`${l.binding.gateway}: ${l.error.messages[0]}`);
  for (const b of rec.bindings)
    if (!left.some((l) => l.binding === b))
      revoked.push({ gateway: b.gateway, nativeId: b.nativeId, credentialId: rec.id, description: "recorded binding" });
  /** What the searches found and revoked (not in the record: garbage a late write or a crash left). */
  const searched: Array<OwnedResource & { gateway: string }> = [];
  rec.bindings = left.map((l) => l.binding);
  const apisOf = groupByGateway(rec.pending?.desiredApis ?? rec.apis);
  await Promise.all(
    info.uncertain.map(async (gateway) => {
      try {
        const found = await ctx.compensating(
          () => findByCredential(ctx, gateway, rec, apisOf.get(gateway) ?? []),
          inRequest,
        );
        for (const r of found) {
          if (rec.bindings.some((b) => b.gateway === gateway && b.nativeId === r.nativeId)) continue;
          const outcome = await ctx
            .compensating(
              () =>
                revokeOne(ctx, gateway, {
                  credentialId: rec.id,
                  credentialType: rec.credentialType,
                  nativeId: r.nativeId,
                  resources: {},
                  app: rec.app,
                }),
              inRequest,
            )
            .catch((err: unknown) => {
              rec.bindings.push({ gateway, nativeId: r.nativeId, resources: {} });
              throw err;
            });
          if (outcome !== "not-owned") {
            revoked.push({ gateway, ...r });
            searched.push({ gateway, ...r });
          }
        }
      } catch (err) {
        errors.push(`${gateway}: ${ctx.asTyped(err, gateway).messages[0]}`);
      }
    }),
  );
  const now = ctx.nowIso();
  info.attempts += 1;
  info.lastAttemptAt = now;
  if (errors.length > 0) info.lastErrors = errors;
  else delete info.lastErrors;
  if (revoked.length > 0) {
    ctx.logger.warn(
      { credentialId: rec.id, revoked: revoked.map((r) => `${r.gateway}:${r.nativeId}`) },
      "abandoned create: revoked what it had left",
    );
  }
  if (errors.length === 0 && rec.bindings.length === 0 && !ctx.stillSettling(info.settleUntil)) {
    await ctx.store.delete(rec.id, [
      ctx.event("credential.cleaned_up", rec, {
        reason: `${revoked.length} resource(s) revoked in the last pass; nothing left`,
      }),
    ]);
    return { revoked, found: searched, deleted: true, errors };
  }
  rec.updatedAt = now;
  try {
    await ctx.store.save(rec);
  } catch (err) {
    // Deleted meanwhile by another cleanup of the same record (reconcile in another process): nothing left to do.
    if (!(isCredhookError(err) && err.status === 404)) throw err;
    return { revoked, found: searched, deleted: true, errors };
  }
  if (errors.length > 0) {
    ctx.logger.error(
      { credentialId: rec.id, errors },
      "abandoned create: cleanup incomplete, retried by the sweep, the next request of the app and `credhook reconcile`",
    );
  }
  return { revoked, found: searched, deleted: false, errors };
}

/**
 * Every abandoned record, a page at a time (`listPage` by state, from the store's index; one page held): what the
 * sweep and `credhook reconcile` walk. A record deleted behind the walk is not seen again.
 */
export function abandonedRecords(ctx: OrchestrationContext): AsyncGenerator<CredentialRecord> {
  return walkPages((after) => ctx.store.listPage({ status: "abandoned", ...(after ? { after } : {}) }));
}

/**
 * One sweep over abandoned creates (all, or one app's): a cleanup pass each,
 * under the app's lock. The server runs it every `reconcile.abandonedIntervalS`;
 * a create runs it for its own app first. Never throws: failures stay on the
 * records for the next pass. Walks the abandoned records a page at a time ({@link abandonedRecords}), never all
 * of them at once.
 * @returns how many records were swept and how many are gone
 */
export async function sweepAbandoned(
  ctx: OrchestrationContext,
): Promise<{ swept: number; deleted: number; revoked: number }> {
  const out = { swept: 0, deleted: 0, revoked: 0 };
  for await (const rec of abandonedRecords(ctx)) {
    const r = await ctx.lock.run(rec.appKey, () => sweepOne(ctx, rec.id));
    if (!r) continue;
    out.swept += 1;
    out.revoked += r.revoked.length;
    if (r.deleted) out.deleted += 1;
  }
  return out;
}

/**
 * Sweeps one app's abandoned creates (caller holds the app's lock; never throws), and returns its
 * live record of `credentialType`: one store read where the store has {@link CredentialStore.findApp}.
 */
export async function sweepApp(
  ctx: OrchestrationContext,
  appKey: string,
  credentialType: CredentialType,
): Promise<CredentialRecord | undefined> {
  if (ctx.store.findApp) {
    const { live, abandoned } = await ctx.store.findApp(appKey, credentialType);
    for (const rec of abandoned) await sweepOne(ctx, rec.id);
    return live; // a sweep touches only abandoned records: the live one read before it is still the live one
  }
  for (const rec of await ctx.store.listAbandoned(appKey)) await sweepOne(ctx, rec.id);
  return ctx.store.findByAppKey(appKey, credentialType);
}

/**
 * One cleanup pass over the abandoned record `id`, re-read (the caller holds its app's lock); never throws.
 * @returns what the pass did, or undefined when the record is gone, no longer abandoned, or the pass failed (logged)
 */
export async function sweepOne(ctx: OrchestrationContext, id: string): Promise<AbandonedCleanup | undefined> {
  try {
    const fresh = await ctx.store.get(id);
    if (!fresh || fresh.status !== "abandoned") return undefined;
    return await cleanupAbandoned(ctx, fresh, false);
  } catch (err) {
    ctx.logger.error(
      { credentialId: id, err: isCredhookError(err) ? err.messages[0] : String(err) },
      "abandoned create: cleanup pass failed",
    );
    return undefined;
  }
}
