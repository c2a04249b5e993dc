import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { ManualClock } from "@credhook/fakes/clock";
import { sharedLimiterCount } from "../src/limits.js";
import { makeProvider, rejection } from "./helpers.js";

let fake: ApiKeysFake;
let other: ApiKeysFake;
/** The fake's clock: its per-minute quotas free up only when a test advances it. */
const clock = new ManualClock();
beforeAll(async () => {
  fake = await startApiKeysFake({ clock });
  other = await startApiKeysFake({ projectId: "other-project" });
});
afterAll(async () => {
  await fake.close();
  await other.close();
});
beforeEach(() => {
  fake.control.reset();
  other.control.reset();
});

const app = { appName: "Busy App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];
const create = (p: Awaited<ReturnType<typeof makeProvider>>) =>
  p.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis });
const statuses = (rpc: string) =>
  fake
    .requests()
    .filter((r) => r.rpc === rpc)
    .map((r) => r.status);
/** Fast back-off after a 429 without a hint, so tests stay quick. */
const fastThrottle = { retry: { initialDelayMs: 5, maxDelayMs: 20, throttleInitialDelayMs: 20 } };

describe("429 RESOURCE_EXHAUSTED is retried within the budget", () => {
  it("a 429 without a retry hint (as Google usually sends it) is retried with back-off, and the create succeeds", async () => {
    const provider = await makeProvider(fake, fastThrottle);
    fake.control.fail({ status: 429, rpcs: ["CreateKey"], times: 2 });
    const cred = await create(provider);
    expect(statuses("CreateKey")).toEqual([429, 429, 200]);
    expect(fake.keys().map((k) => k.keyId)).toEqual([cred.nativeId]);
    await provider.close();
  });

  it("waits the RetryInfo delay Google sends", async () => {
    const provider = await makeProvider(fake, fastThrottle);
    fake.control.fail({ status: 429, retryAfterS: 1, rpcs: ["CreateKey"] });
    const started = Date.now();
    await create(provider);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(statuses("CreateKey")).toEqual([429, 200]);
    await provider.close();
  });

  it("429s on the operation poll and on getKeyString are retried too", async () => {
    const provider = await makeProvider(fake, fastThrottle);
    fake.control.setKeyStringInCreateResult(false);
    fake.control.fail({ status: 429, rpcs: ["GetOperation"] });
    fake.control.fail({ status: 429, rpcs: ["GetKeyString"] });
    const cred = await create(provider);
    expect(cred.apiKey).toBe(fake.key(cred.nativeId)!.keyString);
    expect(statuses("GetKeyString")).toEqual([429, 200]);
    expect(statuses("GetOperation")[0]).toBe(429);
    await provider.close();
  });

  it("when 429s outlast the budget: Throttled (503, Retry-After 60 s without a hint); a refused createKey left nothing (outcome known)", async () => {
    const provider = await makeProvider(fake, { retry: { throttleInitialDelayMs: 50, budgetMs: 300 } });
    fake.control.fail({ status: 429, rpcs: ["CreateKey"], times: 100 });
    const err = await rejection(create(provider));
    expect(err).toMatchObject({
      status: 503,
      code: "THROTTLED",
      retryAfterS: 60,
      outcomeUnknown: false,
      partial: undefined,
    });
    expect((err as Error).message).toMatch(
      /^\[gateway gcp-test\] createKey credhook-\w+: Google API Keys quota exceeded \(429\), try again later$/,
    );
    // Retried, until the 300 ms budget ended the retries: far fewer than the 100 429s injected
    // (counted, not timed: a busy machine makes fewer attempts in the budget, never 100).
    expect(statuses("CreateKey").length).toBeGreaterThan(1);
    expect(statuses("CreateKey").length).toBeLessThan(100);
    expect(fake.keys()).toHaveLength(0);
    await provider.close();
  });

  it("a RetryInfo delay longer than the budget is not waited: Throttled at once with that delay as Retry-After", async () => {
    const provider = await makeProvider(fake, { retry: { budgetMs: 2000 } });
    fake.control.fail({ status: 429, retryAfterS: 7, rpcs: ["CreateKey"] });
    const err = await rejection(create(provider));
    expect(err).toMatchObject({ status: 503, code: "THROTTLED", retryAfterS: 7 });
    expect(statuses("CreateKey")).toEqual([429]);
    await provider.close();
  });

  it("the project's real quota answer: the create waits within the budget, then answers 503 + Retry-After 60 s; a minute later it passes", async () => {
    const provider = await makeProvider(fake, {
      rateLimit: { writesPerMinute: 1000, writeBurst: 100 },
      retry: { throttleInitialDelayMs: 50, budgetMs: 400 },
    });
    fake.control.setQuotas({ writesPerMinute: 1 });
    await create(provider);
    const err = await rejection(create(provider));
    expect(err).toMatchObject({ status: 503, code: "THROTTLED", retryAfterS: 60 });
    // The fake's minute stands still: every retry within the budget met the quota, however slow the machine.
    expect(statuses("CreateKey").slice(0, 1)).toEqual([200]);
    expect(
      statuses("CreateKey")
        .slice(1)
        .every((s) => s === 429),
    ).toBe(true);
    expect(statuses("CreateKey").length).toBeGreaterThan(2);
    await clock.advance(60_000); // the first write has left the window
    await create(provider);
    expect(statuses("CreateKey").at(-1)).toBe(200);
    await provider.close();
  });

  it("budget 0 disables retries", async () => {
    const provider = await makeProvider(fake, { retry: { budgetMs: 0 } });
    fake.control.fail({ status: 429, rpcs: ["CreateKey"] });
    expect(await rejection(create(provider))).toMatchObject({ status: 503 });
    expect(statuses("CreateKey")).toEqual([429]);
    await provider.close();
  });
});

describe("client-side limiter", () => {
  it("refuses writes beyond its queue with Throttled before they reach Google", async () => {
    const provider = await makeProvider(fake, { rateLimit: { writesPerMinute: 6, writeBurst: 1, maxQueueWaitMs: 0 } });
    await create(provider);
    const creates = fake.requests().filter((r) => r.rpc === "CreateKey").length;
    const err = await rejection(create(provider));
    expect(err).toMatchObject({ status: 503, code: "THROTTLED", outcomeUnknown: false });
    expect((err as { retryAfterS: number }).retryAfterS).toBe(10);
    expect((err as Error).message).toContain("client-side limit 6/minute for project fake-project");
    expect(fake.requests().filter((r) => r.rpc === "CreateKey").length).toBe(creates);
    await provider.close();
  });

  it("queues a burst instead of failing it when the wait fits maxQueueWaitMs", async () => {
    // 600/minute = one write every 100 ms; burst 2; a queue of 5 fits in 1 s
    const provider = await makeProvider(fake, {
      rateLimit: { writesPerMinute: 600, writeBurst: 2, maxQueueWaitMs: 1000 },
    });
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => create(provider)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(6);
    expect(fake.keys()).toHaveLength(6);
    await provider.close();
  });

  it("is shared by every gateway of the process on the same project, and released with the last one", async () => {
    const limits = { rateLimit: { writesPerMinute: 6, writeBurst: 2, maxQueueWaitMs: 0 } };
    const before = sharedLimiterCount();
    const a = await makeProvider(fake, limits, "API_KEY", "gcp-a");
    const b = await makeProvider(fake, limits, "API_KEY", "gcp-b");
    const elsewhere = await makeProvider(other, { ...limits, projectId: "other-project" }, "API_KEY", "gcp-c");
    expect(sharedLimiterCount()).toBe(before + 2);
    await create(a);
    await create(b); // the project's burst of 2 is spent by two gateways together
    expect(await rejection(create(a))).toMatchObject({ status: 503, code: "THROTTLED" });
    expect(await rejection(create(b))).toMatchObject({ status: 503, code: "THROTTLED" });
    expect(fake.requests().filter((r) => r.rpc === "CreateKey")).toHaveLength(2);
    // another project has its own buckets
    await create(elsewhere);
    await a.close();
    expect(sharedLimiterCount()).toBe(before + 2);
    await b.close();
    await elsewhere.close();
    expect(sharedLimiterCount()).toBe(before);
  });
});
