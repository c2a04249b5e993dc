// No process outlives a failing test: a vitest of its own runs fixtures/leak, whose one test starts
// `credhook serve` through the shared helper (children.ts) and then fails; once that run exits,
// the serve process is gone, and no process names its data dir. The same fixture without the
// teardown (children-setup.ts) leaves the process running, which shows the check can fail.
import { expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnTracked } from "./children.js";
import { PROCESS_START_MS } from "./helpers.js";

const VITEST = fileURLToPath(new URL("../../../node_modules/vitest/vitest.mjs", import.meta.url));
const FIXTURE_CONFIG = fileURLToPath(new URL("./fixtures/leak/vitest.config.ts", import.meta.url));

/** Runs the fixture in a vitest of its own (data dir `dir`, `env` added); its exit code and output. */
async function runFixture(
  dir: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string }> {
  const run = spawnTracked(process.execPath, [VITEST, "run", "--config", FIXTURE_CONFIG], {
    env: { ...process.env, CREDHOOK_LEAK_DIR: dir, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  run.stdout!.on("data", (d) => (out += String(d)));
  run.stderr!.on("data", (d) => (out += String(d)));
  const code = await new Promise<number | null>((resolve) => run.once("exit", resolve));
  return { code, out };
}

/** True while process `pid` exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The processes whose command line or environment-free arguments name `dir`. */
const processesNaming = (dir: string) =>
  spawnSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((l) => l.includes(dir));

it(
  "a failing test that started `credhook serve` leaves no credhook process once its run ends",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-leak-"));
    const { code, out } = await runFixture(dir);
    expect(code, out).toBe(1);
    expect(out).toContain("failing on purpose");
    const pid = Number(readFileSync(join(dir, "serve.pid"), "utf8"));
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(false);
    expect(processesNaming(dir)).toEqual([]);
  },
  2 * PROCESS_START_MS,
);

it(
  "without the teardown the same failing test leaves its `credhook serve` running (what the check above would catch)",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-leak-"));
    const { code, out } = await runFixture(dir, { CREDHOOK_LEAK_NO_TEARDOWN: "1" });
    expect(code, out).toBe(1);
    const pid = Number(readFileSync(join(dir, "serve.pid"), "utf8"));
    try {
      expect(alive(pid)).toBe(true);
      expect(processesNaming(dir).length).toBeGreaterThan(0);
    } finally {
      try {
        process.kill(-pid, "SIGKILL"); // it leads its own process group (children.ts)
      } catch {}
    }
  },
  2 * PROCESS_START_MS,
);
