/**
 * Two credhook instances on one PostgreSQL database, each with its embedded
 * gateway: a change made through one instance's webhook reaches the other
 * instance's key check within the cache's coherence interval (the change stamp
 * in the shared store), the OAuth signing keys are shared, so a token one
 * instance issues introspects on the other, and usage-plan limits count the
 * requests of both instances together (counters on PostgreSQL).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningServer } from "../src/index.js";
import { AUTH, startTwoInstances, until } from "./helpers.js";

const url = inject("databaseUrl");
const schema = `gateway_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
const kek = randomBytes(32).toString("base64");
let dir: string;
let a: RunningServer;
let b: RunningServer;

const YAML = `
server: { auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] } }
store: { postgres: { url: "\${DATABASE_URL}", schema: ${schema} } }
reconcile: { intervalS: 0 }
dataDir: "\${CREDHOOK_DATA_DIR}"
gateways:
  local:
    provider: local
    credentialType: API_KEY
    options: { usagePlans: [ free, { id: five-per-second, rate: { perSecond: 5 } }, { id: three-a-day, quota: { perDay: 3 } } ] }
  m2m: { provider: local, credentialType: CLIENT_CREDENTIALS }
routes:
  - { apis: ["m2m-*"], gateway: m2m }
  - { default: local }
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  publicUrl: https://auth.example.test     # one issuer for every instance behind the load balancer
  keyCheck:
    apis: [ { pathPrefix: /orders/, api: orders }, { pathPrefix: /weather/, api: weather } ]
    cache: { coherenceIntervalMs: 200 }
  oauth: { signing: { encryptionKey: "${kek}" } }
`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "credhook-gw-replicas-"));
  writeFileSync(join(dir, "webhook.config.yaml"), YAML);
  [a, b] = await startTwoInstances(join(dir, "webhook.config.yaml"), dir, { DATABASE_URL: url });
}, 60_000);

afterAll(async () => {
  await a?.close();
  await b?.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = (s: RunningServer, path: string, body: unknown) =>
  fetch(`${s.url}${path}`, {
    method: "POST",
    headers: { authorization: AUTH, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
const check = (s: RunningServer, key: string, path: string) =>
  fetch(`${s.gatewayUrl}/check`, { headers: { "x-api-key": key, "x-original-uri": path } }).then((r) => r.status);

/**
 * Polls until `fn` answers `want`. The other instance sees a change at its next change-stamp check (every
 * `coherenceIntervalMs`, 200 ms here; that interval is tested with a moved clock in packages/gateway/test/gateway.test.ts);
 * how long it took here is the machine's figure too: the bound is generous (a cache that never learns of the change
 * still fails) and the time is printed, not asserted.
 */
async function eventually(want: number, fn: () => Promise<number>): Promise<void> {
  const t = performance.now();
  await until(`the other instance to answer ${want}`, async () => (await fn()) === want, 15_000);
  console.log(
    `embedded-gateway-replicas: the other instance saw the change after ${Math.round(performance.now() - t)} ms`,
  );
}

describe("embedded gateways of two instances sharing a PostgreSQL store", () => {
  it("an update and a revoke through one instance reach the other instance's key check at its next change-stamp check", async () => {
    const created = await post(a, "/v1/createCredentials", {
      appName: "Replicated",
      developer: "d@example.com",
      apis: [{ id: "orders" }, { id: "weather" }],
    });
    expect(created.status).toBe(200);
    const { apiKeyId, apiKey } = (await created.json()) as { apiKeyId: string; apiKey: string };
    // B caches the key.
    expect(await check(b, apiKey, "/orders/1")).toBe(200);
    expect(await check(b, apiKey, "/orders/1")).toBe(200);

    expect(
      (
        await post(a, "/v1/updateCredentials", {
          credentialType: "API_KEY",
          apiKeyId,
          apis: [{ id: "orders", action: "REMOVED" }],
        })
      ).status,
    ).toBe(204);
    expect(await check(a, apiKey, "/orders/1")).toBe(403);
    await eventually(403, () => check(b, apiKey, "/orders/1"));
    expect(await check(b, apiKey, "/weather/1")).toBe(200);

    expect((await post(a, "/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
    expect(await check(a, apiKey, "/weather/1")).toBe(401);
    await eventually(401, () => check(b, apiKey, "/weather/1"));
  });

  it("share the signing keys: a token from one instance introspects as active on the other, inactive on both after revoke", async () => {
    const cred = (await (
      await post(a, "/v1/createCredentials", {
        appName: "Replicated Client",
        developer: "d@example.com",
        apis: [{ id: "m2m-x" }],
      })
    ).json()) as {
      clientId: string;
      clientSecret: string;
    };
    const rs = (await (
      await post(b, "/v1/createCredentials", {
        appName: "Replicated RS",
        developer: "d@example.com",
        apis: [{ id: "m2m-rs" }],
      })
    ).json()) as {
      clientId: string;
      clientSecret: string;
    };
    const form = (body: Record<string, string>) => ({
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(body).toString(),
    });
    const token = (await (
      await fetch(
        `${a.gatewayUrl}/oauth2/token`,
        form({ grant_type: "client_credentials", client_id: cred.clientId, client_secret: cred.clientSecret }),
      )
    ).json()) as {
      access_token: string;
    };
    const introspect = async (s: RunningServer) =>
      (
        (await (
          await fetch(
            `${s.gatewayUrl}/oauth2/introspect`,
            form({ token: token.access_token, client_id: rs.clientId, client_secret: rs.clientSecret }),
          )
        ).json()) as { active: boolean }
      ).active;
    expect(await introspect(b)).toBe(true);
    expect(
      (await post(b, "/v1/revokeCredentials", { credentialType: "CLIENT_CREDENTIALS", clientId: cred.clientId }))
        .status,
    ).toBe(204);
    expect(await introspect(b)).toBe(false);
    await eventually(0, async () => ((await introspect(a)) ? 1 : 0));
  });
});

describe("usage-plan limits with counters on the shared store", () => {
  const key = async (appName: string, plan: string) =>
    (
      (await (
        await post(a, "/v1/createCredentials", {
          appName,
          developer: "d@example.com",
          apis: [{ id: "orders", usagePlans: [{ id: plan }] }],
        })
      ).json()) as { apiKey: string }
    ).apiKey;

  it("a 5 requests/second plan admits exactly 5 of a burst spread over both instances", async () => {
    const k = await key("Limited Across", "five-per-second");
    const statuses = await Promise.all(Array.from({ length: 12 }, (_, i) => check(i % 2 ? a : b, k, "/orders/1")));
    expect(statuses.filter((x) => x === 200)).toHaveLength(5);
    expect(statuses.filter((x) => x === 429)).toHaveLength(7);
  });

  it("a daily quota of 3 admits exactly 3, whichever instance answers", async () => {
    const k = await key("Quota Across", "three-a-day");
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push(await check(i % 2 ? a : b, k, "/orders/1"));
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
  });
});
