/**
 * Issue 9 at provider level: every fault the fake can inject around a create,
 * followed by core-style compensation (revoke the reported `partial`, then
 * findByCredential + revoke while the outcome is unknown, again after a late
 * write landed) — zero live keys the portal does not hold, and a key someone
 * else made in the same project is never touched.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake, type FakeKey } from "@credhook/fakes/gcp";
import { ManualClock } from "@credhook/fakes/clock";
import { ANNOTATIONS, keyIdFor } from "../src/mapping.js";
import type { GcpApiKeysProvider, GcpProviderOptions } from "../src/index.js";
import { compensate, eventually, liveOrphans, makeProvider, rejection, sweep } from "./helpers.js";

let fake: ApiKeysFake;
/** The fake's clock: a slow or delayed write lands when the test advances it, never while the client still waits. */
const clock = new ManualClock();
let foreign: FakeKey;
beforeAll(async () => {
  fake = await startApiKeysFake({ clock });
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.control.reset();
  foreign = fake.createForeignKey({
    keyId: "someone-elses-key",
    restrictions: { apiTargets: [{ service: "maps.googleapis.com" }] },
  });
});

const app = { appName: "Faulty App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];
/** Fast retries and a small budget, so exhausted retries fail quickly. */
const quick: Partial<GcpProviderOptions> = {
  retry: { initialDelayMs: 5, maxDelayMs: 10, throttleInitialDelayMs: 10, budgetMs: 200 },
};

function expectForeignUntouched(): void {
  expect(fake.key(foreign.keyId)).toEqual(foreign);
}

/** After a create whose write lands late: once `keyId` appears it is a live orphan, until core's sweep revokes it. */
async function expectLateKeySwept(provider: GcpApiKeysProvider, credentialId: string, keyId: string): Promise<void> {
  await eventually(() => fake.key(keyId) !== undefined);
  expect(liveOrphans(fake)).toEqual([keyId]);
  expect(await sweep(provider, credentialId, app, apis)).toEqual(["revoked"]);
  expect(liveOrphans(fake)).toEqual([]);
  expectForeignUntouched();
  await provider.close();
}

interface Case {
  name: string;
  options?: Partial<GcpProviderOptions>;
  arrange: () => void;
  /** What the create answers. */
  expected: { status: number; partial: boolean };
}

const afterAcceptedCreate: Case[] = [
  {
    name: "getKeyString answers 503 on every attempt (the create operation's Key lacks keyString)",
    arrange: () => {
      fake.control.setKeyStringInCreateResult(false);
      fake.control.fail({ status: 503, rpcs: ["GetKeyString"], times: 1000 });
    },
    expected: { status: 502, partial: true },
  },
  {
    name: "getKeyString answers 429 beyond the retry budget",
    arrange: () => {
      fake.control.setKeyStringInCreateResult(false);
      fake.control.fail({ status: 429, rpcs: ["GetKeyString"], times: 1000 });
    },
    expected: { status: 503, partial: true },
  },
  {
    name: "every operation poll answers 429 beyond the retry budget",
    arrange: () => fake.control.fail({ status: 429, rpcs: ["GetOperation"], times: 1000 }),
    expected: { status: 503, partial: true },
  },
  {
    name: "every operation poll answers 500",
    arrange: () => fake.control.fail({ status: 500, rpcs: ["GetOperation"], times: 1000 }),
    expected: { status: 502, partial: true },
  },
  {
    name: "the operation poll answers 403 (IAM without serviceusage.operations.get)",
    arrange: () => fake.control.fail({ status: 403, rpcs: ["GetOperation"] }),
    expected: { status: 502, partial: true },
  },
  {
    name: "getKeyString answers 403 (IAM without apikeys.keys.getKeyString)",
    arrange: () => {
      fake.control.setKeyStringInCreateResult(false);
      fake.control.fail({ status: 403, rpcs: ["GetKeyString"] });
    },
    expected: { status: 502, partial: true },
  },
  {
    name: "createKey is applied, then answered 500, and not retried",
    options: { retry: { maxAttempts: 1 } },
    arrange: () => fake.control.fail({ status: 500, rpcs: ["CreateKey"], afterApply: true }),
    expected: { status: 502, partial: false },
  },
];

describe("a failure after createKey may have been applied: reported with outcomeUnknown, never cleaned up by the provider", () => {
  for (const c of afterAcceptedCreate) {
    it(`${c.name} → ${c.expected.status}; compensation leaves 0 live orphans`, async () => {
      const provider = await makeProvider(fake, { ...quick, ...c.options });
      const credentialId = randomUUID();
      const keyId = keyIdFor(credentialId, "credhook-");
      c.arrange();
      const err = await rejection(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
      expect(err).toMatchObject({ status: c.expected.status, outcomeUnknown: true });
      if (c.expected.partial)
        expect(err).toMatchObject({
          partial: { nativeId: keyId, resources: { keyName: `projects/fake-project/locations/global/keys/${keyId}` } },
        });
      else expect((err as { partial?: unknown }).partial).toBeUndefined();
      // the key is live: the provider deleted nothing itself
      expect(fake.requests().some((r) => r.rpc === "DeleteKey")).toBe(false);
      expect(liveOrphans(fake)).toEqual([keyId]);

      fake.control.clearFaults(); // the cloud recovers; the key remains
      const outcomes = await compensate(provider, credentialId, err, app, apis);
      expect(outcomes).toContain("revoked");
      expect(liveOrphans(fake)).toEqual([]);
      expect(await sweep(provider, credentialId, app, apis)).toEqual([]); // the settle-window search finds nothing
      await provider.close();
    });
  }

  it("one 429 on the poll and one on getKeyString are absorbed by retries: the create succeeds, nothing to compensate", async () => {
    const provider = await makeProvider(fake, { retry: { throttleInitialDelayMs: 10 } });
    fake.control.setKeyStringInCreateResult(false);
    fake.control.fail({ status: 429, rpcs: ["GetOperation"] });
    fake.control.fail({ status: 429, rpcs: ["GetKeyString"] });
    const cred = await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis });
    expect(liveOrphans(fake, [cred.nativeId])).toEqual([]);
    expectForeignUntouched();
    await provider.close();
  });
});

describe("a refused createKey: outcome known, nothing to clean", () => {
  for (const status of [403, 429]) {
    it(`createKey answers ${status} → no partial, outcomeUnknown false, no key`, async () => {
      const provider = await makeProvider(fake, quick);
      fake.control.fail({ status, rpcs: ["CreateKey"], times: 1000 });
      const err = await rejection(
        provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }),
      );
      expect(err).toMatchObject({ status: status === 429 ? 503 : 502, outcomeUnknown: false, partial: undefined });
      expect(liveOrphans(fake)).toEqual([]);
      expectForeignUntouched();
      await provider.close();
    });
  }
});

describe("a write that lands after the client gave up", () => {
  it("createKey slower than requestTimeoutMs: 504 outcome unknown; the key appears later and the sweep revokes it", async () => {
    // The held createKey never answers in time (the fake's clock stands still); the calls after it have 1 s each.
    const provider = await makeProvider(fake, { requestTimeoutMs: 1000, retry: { maxAttempts: 1 } });
    fake.control.setLatency(2000, { rpcs: ["CreateKey"] });
    const credentialId = randomUUID();
    const keyId = keyIdFor(credentialId, "credhook-");
    const err = await rejection(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 504, code: "UPSTREAM_TIMEOUT", outcomeUnknown: true, partial: undefined });
    // compensation in the request finds nothing yet: the write has not landed
    expect(await compensate(provider, credentialId, err, app, apis)).toEqual([]);
    expect(fake.key(keyId)).toBeUndefined();
    // ... then it lands; the record stays abandoned, and the sweep finds and revokes it
    await clock.whenSleeping();
    await clock.advance(2000);
    await expectLateKeySwept(provider, credentialId, keyId);
  });

  it("createKey slower than requestTimeoutMs, retried: the retry meets the reserved keyId or the landed key — never a second key", async () => {
    const provider = await makeProvider(fake, { requestTimeoutMs: 500, retry: { initialDelayMs: 5, maxDelayMs: 10 } });
    fake.control.setLatency(1000, { rpcs: ["CreateKey"] });
    const credentialId = randomUUID();
    const err = await rejection(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 504, outcomeUnknown: true });
    await clock.whenSleeping(3); // the three attempts are all held: the later ones meet the first one's reserved keyId
    await clock.advance(1000);
    await eventually(() => fake.requests().filter((r) => r.rpc === "CreateKey" && r.status !== 0).length === 3);
    expect(fake.keys().filter((k) => k.keyId !== foreign.keyId)).toHaveLength(1);
    await compensate(provider, credentialId, err, app, apis);
    expect(liveOrphans(fake)).toEqual([]);
    await provider.close();
  });

  it("a create operation that lands after operationTimeoutMs: 504 with the keyId as partial; revoke finds it 'gone' at first, the sweep revokes it once it lands", async () => {
    // The delayed create never lands in time (the fake's clock stands still); the revoke's operation has 1 s.
    const provider = await makeProvider(fake, { operationTimeoutMs: 1000 });
    fake.control.delayOperations(5000);
    const credentialId = randomUUID();
    const keyId = keyIdFor(credentialId, "credhook-");
    const err = await rejection(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 504, outcomeUnknown: true, partial: { nativeId: keyId } });
    fake.control.delayOperations(0); // writes from now on apply at once; the create accepted before still lands late
    expect(await compensate(provider, credentialId, err, app, apis)).toEqual(["gone"]);
    await clock.advance(5000);
    await expectLateKeySwept(provider, credentialId, keyId);
  });

  it("a replayed create while the first create's operation is still landing answers 503 (outcome unknown), not a second key", async () => {
    const provider = await makeProvider(fake, { operationTimeoutMs: 1000 });
    fake.control.delayOperations(5000);
    const credentialId = randomUUID();
    await rejection(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    const again = await rejection(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(again).toMatchObject({ status: 503, code: "UPSTREAM_UNAVAILABLE", outcomeUnknown: true });
    expect((again as Error).message).toContain("the keyId is taken by a create that has not finished yet");
    fake.control.delayOperations(0);
    await clock.advance(5000);
    await eventually(() => fake.key(keyIdFor(credentialId, "credhook-")) !== undefined);
    expect(fake.keys().filter((k) => k.keyId !== foreign.keyId)).toHaveLength(1);
    await sweep(provider, credentialId, app, apis);
    expect(liveOrphans(fake)).toEqual([]);
    await provider.close();
  });
});

describe("faults on update and revoke", () => {
  it("an updateKey applied but its poll failing is reported outcome unknown; core's inverse update restores the previous state", async () => {
    const provider = await makeProvider(fake, { ...quick, usagePlans: { gold: [], silver: ["Get*"] } });
    const credentialId = randomUUID();
    const before = [{ id: "orders", usagePlans: ["gold"] }];
    const after = [{ id: "orders", usagePlans: ["silver"] }];
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis: before });
    const ref = {
      credentialId,
      credentialType: "API_KEY" as const,
      nativeId: cred.nativeId,
      resources: cred.resources,
      app,
    };
    fake.control.fail({ status: 500, rpcs: ["GetOperation"], times: 1000 });
    const err = await rejection(provider.update({ ...ref, previous: before, desired: after, changes: [] }));
    expect(err).toMatchObject({ status: 502, outcomeUnknown: true });
    fake.control.clearFaults();
    await provider.update({ ...ref, previous: after, desired: before, changes: [] });
    expect(JSON.parse(fake.key(cred.nativeId)!.annotations[ANNOTATIONS.usagePlans]!)).toEqual({ orders: ["gold"] });
    expect(fake.key(cred.nativeId)!.restrictions.apiTargets).toEqual([
      { service: "orders.apigateway.fake-project.cloud.goog" },
    ]);
    await provider.close();
  });

  it("a deleteKey applied but answered 500 is sent again and counts as revoked", async () => {
    const provider = await makeProvider(fake, quick);
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    fake.control.fail({ status: 500, rpcs: ["DeleteKey"], afterApply: true });
    expect(
      await provider.revoke({ credentialId, credentialType: "API_KEY", nativeId: cred.nativeId, resources: {}, app }),
    ).toBe("revoked");
    expect(
      fake
        .requests()
        .filter((r) => r.rpc === "DeleteKey")
        .map((r) => r.status),
    ).toEqual([500, 404]);
    expect(liveOrphans(fake)).toEqual([]);
    expectForeignUntouched();
    await provider.close();
  });
});
