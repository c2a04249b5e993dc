/**
 * Recovery of interrupted operations (a crash, a killed instance): a `pending`
 * create becomes an abandoned create and is cleaned up; a `pending` update is
 * rolled back to the API set before it; a `revoking` record is revoked and
 * deleted. Run by `credhook reconcile`, by `credhook serve`'s reconcile loop
 * for records no live instance holds, and before a new request of the app.
 */
import { UpstreamUnavailable } from "../errors.js";
import type { GatewayApi, OwnedResource } from "../provider.js";
import type { CredentialRecord, GatewayApiWithGateway, GatewayBinding } from "../credential-record.js";
import { changesBetween, groupByGateway, heldByGateway, uniq } from "./api-sets.js";
import { cleanupAbandoned } from "./abandoned.js";
import { findByCredential, revokeBindings } from "./revoke.js";
import type { OrchestrationContext } from "./context.js";
import { markAbandoned } from "./journal.js";
import { eventGatewaysOf } from "../events.js";
import { markUnsettled, sweep } from "./settle.js";
import type { ReconcileEntry, ReconcileLoopResult } from "./types.js";

/**
 * Finishes a record a crash left `pending` or `revoking` (`credhook reconcile`, the reconcile loop, and
 * {@link finishBeforeUse}): an interrupted create is abandoned and cleaned up, an interrupted revoke finished, an
 * interrupted update rolled back to the API set before it.
 * @param dryRun say what would be done (the entry's `action`), do nothing
 * @returns what was (or would be) done, the gateways concerned and the errors met (secret-free)
 */
export async function finishUnfinished(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  dryRun: boolean,
): Promise<ReconcileEntry> {
  const op = rec.status === "revoking" ? "revoke" : (rec.pending?.op ?? "create");
  const entry: ReconcileEntry = { credentialId: rec.id, appKey: rec.appKey, op, action: "", gateways: [], errors: [] };
  if (op === "create") await finishInterruptedCreate(ctx, rec, entry, dryRun);
  else if (op === "revoke") await finishInterruptedRevoke(ctx, rec, entry, dryRun);
  else await rollBackInterruptedUpdate(ctx, rec, entry, dryRun);
  return entry;
}

/**
 * Resources of `rec`'s credential that `gateways` hold but the record does not (the crash came between the cloud
 * call and the store write), found by its mark over `apis`. A gateway whose search fails adds nothing.
 */
async function strays(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  gateways: string[],
  apis: GatewayApiWithGateway[],
): Promise<GatewayBinding[]> {
  const out: GatewayBinding[] = [];
  const groups = groupByGateway(apis);
  for (const g of gateways) {
    for (const r of await findByCredential(ctx, g, rec, groups.get(g) ?? []).catch(() => [] as OwnedResource[])) {
      if (!rec.bindings.some((b) => b.gateway === g && b.nativeId === r.nativeId))
        out.push({ gateway: g, nativeId: r.nativeId, resources: {} });
    }
  }
  return out;
}

/**
 * An interrupted create: the portal never received it, and writes in flight at the crash may still land. Abandons
 * it (with its `credential.abandoned` event) and runs one cleanup pass; fills `entry`.
 */
async function finishInterruptedCreate(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  entry: ReconcileEntry,
  dryRun: boolean,
): Promise<void> {
  const uncertain = rec.pending?.createOn ?? rec.bindings.map((b) => b.gateway);
  entry.gateways = uniq([...rec.bindings.map((b) => b.gateway), ...uncertain]);
  if (dryRun) {
    entry.action = `would abandon it: revoke ${rec.bindings.length} recorded resource(s) and search ${uncertain.length} gateway(s) for its mark`;
    return;
  }
  markAbandoned(
    rec,
    "interrupted create (the process stopped before it finished)",
    uncertain,
    ctx.settleUntil(uncertain, Date.parse(rec.pending?.startedAt ?? rec.createdAt)),
    ctx.nowIso(),
  );
  await ctx.store.save(rec, [ctx.event("credential.abandoned", rec, { reason: rec.abandoned!.reason })]);
  const result = await cleanupAbandoned(ctx, rec, false);
  entry.errors.push(...result.errors);
  entry.action = result.deleted
    ? "abandoned, cleaned up, record deleted"
    : result.errors.length > 0
      ? "abandoned; cleanup incomplete, run reconcile again"
      : `abandoned and cleaned up; record kept until ${rec.abandoned!.settleUntil} (a late write may still land)`;
}

/**
 * An interrupted revoke: revokes every binding and every stray the bound gateways hold, then deletes the record with
 * its `credential.revoked` event — or, when a revoke failed, keeps what is left for the next pass; fills `entry`.
 */
async function finishInterruptedRevoke(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  entry: ReconcileEntry,
  dryRun: boolean,
): Promise<void> {
  const bound = rec.bindings.map((b) => b.gateway);
  const bindings = [...rec.bindings, ...(await strays(ctx, rec, bound, rec.apis))];
  entry.gateways = uniq(bindings.map((b) => b.gateway));
  if (dryRun) {
    entry.action = `would revoke on ${bindings.length} gateway resource(s) and delete the record`;
    return;
  }
  const left = await revokeBindings(ctx, { ...rec, bindings });
  entry.errors.push(...left.map((l) => `${l.binding.gateway}: ${l.error.messages[0]}`));
  if (left.length === 0) {
    await ctx.store.delete(rec.id, [
      ctx.event("credential.revoked", rec, {
        gateways: bindings.map((b) => ({ gateway: b.gateway, nativeId: b.nativeId, plans: [] })),
        reason: "an interrupted revoke, finished",
      }),
    ]);
    entry.action = "revoked and deleted";
  } else {
    rec.bindings = left.map((l) => l.binding);
    rec.updatedAt = ctx.nowIso();
    await ctx.store.save(rec);
    entry.action = "partly revoked; run reconcile again";
  }
}

/**
 * An interrupted update: rolled back to the API set before it — what it created on newly reached gateways (recorded
 * or found by its mark) is revoked, the kept gateways are updated back — and, once nothing failed, the record is
 * active again with every gateway it touched unsettled (a write in flight at the crash may still land); fills `entry`.
 */
async function rollBackInterruptedUpdate(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  entry: ReconcileEntry,
  dryRun: boolean,
): Promise<void> {
  const pending = rec.pending!;
  if (pending.rollForward) return finishInterruptedPrune(ctx, rec, entry, dryRun);
  const createdHere = [
    ...rec.bindings.filter((b) => pending.createOn.includes(b.gateway)),
    ...(await strays(ctx, rec, pending.createOn, pending.desiredApis ?? rec.apis)),
  ];
  const keep = rec.bindings.filter((b) => !pending.createOn.includes(b.gateway));
  entry.gateways = uniq([...createdHere, ...keep].map((b) => b.gateway));
  if (dryRun) {
    entry.action = `would roll the update back: revoke on ${createdHere.length} new gateway resource(s), restore ${keep.length}`;
    return;
  }
  const left = await revokeBindings(ctx, { ...rec, bindings: createdHere });
  entry.errors.push(...left.map((l) => `${l.binding.gateway}: ${l.error.messages[0]}`));
  // What each gateway granted before and was to grant after, dual-homed APIs included (a move keeps them).
  const oldGroups = heldByGateway(rec.apis, rec.bindings);
  const newGroups = heldByGateway(
    pending.desiredApis ?? rec.apis,
    rec.bindings.map((b) => {
      const apiIds = pending.dualHomed?.[b.gateway];
      return { gateway: b.gateway, ...(apiIds ? { dualHomed: { apiIds, since: pending.startedAt } } : {}) };
    }),
  );
  await grantOn(ctx, rec, keep, newGroups, oldGroups, entry);
  rec.bindings = [...keep, ...left.map((l) => l.binding)];
  if (entry.errors.length === 0) {
    rec.status = "active";
    delete rec.pending;
    // Writes in flight at the crash may still land after this rollback: every gateway it touched settles later.
    markUnsettled(
      ctx,
      rec,
      uniq([...pending.createOn, ...keep.map((b) => b.gateway)]).map((g) => ({
        gateway: g,
        attempted: newGroups.get(g) ?? [],
      })),
      Date.parse(pending.startedAt),
    );
    entry.action = "update rolled back";
  } else {
    entry.action = "rollback incomplete; run reconcile again";
  }
  rec.updatedAt = ctx.nowIso();
  await ctx.store.save(rec);
}

/**
 * Updates each of `bindings` from the API set `from` gives its gateway to the one `to` gives it, all at once; a
 * failure goes to `entry.errors` (secret-free).
 * @returns the bindings updated
 */
async function grantOn(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  bindings: GatewayBinding[],
  from: Map<string, GatewayApi[]>,
  to: Map<string, GatewayApi[]>,
  entry: ReconcileEntry,
): Promise<GatewayBinding[]> {
  const done: GatewayBinding[] = [];
  await Promise.all(
    bindings.map(async (b) => {
      const previous = from.get(b.gateway) ?? [];
      const desired = to.get(b.gateway) ?? [];
      try {
        const res = await ctx.gateway(b.gateway).provider.update({
          ...ctx.ref(rec, b),
          previous,
          desired,
          changes: changesBetween(previous, desired),
        });
        b.resources = res.resources;
        done.push(b);
      } catch (err) {
        entry.errors.push(`${b.gateway}: ${ctx.asTyped(err, b.gateway).messages[0]}`);
      }
    }),
  );
  return done;
}

/**
 * An interrupted prune (`credhook apply --prune`): finished, since a removal cannot be undone — the credential revoked
 * on each gateway it was leaving entirely, the moved APIs taken off the gateways that keep other APIs of it, the
 * dual-homed marks cleared, with the `credential.updated` event; what fails stays for the next pass. Fills `entry`.
 */
async function finishInterruptedPrune(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  entry: ReconcileEntry,
  dryRun: boolean,
): Promise<void> {
  const pending = rec.pending!;
  const leaving = rec.bindings.filter((b) => pending.removeFrom.includes(b.gateway));
  const keep = rec.bindings.filter((b) => !pending.removeFrom.includes(b.gateway));
  entry.gateways = rec.bindings.filter((b) => b.dualHomed).map((b) => b.gateway);
  if (dryRun) {
    entry.action = `would finish the prune: revoke on ${leaving.length} gateway(s), remove moved APIs on ${entry.gateways.length - leaving.length}`;
    return;
  }
  const before = eventGatewaysOf(rec);
  const left = await revokeBindings(ctx, { ...rec, bindings: leaving });
  entry.errors.push(...left.map((l) => `${l.binding.gateway}: ${l.error.messages[0]}`));
  const dual = keep.filter((b) => b.dualHomed);
  const done = await grantOn(ctx, rec, dual, heldByGateway(rec.apis, rec.bindings), groupByGateway(rec.apis), entry);
  for (const b of done) delete b.dualHomed;
  rec.bindings = [...keep, ...left.map((l) => l.binding)];
  rec.updatedAt = ctx.nowIso();
  if (entry.errors.length > 0) {
    entry.action = "prune incomplete; run reconcile again";
    await ctx.store.save(rec);
    return;
  }
  rec.status = "active";
  delete rec.pending;
  entry.action = "prune finished";
  await ctx.store.save(rec, [ctx.event("credential.updated", rec, { previousGateways: before })]);
}

/**
 * Finishes a record a crash left `pending` or `revoking`, the way
 * `reconcile` would, before a new request uses it (an interrupted create
 * becomes `abandoned` and is cleaned up on its own).
 * @returns the record, active again (an interrupted update rolled back), or undefined when it is gone
 * @throws the first gateway error when it cannot be finished now
 */
export async function finishBeforeUse(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
): Promise<CredentialRecord | undefined> {
  const entry = await finishUnfinished(ctx, rec, false);
  // An interrupted create is now an abandoned record that carries its own cleanup: it never blocks the app's new request.
  if (entry.errors.length > 0 && entry.op !== "create") {
    throw new UpstreamUnavailable(
      `an earlier, interrupted ${entry.op} of this credential could not be finished: ${entry.errors[0]}`,
      5,
    );
  }
  ctx.logger.warn(
    { credentialId: rec.id, op: entry.op, action: entry.action },
    "finished an interrupted operation before this request",
  );
  const after = await ctx.store.get(rec.id);
  return after?.status === "active" ? after : undefined;
}

/**
 * One pass of `credhook serve`'s reconcile loop, run by one instance at a
 * time (the store's lock `credhook:reconcile`): every `pending` or
 * `revoking` record whose app lock is free — no live instance is working on
 * it, so its instance died — is finished as `credhook reconcile` would,
 * whatever its age; a record whose app a live instance holds is left alone.
 * Then the abandoned creates are swept. No drift listing (that stays with
 * `credhook reconcile`: it lists whole accounts).
 */
export async function reconcileLoopPass(ctx: OrchestrationContext): Promise<ReconcileLoopResult> {
  const turn = await ctx.lock.tryRun("credhook:reconcile", async () => {
    const result: ReconcileLoopResult = {
      ran: true,
      finished: [],
      inFlight: 0,
      swept: { swept: 0, deleted: 0, revoked: 0, settled: 0 },
    };
    for (const rec of await ctx.store.listUnfinished(new Date(ctx.now() + 1000).toISOString())) {
      const r = await ctx.lock.tryRun(rec.appKey, async () => {
        const fresh = await ctx.store.get(rec.id);
        if (!fresh || (fresh.status !== "pending" && fresh.status !== "revoking")) return undefined;
        return finishUnfinished(ctx, fresh, false);
      });
      if (!r.ran) result.inFlight += 1;
      else if (r.value) {
        result.finished.push(r.value);
        ctx.logger.warn(
          { credentialId: r.value.credentialId, op: r.value.op, action: r.value.action, errors: r.value.errors },
          "reconcile loop finished an interrupted operation",
        );
      }
    }
    result.swept = await sweep(ctx);
    return result;
  });
  return turn.ran
    ? turn.value
    : { ran: false, finished: [], inFlight: 0, swept: { swept: 0, deleted: 0, revoked: 0, settled: 0 } };
}
