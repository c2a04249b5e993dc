/**
 * Update: applies the request's ADDED / REMOVED / NONE changes (and a rename)
 * to every gateway of the credential, creates it on gateways newly reached
 * (its key value imported) and removes it from gateways that lost their last
 * API — removal last. A failure rolls back with inverse updates, revokes of
 * what was created, and searches where a create's outcome is unknown.
 */
import { isDeepStrictEqual } from "node:util";
import type { UpdateCredentialsRequest } from "../contract.js";
import { isStoreFailure, PolicyViolation, UpstreamError, type CredhookError } from "../errors.js";
import type { ProviderResources, ProviderUpdateInput } from "../provider.js";
import type { CredentialRecord, GatewayBinding } from "../credential-record.js";
import { appKeyOf, changesBetween, uniq } from "./api-sets.js";
import { revokeMarked, revokeOne } from "./revoke.js";
import type { OrchestrationContext } from "./context.js";
import { planFingerprintsFor } from "../drift.js";
import { type EventGateway, eventGatewaysOf } from "../events.js";
import { checkValueImportable, planUpdate, type UpdatePlan } from "./plan.js";
import { markUnsettled, settleRecord } from "./settle.js";
import type { OperationOutcome } from "./types.js";
import { assertNotDisabled } from "./disable.js";

/** Where an update's gateway calls left things: what the rollback must undo, and what failed. */
interface UpdateAttempt {
  /** Gateways updated (the failed ones too: an update may have applied part of its change), with their binding before. */
  updated: Array<{ gateway: string; before: GatewayBinding }>;
  /** Bindings created on newly reached gateways (a failed create's `partial` too). */
  created: GatewayBinding[];
  /** Newly reached gateways where a failed create's write may still land. */
  uncertain: string[];
  /** Every gateway's failure, typed. */
  failures: CredhookError[];
}

/** Saves the record (with the event of a type when given), one save after the other: {@link OrchestrationContext.serialSaver}. */
type Saver = ReturnType<OrchestrationContext["serialSaver"]>;

/**
 * Updates a credential the store knows (the caller holds the app's lock): see
 * the module comment. The intent (status `pending` with the API sets before
 * and after) is saved before any cloud call; the kept gateways are updated and
 * the new ones created at once, then — when all of that held — the lost
 * gateways are removed; a failure rolls back instead ({@link rollBackUpdate}).
 * @throws Unroutable | PolicyViolation (422) from {@link planUpdate}; InvalidReference (422), Throttled (503), UpstreamError (502), UpstreamTimeout (504) from a gateway, after the rollback
 */
export async function updateKnown(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  req: UpdateCredentialsRequest,
): Promise<OperationOutcome> {
  assertNotDisabled(rec, "update");
  // Late writes of an earlier failed update, now settled: bring those gateways back to the record first.
  if (rec.unsettled) await settleRecord(ctx, rec, true);
  return runUpdatePlan(ctx, rec, planUpdate(ctx, rec, req), req.customCredentials);
}

/**
 * Carries out an update plan on a credential the store knows (the caller holds the app's lock and checked that it is
 * not disabled): the portal's update ({@link updateKnown}) and `credhook apply`'s moves and prunes (move.ts) alike.
 * The key value is read back first when the plan creates the credential on a gateway; the intent is saved before
 * any cloud call; the kept gateways are updated and the new ones created at once, then — when all of that held — the
 * lost gateways are removed; a failure rolls back instead ({@link rollBackUpdate}). The record's dual-homed marks
 * become the plan's, and the `credential.updated` event says where the credential was before when that changed.
 * @param customCredentials the portal's non-secret extras, handed to each kept gateway's update
 * @param rollForward the plan only takes dual-homed grants away (a prune): recovery finishes it when interrupted
 * @throws PolicyViolation (422) the key value cannot be read back or imported where the plan creates it
 * @throws InvalidReference (422), Throttled (503), UpstreamError (502), UpstreamTimeout (504) from a gateway, after the rollback
 */
export async function runUpdatePlan(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  plan: UpdatePlan,
  customCredentials?: UpdateCredentialsRequest["customCredentials"],
  rollForward = false,
): Promise<OperationOutcome> {
  let apiKey: string | undefined;
  if (plan.toCreate.length > 0) {
    apiKey = await readKeyValue(ctx, rec, plan.toCreate);
    checkValueImportable(ctx, plan.toCreate, apiKey);
  }
  const before = eventGatewaysOf(rec);
  const saver = await saveIntent(ctx, rec, plan, rollForward);
  const attempt = await applyUpdate(ctx, rec, plan, apiKey, saver, customCredentials);
  // The store failed or the lock is lost (another instance may act on the app once this one has stopped):
  // stop here, before any further cloud write or record save; the pending record is recovered as an interrupted update.
  const storeFailure = attempt.failures.find(isStoreFailure);
  if (storeFailure) throw storeFailure;
  if (attempt.failures.length > 0) return rollBackUpdate(ctx, rec, plan, attempt, saver);
  return finishUpdate(ctx, rec, plan, saver, before);
}

/**
 * Writes the update's intent before any cloud call: status `pending`, the gateways to create on and remove from,
 * and the API sets before and after (what recovery rolls back to when the process stops midway).
 * @returns the record's saver for the rest of the update
 */
async function saveIntent(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  plan: UpdatePlan,
  rollForward: boolean,
): Promise<Saver> {
  rec.status = "pending";
  rec.pending = {
    op: "update",
    startedAt: ctx.nowIso(),
    createOn: plan.toCreate,
    removeFrom: plan.toRemove,
    previousApis: rec.apis,
    desiredApis: plan.desiredApis,
    ...(plan.dualHomed.size > 0 ? { dualHomed: Object.fromEntries(plan.dualHomed) } : {}),
    ...(rollForward ? { rollForward: true as const } : {}),
  };
  const saver = ctx.serialSaver(rec);
  await saver();
  return saver;
}

/**
 * Updates the credential on every kept gateway and creates it (its key value `apiKey` imported) on every newly
 * reached one, all at once; each binding a call changed or made is saved as it comes. Never throws: every failure
 * is in the returned attempt.
 */
async function applyUpdate(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  plan: UpdatePlan,
  apiKey: string | undefined,
  saver: Saver,
  customCredentials: UpdateCredentialsRequest["customCredentials"],
): Promise<UpdateAttempt> {
  const attempt: UpdateAttempt = { updated: [], created: [], uncertain: [], failures: [] };
  const oldApp = rec.app;
  await Promise.all([
    ...plan.toUpdate.map(async (g) => {
      const b = rec.bindings.find((x) => x.gateway === g)!;
      const input: ProviderUpdateInput = {
        ...ctx.ref(rec, b),
        app: plan.newApp,
        previous: plan.previousGroups.get(g) ?? [],
        desired: plan.desiredGroups.get(g) ?? [],
        changes: plan.changesFor(g),
        ...(plan.renamed ? { previousAppName: oldApp.appName } : {}),
        ...(customCredentials ? { customCredentials } : {}),
      };
      try {
        const gateway = ctx.gateway(g);
        const res = await gateway.provider.update(input);
        attempt.updated.push({ gateway: g, before: { ...b } });
        const resourcesChanged = !isDeepStrictEqual(b.resources, res.resources);
        b.resources = res.resources;
        // The plans' definitions it now has: a plan changed in the config is current again after an update.
        const planFingerprints = planFingerprintsFor(gateway, input.desired);
        if (planFingerprints) b.planFingerprints = planFingerprints;
        else delete b.planFingerprints;
        // Unchanged resources (the embedded provider's, a no-op): the durable intent already says the same; the final save follows.
        if (resourcesChanged) await saver();
      } catch (err) {
        attempt.failures.push(ctx.asTyped(err, g));
        // It may have applied part of the change (a plan attached, another not): the inverse update undoes that too.
        attempt.updated.push({ gateway: g, before: { ...b } });
      }
    }),
    ...plan.toCreate.map(async (g) => {
      try {
        const gateway = ctx.gateway(g);
        const cred = await gateway.provider.create({
          credentialId: rec.id,
          credentialType: rec.credentialType,
          app: plan.newApp,
          apis: plan.desiredGroups.get(g)!,
          apiKeyValue: apiKey!,
        });
        const planFingerprints = planFingerprintsFor(gateway, plan.desiredGroups.get(g)!);
        const binding = {
          gateway: g,
          nativeId: cred.nativeId,
          resources: cred.resources,
          ...(planFingerprints ? { planFingerprints } : {}),
        };
        rec.bindings.push(binding);
        attempt.created.push(binding);
        await saver();
      } catch (err) {
        const typed = ctx.asTyped(err, g);
        attempt.failures.push(typed);
        if (typed.partial) {
          const binding = {
            gateway: g,
            nativeId: typed.partial.nativeId,
            resources: typed.partial.resources as ProviderResources,
          };
          rec.bindings.push(binding);
          attempt.created.push(binding);
        }
        if (ctx.mayHaveLanded(typed)) attempt.uncertain.push(g);
      }
    }),
  ]);
  return attempt;
}

/**
 * A failed update's end: undoes what it did ({@link compensateUpdate}), marks the gateways where one of its writes
 * may still land unsettled (brought back to the record once the settle window ends, see settle.ts), and saves the
 * record active again with the API set it had.
 * @throws the failure of the first gateway in the plan's order (always)
 */
async function rollBackUpdate(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  plan: UpdatePlan,
  attempt: UpdateAttempt,
  saver: Saver,
): Promise<never> {
  const notUndone = await compensateUpdate(ctx, rec, plan, attempt);
  // Where a write of this update may still land (its outcome unknown, or its rollback failed), the gateway
  // is brought back to the record once the settle window ends (see settle.ts).
  const lateOn = (g: string) => attempt.failures.some((f) => f.gateway === g && ctx.mayHaveLanded(f));
  const unsure = uniq([...attempt.updated.map((u) => u.gateway).filter(lateOn), ...attempt.uncertain, ...notUndone]);
  markUnsettled(
    ctx,
    rec,
    unsure.map((g) => ({ gateway: g, attempted: plan.desiredGroups.get(g) ?? [] })),
    Date.parse(rec.pending!.startedAt),
  );
  rec.status = "active";
  delete rec.pending;
  await saver();
  throw ctx.firstByGatewayOrder(attempt.failures, plan.desiredGateways);
}

/**
 * A successful update's end: removes the credential from the gateways that lost their last API — last, since it
 * cannot be undone — and saves the record with its new app and API set and the `credential.updated` event.
 * @throws the first removal's error, after the save (the binding stays: the next update or revoke retries it)
 */
async function finishUpdate(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  plan: UpdatePlan,
  saver: Saver,
  before: EventGateway[],
): Promise<OperationOutcome> {
  const { toCreate, toRemove, toUpdate, newApp } = plan;
  const removeFailures: CredhookError[] = [];
  await Promise.all(
    toRemove.map(async (g) => {
      const b = rec.bindings.find((x) => x.gateway === g)!;
      try {
        await ctx.gateway(g).provider.revoke(ctx.ref(rec, b));
        rec.bindings = rec.bindings.filter((x) => x !== b);
      } catch (err) {
        removeFailures.push(ctx.asTyped(err, g));
      }
    }),
  );
  rec.app = newApp;
  rec.apis = plan.desiredApis;
  // Without a slug the app's identity is developer + name: a rename moves it, unless another credential holds the new one.
  const newKey = appKeyOf(newApp);
  if (newKey !== rec.appKey && !(await ctx.store.findByAppKey(newKey, rec.credentialType))) rec.appKey = newKey;
  markDualHomed(ctx, rec, plan.dualHomed);
  rec.status = "active";
  delete rec.pending;
  // Where it was before, when its gateways (or their dual-homed marks) changed: a move, a prune, a gateway reached or left.
  const where = (gs: EventGateway[]) => gs.map((g) => `${g.gateway}${g.dualHomed ? "*" : ""}`).join(",");
  const moved = where(before) !== where(eventGatewaysOf(rec));
  await saver("credential.updated", moved ? { previousGateways: before } : {}); // the record and its event, in one transaction
  if (removeFailures.length > 0) throw removeFailures[0]!; // the binding stays: the next update or revoke retries
  const gateways = uniq([...toUpdate, ...toCreate, ...toRemove]);
  // At debug: the server's request line carries the same fields (one line per request).
  ctx.logger.debug({ credentialId: rec.id, gateways, created: toCreate, removed: toRemove }, "credential updated");
  return {
    gateways,
    credentialId: rec.id,
    ...(toCreate.length > 0 ? { created: toCreate } : {}),
    ...(toRemove.length > 0 ? { removed: toRemove } : {}),
  };
}

/**
 * Sets each binding's dual-homed mark to `dualHomed`'s API ids for its gateway (in memory): a new mark starts now, a
 * kept one keeps its start, a binding with none left loses it.
 */
function markDualHomed(ctx: OrchestrationContext, rec: CredentialRecord, dualHomed: Map<string, string[]>): void {
  for (const b of rec.bindings) {
    const apiIds = dualHomed.get(b.gateway);
    if (apiIds && apiIds.length > 0) b.dualHomed = { apiIds, since: b.dualHomed?.since ?? ctx.nowIso() };
    else delete b.dualHomed;
  }
}

/**
 * The credential's API key value, read back from one of its gateways (to import it on `targets`).
 * @throws PolicyViolation (422) none of its gateways can read the value back
 * @throws the reading gateway's error
 */
export async function readKeyValue(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  targets: string[],
): Promise<string> {
  const reader = rec.bindings.find((b) => ctx.gateway(b.gateway).provider.capabilities.readsBackSecret);
  if (!reader) {
    throw new PolicyViolation(
      `the credential cannot be extended to gateway ${targets.map((t) => `'${t}'`).join(", ")}: none of its gateways (${rec.bindings.map((b) => b.gateway).join(", ")}) can read its key value back`,
      { messages: ["revoke the credential and create it again to get one key for all the app's APIs"] },
    );
  }
  try {
    const { apiKey } = await ctx.gateway(reader.gateway).provider.readSecret!(ctx.ref(rec, reader));
    if (!apiKey) throw new UpstreamError(`gateway '${reader.gateway}' returned no key value`);
    return apiKey;
  } catch (err) {
    throw ctx.asTyped(err, reader.gateway);
  }
}

/**
 * Undoes a failed update: inverse updates on every gateway it updated (the
 * failed one too: it may have applied part of the change), revokes of what it
 * created on new gateways, and — where a create's outcome is unknown — a
 * search for the credential's mark there, revoking what is found. Each call
 * has the request's bounded retries; what still fails is logged.
 * @returns the gateways where the rollback failed (the caller marks them unsettled)
 */
async function compensateUpdate(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  { previousGroups, desiredGroups, newApp }: UpdatePlan,
  { updated, created, uncertain }: UpdateAttempt,
): Promise<string[]> {
  const oldApp = rec.app; // the record keeps its app until the update succeeds
  const gatewaysInOrder = [...updated.map((u) => u.gateway), ...created.map((b) => b.gateway), ...uncertain];
  const results = await Promise.allSettled([
    ...updated.map(async ({ gateway, before }) => {
      const b = rec.bindings.find((x) => x.gateway === gateway)!;
      const previous = previousGroups.get(gateway) ?? [];
      const desired = desiredGroups.get(gateway) ?? [];
      const res = await ctx.compensating(() =>
        ctx.gateway(gateway).provider.update({
          ...ctx.ref(rec, b),
          app: oldApp,
          previous: desired,
          desired: previous,
          changes: changesBetween(desired, previous),
          ...(newApp.appName !== oldApp.appName ? { previousAppName: newApp.appName } : {}),
        }),
      );
      b.resources = res.resources ?? before.resources;
    }),
    ...created.map(async (b) => {
      await ctx.compensating(() => revokeOne(ctx, b.gateway, ctx.ref(rec, b)));
      rec.bindings = rec.bindings.filter((x) => x !== b);
    }),
    ...uncertain.map((g) =>
      revokeMarked(
        ctx,
        g,
        rec,
        desiredGroups.get(g) ?? [],
        true,
        created.filter((b) => b.gateway === g).map((b) => b.nativeId),
      ),
    ),
  ]);
  const failed = results.flatMap((r, i) =>
    r.status === "rejected" ? [{ gateway: gatewaysInOrder[i]!, reason: r.reason as unknown }] : [],
  );
  if (failed.length > 0) {
    ctx.logger.error(
      {
        credentialId: rec.id,
        errors: failed.map((f) => `${f.gateway}: ${ctx.asTyped(f.reason, f.gateway).messages[0]}`),
      },
      "update rollback incomplete: those gateways are brought back to the record by the sweep, the next update and `credhook reconcile`",
    );
  }
  return uniq(failed.map((f) => f.gateway));
}
