/**
 * The `credhook` program as it is built (cli.ts, commands/), in process: every `--help` ends with the one exit-code
 * table, the docs' exit-code tables list every command and every code, `audit --help` names every event type the
 * outbox writes and `demo --help` the five clouds the demo runs; and what `credhook revoke`, `disable` and `enable`
 * answer when no record matches: the audit trail's revoke of the key or the app (core's `actOnCredentials`).
 * cli-output.test.ts runs the commands as processes.
 */
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  actOnCredentials,
  CREDENTIAL_EVENT_TYPES,
  type CredentialAction,
  type CredentialQuery,
  credentialEvent,
} from "@credhook/core";
import type { CredentialRecord } from "@credhook/core/store";
import { MemoryCredentialStore } from "@credhook/provider-testkit";
import { credhookProgram } from "../src/cli.js";
import { EXIT_CODES, exitCodesHelp } from "../src/commands/output.js";
import { formatActionResults } from "../src/credential-views.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** What `credhook [name] --help` prints, 80 columns wide. */
function helpOf(name?: string): string {
  const program = credhookProgram();
  const command = name === undefined ? program : program.commands.find((c) => c.name() === name)!;
  let out = "";
  command.configureOutput({ writeOut: (s) => (out += s), getOutHelpWidth: () => 80 });
  command.outputHelp();
  return out;
}

/** `text` with every run of white space made one space (help wraps descriptions). */
const flat = (text: string) => text.replace(/\s+/g, " ");

/** The rows of the Markdown tables in `file`'s section `heading` (to the next `## `), each as its cells. */
function tableRows(file: string, heading: string): string[][] {
  const text = readFileSync(`${REPO}${file}`, "utf8");
  const start = text.indexOf(`${heading}\n`);
  expect(start, `${file} has no '${heading}'`).toBeGreaterThan(-1);
  const end = text.indexOf("\n## ", start + heading.length);
  return text
    .slice(start, end === -1 ? undefined : end)
    .split("\n")
    .filter((l) => l.startsWith("| ") && !l.startsWith("|---"))
    .map((l) =>
      l
        .slice(2, -2)
        .split(" | ")
        .map((c) => c.trim()),
    );
}

describe("help", () => {
  it("`credhook --help` and every command's `--help` end with the exit-code table", () => {
    const names = credhookProgram().commands.map((c) => c.name());
    expect(names).toEqual(expect.arrayContaining(["serve", "reconcile", "revoke", "disable", "enable", "audit"]));
    for (const name of [undefined, ...names]) expect(helpOf(name), name).toContain(exitCodesHelp());
    for (const { code, name } of EXIT_CODES) expect(exitCodesHelp()).toMatch(new RegExp(`^  ${code} +${name}: `, "m"));
  });

  it("`audit --help` names every event type the outbox writes", () => {
    const words = CREDENTIAL_EVENT_TYPES.map((t) => t.slice("credential.".length).replace(/_/g, " "));
    expect(flat(helpOf("audit"))).toContain(`(the audit trail: ${words.join(", ")})`);
    expect(words).toEqual(expect.arrayContaining(["drift found", "leaked", "disabled", "enabled", "expired"]));
  });

  it("`demo --help` names the five clouds the demo runs; `serve --help` has --port", () => {
    const demo = flat(helpOf("demo"));
    for (const cloud of ["AWS", "Azure", "Google", "Kong", "Apigee"]) expect(demo).toContain(cloud);
    expect(flat(helpOf("serve"))).toContain("-p, --port <port> port (0: a free one)");
  });
});

it("no module outside commands/ imports a command module: cli.ts hands on commands/index.ts's program, and the domain modules (credential-views.ts, secret-scanning.ts …) import nothing from commands/", () => {
  const src = `${REPO}packages/server/src/`;
  const importers = readdirSync(src, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts") && !f.startsWith("commands/"))
    .flatMap((f) =>
      [...readFileSync(`${src}${f}`, "utf8").matchAll(/from "(?:\.\.?\/)+commands\/([^"]+)"/g)].map(
        (m) => `${f} -> ${m[1]}`,
      ),
    );
  expect(importers).toEqual(["cli.ts -> index.js"]);
});

describe("the docs' exit-code tables", () => {
  it("docs/operations.md has a row per command, and both tables every code", () => {
    const rows = tableRows("docs/operations.md", "## Exit codes");
    const commands = rows.filter((r) => r.length === 4 && r[0] !== "command").map((r) => r[0]);
    expect(commands).toEqual(credhookProgram().commands.map((c) => `\`${c.name()}\``));
    const codes = (r: string[][]) => r.filter((c) => c.length === 2 && /^\d+$/.test(c[0]!)).map((c) => Number(c[0]));
    const all = EXIT_CODES.map((e) => e.code);
    expect(codes(rows)).toEqual(all);
    expect(codes(tableRows("packages/server/README.md", "# @credhook/server"))).toEqual(all);
  });
});

describe("actOnCredentials when no record matches: a credential revoked before, from the audit trail", () => {
  /** Core's actOnCredentials on `store`, with operations that must not be called (no record matches). */
  const revokedBefore = (action: CredentialAction, store: MemoryCredentialStore, query: CredentialQuery) => {
    const never = () => Promise.reject(new Error("no gateway call expected: nothing matches"));
    return actOnCredentials(action, { revoke: never, disable: never, enable: never }, store, query);
  };
  /** A store holding the events of credential `c1` of app `shop` (key `fp`), created then revoked: its record gone. */
  async function storeWithRevoked(fp: string): Promise<MemoryCredentialStore> {
    const store = new MemoryCredentialStore();
    const rec: CredentialRecord = {
      id: "c1",
      credentialType: "API_KEY",
      appKey: "slug:dev@example.com/shop",
      app: { appName: "Shop", appSlug: "shop", developer: "dev@example.com" },
      publicId: "k1",
      status: "active",
      apis: [{ id: "orders", gateway: "local", usagePlans: [] }],
      bindings: [{ gateway: "local", nativeId: "k1", resources: {} }],
      keyFingerprint: fp,
      createdAt: "2026-05-01T00:00:00.000Z",
      updatedAt: "2026-05-01T00:00:00.000Z",
    };
    await store.insert(rec, [credentialEvent("credential.created", rec, rec.createdAt)]);
    await store.delete(rec.id, [credentialEvent("credential.revoked", rec, "2026-05-02T00:00:00.000Z")]);
    return store;
  }
  const fp = `sha256:${"ab".repeat(16)}`;

  it("revoke and disable: revoked already, by the key's fingerprint (any case) or the app; nothing for another key", async () => {
    const store = await storeWithRevoked(fp);
    const already = {
      credentialId: "c1",
      appKey: "slug:dev@example.com/shop",
      publicId: "k1",
      outcome: "revoked",
      already: true,
      gateways: [],
      since: "2026-05-02T00:00:00.000Z",
    };
    expect(await revokedBefore("revoke", store, { fingerprint: fp.toUpperCase().replace("SHA256", "sha256") })).toEqual(
      [already],
    );
    expect(await revokedBefore("disable", store, { app: "shop" })).toEqual([already]);
    expect(await revokedBefore("revoke", store, { app: "Shop" })).toEqual([already]);
    expect(await revokedBefore("revoke", store, { fingerprint: `sha256:${"cd".repeat(16)}` })).toEqual([]);
    expect(await revokedBefore("revoke", store, { app: "other" })).toEqual([]);
    expect(formatActionResults("disable", [already as never])).toEqual([
      "disabled 0 of 1 (1 already revoked)",
      "  - c1 (slug:dev@example.com/shop): already revoked (since 2026-05-02T00:00:00.000Z)",
    ]);
  });

  it("enable: a revoked credential failed (it cannot come back); no match at all says so", async () => {
    const [result] = await revokedBefore("enable", await storeWithRevoked(fp), { fingerprint: fp });
    expect(result).toMatchObject({
      outcome: "failed",
      error: "revoked at 2026-05-02T00:00:00.000Z: a revoked credential cannot be enabled",
    });
    expect(result!.already).toBeUndefined();
    expect(formatActionResults("revoke", [])).toEqual([
      "no credential matches, and the audit trail holds no revoke of one that did",
    ]);
  });
});
