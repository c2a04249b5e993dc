/**
 * Crash safety: the server process is killed (SIGKILL) between two gateway
 * calls of a create, restarted state is reconciled by `credhook reconcile`, and
 * no cloud holds anything afterwards.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openSqliteStore } from "@credhook/store-sqlite";
import { startDemoClouds, type DemoClouds } from "../src/demo.js";
import { PROCESS_START_MS, until } from "./helpers.js";
import { spawnTracked } from "./children.js";

const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));
const CONFIG = fileURLToPath(new URL("../../../examples/multi-cloud.yaml", import.meta.url));
const PASSWORD = "crash-test-password";

let clouds: DemoClouds;
let dir: string;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  clouds = await startDemoClouds();
  dir = mkdtempSync(join(tmpdir(), "credhook-crash-"));
  env = {
    ...process.env,
    ...clouds.env,
    CREDHOOK_PASSWORD: PASSWORD,
    CREDHOOK_DATA_DIR: dir,
    PORT: "0",
    CREDHOOK_FROM_SOURCE: "1",
  };
});
afterAll(() => clouds?.close());

function run(args: string[]): {
  child: ChildProcess;
  output: () => string;
  stdout: () => string;
  exited: Promise<number | null>;
} {
  const child = spawnTracked(process.execPath, [CLI, ...args, "--config", CONFIG], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let stdout = "";
  child.stdout!.on("data", (d) => {
    out += String(d);
    stdout += String(d);
  });
  child.stderr!.on("data", (d) => (out += String(d)));
  return {
    child,
    output: () => out,
    stdout: () => stdout,
    exited: new Promise((resolve) => child.once("exit", resolve)),
  };
}

it(
  "a server killed between two gateway calls leaves a pending record that reconcile turns into zero orphans",
  async () => {
    const server = run(["serve"]);
    const url = await until(
      "the server to listen",
      () => /"url":"(http:\/\/[^"]+)"/.exec(server.output())?.[1],
      PROCESS_START_MS,
    );
    // Azure answers slowly: AWS and the embedded provider finish first, Azure is still in flight.
    clouds.azure.setLatency(1500);
    const request = fetch(`${url}/v1/createCredentials`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        appName: "Crashy",
        developer: "dev@example.com",
        apis: [
          { id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] },
          { id: "orders-eu-1", usagePlans: [{ id: "eu-gold" }] },
          { id: "weather" },
        ],
      }),
    }).catch((err: unknown) => err);
    await until("AWS to hold the key", () => clouds.aws.apiGateway.keys.size === 1);
    await until("Azure to receive the PUT", () =>
      clouds.azure.requests.some((r) => r.method === "PUT" && r.path.includes("/subscriptions/")),
    );
    server.child.kill("SIGKILL");
    expect(await server.exited).toBe(null);
    expect(await request).toBeInstanceOf(Error); // the portal never got an answer
    // Azure finishes the PUT it received: a live subscription nobody recorded.
    await until("Azure to finish the PUT", () => clouds.azure.listSubscriptions().length === 1);
    clouds.azure.setLatency(0);

    let store = await openSqliteStore({ path: join(dir, "credhook.db") });
    const [pending] = await store.list();
    expect(pending).toMatchObject({ status: "pending", pending: { op: "create" } });
    expect(pending!.bindings.map((b) => b.gateway)).not.toContain("azure"); // the crash came before the store heard of it
    await store.close();
    expect(clouds.aws.apiGateway.keys.size).toBe(1);

    const dry = run(["reconcile", "--older-than", "0", "--dry-run"]);
    expect(await dry.exited).toBe(2); // a dry run that found something to do (docs/operations.md#exit-codes)
    expect(dry.output()).toContain("[dry run] unfinished credentials: 1");
    expect(clouds.aws.apiGateway.keys.size).toBe(1); // a dry run changes nothing

    const fix = run(["reconcile", "--older-than", "0"]);
    expect(await fix.exited).toBe(0);
    // Writes in flight at the crash may still land: the create is abandoned, cleaned up, and its record kept (holding nothing) to settle.
    expect(fix.output()).toMatch(
      new RegExp(
        `unfinished credentials: 1\\n  - ${pending!.id} \\(app:dev@example.com/Crashy, interrupted create\\) on [a-z, ]+: abandoned and cleaned up; record kept until `,
      ),
    );
    expect(fix.output()).toContain("resources no credential record explains (drift, not deleted): 0");

    expect(clouds.aws.apiGateway.keys.size).toBe(0);
    expect(clouds.azure.listSubscriptions()).toEqual([]);
    store = await openSqliteStore({ path: join(dir, "credhook.db") });
    expect(await store.list()).toEqual([
      expect.objectContaining({ id: pending!.id, status: "abandoned", bindings: [] }),
    ]);
    expect(await store.stateFor("local").list("cred:")).toEqual([]);
    await store.close();

    const again = run(["reconcile", "--older-than", "0", "--json"]);
    expect(await again.exited).toBe(0);
    const report = JSON.parse(again.stdout());
    expect(report).toMatchObject({
      dryRun: false,
      unfinished: [],
      skippedRecent: 0,
      orphans: [],
      garbage: [],
      unlistable: [],
    });
    expect(report.abandoned).toEqual([
      expect.objectContaining({
        credentialId: pending!.id,
        errors: [],
        action: expect.stringMatching(/^cleaned up \(0 resource\(s\) revoked\); record kept until /),
      }),
    ]);
  },
  60_000 + PROCESS_START_MS,
); // two CLI runs and a server start from source: ~10 s on a quiet machine, more on a busy one
