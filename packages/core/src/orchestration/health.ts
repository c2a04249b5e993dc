/** Health: the store and every gateway, checked in parallel. */
import { isCredhookError, UpstreamUnavailable } from "../errors.js";
import type { OrchestrationContext } from "./context.js";
import type { OperationOutcome } from "./types.js";

/**
 * Checks the store and every gateway in parallel.
 * @throws UpstreamUnavailable (503) naming every part that failed
 */
export async function health(ctx: OrchestrationContext): Promise<OperationOutcome> {
  const names = [...ctx.gateways.keys()];
  const results = await Promise.allSettled([ctx.store.health(), ...names.map((n) => ctx.gateway(n).provider.health())]);
  const problems = results.flatMap((r, i) => {
    if (r.status === "fulfilled") return [];
    const what = i === 0 ? "store" : `gateway '${names[i - 1]}'`;
    const reason = isCredhookError(r.reason) ? r.reason.messages[0] : "unavailable";
    return [`${what}: ${reason}`];
  });
  if (problems.length > 0) throw new UpstreamUnavailable(problems[0]!, 5, { messages: problems.slice(1) });
  return { gateways: names };
}
