/**
 * `credhook expire [--json]`: one expiry pass now (docs/expiry.md), for a deployment without `credhook serve`'s
 * expiry loop — the Lambda handler, or a store no server runs on — from a schedule (cron, EventBridge). It does what
 * the loop's pass does: `credential.expiring` and `credential.expired` once each, then the policy's action.
 */
import type { Command } from "commander";
import type { ExpiryPassResult } from "@credhook/core";
import { CONFIG_OPTION, withRuntime } from "./common.js";
import { EXIT, jsonOut, run } from "./output.js";

/** `credhook expire`'s text: what the pass did and how many credentials are expiring or expired after it. */
export function formatExpiryPass(r: ExpiryPassResult): string {
  if (!r.ran) return "another instance's expiry pass is running: nothing done";
  return `expiry pass: ${r.warned} warned, ${r.expired} expired, ${r.acted} acted on, ${r.failed} failed; now ${r.expiring} expiring, ${r.expiredLive} expired`;
}

/** Registers `credhook expire` on `program`: exit 1 when an action failed (the next pass retries it). */
export function register(program: Command): void {
  program
    .command("expire")
    .description(
      "run one expiry pass now (docs/expiry.md): credential.expiring and credential.expired once each, then notify, disable or revoke as the gateway's policy says — where no `credhook serve` runs it (Lambda: from a schedule); exit 1 when an action failed",
    )
    .option(...CONFIG_OPTION)
    .option("--json", "print the pass's result as JSON")
    .action((opts: { config?: string; json?: boolean }) =>
      run(async () => {
        const result = await withRuntime(opts.config, (runtime) => runtime.orchestrator.expiryPass());
        return {
          out: opts.json ? jsonOut(result) : `${formatExpiryPass(result)}\n`,
          code: result.failed > 0 ? EXIT.error : EXIT.done,
        };
      }),
    );
}
