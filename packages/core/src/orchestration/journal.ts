/**
 * The record journal: how a credential record's state changes are written —
 * the intent of a create before any cloud call, the turn of a failed or
 * interrupted create into an `abandoned` record, and a leak's first report.
 */
import type { CredentialEvent } from "../events.js";
import { newRecordId, type CredentialRecord } from "../credential-record.js";
import type { OrchestrationContext } from "./context.js";
import type { CreatePlan } from "./plan.js";

/**
 * The record of a create about to start (status `pending`, no binding yet,
 * the gateways it will create on): stored before any cloud call, so a crash
 * at any later point leaves something for recovery to find.
 * @param now - the time of the intent (ISO 8601, {@link OrchestrationContext.nowIso})
 */
export function createIntent(plan: CreatePlan, now: string): CredentialRecord {
  const gateways = [...plan.groups.keys()];
  return {
    id: newRecordId(),
    credentialType: plan.credentialType,
    appKey: plan.appKey,
    app: plan.app,
    publicId: "",
    status: "pending",
    apis: plan.apis,
    bindings: [],
    pending: {
      op: "create",
      startedAt: now,
      createOn: gateways,
      removeFrom: [],
      previousApis: [],
      desiredApis: plan.apis,
    },
    createdAt: now,
    updatedAt: now,
  };
}

/**
 * Turns `rec` into an abandoned create (in memory): searched on `uncertain`
 * until `settleUntil` (ISO 8601, from {@link OrchestrationContext.settleUntil}), as of `now`
 * (ISO 8601, {@link OrchestrationContext.nowIso}).
 */
export function markAbandoned(
  rec: CredentialRecord,
  reason: string,
  uncertain: string[],
  settleUntil: string,
  now: string,
): void {
  rec.status = "abandoned";
  delete rec.pending;
  rec.abandoned = { at: now, reason, uncertain, settleUntil, attempts: 0 };
  rec.updatedAt = now;
}

/**
 * A leak reported for `rec` (`credhook revoke|disable --reason leaked`, a secret-scanning alert): the first time,
 * sets the record's `leakedAt` (in memory) and returns its `credential.leaked` event, for the store write that
 * carries the change; after that, nothing — one `credential.leaked` per credential however often it is reported.
 * @param reason carried by the event, when given
 */
export function markLeaked(ctx: OrchestrationContext, rec: CredentialRecord, reason?: string): CredentialEvent[] {
  if (rec.leakedAt) return [];
  rec.leakedAt = ctx.nowIso();
  return [ctx.event("credential.leaked", rec, reason ? { reason } : {})];
}
