/**
 * Issue 9 for Google Cloud API Keys, through the public HTTP interface: the full
 * server with the real @credhook/provider-gcp against the API Keys fake, which
 * injects each fault (a failed read after an accepted create, 429s on polls and
 * reads, a burst under RESOURCE_EXHAUSTED, writes that land after the client
 * gave up, a write applied then answered 500, 403s, keys made by someone else).
 * After each case — once late writes landed and the abandoned-create sweep ran —
 * zero live keys that no credential the portal holds explains, and the foreign
 * key untouched.
 *
 * The fake of `gcp`/`gcp2` runs on a {@link ManualClock}: a slow createKey (`setLatency`) or a
 * delayed operation (`delayOperations`) lands when a test advances it, never while the client
 * still waits, so the client's time-outs (real time) are generous: 1 s a call, 2 s an operation.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake, type FakeKey } from "@credhook/fakes/gcp";
import { ManualClock } from "@credhook/fakes/clock";
import { errorOf, LOCAL_YAML, startTestServer, type TestServer, until } from "./helpers.js";

/**
 * Gateway options of the GCP gateways: fast polls and a small retry budget so
 * faults resolve quickly, time-outs a busy machine does not reach on local calls. `gcp` and `gcp2` share one project
 * (and its rate limiter); `burst` has a project of its own on a second fake,
 * with the default 10 s retry budget (and room for more reads than Google's quota).
 */
const gcpOptions = (name: string, endpoint = "FAKE_URL", projectId = "fake-project") => `
  ${name}:
    provider: gcp
    credentialType: API_KEY
    options:
      projectId: ${projectId}
      endpoint: "\${${endpoint}}"
      credentials: { type: static-token }
      serviceTemplate: "{apiId}.apigateway.fake-project.cloud.goog"
      pollInitialDelayMs: 10
      requestTimeoutMs: 1000
      operationTimeoutMs: 2000
      retry: { initialDelayMs: 5, maxDelayMs: 20, throttleInitialDelayMs: 20, budgetMs: 400 }
      rateLimit: { writesPerMinute: 100, writeBurst: 100, readsPerMinute: 200, readBurst: 200 }`;

/** The shared test config (Basic auth, SQLite store, the embedded gateways) plus the GCP gateways and their routes, first. */
const YAML = LOCAL_YAML.replace(
  "routes:\n",
  `${gcpOptions("gcp")}${gcpOptions("gcp2")}${gcpOptions("burst", "BURST_FAKE_URL", "burst-project")
    .replace("budgetMs: 400", "budgetMs: 10000")
    .replace("requestTimeoutMs: 1000", "requestTimeoutMs: 5000")
    .replace("operationTimeoutMs: 2000", "operationTimeoutMs: 20000")
    .replace("readsPerMinute: 200, readBurst: 200", "readsPerMinute: 1000, readBurst: 400")}
reconcile: { abandonedIntervalS: 0, settleS: 1 }
routes:
  - { apis: ["burst-*"], gateway: burst }
  - { apis: ["g2-*"], gateway: gcp2 }
  - { apis: ["g-*"], gateway: gcp }
`,
);

let fake: ApiKeysFake;
let burstFake: ApiKeysFake;
let s: TestServer;
let foreign: FakeKey;
/**
 * The clock of `fake`: held writes land when a test advances it. Its per-minute quotas move
 * only with it: as much as the test waits between sweeps, a minute between cases.
 */
const clock = new ManualClock();
beforeAll(async () => {
  fake = await startApiKeysFake({ clock });
  // the burst and its cleanup (40 creates, 40 revokes) need ~300 reads: more than Google's 240 a minute, which is not under test here
  burstFake = await startApiKeysFake({ projectId: "burst-project", readsPerMinute: 2000 });
  s = await startTestServer(YAML, { FAKE_URL: fake.url, BURST_FAKE_URL: burstFake.url });
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
  await burstFake?.close();
});
beforeEach(async () => {
  await clock.advance(60_000); // the quotas' minute has passed
  foreign = fake.createForeignKey({ restrictions: { apiTargets: [{ service: "maps.googleapis.com" }] } });
});
afterEach(async () => {
  // every case leaves nothing: no abandoned record, no key the portal does not hold, the foreign key as it was
  fake.control.clearFaults();
  burstFake.control.clearFaults();
  await settle();
  expect(await unexplainedKeys()).toEqual([]);
  expect(fake.key(foreign.keyId)).toEqual(foreign);
  for (const r of await s.credhook.store.list()) {
    if (r.status === "active")
      await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: r.publicId });
  }
  fake.control.reset();
  burstFake.control.reset();
});

const dev = "gcp-faults@example.com";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const create = (appName: string, apiId = "g-orders") =>
  s.post("/v1/createCredentials", { appName, developer: dev, apis: [{ id: apiId }] });
const liveKeys = () => fake.keys().filter((k) => !k.deleteTime && k.keyId !== foreign.keyId);

/** Live keys (in both fakes) carrying credhook's credential-id annotation that no active credential of the store explains. */
async function unexplainedKeys(): Promise<string[]> {
  const held = new Set((await s.credhook.store.list()).filter((r) => r.status === "active").map((r) => r.id));
  return [...fake.keys(), ...burstFake.keys()]
    .filter(
      (k) =>
        !k.deleteTime &&
        k.annotations["credhook.io/credential-id"] !== undefined &&
        !held.has(k.annotations["credhook.io/credential-id"]!),
    )
    .map((k) => k.keyId);
}

/** Runs the abandoned-create sweep past the settle window until no abandoned record is left. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10 && (await s.credhook.store.listAbandoned()).length > 0; i++) {
    await sleep(1100); // settleS: 1
    await clock.advance(1100);
    await s.credhook.orchestrator.sweepAbandoned();
  }
  expect(await s.credhook.store.listAbandoned()).toEqual([]);
}

describe("a failed read after an accepted create (issue 9, case 1)", () => {
  it("getKeyString answering 503 on every attempt → 502; the key is revoked in the request; the portal's retry gets one live key", async () => {
    fake.control.setKeyStringInCreateResult(false);
    fake.control.fail({ status: 503, rpcs: ["GetKeyString"], times: 1000 });
    const err = await errorOf(await create("Unread"));
    expect(err.status).toBe(502);
    expect(err.messages[0]).toMatch(/getKeyString credhook-\w+ failed: 503 UNAVAILABLE/);
    expect(liveKeys()).toEqual([]); // core revoked the reported key within the request
    fake.control.clearFaults();
    const retry = await create("Unread");
    expect(retry.status).toBe(200);
    const { apiKeyId, apiKey } = (await retry.json()) as { apiKeyId: string; apiKey: string };
    expect(liveKeys().map((k) => [k.keyId, k.keyString])).toEqual([[apiKeyId, apiKey]]);
  });

  it("one 429 on the operation poll and one on getKeyString are retried: 200, one key", async () => {
    fake.control.setKeyStringInCreateResult(false);
    fake.control.fail({ status: 429, rpcs: ["GetOperation"] });
    fake.control.fail({ status: 429, rpcs: ["GetKeyString"] });
    const res = await create("Throttled once");
    expect(res.status).toBe(200);
    const { apiKeyId } = (await res.json()) as { apiKeyId: string };
    expect(liveKeys().map((k) => k.keyId)).toEqual([apiKeyId]);
  });

  it("429s on every poll beyond the retry budget → 503 + Retry-After; no key survives", async () => {
    fake.control.fail({ status: 429, rpcs: ["GetOperation"], times: 1000 });
    const res = await create("Throttled poll");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("60");
    expect((await errorOf(res)).messages[0]).toMatch(/Google API Keys quota exceeded \(429\), try again later/);
    fake.control.clearFaults();
    await settle();
    expect(liveKeys()).toEqual([]);
  });

  it(`a burst of 40 creates with occasional RESOURCE_EXHAUSTED: every create answers 200 and each app holds exactly one live key`, async () => {
    burstFake.control.setKeyStringInCreateResult(false);
    burstFake.control.fail({ status: 429, rpcs: ["CreateKey", "GetOperation", "GetKeyString"], every: 5, times: 1000 });
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => create(`Burst ${i}`, "burst-orders")));
    const failures = await Promise.all(
      answers.filter((r) => r.status !== 200).map(async (r) => `${r.status} ${(await errorOf(r)).messages[0]}`),
    );
    expect(failures).toEqual([]);
    expect(burstFake.requests().filter((r) => r.status === 429).length).toBeGreaterThan(10);
    const held = await Promise.all(answers.map(async (r) => ((await r.json()) as { apiKeyId: string }).apiKeyId));
    burstFake.control.clearFaults();
    await settle();
    expect(
      burstFake
        .keys()
        .filter((k) => !k.deleteTime)
        .map((k) => k.keyId)
        .sort(),
    ).toEqual([...held].sort());
  });
});

describe("writes that land after credhook gave up (issue 9, case 2)", () => {
  it("a createKey slower than requestTimeoutMs → 504; the key lands later and the sweep revokes it", async () => {
    fake.control.setLatency(5000, { rpcs: ["CreateKey"] });
    const err = await errorOf(await create("Late write"));
    expect(err.status).toBe(504);
    const [rec] = (await s.credhook.store.list()).filter((r) => r.app.appName === "Late write");
    expect(rec).toMatchObject({ status: "abandoned", abandoned: { uncertain: ["gcp"] } });
    // the fake holds all three attempts (maxAttempts 3): nothing has landed while the client waited
    await clock.whenSleeping(3);
    expect(fake.keys().filter((k) => k.keyId !== foreign.keyId)).toEqual([]);
    fake.control.clearFaults();
    await clock.advance(5000); // they land in order: the first makes the key, the retries meet its keyId
    await until("the three createKey attempts to be answered", () =>
      fake.requests().every((r) => r.rpc !== "CreateKey" || r.status !== 0),
    );
    expect(liveKeys()).toHaveLength(1); // one key, not one per attempt
    await settle();
    expect(liveKeys()).toEqual([]);
  });

  it("a create operation that finishes after operationTimeoutMs → 504; the sweep revokes the key once it appears", async () => {
    fake.control.delayOperations(5000);
    expect((await create("Late operation")).status).toBe(504);
    fake.control.delayOperations(0); // later writes (the revoke) apply at once; the accepted create still lands late
    expect(fake.keys().filter((k) => k.keyId !== foreign.keyId)).toEqual([]); // held past operationTimeoutMs
    await clock.advance(5000);
    expect(liveKeys()).toHaveLength(1); // landed after the client gave up
    await settle();
    expect(liveKeys()).toEqual([]);
  });

  it("a createKey applied and answered 500 on every attempt → 502; the key is found by its mark and revoked", async () => {
    fake.control.fail({ status: 500, rpcs: ["CreateKey"], afterApply: true });
    fake.control.fail({ status: 500, rpcs: ["CreateKey"], times: 10 });
    const err = await errorOf(await create("Applied"));
    expect(err.status).toBe(502);
    expect(fake.keys().filter((k) => k.keyId !== foreign.keyId)).toHaveLength(1);
    expect(liveKeys()).toEqual([]);
  });
});

describe("refused calls", () => {
  it("a createKey refused with 403 → 502 naming the IAM role; nothing was made", async () => {
    fake.control.fail({ status: 403, rpcs: ["CreateKey"] });
    const err = await errorOf(await create("Denied"));
    expect(err.status).toBe(502);
    expect(err.messages[0]).toContain("roles/serviceusage.apiKeysAdmin");
    expect(fake.keys().filter((k) => k.keyId !== foreign.keyId)).toEqual([]);
  });
});

describe("ownership (issue 9, case 5)", () => {
  it("a revoke of a foreign key's id is 204 and leaves it live; an update is 404 pointing to credhook adopt", async () => {
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: foreign.keyId })).status).toBe(
      204,
    );
    expect(fake.key(foreign.keyId)).toEqual(foreign);
    const err = await errorOf(
      await s.post("/v1/updateCredentials", {
        credentialType: "API_KEY",
        apiKeyId: foreign.keyId,
        apis: [{ id: "g-orders", action: "ADDED", usagePlans: [] }],
      }),
    );
    expect(err.status).toBe(404);
    expect(err.messages.some((m) => m.includes("credhook adopt"))).toBe(true);
    const metrics = await (await s.get("/metrics")).text();
    expect(metrics).toMatch(/credhook_revoke_unowned_total\{gateway="gcp"\} [1-9]/);
  });

  it("a revoke of an id the store lost removes the gateway's own key, and the other gateway on the same project leaves it alone", async () => {
    const res = await create("Lost", "g2-orders");
    const { apiKeyId } = (await res.json()) as { apiKeyId: string };
    const rec = (await s.credhook.store.findByPublicId("API_KEY", apiKeyId))!;
    await s.credhook.store.delete(rec.id);
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
    expect(fake.key(apiKeyId)!.deleteTime).toBeTruthy();
  });

  it("credhook adopt marks a foreign key (dry run first), after which the portal updates and revokes it", async () => {
    const entry = {
      credentialType: "API_KEY" as const,
      apiKeyId: foreign.keyId,
      appName: "Migrated",
      developer: dev,
      apis: [{ id: "g-orders", usagePlans: [] }],
    };
    expect(await s.credhook.orchestrator.adopt([entry], { dryRun: true })).toEqual([
      { publicId: foreign.keyId, action: "would adopt", gateway: "gcp" },
    ]);
    expect(fake.key(foreign.keyId)).toEqual(foreign);
    const [adopted] = await s.credhook.orchestrator.adopt([entry]);
    expect(adopted).toMatchObject({ action: "adopted", gateway: "gcp" });
    expect(fake.key(foreign.keyId)!.annotations).toMatchObject({
      "credhook.io/gateway": "gcp",
      "credhook.io/credential-id": adopted!.credentialId,
    });
    const upd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: foreign.keyId,
      apis: [
        { id: "g-orders", action: "NONE", usagePlans: [] },
        { id: "g-billing", action: "ADDED", usagePlans: [] },
      ],
    });
    expect(upd.status).toBe(204);
    expect(fake.key(foreign.keyId)!.restrictions.apiTargets!.map((t) => t.service)).toEqual([
      "g-billing.apigateway.fake-project.cloud.goog",
      "g-orders.apigateway.fake-project.cloud.goog",
    ]);
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: foreign.keyId })).status).toBe(
      204,
    );
    expect(fake.key(foreign.keyId)!.deleteTime).toBeTruthy();
    foreign = fake.key(foreign.keyId)!; // adopted and revoked on purpose: no longer someone else's
  });
});
