/**
 * A burst of 25 concurrent creates under the 5 rps CreateApiKey quota (five
 * times what one second allows): the client-side limiter queues them, so all 25
 * succeed (timings of larger bursts: bench/burst.ts).
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AwsFake } from "@credhook/fakes/aws";
import { makeProvider, seededFake, testApp, type Seed } from "./helpers.js";

let fake: AwsFake;
let seed: Seed;
beforeEach(async () => {
  ({ fake, seed } = await seededFake()); // quotas enforced
});
afterEach(async () => {
  await fake.close();
});

/**
 * The limiter, not AWS's retries, kept CreateApiKey under its quota for `creates` creates: at most
 * 3 throttled calls, each one retried by the SDK (calls = creates + throttled). The limiter paces
 * the sends; on a loaded machine the event loop can still delay one send until it reaches AWS
 * together with the next, and the quota's bucket has no slack left at a steady 5/s. Without the
 * limiter the same burst is throttled many times over (the third case below).
 */
function expectLimiterKeptQuota(creates: number): void {
  const throttled = fake.stats().throttled.CreateApiKey ?? 0;
  expect(throttled).toBeLessThanOrEqual(3);
  expect(fake.stats().calls.CreateApiKey).toBe(creates + throttled);
}

const burst = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ ...testApp, appName: `Burst ${i}`, appSlug: `burst${i}` }));

describe("burst of creates", () => {
  it("25 concurrent creates end with 25 keys, each in both plans, and zero errors", { timeout: 60_000 }, async () => {
    const provider = await makeProvider(fake, seed, "API_KEY");
    const apis = [
      { id: seed.apiA, usagePlans: [seed.planA] },
      { id: seed.apiB, usagePlans: [seed.planB] },
    ];
    const results = await Promise.allSettled(
      burst(25).map((app) => provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis })),
    );
    const failed = results.filter((r) => r.status === "rejected");
    expect(failed.map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    expect(fake.apiGateway.keys.size).toBe(25);
    for (const id of fake.apiGateway.keys.keys())
      expect(fake.apiGateway.plansOfKey(id)).toEqual([seed.planA, seed.planB].sort());
    expectLimiterKeptQuota(25);
    await provider.close?.();
  });

  it("two gateways on one account and region share the quota: their joint burst is not throttled either", {
    timeout: 30_000,
  }, async () => {
    const a = await makeProvider(fake, seed, "API_KEY");
    const b = await makeProvider(fake, seed, "API_KEY", { revokeMode: "disable" });
    const results = await Promise.allSettled(
      burst(16).map((app, i) =>
        (i % 2 ? a : b).create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [] }),
      ),
    );
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(fake.apiGateway.keys.size).toBe(16);
    expectLimiterKeptQuota(16);
    await a.close?.();
    await b.close?.();
  });

  it("without the client-side limit the same quota refuses part of the burst (the fake enforces it)", async () => {
    const provider = await makeProvider(fake, seed, "API_KEY", { rateLimits: { createApiKey: 1000 }, maxAttempts: 1 });
    const results = await Promise.allSettled(
      burst(20).map((app) => provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [] })),
    );
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed) expect(f.reason).toMatchObject({ status: 503, code: "THROTTLED" });
    await provider.close?.();
  });

  it("a queue longer than maxQueueWaitMs answers 503 with Retry-After at once instead of waiting", async () => {
    const provider = await makeProvider(fake, seed, "API_KEY", { maxQueueWaitMs: 1_000 });
    const results = await Promise.allSettled(
      burst(12).map((app) => provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [] })),
    );
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed) {
      expect(f.reason).toMatchObject({
        status: 503,
        code: "THROTTLED",
        message: expect.stringContaining("already queued"),
      });
      expect(f.reason.retryAfterS).toBeGreaterThanOrEqual(1);
    }
    expect(fake.apiGateway.keys.size).toBe(12 - failed.length);
    await provider.close?.();
  });
});
