/**
 * `credhook list` in pages (issue 35), run as a process: every credential streamed a store page at a time as one
 * valid listing, `--limit N` printing the cursor to continue with on stderr, `--after` going on from it — every
 * credential once, in order —, and each credential's newest event read by its app's index.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentialEvent, type CredentialEventType } from "@credhook/core";
import { type CredentialRecord, PAGE_LIMIT_MAX } from "@credhook/core/store";
import { createLogger, createRuntime, loadConfigFile } from "../src/index.js";
import type { CredentialView } from "../src/credential-views.js";
import { LOCAL_YAML, cliEnv, runCredhook } from "./helpers.js";

/** More credentials than one store page holds, so that a whole listing crosses pages. */
const BULK = PAGE_LIMIT_MAX + 50;
/** The bulk credentials' ids, oldest first. */
const bulkIds: string[] = [];

let dir: string;
let config: string;
let env: NodeJS.ProcessEnv;

/** A record of app `slug` made at `at` (ms since the epoch). */
const record = (slug: string, n: number, at: number, over: Partial<CredentialRecord> = {}): CredentialRecord => {
  const time = new Date(at).toISOString();
  return {
    id: `${slug}-${String(n).padStart(5, "0")}`,
    credentialType: "API_KEY",
    appKey: `slug:pages@example.com/${slug}`,
    app: { appName: slug, appSlug: slug, developer: "pages@example.com" },
    publicId: `${slug}-pk-${n}`,
    status: "active",
    apis: [{ id: "orders-1", gateway: "local", usagePlans: ["1el57v"] }],
    bindings: [{ gateway: "local", nativeId: `${slug}-${n}`, resources: {} }],
    createdAt: time,
    updatedAt: time,
    ...over,
  };
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "credhook-list-pages-"));
  config = join(dir, "webhook.config.yaml");
  writeFileSync(config, LOCAL_YAML);
  env = cliEnv(dir, {});
  const runtime = await createRuntime(await loadConfigFile(config, { env: env as Record<string, string> }), {
    logger: createLogger("silent"),
  });
  try {
    const start = Date.now() - 3600_000;
    const write = (rec: CredentialRecord, type: CredentialEventType, at: number) =>
      runtime.store.insert(rec, [credentialEvent(type, rec, new Date(at).toISOString())]);
    // One app with two credentials: the key's newest event comes before the app's newest (the client's).
    const key = record("twin", 0, start);
    const client = record("twin", 1, start + 1, { credentialType: "CLIENT_CREDENTIALS" });
    await write(key, "credential.created", start);
    await write(client, "credential.created", start + 1);
    await runtime.store.save(key, [credentialEvent("credential.updated", key, new Date(start + 2).toISOString())]);
    await runtime.store.save(client, [
      credentialEvent("credential.disabled", client, new Date(start + 3).toISOString()),
    ]);
    for (let i = 0; i < BULK; i++) {
      const rec = record(`bulk-${i}`, i, start + 10 + i);
      bulkIds.push(rec.id);
      await write(rec, "credential.created", start + 10 + i);
    }
  } finally {
    await runtime.close();
  }
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `credhook list <args>`: its exit code, stdout and stderr. */
const list = (args: string[]) => runCredhook(["list", ...args], config, env);

/** The cursor a `--limit` listing printed on stderr, or undefined. */
const nextOf = (stderr: string) => /^next: (\S+)$/m.exec(stderr)?.[1];

describe("credhook list in pages", () => {
  it("without --limit: every credential, oldest first, as one JSON array across store pages, and no cursor", async () => {
    const { code, stdout, stderr } = await list(["--json"]);
    expect(code).toBe(0);
    const views = JSON.parse(stdout) as CredentialView[];
    expect(views.map((v) => v.credentialId)).toEqual(["twin-00000", "twin-00001", ...bulkIds]);
    expect(nextOf(stderr)).toBeUndefined();
  }, 60_000);

  it("--limit N prints N and the cursor; --after goes on from it: every credential once, in order, then no cursor", async () => {
    const seen: string[] = [];
    let after: string | undefined;
    const pages: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { code, stdout, stderr } = await list([
        "--developer",
        "pages@example.com",
        "--limit",
        "400",
        ...(after ? ["--after", after] : []),
      ]);
      expect(code).toBe(0);
      const lines = stdout.trimEnd().split("\n");
      pages.push(lines.length);
      seen.push(...lines.map((l) => l.split("  ")[0]!));
      after = nextOf(stderr);
      if (!after) break;
    }
    expect(pages).toEqual([400, 400, 252]);
    expect(seen).toEqual(["twin-00000", "twin-00001", ...bulkIds]);
  }, 60_000);

  it("each credential's newest event is its own, not its app's newest", async () => {
    const { code, stdout } = await list(["--app", "twin", "--json"]);
    expect(code).toBe(0);
    const views = JSON.parse(stdout) as CredentialView[];
    expect(views.map((v) => [v.credentialId, v.lastEvent?.type])).toEqual([
      ["twin-00000", "credential.updated"],
      ["twin-00001", "credential.disabled"],
    ]);
  }, 60_000);

  it("refuses a --limit that is not a count and a cursor it did not print (exit 1, the option named)", async () => {
    const zero = await list(["--limit", "0"]);
    expect(zero.code).toBe(1);
    expect(zero.stderr).toContain("--limit must be an integer ≥ 1 (got '0')");
    const bad = await list(["--after", "not-a-cursor"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("the cursor 'not-a-cursor' is not one");
    expect(bad.stderr).not.toMatch(/\n\s+at /); // no stack trace
  }, 60_000);
});
