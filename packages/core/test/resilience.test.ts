/**
 * The pieces that keep a dependency's failure contained: the per-gateway circuit breaker, the
 * bounded outage log, and the fence checked before every cloud attempt.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { AvailabilityLog, runFenced } from "../src/entry/store.js";
import {
  CircuitOpen,
  InvalidReference,
  LockLost,
  StoreUnavailable,
  Throttled,
  UpstreamUnavailable,
} from "../src/entry/errors.js";
import { TokenBucketLimiter } from "../src/entry/provider-kit.js";
import type { Gateway, Logger } from "../src/index.js";
import type { Provider } from "../src/entry/provider.js";
import { GatewayCircuits, isGatewayDown } from "../src/orchestration/circuits.js";

/** A logger that keeps its lines. */
function recordingLogger(): Logger & { lines: Array<{ level: string; msg: string | undefined; obj: object }> } {
  const lines: Array<{ level: string; msg: string | undefined; obj: object }> = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push({ level, msg, obj });
  const logger = {
    lines,
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => logger,
  };
  return logger;
}

describe("circuit breaker per gateway", () => {
  const gatewayWith = (health: () => Promise<void>): Gateway => ({
    name: "aws",
    providerType: "aws",
    credentialType: "API_KEY",
    provider: { capabilities: {}, health } as unknown as Provider,
  });

  afterEach(() => vi.useRealTimers());

  it("opens after `threshold` failures in a row that say the cloud is down; then refuses without calling, and a trial after halfOpenAfterMs closes it", async () => {
    // The breaker (and cockatiel under it) reads Date.now: the test moves that clock instead of waiting out the delay.
    vi.useFakeTimers({ toFake: ["Date"] });
    const logger = recordingLogger();
    const circuits = new GatewayCircuits(["aws", "azure"], () => ({ threshold: 3, halfOpenAfterMs: 200 }), logger);
    let calls = 0;
    let down = true;
    const gw = circuits.wrap(
      gatewayWith(async () => {
        calls += 1;
        if (down) throw new UpstreamUnavailable("AWS answered 503");
      }),
    );
    for (let i = 0; i < 3; i++) await expect(gw.provider.health()).rejects.toBeInstanceOf(UpstreamUnavailable);
    expect(calls).toBe(3);
    await expect(gw.provider.health()).rejects.toBeInstanceOf(CircuitOpen);
    expect(calls).toBe(3); // refused without a call
    expect(() => circuits.assertClosed(["azure", "aws"])).toThrow(CircuitOpen);
    expect(() => circuits.assertClosed(["azure"])).not.toThrow(); // other gateways unaffected
    const refused = (() => {
      try {
        circuits.assertClosed(["aws"]);
      } catch (err) {
        return err as CircuitOpen;
      }
    })()!;
    expect(refused.status).toBe(503);
    expect(refused.retryAfterS).toBeGreaterThanOrEqual(1);
    expect(refused.outcomeUnknown).toBe(false); // nothing was sent: nothing can have landed
    expect(circuits.openGateways()).toEqual(["aws"]);
    down = false;
    vi.advanceTimersByTime(199);
    expect(() => circuits.assertClosed(["aws"])).toThrow(CircuitOpen); // still open 1 ms before halfOpenAfterMs
    await expect(gw.provider.health()).rejects.toBeInstanceOf(CircuitOpen);
    expect(calls).toBe(3);
    vi.advanceTimersByTime(1);
    expect(() => circuits.assertClosed(["aws"])).not.toThrow(); // a trial is due
    await gw.provider.health(); // the trial
    expect(calls).toBe(4);
    expect(circuits.openGateways()).toEqual([]);
    expect(logger.lines.map((l) => l.msg?.split(":")[0])).toEqual([
      "gateway circuit breaker opened",
      "gateway circuit breaker half-open",
      "gateway circuit breaker closed",
    ]);
  });

  it("counts only the cloud being down: not a throttle, a 4xx or the store's failure; threshold 0 is no breaker", () => {
    expect(isGatewayDown(new UpstreamUnavailable("503"))).toBe(true);
    expect(isGatewayDown(new Throttled("slow down"))).toBe(false);
    expect(isGatewayDown(new InvalidReference("no such plan"))).toBe(false);
    expect(isGatewayDown(new StoreUnavailable("store.postgres: a rate-limit slot failed"))).toBe(false);
    expect(isGatewayDown(new Error("raw"))).toBe(false);
    const off = new GatewayCircuits(["aws"], () => ({ threshold: 0 }), recordingLogger());
    const gw = gatewayWith(async () => undefined);
    expect(off.wrap(gw)).toBe(gw);
  });
});

describe("AvailabilityLog", () => {
  it("logs an outage once, a summary at most every summaryEveryMs, and its end once", () => {
    const logger = recordingLogger();
    let now = 0;
    const log = new AvailabilityLog(logger, { store: "store.postgres" }, "the credential store", 60_000, () => now);
    log.succeeded();
    for (let i = 0; i < 700; i++) {
      now += 100;
      log.failed("store.postgres: a query failed: connection refused (ECONNREFUSED)");
    }
    expect(log.available).toBe(false);
    log.succeeded();
    log.succeeded();
    expect(logger.lines.map((l) => l.msg)).toEqual([
      "the credential store is unavailable: requests that need it answer 503 + Retry-After until it is back",
      "the credential store is still unavailable",
      "the credential store is available again",
    ]);
    expect(logger.lines[2]!.obj).toMatchObject({ store: "store.postgres", failures: 700, downForS: 69.9 });
  });
});

describe("fencing", () => {
  it("a rate-limiter slot (the last step before an HTTP attempt) is refused once the operation's lock is lost", async () => {
    const limiter = new TokenBucketLimiter(100, 10, "CreateApiKey");
    let lost = false;
    const fence = {
      key: "slug:app",
      assertHeld() {
        if (lost) throw new LockLost("its PostgreSQL lock session ended");
      },
    };
    await runFenced(fence, () => limiter.acquire(1000));
    lost = true;
    await expect(runFenced(fence, () => limiter.acquire(1000))).rejects.toBeInstanceOf(LockLost);
    await limiter.acquire(1000); // outside a fenced operation: no check
    await limiter.stop();
  });
});
