/**
 * `credhook adopt FILE [--dry-run] [--json]`: brings credentials made outside credhook under it — marks each on its
 * gateway and records it (docs/multi-cloud.md); the file is read and validated by operations-cli.ts.
 */
import type { Command } from "commander";
import type { AdoptionResult } from "@credhook/core";
import { readAdoptionFile } from "../operations-cli.js";
import { CONFIG_OPTION, withRuntime } from "./common.js";
import { EXIT, type ExitCode, jsonOut, linesOut, run } from "./output.js";

/**
 * The exit code of an adoption's `results`: 1 when an entry was skipped for a problem (one credhook holds already is
 * done), 2 in a dry run with entries it would adopt, else 0.
 */
function exitCodeOf(results: AdoptionResult[], dryRun: boolean): ExitCode {
  if (results.some((r) => r.action === "skipped" && !r.already)) return EXIT.error;
  return dryRun && results.some((r) => r.action === "would adopt") ? EXIT.changes : EXIT.done;
}

/** `credhook adopt`'s text: how many were (or would be) adopted, then a line per entry. */
function formatAdoption(results: AdoptionResult[], dryRun: boolean): string[] {
  const adopted = results.filter((r) => r.action !== "skipped").length;
  return [
    `${dryRun ? "[dry run] would adopt" : "adopted"} ${adopted} of ${results.length}`,
    ...results.map(
      (r) =>
        `  - ${r.publicId}${r.gateway ? ` (gateway ${r.gateway})` : ""}: ${r.action}${r.reason ? `: ${r.reason}` : ""}${r.credentialId ? ` as credential ${r.credentialId}` : ""}`,
    ),
  ];
}

/** Registers `credhook adopt` on `program`. */
export function register(program: Command): void {
  program
    .command("adopt")
    .description(
      "bring credentials made outside credhook (by hand, or by the webhook credhook replaces) under credhook: mark them on their gateway and record them",
    )
    .argument(
      "<file>",
      "JSON file: an array of { credentialType, apiKeyId | clientId, appName, developer, appSlug?, apis: [{ id, usagePlans: [{ id }] }] }",
    )
    .option(...CONFIG_OPTION)
    .option("--dry-run", "check and report what would be adopted; change nothing")
    .option("--json", "print the results as JSON")
    .action((file: string, opts: { config?: string; dryRun?: boolean; json?: boolean }) =>
      run(async () => {
        const entries = await readAdoptionFile(file);
        const dryRun = !!opts.dryRun;
        const results = await withRuntime(opts.config, (runtime) => runtime.orchestrator.adopt(entries, { dryRun }));
        return {
          out: opts.json ? jsonOut(results) : linesOut(formatAdoption(results, dryRun)),
          code: exitCodeOf(results, dryRun),
        };
      }),
    );
}
