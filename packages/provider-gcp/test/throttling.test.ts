import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "../src/fake/index.js";
import { makeProvider, rejection } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Busy App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];
const create = (p: Awaited<ReturnType<typeof makeProvider>>) => p.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis });

describe("quotas and throttling", () => {
  it("a 429 from Google is Throttled (503) with its RetryInfo delay, and is not retried", async () => {
    const provider = await makeProvider(fake);
    fake.control.fail({ status: 429, retryAfterS: 7, rpcs: ["CreateKey"] });
    const err = await rejection(create(provider));
    expect(err).toMatchObject({ status: 503, code: "THROTTLED", retryAfterS: 7 });
    expect((err as Error).message).toMatch(/^\[gateway gcp-test\] createKey credhook-\w+: Google API Keys quota exceeded \(429\), try again later$/);
    expect(fake.requests().filter((r) => r.rpc === "CreateKey")).toHaveLength(1);
    expect(fake.keys()).toHaveLength(0);
    await provider.close();
  });

  it("the project's real quota answer (no retry hint) is Throttled with Retry-After 60 s", async () => {
    const provider = await makeProvider(fake, { rateLimit: { writesPerMinute: 1000, writeBurst: 100 } });
    fake.control.setQuotas({ writesPerMinute: 1 });
    await create(provider);
    const err = await rejection(create(provider));
    expect(err).toMatchObject({ status: 503, code: "THROTTLED", retryAfterS: 60 });
    await provider.close();
  });

  it("the client-side limiter refuses writes beyond its queue with Throttled before they reach Google", async () => {
    const provider = await makeProvider(fake, { rateLimit: { writesPerMinute: 6, writeBurst: 1, maxQueueWaitMs: 0 } });
    await create(provider);
    const creates = fake.requests().filter((r) => r.rpc === "CreateKey").length;
    const err = await rejection(create(provider));
    expect(err).toMatchObject({ status: 503, code: "THROTTLED" });
    expect((err as { retryAfterS: number }).retryAfterS).toBe(10);
    expect((err as Error).message).toContain("client-side limit 6/minute");
    expect(fake.requests().filter((r) => r.rpc === "CreateKey").length).toBe(creates);
    await provider.close();
  });

  it("the limiter queues a burst instead of failing it when the wait fits maxQueueWaitMs", async () => {
    // 600/minute = one write every 100 ms; burst 2; a queue of 5 fits in 1 s
    const provider = await makeProvider(fake, { rateLimit: { writesPerMinute: 600, writeBurst: 2, maxQueueWaitMs: 1000 } });
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => create(provider)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(6);
    expect(fake.keys()).toHaveLength(6);
    await provider.close();
  });
});
