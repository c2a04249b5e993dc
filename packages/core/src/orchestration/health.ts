/** Health: the store and every gateway, checked in parallel. */
import { isCredhookError, isStoreFailure, StoreUnavailable, UpstreamUnavailable } from "../errors.js";
import type { OrchestrationContext } from "./context.js";
import type { OperationOutcome } from "./types.js";

/** The secret-free detail of a failure: a store failure's second message (`store.postgres: …`), else the first. */
function detailOf(err: unknown): string {
  if (!isCredhookError(err)) return "unavailable";
  return (isStoreFailure(err) ? err.messages[1] : undefined) ?? err.messages[0] ?? "unavailable";
}

/**
 * Checks the store and every gateway in parallel (a gateway whose circuit breaker is open
 * answers at once, without a call). A gateway check that failed because of the store (its
 * shared rate-limit slot could not be booked) is the store's problem, not the gateway's.
 * @throws StoreUnavailable (503) when the store failed, naming it first, then the gateways that failed
 * @throws UpstreamUnavailable (503) naming every gateway that failed
 */
export async function health(ctx: OrchestrationContext): Promise<OperationOutcome> {
  const names = [...ctx.gateways.keys()];
  const [store, ...gateways] = await Promise.allSettled([
    ctx.store.health(),
    ...names.map((n) => ctx.gateway(n).provider.health()),
  ]);
  const storeProblems = new Set<string>();
  if (store!.status === "rejected") storeProblems.add(detailOf(store!.reason));
  const problems = gateways.flatMap((r, i) => {
    if (r.status === "fulfilled") return [];
    if (isStoreFailure(r.reason)) {
      storeProblems.add(detailOf(r.reason));
      return [];
    }
    return [`gateway '${names[i]}': ${detailOf(r.reason)}`];
  });
  if (storeProblems.size > 0) {
    const [first, ...more] = [...storeProblems];
    throw new StoreUnavailable(first!, 5, { messages: [...more, ...problems] });
  }
  if (problems.length > 0) throw new UpstreamUnavailable(problems[0]!, 5, { messages: problems.slice(1) });
  return { gateways: names };
}
