/**
 * Revoke: every gateway the store knows the credential on, or — when the
 * store does not know the id — each gateway of its type, which revokes only a
 * resource carrying its own mark. Idempotent.
 */
import type { RevokeCredentialsRequest } from "../contract.js";
import type { AppIdentity, RevokeOutcome } from "../provider.js";
import type { CredentialRecord } from "../store.js";
import { revokeBindings, revokeOne } from "./abandoned.js";
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
  if (!found) {
    return ctx.lock.run(`id:${req.credentialType}:${publicId}`, async () => {
      // Unknown to the store (it was lost, or the id was never credhook's): each gateway of the type revokes
      // the id only when the resource carries that gateway's own mark.
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
    });
  }
  return ctx.lock.run(found.appKey, async () => {
    const rec = await ctx.store.get(found.id);
    if (!rec) return { gateways: [], credentialId: found.id };
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
  });
}
