/**
 * The client-side limiters: the sliding window never lets more than N
 * attempts leave in any window, releases FIFO, refuses a queue longer than
 * maxQueueWaitMs; and every SDK attempt — retries included — passes through it,
 * so a burst against a strict sliding-window quota draws no throttled answer.
 * (Timings are measured by bench/burst.ts; the limiter's own release times are asserted on fake time.)
 */
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SlidingWindowLimiter } from "@credhook/core/provider-kit";
import { countLimiterSlots } from "@credhook/provider-testkit";
import { acquireAttempt } from "../src/limits.js";
import type { AwsFake } from "@credhook/fakes/aws";
import { ManualClock } from "@credhook/fakes/clock";
import { makeProvider, seededFake, testApp, type Seed } from "./helpers.js";

describe("SlidingWindowLimiter", () => {
  it("releases at most `limit` attempts in any window, first in first out, each as soon as the window allows", async () => {
    // Fake time: the limiter reads the (faked) Date.now and waits on the (faked) setTimeout, so the
    // release times below are exact however busy the machine is.
    vi.useFakeTimers();
    try {
      const t0 = Date.now();
      const limiter = new SlidingWindowLimiter(3, 200, "Op", () => Date.now());
      const released: Array<{ i: number; t: number }> = [];
      const all = Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          limiter.acquire(10_000).then(() => released.push({ i, t: Date.now() - t0 })),
        ),
      );
      await vi.advanceTimersByTimeAsync(1000);
      await all;
      expect(released.map((r) => r.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      for (let k = 3; k < released.length; k++) expect(released[k]!.t - released[k - 3]!.t).toBeGreaterThanOrEqual(200);
      expect(released.map((r) => r.t)).toEqual([0, 0, 0, 200, 200, 200, 400, 400, 400, 600]);
      await limiter.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it("refuses at once with 503 + Retry-After when the queue would wait longer than maxQueueWaitMs", async () => {
    const limiter = new SlidingWindowLimiter(2, 1000, "CreateApiKey");
    const queued = Array.from({ length: 6 }, () => limiter.acquire(60_000));
    expect(limiter.estimateWaitMs()).toBeGreaterThan(1500);
    expect(() => acquireAttempt(limiter, 1000, "gw")).toThrow(
      expect.objectContaining({ status: 503, code: "THROTTLED" }),
    );
    await limiter.stop();
    await Promise.all(queued);
  });
});

describe("every SDK attempt passes through the limiter", () => {
  let fake: AwsFake;
  let seed: Seed;
  afterEach(async () => {
    await fake.close();
  });

  it("20 concurrent creates against a strict 5-per-sliding-second CreateApiKey quota, with 3 injected 429s retried by the SDK: every attempt took a slot of the limiter, no answer throttled", {
    timeout: 30_000,
  }, async () => {
    ({ fake, seed } = await seededFake({ apiGateway: { quotaModel: "sliding-window" } }));
    const provider = await makeProvider(fake, seed, "API_KEY", { rateLimits: { windowMarginMs: 400 } });
    fake.faults.throttle({ operation: "CreateApiKey", count: 3, retryAfterS: 0 });
    // Counted at the limiter (the limiter's spacing itself is checked on fake time above).
    const { result: results, slots } = await countLimiterSlots("CreateApiKey", () =>
      Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          provider.create({
            credentialId: randomUUID(),
            credentialType: "API_KEY",
            app: { ...testApp, appSlug: `s${i}` },
            apis: [],
            apiKeyValue: `StrictQuota${i}${"x".repeat(20)}`,
          }),
        ),
      ),
    );
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    const calls = fake.stats().calls.CreateApiKey ?? 0;
    expect(calls).toBeGreaterThanOrEqual(23); // 20 + the 3 injected 429s retried
    expect(slots).toBe(calls); // every SDK attempt, retries included
    expect(fake.stats().throttled.CreateApiKey).toBe(calls - 20); // each call beyond the 20 retried a 429
    await provider.close?.();
  });

  it("the strict quota itself refuses a 6th CreateApiKey within one second (the fake is strict)", async () => {
    // The fake's clock stands still: the six calls fall in one window however slowly they arrive.
    ({ fake, seed } = await seededFake({ clock: new ManualClock(), apiGateway: { quotaModel: "sliding-window" } }));
    const provider = await makeProvider(fake, seed, "API_KEY", { rateLimits: { createApiKey: 1000 }, maxAttempts: 1 });
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        provider.create({
          credentialId: randomUUID(),
          credentialType: "API_KEY",
          app: { ...testApp, appSlug: `t${i}` },
          apis: [],
        }),
      ),
    );
    expect(
      results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason.status),
    ).toEqual([503]);
    await provider.close?.();
  });
});
