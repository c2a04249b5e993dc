/**
 * `credhook apply [--dry-run] [--prune] [--limit N] [--json]` (docs/gateway-migration.md): brings the stored
 * credentials to the config. `--dry-run` lists, per credential that differs, what would change (the APIs to move with
 * their gateways and plans, the plans changed, the gateways missing), which credentials cannot move without a new key
 * and why, the counts, and the provider calls with the time the gateways' declared write rates allow. Without it, the
 * plans whose definition changed are applied in place (each credential through the portal's update path); moving an
 * API to another gateway is listed, not carried out yet (see the runbook).
 */
import type { Command } from "commander";
import type { ApplyEntry, ApplyPlan } from "@credhook/core";
import { CONFIG_OPTION, withRuntime } from "./common.js";
import { EXIT, type ExitCode, jsonOut, linesOut, run } from "./output.js";

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
  return lines;
}

/** The plan as text: each entry, the counts, the calls and time floor per gateway. */
export function formatApplyPlan(plan: ApplyPlan): string[] {
  const { counts } = plan;
  const lines = plan.entries.flatMap(entryLines);
  lines.push(
    `${plan.entries.length} of ${plan.live} live credential${plan.live === 1 ? "" : "s"} differ from the config: movable ${counts.movable}, not movable without a new key ${counts.notMovable}, plans changed ${counts.plansChanged}, on a gateway the config lacks ${counts.gatewayMissing}`,
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

/** Registers `credhook apply` on `program`. */
export function register(program: Command): void {
  program
    .command("apply")
    .description(
      "bring the stored credentials to the config: --dry-run lists what differs per credential (moves, plans, missing gateways), what cannot move without a new key, the counts and an estimate of the calls and time; without it, changed plans are applied in place; exit 2 when something is left to do (--dry-run: found)",
    )
    .option(...CONFIG_OPTION)
    .option("--dry-run", "list what would change; change nothing")
    .option("--prune", "with --dry-run: count the removal of each moved credential from the gateway it leaves")
    .option("--limit <n>", "at most this many credentials, oldest first (a canary batch)")
    .option("--json", "print the plan (and the results) as JSON")
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
          const results: Array<{ credentialId: string; outcome: "updated" | "failed"; error?: string }> = [];
          for (const e of plan.entries.filter((x) => x.changedPlans.length > 0)) {
            try {
              await runtime.orchestrator.applyPlanChanges(e.credentialId);
              results.push({ credentialId: e.credentialId, outcome: "updated" });
            } catch (err) {
              results.push({ credentialId: e.credentialId, outcome: "failed", error: (err as Error).message });
            }
          }
          const left = plan.entries.filter((e) => e.moves.length > 0 || e.missingGateways.length > 0);
          const code: ExitCode = results.some((r) => r.outcome === "failed")
            ? EXIT.error
            : left.length > 0
              ? EXIT.changes
              : EXIT.done;
          const lines = [
            ...results.map((r) =>
              r.outcome === "updated"
                ? `${r.credentialId}: plans updated in place`
                : `${r.credentialId}: failed: ${r.error}`,
            ),
            ...left.map(
              (e) =>
                `${e.credentialId}: ${e.cannotMove ? `cannot move without a new key: ${e.cannotMove}` : "to move: not carried out by this version (docs/gateway-migration.md)"}`,
            ),
            `plans updated ${results.filter((r) => r.outcome === "updated").length}, failed ${results.filter((r) => r.outcome === "failed").length}, left ${left.length}`,
          ];
          return { out: opts.json ? jsonOut({ plan, results }) : linesOut(lines), code };
        });
      }),
    );
}
