// The shared provider kit: Retry-After, rate limiters, cached health, redaction,
// gateway errors, settleAll — through core's public exports.
import { describe, expect, it } from "vitest";
import {
  CachedHealthProbe,
  gatewayError,
  gatewayMessage,
  GatewayErrors,
  parseRetryAfter,
  RateLimitQueueFull,
  redactSecrets,
  rejectionsOf,
  retryAfterFromHeaders,
  settleAll,
  SlidingWindowLimiter,
  TokenBucketLimiter,
  unavailableFrom,
} from "@credhook/core/provider-kit";
import { NotFound, Throttled, UpstreamUnavailable } from "@credhook/core/errors";
import type { RateSlots } from "@credhook/core/store";

describe("parseRetryAfter (RFC 9110 §10.2.3)", () => {
  const now = Date.parse("2026-11-23T12:00:00Z");
  it("reads delay-seconds, decimals included", () => {
    expect(parseRetryAfter("120", now)).toBe(120);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter("1.5", now)).toBe(1.5);
    expect(parseRetryAfter(7, now)).toBe(7);
  });
  it("reads an HTTP-date as the seconds until it, 0 once passed", () => {
    expect(parseRetryAfter("Mon, 23 Nov 2026 12:00:30 GMT", now)).toBe(30);
    expect(parseRetryAfter("Mon, 23 Nov 2026 11:59:00 GMT", now)).toBe(0);
  });
  it("is undefined when absent, empty or unreadable", () => {
    for (const v of [undefined, null, "", "soon", Number.NaN]) expect(parseRetryAfter(v, now)).toBeUndefined();
  });
  it("from headers: the millisecond headers first, then Retry-After", () => {
    const h = (o: Record<string, string>) => (n: string) => o[n];
    expect(retryAfterFromHeaders(h({ "retry-after-ms": "1500", "retry-after": "9" }), now)).toBe(1.5);
    expect(retryAfterFromHeaders(h({ "x-ms-retry-after-ms": "250" }), now)).toBe(0.25);
    expect(retryAfterFromHeaders(h({ "retry-after": "Mon, 23 Nov 2026 12:01:00 GMT" }), now)).toBe(60);
    expect(retryAfterFromHeaders(h({}), now)).toBeUndefined();
  });
});

describe("redactSecrets", () => {
  it("redacts every marked value whatever its length, longer ones first", () => {
    expect(redactSecrets("key abc and abcdef and x", ["abc", "abcdef", undefined, ""])).toBe("key *** and *** and x");
    expect(redactSecrets("a7 is short", ["a7"])).toBe("*** is short");
  });
  it("leaves text without secrets unchanged", () => {
    expect(redactSecrets("nothing here", ["secret-value"])).toBe("nothing here");
  });
});

describe("gateway errors", () => {
  it("prefix the message with [gateway name] and set gateway", () => {
    const err = gatewayError("aws-prod", NotFound, "API key k1 does not exist");
    expect(err).toBeInstanceOf(NotFound);
    expect(err.message).toBe("[gateway aws-prod] API key k1 does not exist");
    expect(err.messages).toEqual(["[gateway aws-prod] API key k1 does not exist"]);
    expect(err.gateway).toBe("aws-prod");
  });
  it("pass the class's other arguments through", () => {
    const cause = new Error("x");
    const err = new GatewayErrors("gcp").error(Throttled, "quota", 7, { cause });
    expect(err).toMatchObject({ status: 503, retryAfterS: 7, gateway: "gcp", message: "[gateway gcp] quota" });
    expect(err.cause).toBe(cause);
    expect(gatewayError("a", UpstreamUnavailable, "down", 5, { gateway: "b" }).gateway).toBe("b");
    expect(gatewayMessage("a", "text")).toBe("[gateway a] text");
  });
  it("unavailableFrom: a failed health probe is UpstreamUnavailable — kept as it is, or carrying another error's message and cause", () => {
    const down = new UpstreamUnavailable("[gateway k] throttled", 12);
    expect(unavailableFrom("k", down, new Error("sdk"))).toBe(down);
    const sdkError = new Error("403 from the Admin API");
    const forbidden = gatewayError("k", NotFound, "no such workspace");
    const err = unavailableFrom("k", forbidden, sdkError);
    expect(err).toBeInstanceOf(UpstreamUnavailable);
    expect(err).toMatchObject({ status: 503, retryAfterS: 5, gateway: "k", message: "[gateway k] no such workspace" });
    expect(err.cause).toBe(sdkError);
    expect(unavailableFrom("k", forbidden, sdkError, 30).retryAfterS).toBe(30);
  });
});

describe("settleAll", () => {
  it("keeps the items' order, never rejects, and runs at most `concurrency` at once", async () => {
    let running = 0;
    let most = 0;
    const results = await settleAll(
      [1, 2, 3, 4, 5, 6],
      async (n) => {
        running += 1;
        most = Math.max(most, running);
        await Promise.resolve();
        running -= 1;
        if (n % 3 === 0) throw new Error(`no ${n}`);
        return n * 10;
      },
      2,
    );
    expect(most).toBe(2);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : (r.reason as Error).message))).toEqual([
      10,
      20,
      "no 3",
      40,
      50,
      "no 6",
    ]);
    expect(rejectionsOf(results).map((e) => (e as Error).message)).toEqual(["no 3", "no 6"]);
  });
  it("without a limit, starts every call at once", async () => {
    let started = 0;
    let open!: () => void;
    const gate = { promise: new Promise<void>((r) => (open = r)) };
    const done = settleAll([1, 2, 3], async () => {
      started += 1;
      await gate.promise;
    });
    await Promise.resolve();
    expect(started).toBe(3);
    open();
    expect((await done).every((r) => r.status === "fulfilled")).toBe(true);
  });
});

describe("CachedHealthProbe", () => {
  function probeWith(outcomes: Array<Error | undefined>, ttl: { successTtlMs: number; failureTtlMs?: number }) {
    let t = 1_000;
    let calls = 0;
    const probe = new CachedHealthProbe(
      async () => {
        const o = outcomes[calls++];
        if (o) throw o;
      },
      { ...ttl, now: () => t },
    );
    return { probe, advance: (ms: number) => (t += ms), calls: () => calls };
  }

  it("reuses a success for successTtlMs; concurrent checks share one probe", async () => {
    const h = probeWith([undefined, undefined], { successTtlMs: 10_000 });
    await Promise.all([h.probe.check(), h.probe.check()]);
    h.advance(9_999);
    await h.probe.check();
    expect(h.calls()).toBe(1);
    h.advance(1);
    await h.probe.check();
    expect(h.calls()).toBe(2);
  });

  it("reuses a failure for its own TTL (default: min(5 s, successTtlMs)), then probes again", async () => {
    const down = new Error("down");
    const h = probeWith([down, undefined], { successTtlMs: 30_000 });
    await expect(h.probe.check()).rejects.toBe(down);
    h.advance(4_999);
    await expect(h.probe.check()).rejects.toBe(down);
    expect(h.calls()).toBe(1);
    h.advance(1);
    await expect(h.probe.check()).resolves.toBeUndefined();
    expect(h.calls()).toBe(2);
  });

  it("failureTtlMs 0 never reuses a failure; successTtlMs 0 never reuses a success", async () => {
    const h = probeWith([new Error("a"), undefined, undefined], { successTtlMs: 0 });
    await expect(h.probe.check()).rejects.toThrow("a");
    await h.probe.check();
    await h.probe.check();
    expect(h.calls()).toBe(3);
    const f = probeWith([new Error("b"), undefined], { successTtlMs: 60_000, failureTtlMs: 0 });
    await expect(f.probe.check()).rejects.toThrow("b");
    await expect(f.probe.check()).resolves.toBeUndefined();
  });
});

describe("rate limiters", () => {
  it("a token bucket admits its burst at once and refuses what would wait longer than maxQueueWaitMs, never counting one token twice", async () => {
    let t = 0;
    const bucket = new TokenBucketLimiter(0.1, 2, "writes", () => t);
    try {
      const outcomes = await Promise.allSettled([bucket.acquire(0), bucket.acquire(0), bucket.acquire(0)]);
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
      const refused = (outcomes[2] as PromiseRejectedResult).reason as RateLimitQueueFull;
      expect(refused).toBeInstanceOf(RateLimitQueueFull);
      expect(refused).toMatchObject({ limiter: "writes", waitMs: 10_000, perSecond: 0.1, acrossInstances: false });
      expect(bucket.estimateWaitMs()).toBe(10_000);
      t = 10_000; // one token refilled
      await bucket.acquire(0);
      await expect(bucket.acquire(0)).rejects.toBeInstanceOf(RateLimitQueueFull);
    } finally {
      await bucket.stop();
    }
  });

  it("with shared slots, an attempt also waits for its slot among all instances, refused beyond maxQueueWaitMs", async () => {
    const reserved: Array<[string, number, number | undefined]> = [];
    const slots: RateSlots = {
      async reserve(key, intervalMs, burst) {
        reserved.push([key, intervalMs, burst]);
        return reserved.length === 1 ? 0 : 60_000;
      },
    };
    const bucket = new TokenBucketLimiter(10, 5, "reads");
    try {
      await bucket.acquire(1_000, { slots, key: "cloud|acct|reads" });
      await expect(bucket.acquire(1_000, { slots, key: "cloud|acct|reads" })).rejects.toMatchObject({
        name: "RateLimitQueueFull",
        acrossInstances: true,
        waitMs: 60_000,
      });
      // The bucket's own burst is the shared bucket's: one cloud bucket for every instance.
      expect(reserved).toEqual([
        ["cloud|acct|reads", 100, 5],
        ["cloud|acct|reads", 100, 5],
      ]);
    } finally {
      await bucket.stop();
    }
  });

  it("a sliding window lets `limit` attempts through at once and refuses the next synchronously when it may not wait", async () => {
    const window = new SlidingWindowLimiter(2, 60_000, "CreateApiKey");
    try {
      await Promise.all([window.acquire(0), window.acquire(0)]);
      expect(window.estimateWaitMs()).toBeGreaterThan(59_000);
      expect(() => window.acquire(1_000)).toThrow(RateLimitQueueFull);
      expect(window.spacingMs).toBe(30_000);
      // Across instances a strict window's slots are evenly spaced (no burst): a burst of `limit` then one more would put limit + 1 in a window.
      expect(window.sharedBurst).toBe(1);
    } finally {
      await window.stop();
    }
  });
});
