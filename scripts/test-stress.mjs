#!/usr/bin/env node
// `pnpm test:stress [--runs N] [--only test|test:e2e]`: both test tiers (or one) (`pnpm test`, then `pnpm test:e2e`) while a CPU
// hog keeps every core busy — one Node busy loop per core (os.availableParallelism()), or
// `stress-ng --cpu 0` when CREDHOOK_STRESS_HOG=stress-ng (Debian's stress-ng package). The suite
// must pass on a machine that other work loads; this is that machine. N runs in a row (default
// 1; both tiers in each), stopping after the first that fails; exits non-zero when one does. The hogs are ended (their
// process groups) however the run ends.
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const runsArg = process.argv.indexOf("--runs");
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 1;
const onlyArg = process.argv.indexOf("--only");
const scripts = onlyArg > 0 ? [process.argv[onlyArg + 1]] : ["test", "test:e2e"];
if (!Number.isInteger(runs) || runs < 1 || !scripts.every((s) => s === "test" || s === "test:e2e")) {
  process.stderr.write("usage: pnpm test:stress [--runs N] [--only test|test:e2e] (N ≥ 1)\n");
  process.exit(2);
}

/** The hog processes, each leading a process group of its own. */
const hogs = [];
function startHogs() {
  if (process.env.CREDHOOK_STRESS_HOG === "stress-ng") {
    hogs.push(spawn("stress-ng", ["--cpu", "0", "--quiet"], { stdio: "ignore", detached: true }));
  } else {
    for (let i = 0; i < availableParallelism(); i++)
      hogs.push(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore", detached: true }));
  }
  for (const hog of hogs) {
    hog.on("error", (err) => {
      process.stderr.write(`test:stress: the CPU hog could not start: ${err.message}\n`);
      process.exit(2);
    });
  }
  process.stdout.write(`test:stress: ${hogs.length} CPU hog(s) on ${availableParallelism()} core(s)\n`);
}
function endHogs() {
  for (const hog of hogs.splice(0)) {
    try {
      process.kill(-hog.pid, "SIGKILL");
    } catch {}
  }
}
process.on("exit", endHogs);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

/** Runs `pnpm <script>` (the pnpm that runs this script, else npx pnpm@10); its exit code. */
function pnpm(script) {
  const execPath = process.env.npm_execpath;
  const [command, args] = execPath ? [process.execPath, [execPath, script]] : ["npx", ["--yes", "pnpm@10", script]];
  return new Promise((resolve) => {
    // CREDHOOK_TEST_STRESS tells a test that the clocks it measures are those of a loaded machine (see apply-figures).
    const env = { ...process.env, CREDHOOK_TEST_STRESS: "1" };
    const child = spawn(command, args, { cwd: root, stdio: "inherit", env });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

startHogs();
const figures = [];
let status = 0;
for (let run = 1; run <= runs && status === 0; run++) {
  for (const script of scripts) {
    const t0 = Date.now();
    const code = await pnpm(script);
    status ||= code;
    figures.push(`run ${run}/${runs} pnpm ${script}: exit ${code}, ${Math.round((Date.now() - t0) / 1000)} s`);
    process.stdout.write(`test:stress: ${figures.at(-1)}\n`);
  }
}
endHogs();
process.stdout.write(`test:stress: ${status === 0 ? "passed" : "FAILED"} under load:\n  ${figures.join("\n  ")}\n`);
process.exit(status);
