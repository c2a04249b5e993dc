/**
 * Credentials credhook did not make, or no longer knows: an update of an id
 * the store lost is recorded again only when the gateway finds its own mark
 * on the resource; `credhook adopt` brings a resource made elsewhere under
 * credhook explicitly, never from a portal request.
 */
import type { UpdateCredentialsRequest } from "../contract.js";
import { isCredhookError, NotFound } from "../errors.js";
import type { AppIdentity, ProviderResources } from "../provider.js";
import { newRecordId, type CredentialRecord, type GatewayApiWithGateway } from "../credential-record.js";
import { appKeyOf, applyChanges, groupByGateway, uniq } from "./api-sets.js";
import type { OrchestrationContext } from "./context.js";
import { routeApis } from "./plan.js";
import { updateKnown } from "./update.js";
import type { AdoptionRequest, AdoptionResult, OperationOutcome } from "./types.js";

/**
 * Update of a credential the store does not know (the store was lost or
 * restored from an old backup): find it by the request's id on the gateway
 * its APIs route to and, when the resource carries that gateway's mark (it
 * was credhook's), record it again. A resource without the mark is not
 * credhook's: 404, and the operator brings it under credhook explicitly
 * with `credhook adopt`.
 */
export async function adoptAndUpdate(
  ctx: OrchestrationContext,
  req: UpdateCredentialsRequest,
  publicId: string,
): Promise<OperationOutcome> {
  const again = await ctx.store.findByPublicId(req.credentialType, publicId);
  if (again) return updateKnown(ctx, again, req);
  const unknown = new NotFound(`credential ${req.credentialType} '${publicId}' is not known to credhook`);
  if (req.apis.length === 0) throw unknown;
  const routes = ctx.router.resolveAll(uniq(req.apis.map((a) => a.id)));
  const gateways = uniq([...routes.values()]);
  if (gateways.length > 1) throw unknown;
  const gateway = gateways[0]!;
  const gw = ctx.gateway(gateway);
  if (gw.credentialType !== req.credentialType) throw unknown;
  const previous: GatewayApiWithGateway[] = req.apis
    .filter((c) => c.action !== "ADDED")
    .map((c) => ({
      id: c.id,
      gateway,
      usagePlans: (c.usagePlans ?? []).filter((p) => p.action !== "ADDED").map((p) => p.id),
    }));
  const desired = applyChanges(previous, req.apis, () => gateway);
  const app: AppIdentity = {
    appName: req.appName ?? publicId,
    developer: req.developer ?? "",
    ...(req.appSlug ? { appSlug: req.appSlug } : {}),
  };
  let result;
  try {
    result = await gw.provider.update({
      credentialId: "",
      credentialType: req.credentialType,
      nativeId: publicId,
      resources: {},
      app,
      previous: groupByGateway(previous).get(gateway) ?? [],
      desired: groupByGateway(desired).get(gateway) ?? [],
      changes: req.apis.map((c) => ({
        id: c.id,
        action: c.action,
        usagePlans: (c.usagePlans ?? []).map((p) => ({ ...p })),
      })),
    });
  } catch (err) {
    const typed = ctx.asTyped(err, gateway);
    if (typed.status === 404) {
      throw new NotFound(
        `credential ${req.credentialType} '${publicId}' is not known to credhook, and gateway '${gateway}' holds no credential of credhook's with that id`,
        {
          cause: err,
          gateway,
          messages: ["a credential made outside credhook is brought under it explicitly, with `credhook adopt`"],
        },
      );
    }
    throw typed;
  }
  const resources = result.resources;
  const markedId = result.credentialId && !(await ctx.store.get(result.credentialId)) ? result.credentialId : undefined;
  const id = markedId ?? newRecordId();
  const now = ctx.nowIso();
  const recovered: CredentialRecord = {
    id,
    credentialType: req.credentialType,
    appKey: appKeyOf(app),
    app,
    publicId,
    status: "active",
    apis: desired,
    bindings: [{ gateway, nativeId: publicId, resources, ...(markedId ? {} : { markId: "" }) }],
    createdAt: now,
    updatedAt: now,
  };
  await ctx.store.insert(recovered, [
    ctx.event("credential.adopted", recovered, {
      reason: "unknown to the store, found on its gateway under its mark, recorded again",
    }),
  ]);
  ctx.logger.warn(
    { credentialId: id, gateway },
    "credential unknown to the store was found on its gateway, under its mark, and recorded again",
  );
  return { gateways: [gateway], credentialId: id };
}

/**
 * Brings credentials made outside credhook (by hand, or by the webhook
 * credhook replaces) under it — explicitly, never from a portal request:
 * for each entry, the gateway its APIs route to puts credhook's mark on the
 * resource ({@link Provider.adopt}) and an `active` record is stored, so
 * later updates and revokes from the portal reach it.
 * Entries the store already knows, whose app already has a credential, whose
 * APIs span several gateways, or whose gateway cannot adopt are skipped with
 * a reason; a gateway's refusal (NotFound, Conflict: another mark) too.
 * @param options.dryRun check and report; change nothing
 * @throws only store failures; per-entry problems are results
 */
export async function adopt(
  ctx: OrchestrationContext,
  entries: AdoptionRequest[],
  options: { dryRun?: boolean } = {},
): Promise<AdoptionResult[]> {
  const out: AdoptionResult[] = [];
  for (const e of entries) {
    const publicId = (e.credentialType === "API_KEY" ? e.apiKeyId : e.clientId) ?? "";
    const target = adoptionTarget(ctx, e, publicId);
    if ("reason" in target) {
      out.push({ publicId, action: "skipped", ...target });
      continue;
    }
    const app: AppIdentity = {
      appName: e.appName,
      developer: e.developer,
      ...(e.appSlug ? { appSlug: e.appSlug } : {}),
    };
    out.push(await ctx.lock.run(appKeyOf(app), () => adoptOne(ctx, e, publicId, app, target, options.dryRun ?? false)));
  }
  return out;
}

/** Where an adoption goes: the one gateway an entry's APIs route to, and the APIs with their gateway. */
interface AdoptionTarget {
  gateway: string;
  apis: GatewayApiWithGateway[];
}

/**
 * The gateway `e` is adopted on, or why it is skipped: its id is missing, its APIs route nowhere or to several
 * gateways, or that gateway issues another credential type or cannot adopt.
 */
function adoptionTarget(
  ctx: OrchestrationContext,
  e: AdoptionRequest,
  publicId: string,
): AdoptionTarget | { reason: string; gateway?: string } {
  if (!publicId) return { reason: `${e.credentialType === "API_KEY" ? "apiKeyId" : "clientId"} is missing` };
  let apis: GatewayApiWithGateway[];
  try {
    apis = routeApis(ctx, e.apis);
  } catch (err) {
    return { reason: isCredhookError(err) ? err.messages.join("; ") : String(err) };
  }
  const gateways = uniq(apis.map((a) => a.gateway));
  if (gateways.length !== 1) {
    return {
      reason: `its APIs route to ${gateways.length} gateways (${gateways.join(", ")}); adopt a credential of one gateway at a time`,
    };
  }
  const gateway = gateways[0]!;
  const gw = ctx.gateway(gateway);
  if (gw.credentialType !== e.credentialType)
    return { reason: `gateway '${gateway}' issues ${gw.credentialType}, not ${e.credentialType}`, gateway };
  if (!gw.provider.adopt)
    return { reason: `gateway '${gateway}' (provider ${gw.providerType}) cannot adopt existing credentials`, gateway };
  return { gateway, apis };
}

/**
 * Adopts one entry (the caller holds its app's lock): skipped when credhook already holds the credential or the
 * app has one of its type; else the gateway puts credhook's mark on the resource and an `active` record is stored
 * with its `credential.adopted` event. A gateway's refusal is a skip with its reason.
 * @throws only store failures
 */
async function adoptOne(
  ctx: OrchestrationContext,
  e: AdoptionRequest,
  publicId: string,
  app: AppIdentity,
  { gateway, apis }: AdoptionTarget,
  dryRun: boolean,
): Promise<AdoptionResult> {
  const appKey = appKeyOf(app);
  if (await ctx.store.findByPublicId(e.credentialType, publicId))
    return { publicId, action: "skipped", gateway, reason: "credhook already holds this credential", already: true };
  if (await ctx.store.findByAppKey(appKey, e.credentialType))
    return {
      publicId,
      action: "skipped",
      gateway,
      reason: `the app already has a ${e.credentialType} credential in credhook`,
    };
  if (dryRun) return { publicId, action: "would adopt", gateway };
  const id = newRecordId();
  let resources: ProviderResources;
  try {
    ({ resources } = await ctx.gateway(gateway).provider.adopt!({
      credentialId: id,
      credentialType: e.credentialType,
      nativeId: publicId,
      resources: {},
      app,
      apis: groupByGateway(apis).get(gateway)!,
    }));
  } catch (err) {
    return { publicId, action: "skipped", gateway, reason: ctx.asTyped(err, gateway).messages.join("; ") };
  }
  const now = ctx.nowIso();
  const adopted: CredentialRecord = {
    id,
    credentialType: e.credentialType,
    appKey,
    app,
    publicId,
    status: "active",
    apis,
    bindings: [{ gateway, nativeId: publicId, resources }],
    createdAt: now,
    updatedAt: now,
  };
  await ctx.store.insert(adopted, [ctx.event("credential.adopted", adopted, { reason: "credhook adopt" })]);
  ctx.logger.info({ credentialId: id, gateway, publicId }, "existing credential adopted");
  return { publicId, action: "adopted", gateway, credentialId: id };
}
