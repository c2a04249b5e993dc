/**
 * `credhook reconcile [--dry-run] [--older-than S] [--json]`: finishes what a crash left unfinished, cleans up
 * abandoned creates, revokes garbage and reports drift (docs/multi-cloud.md); the report's text is
 * operations-cli.ts's.
 */
import type { Command } from "commander";
import type { ReconcileReport } from "@credhook/core";
import { formatReconcileReport } from "../operations-cli.js";
import { startTracing } from "../tracing.js";
import { CONFIG_OPTION, withRuntime } from "./common.js";
import { EXIT, type ExitCode, jsonOut, linesOut, run } from "./output.js";

/**
 * The exit code of `report`: 1 when something failed — an unfinished operation, a clean-up or a bringing back with
 * errors, a gateway that could not be listed or whose garbage could not be revoked; 2 when it found drift (a resource
 * no record explains, which reconcile never deletes) or, in a dry run, anything it would do; else 0.
 * @param unlisted the gateways whose provider cannot list resources at all (no `listOwned`): reported, not a failure
 */
function exitCodeOf(report: ReconcileReport, unlisted: ReadonlySet<string>): ExitCode {
  const entries = [...report.unfinished, ...report.abandoned, ...report.unsettled];
  if (entries.some((e) => e.errors.length > 0) || report.unlistable.some((u) => !unlisted.has(u))) return EXIT.error;
  if (report.orphans.length > 0) return EXIT.changes;
  return report.dryRun && entries.length + report.garbage.length > 0 ? EXIT.changes : EXIT.done;
}

/** Registers `credhook reconcile` on `program`. */
export function register(program: Command): void {
  program
    .command("reconcile")
    .description(
      "finish credentials left pending by a crash (complete revokes, abandon and clean up interrupted creates, roll back interrupted updates), clean up abandoned creates, report drift; exit 2 when it found drift (--dry-run: also what it would do), 1 when a gateway could not be listed or acted on",
    )
    .option(...CONFIG_OPTION)
    .option("--dry-run", "report what would be done; change nothing")
    .option(
      "--older-than <seconds>",
      "only records last written longer ago than this (leaves in-flight requests alone)",
      "60",
    )
    .option("--json", "print the report as JSON")
    .action((opts: { config?: string; dryRun?: boolean; olderThan: string; json?: boolean }) =>
      run(async () => {
        const olderThanS = Number(opts.olderThan);
        if (!Number.isFinite(olderThanS) || olderThanS < 0)
          throw new Error(`--older-than must be a number of seconds ≥ 0 (got '${opts.olderThan}')`);
        const tracing = await startTracing();
        try {
          return await withRuntime(opts.config, async (runtime) => {
            const report = await runtime.orchestrator.reconcile({
              dryRun: !!opts.dryRun,
              olderThanMs: olderThanS * 1000,
            });
            const unlisted = new Set([...runtime.gateways].filter(([, g]) => !g.provider.listOwned).map(([n]) => n));
            return {
              out: opts.json ? jsonOut(report) : linesOut(formatReconcileReport(report, olderThanS)),
              code: exitCodeOf(report, unlisted),
            };
          });
        } finally {
          await tracing?.shutdown();
        }
      }),
    );
}
