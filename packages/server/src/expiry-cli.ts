/**
 * `credhook expire [--json]`: one expiry pass now (docs/expiry.md), for a deployment without `credhook serve`'s
 * expiry loop — the Lambda handler, or a store no server runs on — from a schedule (cron, EventBridge). It does what
 * the loop's pass does: `credential.expiring` and `credential.expired` once each, then the policy's action.
 */
import type { Command } from "commander";
import type { ExpiryPassResult } from "@credhook/core";
import { destination } from "pino";
import type { CredentialCommandDeps } from "./inspect.js";
import { createLogger } from "./logging.js";
import { createRuntime } from "./runtime.js";

/** `credhook expire`'s text: what the pass did and how many credentials are expiring or expired after it. */
export function formatExpiryPass(r: ExpiryPassResult): string {
  if (!r.ran) return "another instance's expiry pass is running: nothing done";
  return `expiry pass: ${r.warned} warned, ${r.expired} expired, ${r.acted} acted on, ${r.failed} failed; now ${r.expiring} expiring, ${r.expiredLive} expired`;
}

/** Registers `credhook expire` on the `credhook` program: exits 1 when an action failed (the next pass retries it). */
export function registerExpiryCommand(program: Command, deps: CredentialCommandDeps): void {
  program
    .command("expire")
    .description(
      "run one expiry pass now (docs/expiry.md): credential.expiring and credential.expired once each, then notify, disable or revoke as the gateway's policy says — where no `credhook serve` runs it (Lambda: from a schedule); exit 1 when an action failed",
    )
    .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
    .option("--json", "print the pass's result as JSON")
    .action(async (opts: { config?: string; json?: boolean }) => {
      try {
        const config = await deps.loadConfig(opts.config);
        const runtime = await createRuntime(config, { logger: createLogger("warn", destination(2)) });
        let result: ExpiryPassResult;
        try {
          result = await runtime.orchestrator.expiryPass();
        } finally {
          await runtime.close();
        }
        process.stdout.write(opts.json ? `${JSON.stringify(result, null, 2)}\n` : `${formatExpiryPass(result)}\n`);
        process.exit(result.failed > 0 ? 1 : 0);
      } catch (err) {
        deps.reportAndExit(err);
      }
    });
}
