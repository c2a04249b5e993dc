/**
 * `credhook inspect`, `list` and `revoke` on the run's PostgreSQL server, with two credhook instances sharing it:
 * what one instance created, the other's store shows the same; the commands, run as processes of their own on the
 * same config, answer in JSON, and `revoke --reason leaked` takes the key off the AWS fake and the embedded
 * provider, which both instances' key checks then refuse, with `credential.leaked` and `credential.revoked` in the
 * shared audit trail.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { isCredhookKey, secretFingerprint } from "@credhook/core";
import type { AwsFake } from "@credhook/fakes/aws";
import type { RunningServer } from "../src/index.js";
import { inspectCredentials, type CredentialView } from "../src/credential-views.js";
import {
  AUTH,
  AWS_AND_LOCAL_YAML,
  postgresServerYaml,
  runCredhook,
  setUpPostgresCommands,
  startTwoInstances,
  until,
  WEATHER_GATEWAY_YAML,
} from "./helpers.js";

const url = inject("databaseUrl");
const schema = `inspect_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
let dir: string;
let config: string;
let aws: AwsFake;
let a: RunningServer;
let b: RunningServer;
let env: NodeJS.ProcessEnv;

const YAML = `${postgresServerYaml(schema)}keys: { prefix: pgk }
${AWS_AND_LOCAL_YAML}${WEATHER_GATEWAY_YAML}`;

beforeAll(async () => {
  ({ aws, dir, config, env } = await setUpPostgresCommands("inspect-pg", YAML, url));
  [a, b] = await startTwoInstances(config, dir, { DATABASE_URL: url, AWS_ENDPOINT: aws.url });
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), aws?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `credhook <args> --config <config>` as a process; its exit code, stdout and stderr. */
const credhook = (args: string[]) => runCredhook(args, config, env);

const check = (s: RunningServer, key: string) =>
  fetch(`${s.gatewayUrl}/check`, { headers: { "x-api-key": key, "x-original-uri": "/weather/now" } }).then(
    (r) => r.status,
  );

describe("inspect, list and revoke on PostgreSQL, from several instances", () => {
  let key: { apiKeyId: string; apiKey: string };
  let fingerprint: string;

  beforeAll(async () => {
    const res = await fetch(`${a.url}/v1/createCredentials`, {
      method: "POST",
      headers: { authorization: AUTH, "content-type": "application/json" },
      body: JSON.stringify({
        appName: "Weather Board",
        appSlug: "weather-board",
        developer: "pg@example.com",
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }, { id: "weather" }],
      }),
    });
    expect(res.status).toBe(200);
    key = (await res.json()) as typeof key;
    fingerprint = secretFingerprint(key.apiKey);
  });

  it("both instances' stores show the same credential: its AWS and embedded gateways, plans and state", async () => {
    expect(isCredhookKey(key.apiKey, "pgk")).toBe(true);
    const [fromA, fromB] = await Promise.all(
      [a, b].map((s) => inspectCredentials(s.credhook.store, { fingerprint }, Date.parse("2100-01-01"))),
    );
    expect(fromB).toEqual(fromA);
    expect(fromB).toEqual([
      expect.objectContaining({
        publicId: key.apiKeyId,
        state: "active",
        appKey: "slug:pg@example.com/weather-board",
        lastEvent: expect.objectContaining({ type: "credential.created" }),
      }),
    ]);
    expect(
      fromB![0]!.gateways.map((g) => [g.gateway, g.plans]).sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    ).toEqual([
      ["aws", ["1el57v"]],
      ["local", []],
    ]);
  });

  it("`credhook inspect --json` and `credhook list --json`, run as processes, answer from the shared store", async () => {
    const inspected = await credhook(["inspect", "--fingerprint", fingerprint, "--json"]);
    expect(inspected.code).toBe(0);
    const views = JSON.parse(inspected.stdout) as CredentialView[];
    expect(views.map((v) => [v.publicId, v.keyFingerprint])).toEqual([[key.apiKeyId, fingerprint]]);
    expect(inspected.stdout + inspected.stderr).not.toContain(key.apiKey);

    const byApp = await credhook(["inspect", "weather-board"]);
    expect(byApp.code).toBe(0);
    expect(byApp.stdout).toContain(`state: active`);
    expect(byApp.stdout).toContain(`key fingerprint: ${fingerprint}`);

    const listed = await credhook(["list", "--gateway", "aws", "--developer", "pg@example.com", "--json"]);
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as CredentialView[]).map((v) => v.publicId)).toEqual([key.apiKeyId]);
    expect(JSON.parse((await credhook(["list", "--state", "revoking", "--json"])).stdout)).toEqual([]);
    const bad = await credhook(["list", "--state", "gone"]);
    expect([bad.code, bad.stderr]).toEqual([1, expect.stringContaining("--state must be one of")]);
    expect((await credhook(["inspect", "--fingerprint", `sha256:${"0".repeat(32)}`])).code).toBe(1);
  });

  it("`credhook revoke --fingerprint --reason leaked` takes it off every gateway; both instances' key checks refuse it", async () => {
    expect(await check(a, key.apiKey)).toBe(200);
    expect(await check(b, key.apiKey)).toBe(200);
    const revoked = await credhook(["revoke", "--fingerprint", fingerprint, "--reason", "leaked", "--json"]);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual([
      expect.objectContaining({ publicId: key.apiKeyId, outcome: "revoked" }),
    ]);
    expect([...aws.apiGateway.keys.values()]).toEqual([]);
    // Another process revoked it: each instance's key check learns of it at its next change-stamp check
    // (coherenceIntervalMs, 200 ms here); the bound is generous, the time is the machine's.
    for (const s of [a, b])
      await until("the key check to refuse the revoked key", async () => (await check(s, key.apiKey)) === 401, 30_000);
    const events = (await b.credhook.store.outbox!.list({ app: "weather-board" })).map((e) => e.event);
    expect(events.map((e) => e.type)).toEqual(["credential.created", "credential.leaked", "credential.revoked"]);
    expect(events[1]!.data).toMatchObject({ keyFingerprint: fingerprint, reason: "leaked" });
    // Run again: nothing left to revoke, and the audit trail says it was revoked — done (idempotent).
    const again = await credhook(["revoke", "--fingerprint", fingerprint, "--json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual([
      expect.objectContaining({ publicId: key.apiKeyId, outcome: "revoked", already: true }),
    ]);
  });
});
