#!/usr/bin/env node
// Figures of the package operators install (docs/deploy.md), printed:
//   node scripts/bench-install.mjs <installDir> [starts]
// <installDir> is what `node scripts/pack.mjs install <packDir> <installDir>` made.
// Prints the size of its node_modules (bytes on disk and the number of packages),
// then starts `credhook serve` `starts` times (default 5), each in a new empty
// folder with the embedded default, and reports the time from spawn to the first
// 204 of GET /readyz (min / median / max, ms).
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const [dirArg, startsArg] = process.argv.slice(2);
if (!dirArg) {
  process.stderr.write("usage: node scripts/bench-install.mjs <installDir> [starts]\n");
  process.exit(2);
}
const installDir = resolve(dirArg);
const starts = Number(startsArg ?? 5);
const credhook = join(installDir, "node_modules", ".bin", "credhook");

/** Bytes on disk (allocated blocks) under `dir`, and the number of package.json files below node_modules/<pkg>. */
function du(dir) {
  let bytes = 0;
  let packages = 0;
  const walk = (d, depth) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isSymbolicLink()) continue;
      if (e.isDirectory()) walk(p, depth + 1);
      else {
        bytes += statSync(p).blocks * 512;
        if (e.name === "package.json" && /node_modules\/(@[^/]+\/)?[^/@][^/]*\/package\.json$/.test(p)) packages++;
      }
    }
  };
  walk(dir, 0);
  return { bytes, packages };
}

/** Spawns `credhook serve` on a free port in a new empty folder; resolves with ms until /readyz answered 204. */
async function timeToReady() {
  const cwd = mkdtempSync(join(tmpdir(), "credhook-bench-"));
  const t0 = performance.now();
  const child = spawn(credhook, ["serve"], {
    cwd,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: "0",
      CREDHOOK_GATEWAY_PORT: "0",
      CREDHOOK_PASSWORD: "bench-password-123",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const exited = new Promise((r) => child.once("exit", r));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`credhook exited: ${out}`);
      const url = /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1];
      if (url) {
        const res = await fetch(`${url}/readyz`).catch(() => undefined);
        if (res?.status === 204) return performance.now() - t0;
      }
      if (performance.now() - t0 > 60_000) throw new Error(`not ready after 60 s: ${out}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    child.kill("SIGTERM");
    await exited;
    rmSync(cwd, { recursive: true, force: true });
  }
}

const size = du(join(installDir, "node_modules"));
console.log(`install: ${installDir}`);
console.log(`node_modules: ${(size.bytes / 2 ** 20).toFixed(1)} MiB on disk, ${size.packages} packages`);
const times = [];
for (let i = 0; i < starts; i++) times.push(await timeToReady());
times.sort((a, b) => a - b);
const ms = (x) => `${Math.round(x)} ms`;
console.log(
  `credhook serve → first 204 on /readyz (${starts} starts, Node ${process.version}): min ${ms(times[0])}, median ${ms(times[Math.floor(times.length / 2)])}, max ${ms(times.at(-1))}`,
);
