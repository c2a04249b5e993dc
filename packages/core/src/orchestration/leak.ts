/**
 * Reporting a leak without acting on a gateway: the `notify` policy of a secret-scanning alert
 * (docs/leak-response.md). The record's `leakedAt` is set and a `credential.leaked` event written in the same
 * store write (the transactional outbox), once per credential — as `disable.ts` and `revoke.ts` do when they act
 * on a leak — and nothing changes on any gateway: the key keeps working until an operator or a sink acts.
 */
import type { OrchestrationContext } from "./context.js";
import { markLeaked } from "./journal.js";
import type { OperationOutcome } from "./types.js";

/** Why a leak is reported ({@link reportLeaked}). */
export interface LeakOptions {
  /** Why, in words, secret-free (where the key was found): carried by the `credential.leaked` event. */
  reason?: string;
}

/** What {@link reportLeaked} did: no gateway is touched (`gateways` is empty). */
export interface LeakOutcome extends OperationOutcome {
  /** True when this report wrote the `credential.leaked` event; false when the credential had been reported before. */
  announced: boolean;
  /** ISO 8601 time the key was first reported leaked (the record's `leakedAt`). */
  leakedAt: string;
}

/**
 * Records that credential `credentialId`'s key leaked, under its app's lock: sets the record's `leakedAt` and
 * writes a `credential.leaked` event with it (one store write), unless the leak was reported before (by an alert,
 * `credhook revoke|disable --reason leaked`): then nothing is written. Any record state is accepted (a credential
 * whose revoke is unfinished leaked all the same). Calls no gateway.
 * @throws NotFound (404) no record with that id (it was revoked)
 * @throws StoreUnavailable (503) | LockLost (503) from the store
 */
export async function reportLeaked(
  ctx: OrchestrationContext,
  credentialId: string,
  options: LeakOptions = {},
): Promise<LeakOutcome> {
  return ctx.lockedRecord(credentialId, async (rec) => {
    const leaked = markLeaked(ctx, rec, options.reason);
    if (leaked.length === 0) return { gateways: [], credentialId, announced: false, leakedAt: rec.leakedAt! };
    rec.updatedAt = rec.leakedAt!;
    await ctx.store.save(rec, leaked);
    ctx.logger.info(
      { credentialId, ...(options.reason ? { reason: options.reason } : {}) },
      "credential reported leaked (no gateway changed)",
    );
    return { gateways: [], credentialId, announced: true, leakedAt: rec.leakedAt! };
  });
}
