/**
 * `credhook apply [--dry-run] [--prune] [--limit N] [--json]` (docs/gateway-migration.md): brings the stored
 * credentials to the config. `--dry-run` lists, per credential that differs, what would change (the APIs to move with
 * their gateways and plans, the plans changed, the gateways missing, the moved credentials waiting for `--prune`),
 * which credentials cannot move without a new key and why, the counts, and the provider calls with the time the
 * gateways' declared write rates allow. Without it, the change is carried out (core's `Orchestrator.runApply`): each
 * moved API's credential created where its route now names with the same key value, kept on the gateway it leaves
 * (dual-homed) until `--prune` removes it there, changed plans applied in place — a progress bar on a terminal's
 * stderr, one JSON line per credential on stdout when it is not a terminal (or with `--json`), and the exit code 0
 * done, 2 partly done (credentials left: not movable, or `--limit` stopped it), 1 failed.
 */
import type { Command } from "commander";
import type { ApplyEntry, ApplyPlan, ApplyResult, Orchestrator, RunApplySummary } from "@credhook/core";
import { CONFIG_OPTION, withRuntime } from "./common.js";
import { EXIT, type ExitCode, jsonOut, linesOut, run, written } from "./output.js";

/** What one credential's line says: its id, app and what differs. */
function entryLines(e: ApplyEntry): string[] {
  const lines = [`${e.credentialId} ${e.app.developer}/${e.app.appName} (${e.credentialType} ${e.publicId}):`];
  for (const m of e.moves) {
    const plans = m.usagePlans.length > 0 ? ` plans ${m.usagePlans.join(", ")}` : "";
    lines.push(`  move ${m.apiId}: ${m.from} -> ${m.to ?? "(no route)"}${plans}`);
  }
  if (e.cannotMove) lines.push(`  cannot move without a new key: ${e.cannotMove}`);
  for (const c of e.changedPlans) lines.push(`  plan ${c.planId} changed on ${c.gateway}: update in place`);
  for (const g of e.missingGateways) lines.push(`  on gateway ${g}, which the config lacks`);
  for (const p of e.prunePending)
    lines.push(`  prune pending: ${p.apiIds.join(", ")} still on ${p.gateway} (dual-homed; --prune removes it)`);
  return lines;
}

/** The plan as text: each entry, the counts, the calls and time floor per gateway. */
export function formatApplyPlan(plan: ApplyPlan): string[] {
  const { counts } = plan;
  const lines = plan.entries.flatMap(entryLines);
  lines.push(
    `${plan.entries.length} of ${plan.live} live credential${plan.live === 1 ? "" : "s"} differ from the config: movable ${counts.movable}, not movable without a new key ${counts.notMovable}, plans changed ${counts.plansChanged}, on a gateway the config lacks ${counts.gatewayMissing}, prune pending ${counts.prunePending}`,
  );
  for (const g of plan.estimate) {
    const calls = Object.entries(g.calls)
      .map(([op, n]) => `${op}=${n}`)
      .join(" ");
    const time =
      g.floorS === undefined
        ? "no declared write rate"
        : `at ${g.writesPerSecond} writes/s: at least ${g.floorS.toFixed(1)} s`;
    lines.push(`  gateway ${g.gateway}: ${calls} (${time})`);
  }
  if (plan.floorS !== undefined)
    lines.push(`estimated time: at least ${plan.floorS.toFixed(1)} s (gateways work in parallel, each at its quota)`);
  return lines;
}

/** One credential's result as a line of text. */
function resultLine(r: ApplyResult): string {
  const what =
    r.outcome === "not-movable"
      ? `cannot move without a new key: ${r.reason}`
      : r.outcome === "left" || r.outcome === "failed"
        ? `${r.outcome}: ${r.reason}`
        : [
            ...r.steps.map((s) =>
              s === "moved"
                ? `moved to ${r.created?.join(", ") || "the gateway its route names"}`
                : s === "pruned"
                  ? `removed from ${r.removed?.join(", ") || "the gateways it left"}`
                  : "plans updated in place",
            ),
            ...(r.dualHomed ? [`dual-homed on ${r.dualHomed.join(", ")} until --prune`] : []),
          ].join("; ") || "nothing to do";
  return `${r.credentialId} ${r.app.developer}/${r.app.appName}: ${what}`;
}

/** The run's counts in one line. */
function summaryLine(s: RunApplySummary, elapsedS: number): string {
  const o = s.outcomes;
  return `moved ${o.moved}, pruned ${o.pruned}, plans updated ${o["plans-updated"]}, not movable ${o["not-movable"]}, left ${o.left}, failed ${o.failed}${s.limited ? " (--limit reached: run again for the rest)" : ""}; ${s.paused} pause(s) for a gateway's breaker or quota; ${elapsedS.toFixed(1)} s`;
}

/** A one-line progress bar on a terminal's stderr (`\r`, redrawn at most every 100 ms and at the end). */
function progressBar(total: number): { tick(done: number, failed: number): void; end(): void } {
  let last = 0;
  const started = Date.now();
  const draw = (done: number, failed: number) => {
    const width = 30;
    const filled = total === 0 ? width : Math.round((done / total) * width);
    const rate = done / Math.max(0.001, (Date.now() - started) / 1000);
    process.stderr.write(
      `\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} failed ${failed} · ${rate.toFixed(1)}/s `,
    );
  };
  return {
    tick(done, failed) {
      if (Date.now() - last < 100 && done < total) return;
      last = Date.now();
      draw(done, failed);
    },
    end: () => process.stderr.write("\n"),
  };
}

/**
 * Carries `plan`'s changes out ({@link Orchestrator.runApply}), reporting each credential as it is done: JSON lines on
 * stdout when it is not a terminal or with `json`, text otherwise; a progress bar on a terminal's stderr.
 * @returns the exit code: 1 when a credential failed, 2 when credentials are left (not movable, left, `--limit`), else 0
 */
async function carryOut(
  orchestrator: Orchestrator,
  plan: ApplyPlan,
  opts: { prune: boolean; limit: number | undefined; json: boolean },
): Promise<ExitCode> {
  const json = opts.json || !process.stdout.isTTY;
  const actionable = plan.entries.filter(
    (e) =>
      e.moves.length + e.changedPlans.length + e.missingGateways.length > 0 ||
      (opts.prune && e.prunePending.length > 0),
  ).length;
  const bar = process.stderr.isTTY ? progressBar(Math.min(actionable, opts.limit ?? actionable)) : undefined;
  const started = Date.now();
  let done = 0;
  let failed = 0;
  let out = Promise.resolve();
  const summary = await orchestrator.runApply({
    prune: opts.prune,
    ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
    onResult: (r) => {
      done += 1;
      if (r.outcome === "failed") failed += 1;
      const line = json ? JSON.stringify(r) : resultLine(r);
      out = out.then(() => written(process.stdout, `${line}\n`));
      bar?.tick(done, failed);
    },
  });
  await out;
  bar?.end();
  const elapsedS = (Date.now() - started) / 1000;
  await written(
    process.stdout,
    `${json ? JSON.stringify({ summary: { ...summary, elapsedS } }) : summaryLine(summary, elapsedS)}\n`,
  );
  const o = summary.outcomes;
  if (o.failed > 0) return EXIT.error;
  return o["not-movable"] + o.left > 0 || summary.limited ? EXIT.changes : EXIT.done;
}

/** Registers `credhook apply` on `program`. */
export function register(program: Command): void {
  program
    .command("apply")
    .description(
      "bring the stored credentials to the config: --dry-run lists what differs per credential (moves, plans, missing gateways, prunes pending), what cannot move without a new key, the counts and an estimate of the calls and time; without it, moves are carried out (same key value on the new gateway, kept on the old one until --prune) and changed plans applied in place; exit 0 done, 2 partly done or (--dry-run) something found, 1 failed",
    )
    .option(...CONFIG_OPTION)
    .option("--dry-run", "list what would change; change nothing")
    .option(
      "--prune",
      "also remove each moved credential from the gateway it left (moved in this run or an earlier one)",
    )
    .option("--limit <n>", "at most this many credentials, oldest first (a canary batch)")
    .option(
      "--json",
      "print the plan as JSON (--dry-run), or one JSON line per credential (also when stdout is not a terminal)",
    )
    .action((opts: { config?: string; dryRun?: boolean; prune?: boolean; limit?: string; json?: boolean }) =>
      run(async () => {
        const limit = opts.limit === undefined ? undefined : Number(opts.limit);
        if (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
          throw new Error(`--limit must be a whole number ≥ 1 (got '${opts.limit}')`);
        return withRuntime(opts.config, async (runtime) => {
          const plan = await runtime.orchestrator.planApply({
            ...(opts.prune ? { prune: true } : {}),
            ...(limit !== undefined ? { limit } : {}),
          });
          if (opts.dryRun) {
            return {
              out: opts.json ? jsonOut(plan) : linesOut(formatApplyPlan(plan)),
              code: plan.entries.length > 0 ? EXIT.changes : EXIT.done,
            };
          }
          return {
            out: "",
            code: await carryOut(runtime.orchestrator, plan, { prune: !!opts.prune, limit, json: !!opts.json }),
          };
        });
      }),
    );
}
