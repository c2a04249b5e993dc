/**
 * Revoke: every gateway the store knows the credential on, or — when the
 * store does not know the id — each gateway of its type, which revokes only a
 * resource carrying its own mark. Idempotent.
 *
 * Also the building blocks every operation that takes a credential off a
 * gateway uses (an update's rollback and removals, an abandoned create's
 * cleanup, recovery, settling, reconcile): one provider revoke
 * ({@link revokeOne}), every binding of a record ({@link revokeBindings}), the
 * search for what carries a credential's mark ({@link findByCredential}) and
 * the revoke of what it finds ({@link revokeMarked}).
 */
import type { RevokeCredentialsRequest } from "../contract.js";
import type { CredhookError } from "../errors.js";
import type {
  AppIdentity,
  GatewayApi,
  OwnedResource,
  Provider,
  ProviderCredentialRef,
  RevokeOutcome,
} from "../provider.js";
import type { CredentialRecord, GatewayBinding } from "../credential-record.js";
import type { OrchestrationContext } from "./context.js";
import { markAbandoned, markLeaked } from "./journal.js";
import type { OperationOutcome, RevokeOptions } from "./types.js";

/**
 * The portal's revoke request for `rec` (its type, the public id the portal holds, the app): what an operator's or
 * a pass's revoke of a recorded credential sends through {@link revoke}.
 */
export function revokeRequestFor(rec: CredentialRecord): RevokeCredentialsRequest {
  return {
    credentialType: rec.credentialType,
    ...(rec.credentialType === "API_KEY" ? { apiKeyId: rec.publicId } : { clientId: rec.publicId }),
    appName: rec.app.appName,
    developer: rec.app.developer,
  } as RevokeCredentialsRequest;
}

/**
 * Revokes the credential on every gateway the store knows, or — when the store
 * does not know it — on every gateway of its type by the request's id.
 * Idempotent: an unknown or already-gone credential is success.
 * @param options an operator's reason: with `leaked`, a `credential.leaked` event goes with the record's move to
 * `revoking` (same transaction); the reason is also the `credential.revoked` event's
 * @throws Throttled (503) | UpstreamError (502) | UpstreamTimeout (504); what failed stays recorded for a retry
 */
export async function revoke(
  ctx: OrchestrationContext,
  req: RevokeCredentialsRequest,
  options: RevokeOptions = {},
): Promise<OperationOutcome> {
  const publicId = (req.credentialType === "API_KEY" ? req.apiKeyId : req.clientId)!;
  const found = await ctx.store.findByPublicId(req.credentialType, publicId);
  if (!found) return ctx.lock.run(`id:${req.credentialType}:${publicId}`, () => revokeUnknown(ctx, req, publicId));
  return ctx.lock.run(found.appKey, () => revokeRecorded(ctx, found.id, options));
}

/**
 * The revoke of an id the store does not know (it was lost, or the id was never credhook's): each gateway of the
 * type revokes the id only when the resource carries that gateway's own mark. A resource under that id that is no
 * gateway's own is left live and logged, unless another of credhook's gateways revoked its own under that id.
 * @throws the first gateway's error
 */
async function revokeUnknown(
  ctx: OrchestrationContext,
  req: RevokeCredentialsRequest,
  publicId: string,
): Promise<OperationOutcome> {
  const candidates = [...ctx.gateways.values()].filter((g) => g.credentialType === req.credentialType);
  const app: AppIdentity = { appName: req.appName ?? "", developer: req.developer ?? "" };
  const results = await Promise.allSettled(
    candidates.map((g) =>
      revokeOne(ctx, g.name, {
        credentialId: "",
        credentialType: req.credentialType,
        nativeId: publicId,
        resources: {},
        app,
      }),
    ),
  );
  const failed = results.find((r) => r.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
  const outcomes = results.map((r) => (r as PromiseFulfilledResult<RevokeOutcome>).value);
  // Someone else's resource under that id was left live — unless another of credhook's gateways revoked its own under that id.
  const unowned = outcomes.includes("revoked")
    ? []
    : candidates.filter((_, i) => outcomes[i] === "not-owned").map((g) => g.name);
  if (unowned.length > 0) {
    ctx.logger.warn(
      { credentialType: req.credentialType, publicId, gateways: unowned },
      "revoke of an id credhook does not know: a resource with that id exists but is not credhook's, so it was left live (bring it under credhook with `credhook adopt`, or remove it where it was made)",
    );
  }
  return { gateways: candidates.map((g) => g.name), ...(unowned.length > 0 ? { unowned } : {}) };
}

/**
 * The revoke of a recorded credential (the caller holds its app's lock): the record moves to `revoking` (with
 * `credential.leaked` when reported leaked), every binding is revoked, then the record is deleted with its
 * `credential.revoked` event — or kept as an abandoned create's while a failed update's write may still land.
 * @throws the first failing gateway's error, in the bindings' order; what failed stays recorded for a retry
 */
async function revokeRecorded(
  ctx: OrchestrationContext,
  id: string,
  options: RevokeOptions,
): Promise<OperationOutcome> {
  const rec = await ctx.store.get(id);
  if (!rec) return { gateways: [], credentialId: id };
  const why = options.reason ? { reason: options.reason } : {};
  rec.status = "revoking";
  rec.updatedAt = ctx.nowIso();
  // Once per credential: a retried or repeated leak report writes no second `credential.leaked`.
  await ctx.store.save(rec, options.leaked ? markLeaked(ctx, rec, options.reason) : []);
  const gateways = rec.bindings.map((b) => b.gateway);
  const left = await revokeBindings(ctx, rec);
  if (left.length > 0) {
    rec.bindings = left.map((l) => l.binding);
    rec.updatedAt = ctx.nowIso();
    await ctx.store.save(rec);
    throw ctx.firstByGatewayOrder(
      left.map((l) => l.error),
      gateways,
    );
  }
  // The event says where it was revoked: the bindings before the record lets go of them.
  const revoked = ctx.event("credential.revoked", rec, why);
  if (rec.unsettled && ctx.stillSettling(rec.unsettled.settleUntil)) {
    // A failed update's write may still land and would outlive the record: keep it as an abandoned
    // create's (never matched by the app's next create), searched by its mark until the window ends.
    const { gateways: unsure, settleUntil } = rec.unsettled;
    delete rec.unsettled;
    rec.bindings = [];
    rec.publicId = ""; // revoked: the portal's id finds nothing any more, as after a delete

    markAbandoned(
      rec,
      "revoked while a failed update's writes may still land",
      unsure.map((u) => u.gateway),
      settleUntil,
      ctx.nowIso(),
    );
    await ctx.store.save(rec, [revoked]);
  } else {
    await ctx.store.delete(rec.id, [revoked]);
  }
  ctx.logger.debug({ credentialId: rec.id, gateways }, "credential revoked"); // the request line says the same
  return { gateways, credentialId: rec.id };
}

/**
 * What `provider` holds under credhook's mark, a page at a time: its {@link Provider.listOwnedPages}, else its
 * {@link Provider.listOwned} as one page (nothing without either).
 */
export async function* ownedPages(provider: Provider): AsyncGenerator<OwnedResource[]> {
  if (provider.listOwnedPages) yield* provider.listOwnedPages();
  else if (provider.listOwned) yield await provider.listOwned();
}

/** The resources `gateway` holds with the credential's mark: its {@link Provider.findByCredential}, else its listing ({@link ownedPages}) filtered by credential id, a page at a time. */
export async function findByCredential(
  ctx: OrchestrationContext,
  gateway: string,
  rec: CredentialRecord,
  apis: GatewayApi[],
): Promise<OwnedResource[]> {
  const provider = ctx.gateway(gateway).provider;
  if (provider.findByCredential) {
    return provider.findByCredential({ credentialId: rec.id, credentialType: rec.credentialType, app: rec.app, apis });
  }
  const found: OwnedResource[] = [];
  for await (const page of ownedPages(provider)) found.push(...page.filter((r) => r.credentialId === rec.id));
  return found;
}

/** One provider revoke, typed, with its outcome (`revoked` when the provider returns nothing). */
export async function revokeOne(
  ctx: OrchestrationContext,
  gateway: string,
  ref: ProviderCredentialRef,
): Promise<RevokeOutcome> {
  try {
    return (await ctx.gateway(gateway).provider.revoke(ref)) ?? "revoked";
  } catch (err) {
    throw ctx.asTyped(err, gateway);
  }
}

/**
 * Searches `gateway` for resources carrying `rec`'s mark ({@link findByCredential})
 * and revokes each, but those in `except` (native ids the caller handles), each
 * call with the request's bounded retries when `retries`.
 * @returns the resources revoked (not those the gateway reported as not its own)
 * @throws the first failing search or revoke, typed
 */
export async function revokeMarked(
  ctx: OrchestrationContext,
  gateway: string,
  rec: CredentialRecord,
  apis: GatewayApi[],
  retries: boolean,
  except: string[] = [],
): Promise<OwnedResource[]> {
  const revoked: OwnedResource[] = [];
  for (const r of await ctx.compensating(() => findByCredential(ctx, gateway, rec, apis), retries)) {
    if (except.includes(r.nativeId)) continue;
    const outcome = await ctx.compensating(
      () => revokeOne(ctx, gateway, ctx.ref(rec, { gateway, nativeId: r.nativeId, resources: {} })),
      retries,
    );
    if (outcome !== "not-owned") revoked.push(r);
  }
  return revoked;
}

/**
 * Revokes every binding in parallel (each with the request's bounded retries
 * when `inRequest`); returns the ones that failed, with their errors. A
 * binding whose resource no longer carries the credential's mark is left
 * alone (logged): credhook never revokes what is not its own.
 */
export async function revokeBindings(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  inRequest = false,
): Promise<Array<{ binding: GatewayBinding; error: CredhookError }>> {
  const results = await Promise.allSettled(
    rec.bindings.map(async (b) => {
      const outcome = await ctx.compensating(() => revokeOne(ctx, b.gateway, ctx.ref(rec, b)), inRequest);
      if (outcome === "not-owned") {
        ctx.logger.error(
          { credentialId: rec.id, gateway: b.gateway, nativeId: b.nativeId },
          "a recorded resource no longer carries this credential's mark: left untouched",
        );
      }
    }),
  );
  return results.flatMap((r, i) =>
    r.status === "rejected"
      ? [{ binding: rec.bindings[i]!, error: ctx.asTyped(r.reason, rec.bindings[i]!.gateway) }]
      : [],
  );
}
