/**
 * Create: the intent is recorded before any cloud call; the gateway that
 * generates its own key value (if any) goes first and its value is imported
 * on the others, which run in parallel; any failure abandons the create
 * ({@link abandonCreate}). A create of an app that has a live credential is
 * a replay: its API set is brought to the request's first, as an update.
 */
import type { CreateCredentialsRequest, UpdateCredentialsRequest } from "../contract.js";
import { isStoreFailure, UpstreamError, type CredhookError } from "../errors.js";
import { secretFingerprint } from "../events.js";
import { changesForReplay } from "./api-sets.js";
import { abandonCreate, sweepApp } from "./abandoned.js";
import { assertNotRetired, type OrchestrationContext } from "./context.js";
import { planFingerprintsFor } from "../drift.js";
import type { CreatePlan } from "./plan.js";
import { createIntent } from "./journal.js";
import { finishBeforeUse } from "./recovery.js";
import { replay, responseOf } from "./replay.js";
import { updateKnown } from "./update.js";
import type { CreateOutcome } from "./types.js";
import { assertNotDisabled } from "./disable.js";

/**
 * Creates the app's credential on every gateway the plan names, or returns
 * the live one of a replayed create (its API set brought to the request's
 * first). The caller holds the app's lock.
 * @throws InvalidReference (422) | Throttled (503) | UpstreamError (502) | UpstreamTimeout (504) from a gateway, after the create was abandoned
 * @throws UpstreamUnavailable (503) an earlier, interrupted operation of the app could not be finished
 */
export async function createOrReplay(
  ctx: OrchestrationContext,
  plan: CreatePlan,
  req: CreateCredentialsRequest,
): Promise<CreateOutcome> {
  const { appKey, credentialType } = plan;
  // What an earlier, failed create of this app may have left: clean it up first (best effort; the sweep retries).
  let existing = await sweepApp(ctx, appKey, credentialType);
  if (existing && existing.status !== "active") {
    // Left unfinished by a crash (requests of this app in this process hold the lock): finish it first.
    existing = await finishBeforeUse(ctx, existing);
  }
  if (!existing) return createFresh(ctx, plan, req.customCredentials);
  assertNotDisabled(existing, "create");
  // A replayed create whose API set differs applies the difference first, as an update would.
  const changes = changesForReplay(existing.apis, plan.apis);
  if (changes.length > 0) {
    await updateKnown(ctx, existing, {
      credentialType,
      ...(credentialType === "API_KEY" ? { apiKeyId: existing.publicId } : { clientId: existing.publicId }),
      appName: req.appName,
      developer: req.developer,
      apis: changes,
    } as UpdateCredentialsRequest);
    existing = (await ctx.store.get(existing.id)) ?? existing;
  }
  return replay(ctx, existing);
}

/**
 * A first create: intent recorded, then each gateway's provider called with
 * its slice (the key-generating gateway first); any failure abandons it.
 * @throws PolicyViolation (422) a gateway of the plan is retired: nothing written
 * @throws the first failing gateway's error, in the plan's gateway order
 */
async function createFresh(
  ctx: OrchestrationContext,
  plan: CreatePlan,
  customCredentials: Record<string, unknown> | undefined,
): Promise<CreateOutcome> {
  const { app, credentialType, groups, generator } = plan;
  const gatewayNames = [...groups.keys()];
  assertNotRetired(ctx, gatewayNames);
  const rec = createIntent(plan, ctx.nowIso());
  await ctx.store.insert(rec); // intent, before any cloud call
  const saver = ctx.serialSaver(rec);
  let apiKey: string | undefined;
  let clientSecret: string | undefined;
  const extras: Record<string, string> = {};
  const createOn = async (gateway: string, value: string | undefined) => {
    const gw = ctx.gateway(gateway);
    try {
      const cred = await gw.provider.create({
        credentialId: rec.id,
        credentialType,
        app,
        apis: groups.get(gateway)!,
        ...(value !== undefined ? { apiKeyValue: value, ...(generator ? {} : { apiKeyValueGenerated: true }) } : {}),
        ...(customCredentials ? { customCredentials } : {}),
      });
      const planFingerprints = planFingerprintsFor(gw, groups.get(gateway)!);
      rec.bindings.push({
        gateway,
        nativeId: cred.nativeId,
        resources: cred.resources,
        ...(planFingerprints ? { planFingerprints } : {}),
      });
      // With one gateway the final save follows at once and records the binding; a crash before it leaves
      // the pending intent, whose gateway recovery searches by the credential's mark, as after a crash mid-call.
      if (gatewayNames.length > 1) await saver();
      for (const [k, v] of Object.entries(cred.customCredentials ?? {})) extras[k] ??= v;
      return cred;
    } catch (err) {
      throw ctx.asTyped(err, gateway);
    }
  };

  const failures: CredhookError[] = [];
  if (generator) {
    // The gateway that generates its own key value goes first; its value is imported elsewhere.
    try {
      apiKey = (await createOn(generator, undefined)).apiKey;
    } catch (err) {
      failures.push(err as CredhookError);
    }
  } else if (credentialType === "API_KEY") {
    apiKey = ctx.generateApiKey();
  }
  if (failures.length === 0) {
    const rest = gatewayNames.filter((g) => g !== generator);
    const results = await Promise.allSettled(
      rest.map((g) => createOn(g, credentialType === "API_KEY" ? apiKey : undefined)),
    );
    results.forEach((r) => {
      if (r.status === "rejected") failures.push(r.reason as CredhookError);
      else if (credentialType === "CLIENT_CREDENTIALS") clientSecret = r.value.clientSecret;
      else if (r.value.apiKey !== undefined && r.value.apiKey !== apiKey) {
        failures.push(new UpstreamError(`gateway returned a different API key value than the one imported`));
      }
    });
  }
  // The store failed or the lock is lost: stop before any further write; the pending record is recovered as an interrupted create.
  const storeFailure = failures.find(isStoreFailure);
  if (storeFailure) throw storeFailure;
  if (failures.length > 0) {
    await abandonCreate(ctx, rec, failures);
    throw ctx.firstByGatewayOrder(failures, gatewayNames);
  }
  const primary = rec.bindings.find((b) => b.gateway === gatewayNames[0])!;
  rec.publicId = primary.nativeId;
  rec.status = "active";
  delete rec.pending;
  if (Object.keys(extras).length > 0) rec.customCredentials = extras;
  const secret = apiKey ?? clientSecret;
  if (secret) rec.keyFingerprint = secretFingerprint(secret);
  await saver("credential.created"); // the record and its event, in one transaction
  // At debug: the server's request line carries the same fields (one line per request).
  ctx.logger.debug({ credentialId: rec.id, gateways: gatewayNames }, "credential created");
  return {
    response: responseOf(rec, apiKey, clientSecret),
    replayed: false,
    gateways: gatewayNames,
    credentialId: rec.id,
  };
}
