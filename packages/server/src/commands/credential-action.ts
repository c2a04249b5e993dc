/**
 * What `credhook revoke`, `disable` and `enable` share: the same options (`--fingerprint F | --app A`, `--reason`,
 * `--json`), each matching credential acted on through the orchestrator on every gateway at once (core's
 * `Orchestrator.actOnCredentials`), and the same ending. Each is idempotent: run again, it answers that the credential
 * is so already — also once a revoke deleted its record, from the audit trail — and exits 0.
 */
import type { Command } from "commander";
import type { CredentialAction, CredentialActionResult } from "@credhook/core";
import { formatActionResults } from "../credential-views.js";
import { CONFIG_OPTION, withRuntime } from "./common.js";
import { EXIT, jsonOut, linesOut, run } from "./output.js";

/**
 * Registers the command `action` (`revoke`, `disable` or `enable`) on `program`, described by `description`: exit 0
 * when every matching credential is so now (or was already), 1 when one failed or nothing matches (and no revoke of
 * it is in the audit trail).
 */
export function registerCredentialAction(program: Command, action: CredentialAction, description: string): void {
  program
    .command(action)
    .description(description)
    .option(...CONFIG_OPTION)
    .option("--fingerprint <fp>", "the credential whose key has this fingerprint (sha256:…)")
    .option("--app <app>", "the app's credentials: its slug, its name, or its app key")
    .option(
      "--reason <reason>",
      action === "enable"
        ? "why, in words the event carries"
        : "why: `leaked` (emits credential.leaked), or words the events carry",
    )
    .option("--json", "print the results as JSON")
    .action((opts: { config?: string; fingerprint?: string; app?: string; reason?: string; json?: boolean }) =>
      run(async () => {
        const query = {
          ...(opts.fingerprint ? { fingerprint: opts.fingerprint } : {}),
          ...(opts.app ? { app: opts.app } : {}),
        };
        const how = { leaked: opts.reason === "leaked", ...(opts.reason ? { reason: opts.reason } : {}) };
        const results: CredentialActionResult[] = await withRuntime(opts.config, (runtime) =>
          runtime.orchestrator.actOnCredentials(action, query, how),
        );
        return {
          out: opts.json ? jsonOut(results) : linesOut(formatActionResults(action, results)),
          code: results.length > 0 && results.every((r) => r.outcome !== "failed") ? EXIT.done : EXIT.error,
        };
      }),
    );
}
