/**
 * Kong and Apigee behind the real server (SQLite store, the embedded gateway beside them):
 * `credhook adopt` of an existing Kong consumer and Apigee app, no orphan after a
 * write that lands late or a gateway that fails in the middle of a multi-gateway create, and
 * Kong plans Kong's rate-limiting plugin refuses: refused by check-config and serve, 422 for a
 * request whose plans merge into such limits.
 *
 * Both fakes run on one {@link ManualClock}: a write they hold lands when a test advances it,
 * never while the client still waits, so the client's time-out (real time) is generous: 2 s
 * a call, which a busy machine does not reach on a local call.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startApigeeFake, type ApigeeFake } from "@credhook/fakes/apigee";
import { startKongFake, type KongFake } from "@credhook/fakes/kong";
import { ManualClock } from "@credhook/fakes/clock";
import { checkConfig } from "../src/check-config.js";
import { importProviderModule, loadConfigFile } from "../src/index.js";
import { errorOf, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";

const YAML = LOCAL_YAML.replace(
  "routes:\n",
  `  kong:
    provider: kong
    credentialType: API_KEY
    options: { adminUrl: "\${KONG_URL}", plans: { k-gold: { minute: 100 }, k-burst: { second: 150 } }, timeoutMs: 2000, maxRetries: 0 }
  apigee:
    provider: apigee
    credentialType: API_KEY
    options: { organization: fake-org, endpoint: "\${APIGEE_URL}", credentials: { type: static-token }, timeoutMs: 2000, maxRetries: 0 }
reconcile: { abandonedIntervalS: 0, settleS: 1 }
routes:
  - { apis: ["k-*"], gateway: kong }
  - { apis: ["a-*"], gateway: apigee }
`,
);

let kong: KongFake;
let apigee: ApigeeFake;
let s: TestServer;
const dev = "kong-apigee@example.com";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The fakes' clock: a held write lands when a test advances it. */
const clock = new ManualClock();

beforeAll(async () => {
  kong = await startKongFake({ clock });
  apigee = await startApigeeFake({ apiProducts: ["a-orders", "a-pay"], clock });
  s = await startTestServer(YAML, { KONG_URL: kong.url, APIGEE_URL: apigee.url });
});
afterAll(async () => {
  await s?.close();
  await kong?.close();
  await apigee?.close();
});
afterEach(async () => {
  kong.clearFaults();
  apigee.clearFaults();
  for (const r of await s.credhook.store.list())
    if (r.status === "active")
      await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: r.publicId });
  // what is left on either gateway carries no credhook mark of a credential the portal does not hold
  expect(kong.consumers().filter((c) => c.tags?.includes("credhook"))).toEqual([]);
  expect(apigee.apps().filter((a) => a.attributes.some((x) => x.name === "credhook-gateway"))).toEqual([]);
});

/** Sweeps abandoned creates past the settle window until none is left. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10 && (await s.credhook.store.listAbandoned()).length > 0; i++) {
    await sleep(1100);
    await s.credhook.orchestrator.sweepAbandoned();
  }
  expect(await s.credhook.store.listAbandoned()).toEqual([]);
}

describe("credhook adopt", () => {
  it("an existing Kong consumer and an existing Apigee app come under their gateways; the portal then updates and revokes them", async () => {
    const consumer = kong.addForeignConsumer({
      username: "legacy-partner",
      key: "LegacyKongKey0123456789",
      groups: ["k-orders"],
    });
    const app = apigee.addForeignApp({
      developer: dev,
      name: "legacy-app",
      consumerKey: "LegacyApigeeKey_0123456789",
      apiProducts: ["a-orders"],
    });
    const entries = [
      {
        credentialType: "API_KEY" as const,
        apiKeyId: consumer.id,
        appName: "Legacy Kong",
        developer: dev,
        apis: [{ id: "k-orders", usagePlans: [] }],
      },
      {
        credentialType: "API_KEY" as const,
        apiKeyId: app.appId,
        appName: "Legacy Apigee",
        developer: dev,
        apis: [{ id: "a-orders", usagePlans: [] }],
      },
    ];
    expect((await s.credhook.orchestrator.adopt(entries, { dryRun: true })).map((r) => r.action)).toEqual([
      "would adopt",
      "would adopt",
    ]);
    const results = await s.credhook.orchestrator.adopt(entries);
    expect(results).toMatchObject([
      { action: "adopted", gateway: "kong" },
      { action: "adopted", gateway: "apigee" },
    ]);
    // the portal's next update adds a plan / an API product, with the adopted key
    const kongUpd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: consumer.id,
      apis: [{ id: "k-orders", action: "NONE", usagePlans: [{ id: "k-gold", action: "ADDED" }] }],
    });
    expect(kongUpd.status).toBe(204);
    expect(kong.plugins().find((p) => p.consumer?.id === consumer.id)?.config.minute).toBe(100);
    const apigeeUpd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: app.appId,
      apis: [{ id: "a-pay", action: "ADDED" }],
    });
    expect(apigeeUpd.status).toBe(204);
    expect(
      apigee
        .apps()[0]!
        .credentials[0]!.apiProducts.map((p) => p.apiproduct)
        .sort(),
    ).toEqual(["a-orders", "a-pay"]);
    expect((await s.post("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: consumer.id })).status).toBe(
      204,
    );
    expect((await s.post("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: app.appId })).status).toBe(
      204,
    );
    expect(kong.consumers()).toEqual([]);
    expect(apigee.apps()).toEqual([]);
  });
});

describe("never an orphan", () => {
  it("Kong's consumer create lands after the request gave up: 504, the record is kept abandoned, and the sweep removes the late consumer", async () => {
    // held on the fakes' clock, which stands still: it cannot land before the client's 2 s time-out
    kong.inject({ delayMs: 5000, method: "POST", path: "/consumers" });
    const err = await errorOf(
      await s.post("/v1/createCredentials", {
        appName: "Late Kong",
        developer: dev,
        apis: [{ id: "k-orders" }, { id: "orders-1" }],
      }),
    );
    expect(err.status).toBe(504);
    expect((await s.credhook.store.listAbandoned()).length).toBe(1);
    await clock.whenSleeping(); // the fake still holds the create …
    expect(kong.consumers()).toEqual([]); // … so nothing to find yet: the record stays abandoned
    await clock.advance(5000);
    await kong.idle();
    expect(kong.consumers()).toHaveLength(1); // landed after the client gave up: a key nobody holds…
    await settle();
    expect(kong.consumers()).toEqual([]); // …found by its tags and revoked
    expect(await s.credhook.store.stateFor("local").list("cred:")).toEqual([]);
  });

  it("Apigee failing after Kong succeeded: the create is rolled back on Kong and the embedded gateway, and the late Apigee app is swept", async () => {
    apigee.inject({ status: 503, afterApply: true, method: "POST", path: "/apps" });
    const err = await errorOf(
      await s.post("/v1/createCredentials", {
        appName: "Half",
        developer: dev,
        apis: [{ id: "k-orders" }, { id: "a-orders" }, { id: "orders-2" }],
      }),
    );
    expect(err.status).toBe(502);
    expect(kong.consumers()).toEqual([]);
    expect(await s.credhook.store.stateFor("local").list("cred:")).toEqual([]);
    await settle();
    expect(apigee.apps()).toEqual([]);
  });
});

describe("Kong plans Kong's rate-limiting plugin refuses", () => {
  it("check-config and serve refuse a plan whose longer window allows fewer requests, naming its YAML path and the periods", async () => {
    const yaml = YAML.replace("k-burst: { second: 150 }", "k-burst: { second: 150 }, k-bad: { minute: 100, hour: 50 }");
    const env = { KONG_URL: kong.url, APIGEE_URL: apigee.url };
    const problem =
      /^\[provider-kong\] gateways\.kong\.options\.plans\.k-bad: minute 100 above hour 50: Kong refuses this plan/;
    const dir = mkdtempSync(join(tmpdir(), "credhook-kong-plans-"));
    try {
      writeFileSync(join(dir, "webhook.config.yaml"), yaml);
      const config = await loadConfigFile(join(dir, "webhook.config.yaml"), {
        env: { CREDHOOK_PASSWORD: "kong-plans-password", CREDHOOK_DATA_DIR: dir, ...env },
      });
      const checked = await checkConfig(config, importProviderModule).catch((e: unknown) => e);
      expect((checked as { messages: string[] }).messages).toEqual([expect.stringMatching(problem)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const served = await startTestServer(yaml, env).catch((e: unknown) => e);
    expect((served as { messages: string[] }).messages).toEqual([expect.stringMatching(problem)]);
  });

  it("serve starts with plans valid alone and warns of the pairs one app cannot have", () => {
    const line = s.logs.map((l) => JSON.parse(l)).find((l) => l.at === "gateways.kong.options.plans");
    expect(line).toMatchObject({
      level: "warn",
      gateway: "kong",
      conflicts: ["'k-gold' + 'k-burst': second 150 (plan 'k-burst') above minute 100 (plan 'k-gold')"],
    });
  });

  it("a create whose Kong plans merge into limits Kong refuses answers 422 naming the plans and the periods, not 502; nothing is left on any gateway", async () => {
    const before = kong.requests.length;
    const res = await s.post("/v1/createCredentials", {
      appName: "Burst and Gold",
      developer: dev,
      apis: [{ id: "k-orders", usagePlans: [{ id: "k-gold" }, { id: "k-burst" }] }, { id: "orders-3" }],
    });
    const err = await errorOf(res);
    expect(err.status).toBe(422);
    expect(err.messages.join(" ")).toContain(
      "usage plans 'k-burst', 'k-gold' cannot be combined on this gateway: merged (each window the largest limit of the plans) they give second 150 (plan 'k-burst') above minute 100 (plan 'k-gold')",
    );
    expect(kong.requests.slice(before).filter((r) => r.method !== "GET")).toEqual([]);
    expect(kong.consumers()).toEqual([]);
    expect(await s.credhook.store.stateFor("local").list("cred:")).toEqual([]);
    expect((await s.credhook.store.list()).filter((r) => r.status === "active")).toEqual([]);
  });

  it("an update adding a Kong plan that cannot join the app's other plan answers 422; the consumer keeps what it had", async () => {
    const created = await s.call("/v1/createCredentials", {
      appName: "Gold",
      developer: dev,
      apis: [{ id: "k-orders", usagePlans: [{ id: "k-gold" }] }],
    });
    expect(created.status).toBe(200);
    const apiKeyId = (created.json as { apiKeyId: string }).apiKeyId;
    const before = kong.requests.length;
    const err = await errorOf(
      await s.post("/v1/updateCredentials", {
        credentialType: "API_KEY",
        apiKeyId,
        apis: [{ id: "k-orders", action: "NONE", usagePlans: [{ id: "k-burst", action: "ADDED" }] }],
      }),
    );
    expect(err.status).toBe(422);
    expect(err.messages.join(" ")).toContain("second 150 (plan 'k-burst') above minute 100 (plan 'k-gold')");
    expect(kong.requests.slice(before).filter((r) => r.method !== "GET")).toEqual([]);
    expect(kong.plugins().map((p) => p.config)).toMatchObject([{ second: null, minute: 100 }]);
  });
});
