/**
 * The embedded SQLite store serves one instance: a second `credhook serve` on
 * the same file — whatever spelling of its path — refuses to start within
 * seconds; `credhook reconcile --dry-run` beside a running server keeps working;
 * the file is usable again after its server stops, also after kill -9.
 */
import { expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PROCESS_START_MS, until } from "./helpers.js";
import { spawnTracked } from "./children.js";

const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));

function run(args: string[]): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawnTracked(process.execPath, [CLI, ...args], {
    env: { ...process.env, CREDHOOK_PASSWORD: "single-server-password", PORT: "0", CREDHOOK_FROM_SOURCE: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += String(d)));
  child.stderr!.on("data", (d) => (out += String(d)));
  return { child, output: () => out, exited: new Promise((resolve) => child.once("exit", resolve)) };
}

const config = (store: string, dataDir: string) => `
server: { port: 0, auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] } }
store: { sqlite: "${store}" }
dataDir: "${dataDir}"
gateways: { local: { provider: local, credentialType: API_KEY } }
routes: [ { default: local } ]
`;

it(
  "a second server on the same SQLite file refuses to start; reconcile --dry-run works beside it; kill -9 leaves no stale lock",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-single-"));
    mkdirSync(join(dir, "a"));
    symlinkSync(join(dir, "a"), join(dir, "link"));
    writeFileSync(join(dir, "one.yaml"), config(join(dir, "a", "credhook.db"), join(dir, "a")));
    // Another spelling of the same file, through a symlinked directory and '..', with another dataDir.
    writeFileSync(join(dir, "two.yaml"), config(join(dir, "link", "..", "a", "credhook.db"), join(dir, "other-data")));

    const first = run(["serve", "--config", join(dir, "one.yaml")]);
    await until(
      "the first server to listen",
      () => /"url":"(http:\/\/[^"]+)"/.exec(first.output())?.[1],
      PROCESS_START_MS,
    );

    // It refuses rather than waits: it exits while the first server still holds the file (however
    // long a busy machine takes to start it, no wall-clock bound).
    const second = run(["serve", "--config", join(dir, "two.yaml")]);
    expect(await second.exited).toBe(1);
    expect(first.child.exitCode).toBeNull();
    expect(second.output()).toContain("is in use by another credhook server");

    const dry = run(["reconcile", "--dry-run", "--older-than", "0", "--config", join(dir, "two.yaml")]);
    expect(await dry.exited).toBe(0);
    expect(dry.output()).toContain("[dry run] unfinished credentials: 0");

    first.child.kill("SIGKILL");
    await first.exited;
    const third = run(["serve", "--config", join(dir, "two.yaml")]);
    await until(
      "a server to start after kill -9",
      () => /"url":"(http:\/\/[^"]+)"/.exec(third.output())?.[1],
      PROCESS_START_MS,
    );
    third.child.kill("SIGTERM");
    expect(await third.exited).toBe(0);
  },
  60_000 + 3 * PROCESS_START_MS,
);
