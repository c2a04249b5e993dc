/**
 * The `credhook` command line as a script uses it, each command run as a process of its own (commands/output.ts):
 * its output complete whatever reads it (a pipe whose reader waits before reading, `| head -n 1`), one exit-code
 * table for every command (docs/operations.md#exit-codes) — revoke, disable and enable idempotent, reconcile failing
 * when a gateway cannot be listed, a filter that matches nothing a success — `serve --port`, and the documented
 * `pnpm -s credhook … --json` form printing JSON only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { credentialEvent, secretFingerprint } from "@credhook/core";
import type { CredentialRecord } from "@credhook/core/store";
import { createRuntime, createLogger, loadConfigFile } from "../src/index.js";
import type { CredentialView } from "../src/credential-views.js";
import { spawnTracked } from "./children.js";
import { CLI, LOCAL_YAML, PROCESS_START_MS, cliEnv, freePort, runCredhook, spawnCredhook } from "./helpers.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
/** Credentials written straight into the store, each with its `credential.created` event: output beyond a pipe's 64 KiB. */
const BULK = 600;

let dir: string;
let config: string;
let env: NodeJS.ProcessEnv;
/** Two credentials made through the orchestrator on the embedded gateway: their keys' fingerprints and apps. */
const made: Record<"leaked" | "paused", { fingerprint: string; slug: string }> = {} as never;
/** The native id of a key on the embedded gateway whose record was deleted behind credhook's back: drift. */
let driftId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "credhook-cli-output-"));
  config = join(dir, "webhook.config.yaml");
  writeFileSync(config, LOCAL_YAML);
  env = cliEnv(dir, {});
  const loaded = await loadConfigFile(config, { env: env as Record<string, string> });
  const runtime = await createRuntime(loaded, { logger: createLogger("silent") });
  try {
    const create = async (slug: string) => {
      const { response } = await runtime.orchestrator.create({
        appName: slug,
        appSlug: slug,
        developer: "ops@example.com",
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
      });
      return { fingerprint: secretFingerprint((response as { apiKey: string }).apiKey), slug };
    };
    made.leaked = await create("leaky");
    made.paused = await create("paused");
    const drifty = await create("drifty");
    const [rec] = await runtime.store.list().then((rs) => rs.filter((r) => r.app.appSlug === drifty.slug));
    driftId = rec!.bindings[0]!.nativeId;
    await runtime.store.delete(rec!.id);
    // One millisecond apart: a listing is oldest first (records made in the same millisecond are in id order).
    const start = Date.now();
    for (let i = 0; i < BULK; i++) {
      const now = new Date(start + i).toISOString();
      const id = randomUUID();
      const rec: CredentialRecord = {
        id,
        credentialType: "API_KEY",
        appKey: `slug:bulk@example.com/bulk-${i}`,
        app: { appName: `Bulk ${i}`, appSlug: `bulk-${i}`, developer: "bulk@example.com" },
        publicId: `bulk${i}`,
        status: "active",
        apis: [{ id: "orders-1", gateway: "local", usagePlans: ["1el57v"] }],
        bindings: [{ gateway: "local", nativeId: `bulk${i}`, resources: {} }],
        keyFingerprint: secretFingerprint(id),
        createdAt: now,
        updatedAt: now,
      };
      await runtime.store.insert(rec, [credentialEvent("credential.created", rec, now)]);
    }
  } finally {
    await runtime.close();
  }
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `credhook <args> --config <config>` as a process: its exit code, stdout and stderr. */
const credhook = (args: string[]) => runCredhook(args, config, env);

/** Runs `script` in bash (the working directory the repository's root) with `CLI` and `CONFIG` set: its exit code, stdout and stderr. */
function bash(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnTracked("bash", ["-c", script], {
    cwd: REPO,
    env: { ...env, CLI: `${process.execPath} ${CLI}`, CONFIG: config },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += String(d)));
  child.stderr!.on("data", (d) => (stderr += String(d)));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

/**
 * A reader that takes one byte, then waits a second before reading the rest: the pipe is full (64 KiB) while it
 * waits, so a command that exits before its output is written loses the rest. `$?` of the command itself goes to
 * stderr as `credhook exited N`.
 */
const SLOW_READER = `(dd bs=1 count=1 status=none; sleep 1; cat); echo "credhook exited \${PIPESTATUS[0]}" >&2`;

describe("output, whatever reads it", () => {
  it("`audit --json` through a reader that waits before reading: every event, as JSON, exit 0", async () => {
    const { stdout, stderr } = await bash(`$CLI audit --json --limit 5000 --config "$CONFIG" | ${SLOW_READER}`);
    expect(stderr).toBe("credhook exited 0\n");
    expect(stdout.length).toBeGreaterThan(4 * 65_536);
    const events = JSON.parse(stdout) as Array<{ event: { type: string } }>;
    expect(events.filter((e) => e.event.type === "credential.created")).toHaveLength(BULK + 3);
  });

  it("`list` as text through the same reader: a line per credential, the last one too", async () => {
    const { stdout, stderr } = await bash(`$CLI list --developer bulk@example.com --config "$CONFIG" | ${SLOW_READER}`);
    expect(stderr).toBe("credhook exited 0\n");
    const lines = stdout.trimEnd().split("\n");
    expect(stdout.length).toBeGreaterThan(65_536);
    expect(lines).toHaveLength(BULK);
    expect(lines.at(-1)).toContain(`slug:bulk@example.com/bulk-${BULK - 1}`);
  });

  it("`| head -n 1`: the first line, then the command ends quietly with 141 (as SIGPIPE ends a Unix tool)", async () => {
    const { stdout, stderr } = await bash(
      `$CLI audit --json --limit 5000 --config "$CONFIG" | head -n 1; echo "credhook exited \${PIPESTATUS[0]}" >&2`,
    );
    expect(stdout).toBe("[\n");
    expect(stderr).toBe("credhook exited 141\n");
  });
});

describe("exit codes: one table for every command", () => {
  it("revoke is idempotent: revoked, then revoked already (from the audit trail) — both 0; an unknown key is 1", async () => {
    const { fingerprint, slug } = made.leaked;
    const first = await credhook(["revoke", "--fingerprint", fingerprint, "--reason", "leaked"]);
    expect([first.code, first.stdout.split("\n")[0]]).toEqual([0, "revoked 1 of 1"]);
    const again = await credhook(["revoke", "--fingerprint", fingerprint, "--reason", "leaked", "--json"]);
    expect([again.code, again.stderr]).toEqual([0, ""]);
    expect(JSON.parse(again.stdout)).toEqual([
      expect.objectContaining({ appKey: `slug:ops@example.com/${slug}`, outcome: "revoked", already: true }),
    ]);
    const unknown = await credhook(["revoke", "--fingerprint", `sha256:${"0".repeat(32)}`]);
    expect([unknown.code, unknown.stdout]).toEqual([1, expect.stringContaining("no credential matches")]);
  });

  it("disable and enable are idempotent: a run on a credential already so says it and exits 0", async () => {
    const { fingerprint } = made.paused;
    const on = await credhook(["enable", "--fingerprint", fingerprint, "--json"]);
    expect(on.code).toBe(0);
    expect(JSON.parse(on.stdout)).toEqual([expect.objectContaining({ outcome: "enabled", already: true })]);
    const off = await credhook(["disable", "--fingerprint", fingerprint]);
    expect([off.code, off.stdout.split("\n")[0]]).toEqual([0, "disabled 1 of 1"]);
    const offAgain = await credhook(["disable", "--fingerprint", fingerprint]);
    expect([offAgain.code, offAgain.stdout.split("\n")[0]]).toEqual([0, "disabled 0 of 1 (1 already disabled)"]);
    expect(offAgain.stdout).toMatch(/: already disabled \(since \d{4}-\d\d-\d\dT[^)]+\); told again: local\n/);
  });

  it("a filter that matches nothing is done (0); a credential named that does not exist is an error (1)", async () => {
    const audit = await credhook(["audit", "--app", "no-such-app", "--json"]);
    expect([audit.code, JSON.parse(audit.stdout)]).toEqual([0, []]);
    expect((await credhook(["inspect", "no-such-app"])).code).toBe(1);
  });

  it("reconcile: drift is 2 (also in a dry run); a gateway that cannot be listed is 1", async () => {
    const dry = await credhook(["reconcile", "--dry-run", "--json"]);
    expect(dry.code).toBe(2);
    expect((JSON.parse(dry.stdout) as { orphans: Array<{ nativeId: string }> }).orphans.map((o) => o.nativeId)).toEqual(
      [driftId],
    );
    // The same store, and a Kong gateway whose admin API refuses connections (nothing listens on port 9).
    const down = join(dir, "down.config.yaml");
    writeFileSync(
      down,
      LOCAL_YAML.replace(
        "gateways:\n",
        'gateways:\n  kong: { provider: kong, credentialType: API_KEY, options: { adminUrl: "http://127.0.0.1:9" } }\n',
      ),
    );
    const failed = await runCredhook(["reconcile", "--older-than", "0"], down, env);
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stdout).toContain("gateways that cannot list their resources: kong: ");
  });

  it("`serve --port N` listens on N, a second server there is told which option to change, and a port out of range is refused (1)", async () => {
    const port = await freePort();
    const serve = spawnCredhook([process.execPath, CLI, "serve", "--config", config, "--port", String(port)], { env });
    const url = await Promise.race([serve.listening(), new Promise((r) => setTimeout(r, PROCESS_START_MS))]);
    expect(url).toMatch(new RegExp(`^http://[^/]+:${port}$`));
    // Another server (a store of its own) on the same --port: the message names the option, not server.port.
    const taken = await runCredhook(["serve", "--port", String(port)], config, {
      ...env,
      CREDHOOK_DATA_DIR: join(dir, "b"),
    });
    expect([taken.code, taken.stderr]).toEqual([
      1,
      expect.stringContaining(`it is --port ${port} on the command line; pass another --port, or 0 for any free one`),
    ]);
    expect(await serve.stop()).toMatchObject({ code: 0, signal: null });
    const bad = await credhook(["serve", "--port", "65536"]);
    expect([bad.code, bad.stderr]).toEqual([
      1,
      expect.stringContaining("the port must be an integer from 0 to 65535 (got '65536' from --port)"),
    ]);
  });
});

it("the documented `pnpm -s credhook <command>` form prints the command's output only: `list --json` parses", async () => {
  const [form] = readFileSync(`${REPO}docs/configuration.md`, "utf8").match(
    /npx --yes pnpm@10 -s credhook <command>/g,
  )!;
  const line = form.replace("<command>", `list --developer ops@example.com --json --config "$CONFIG"`);
  const { code, stdout, stderr } = await bash(line);
  expect(code, stderr).toBe(0);
  expect((JSON.parse(stdout) as CredentialView[]).map((v) => v.app.appSlug)).toEqual(["paused"]);
}, 60_000);
