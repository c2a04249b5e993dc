/**
 * Disable and enable: turn a credential off on every gateway it is on, keeping
 * its record and each gateway's resource, or on again (`credhook disable`,
 * `credhook enable`, a secret-scanning alert, expiry). docs/leak-response.md.
 *
 * A disable writes its decision first — the record's `disabled` mark, with a
 * `credential.leaked` event when the key leaked — so the portal's update is
 * refused from that moment, then calls every gateway in parallel; once all
 * confirmed, `credential.disabled` is written with the gateways. An enable
 * calls every gateway first and clears the mark with `credential.enabled`
 * only once all confirmed: a half-done enable stays disabled on the record.
 * Both are idempotent: a retry completes what a failure left.
 */
import { Conflict, PolicyViolation } from "../errors.js";
import type { RevokeOutcome } from "../provider.js";
import type { CredentialRecord } from "../credential-record.js";
import type { OrchestrationContext } from "./context.js";
import { markLeaked } from "./journal.js";
import type { DisableOptions, OperationOutcome } from "./types.js";

/**
 * Turns credential `credentialId` off (`enabled: false`) or on again on every gateway it is bound to.
 * @returns the gateways acted on; `credentialId`
 * @throws NotFound (404) no record with that id (it was revoked)
 * @throws Conflict (409) the credential is not `active` (a create, update or revoke is unfinished, or it was abandoned)
 * @throws PolicyViolation (422) a gateway of the credential cannot turn it off ({@link ProviderCapabilities.disables}):
 * nothing was changed anywhere — revoke it instead
 * @throws Throttled (503) | UpstreamError (502) | UpstreamTimeout (504) from a gateway; the record keeps the decision
 * (a disable's mark stays, an enable's is not cleared) and a retry completes it
 */
export async function setCredentialEnabled(
  ctx: OrchestrationContext,
  credentialId: string,
  enabled: boolean,
  options: DisableOptions = {},
): Promise<OperationOutcome> {
  return ctx.lockedRecord(credentialId, async (rec) => {
    if (rec.status !== "active") {
      throw new Conflict(
        `credential ${credentialId} is ${rec.status}, not active: ${enabled ? "enable" : "disable"} it once its ${rec.status === "abandoned" ? "clean-up" : "operation"} is finished, or revoke it`,
      );
    }
    const gateways = rec.bindings.map((b) => b.gateway);
    const unable = gateways.filter(
      (g) =>
        !ctx.gateway(g).provider.setEnabled ||
        !(ctx.describe(g).capabilities.disables ?? []).includes(rec.credentialType),
    );
    if (unable.length > 0) {
      throw new PolicyViolation(
        `credential ${credentialId} cannot be ${enabled ? "enabled" : "disabled"}: gateway${unable.length > 1 ? "s" : ""} ${unable.map((g) => `'${g}' (${ctx.gateway(g).providerType})`).join(", ")} cannot turn ${rec.credentialType} credentials off and on — revoke it instead`,
      );
    }
    const why = options.reason ? { reason: options.reason } : {};
    if (!enabled) {
      // The decision first, with the leak's event: the portal's update is refused from now on.
      const leaked = options.leaked ? markLeaked(ctx, rec, options.reason) : [];
      if (!rec.disabled || leaked.length > 0) {
        rec.disabled ??= { at: ctx.nowIso(), ...why, gateways: [] };
        rec.updatedAt = ctx.nowIso();
        await ctx.store.save(rec, leaked);
      }
    } else if (!rec.disabled) {
      return { gateways: [], credentialId }; // not disabled: nothing to do
    }
    const failures = await switchAll(ctx, rec, enabled);
    if (failures.length > 0) {
      throw ctx.firstByGatewayOrder(
        failures.map((f) => f.error),
        gateways,
      );
    }
    if (enabled) {
      delete rec.disabled;
      rec.updatedAt = ctx.nowIso();
      await ctx.store.save(rec, [ctx.event("credential.enabled", rec, why)]);
    } else if (rec.disabled!.gateways.length !== gateways.length) {
      rec.disabled!.gateways = gateways;
      rec.updatedAt = ctx.nowIso();
      await ctx.store.save(rec, [ctx.event("credential.disabled", rec, { reason: rec.disabled!.reason ?? "" })]);
    }
    ctx.logger.info(
      { credentialId, gateways, enabled, ...why },
      enabled ? "credential enabled" : "credential disabled",
    );
    return { gateways, credentialId };
  });
}

/** Calls every binding's `setEnabled` in parallel, each with the bounded retries of a compensation; returns the failures. */
async function switchAll(
  ctx: OrchestrationContext,
  rec: CredentialRecord,
  enabled: boolean,
): Promise<Array<{ gateway: string; error: ReturnType<OrchestrationContext["asTyped"]> }>> {
  const results = await Promise.allSettled(
    rec.bindings.map(async (b) => {
      const outcome: RevokeOutcome = await ctx.compensating(async () => {
        try {
          return await ctx.gateway(b.gateway).provider.setEnabled!(ctx.ref(rec, b), enabled);
        } catch (err) {
          throw ctx.asTyped(err, b.gateway);
        }
      });
      if (outcome !== "revoked") {
        ctx.logger.warn(
          { credentialId: rec.id, gateway: b.gateway, nativeId: b.nativeId, outcome },
          outcome === "gone"
            ? "a recorded resource no longer exists on its gateway: nothing to turn off or on there (`credhook reconcile` reports it)"
            : "a recorded resource no longer carries this credential's mark: left untouched",
        );
      }
    }),
  );
  return results.flatMap((r, i) =>
    r.status === "rejected"
      ? [{ gateway: rec.bindings[i]!.gateway, error: ctx.asTyped(r.reason, rec.bindings[i]!.gateway) }]
      : [],
  );
}

/**
 * Refuses the portal's update or replayed create of a disabled credential: it would give out, or extend to
 * new gateways, a key that was turned off on purpose.
 * @throws Conflict (409) naming the credential, since when and why, and the way out
 */
export function assertNotDisabled(rec: CredentialRecord, operation: "update" | "create"): void {
  if (!rec.disabled) return;
  throw new Conflict(
    `credential ${rec.id} of app '${rec.appKey}' is disabled since ${rec.disabled.at}${rec.disabled.reason ? ` (${rec.disabled.reason})` : ""}: its ${operation} is refused until an operator enables it (\`credhook enable\`); revoking it works`,
  );
}
