/**
 * The record journal: how a credential record's state changes are written —
 * the intent of a create before any cloud call, and the turn of a failed or
 * interrupted create into an `abandoned` record.
 */
import { newRecordId, type CredentialRecord } from "../store.js";
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
