// credhook's version where operators look for it: `credhook --version`, the "credhook listening"
// log line and the `credhook_build_info` metric (the OpenTelemetry resource's `service.version`
// is checked in tracing-sdk.test.ts, which owns the process's tracer).
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { VERSION } from "../src/index.js";
import { AUTH, LOCAL_YAML, PASSWORD, spawnCredhook, startTestServer } from "./helpers.js";

const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));
/** The version in @credhook/server's package.json, read here independently of the code under test. */
const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;

describe("credhook's version", () => {
  it("is the package's version", () => {
    expect(PACKAGE_VERSION).toMatch(/^\d+\.\d+\.\d+/);
    expect(VERSION).toBe(PACKAGE_VERSION);
  });

  it("`credhook --version` and `-V` print it", () => {
    for (const flag of ["--version", "-V"]) {
      const run = spawnSync(process.execPath, [CLI, flag], {
        env: { ...process.env, CREDHOOK_FROM_SOURCE: "1" },
        encoding: "utf8",
      });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout.trim()).toBe(PACKAGE_VERSION);
    }
  });

  it("the 'credhook listening' line carries it and the Node.js version", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-version-"));
    writeFileSync(
      join(dir, "webhook.config.yaml"),
      LOCAL_YAML.replace("server:\n", "server:\n  port: 0\n  host: 127.0.0.1\n"),
    );
    const cli = spawnCredhook([process.execPath, CLI, "serve", "--config", join(dir, "webhook.config.yaml")], {
      env: { ...process.env, CREDHOOK_FROM_SOURCE: "1", CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir },
    });
    try {
      await cli.listening();
      const line = cli
        .output()
        .split("\n")
        .find((l) => l.includes('"msg":"credhook listening"'));
      expect(JSON.parse(line!)).toMatchObject({ version: PACKAGE_VERSION, node: process.version });
    } finally {
      expect((await cli.stop()).code).toBe(0);
    }
  });

  it("/metrics has credhook_build_info{version,node} 1", async () => {
    const s = await startTestServer(LOCAL_YAML);
    try {
      const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: AUTH } })).text();
      expect(text).toContain(`credhook_build_info{version="${PACKAGE_VERSION}",node="${process.version}"} 1`);
    } finally {
      await s.close();
    }
  });
});
