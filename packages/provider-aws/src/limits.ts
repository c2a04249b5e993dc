/**
 * Client-side rate limiting that keeps credhook under AWS's per-account
 * control-plane quotas, so a burst of portal requests queues instead of being
 * refused:
 *
 * - API Gateway (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html#api-gateway-control-service-limits-table):
 *   CreateApiKey 5 rps, DeleteApiKey 5 rps, every other operation 10 rps with a burst of 40.
 * - Cognito (https://docs.aws.amazon.com/cognito/latest/developerguide/quotas.html#category_operations):
 *   ≤ 5 rps per operation and user pool (credhook's conservative reading of the
 *   UserPoolClient/ResourceServer categories).
 *
 * Limits apply to every HTTP **attempt**, not to every SDK call: the provider
 * installs {@link RateLimiter.acquire} as SDK middleware after the retry step
 * (runtime.ts), so the SDK's own retries queue here like first attempts and
 * never exceed the quota (cloud-facts.md: "SDK retries count against quotas").
 *
 * The "N per second" quotas use a strict sliding window ({@link SlidingWindowLimiter}):
 * at most N attempts leave in any window of 1 s + `windowMarginMs`, measured
 * when each attempt is released. The margin absorbs network and event-loop
 * jitter between this process and AWS, whose own window is measured on arrival.
 * The 10 rps / burst 40 quota is a token bucket (bottleneck).
 *
 * Quotas are per account and region, so gateways of one process that share an
 * account, region and endpoint share one set of limiters.
 */
import Bottleneck from "bottleneck";
import { SharedResourcePool, Throttled } from "@credhook/core";

/** What every limiter offers: a slot for one HTTP attempt, FIFO. */
export interface RateLimiter {
  /** The AWS operation (or group) it limits, for messages. */
  readonly name: string;
  /** Steady requests per second it lets through. */
  readonly rps: number;
  /**
   * Spacing between two attempts across every credhook instance sharing the
   * store, ms (the shared call slots of `ProviderContext.rateSlots`): the
   * window divided by its limit, so N instances together keep the quota.
   */
  readonly spacingMs: number;
  /**
   * Resolves when one more attempt may be sent now.
   * @param maxQueueWaitMs longest acceptable wait, in milliseconds
   * @param gateway gateway name for the error message
   * @throws Throttled (503, Retry-After = the estimated wait in seconds) when the wait would exceed `maxQueueWaitMs`
   */
  acquire(maxQueueWaitMs: number, gateway: string): Promise<void>;
  /** Stops timers; attempts still waiting are released at once. */
  stop(): Promise<void>;
}

function refuse(gateway: string, ahead: number, name: string, rps: number, waitMs: number): Throttled {
  return new Throttled(`[gateway ${gateway}] ${ahead} ${name} calls are already queued to stay under AWS's ${rps} requests/s quota; try again later`, waitMs / 1000, { gateway });
}

/**
 * At most `limit` attempts in any sliding window of `windowMs` milliseconds,
 * released first-in first-out. Release times are the moments attempts actually
 * leave (not planned times), so a late timer never squeezes two attempts
 * closer than the window allows.
 */
export class SlidingWindowLimiter implements RateLimiter {
  /** Release times (performance.now(), ms) of the last `limit` attempts, oldest first. */
  private readonly released: number[] = [];
  private readonly waiting: Array<() => void> = [];
  private timer: NodeJS.Timeout | undefined;
  readonly rps: number;
  readonly spacingMs: number;

  /**
   * @param limit attempts per window (the quota's requests per second)
   * @param windowMs window length in milliseconds (1,000 + a safety margin)
   * @param name the operation it limits, for messages
   */
  constructor(
    readonly limit: number,
    readonly windowMs: number,
    readonly name: string,
  ) {
    this.rps = limit;
    this.spacingMs = windowMs / limit;
  }

  /** Milliseconds the next attempt to join the queue would wait (an estimate for the queue check). */
  estimateWaitMs(now = performance.now()): number {
    const ahead = this.waiting.length;
    const free = this.limit - this.released.filter((t) => t > now - this.windowMs).length;
    if (ahead < free) return 0;
    const rounds = Math.floor((ahead - free) / this.limit) + 1;
    const firstFree = this.released.length > 0 ? Math.max(0, this.released[0]! + this.windowMs - now) : 0;
    return firstFree + (rounds - 1) * this.windowMs;
  }

  /** @inheritdoc */
  acquire(maxQueueWaitMs: number, gateway: string): Promise<void> {
    const waitMs = this.estimateWaitMs();
    if (waitMs > maxQueueWaitMs) throw refuse(gateway, this.waiting.length, this.name, this.rps, waitMs);
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.pump();
    });
  }

  private pump(): void {
    if (this.timer) return;
    for (;;) {
      if (this.waiting.length === 0) return;
      const now = performance.now();
      while (this.released.length > 0 && this.released[0]! <= now - this.windowMs) this.released.shift();
      if (this.released.length < this.limit) {
        this.released.push(now);
        this.waiting.shift()!();
        continue;
      }
      const delay = Math.max(1, Math.ceil(this.released[0]! + this.windowMs - now));
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, delay);
      return;
    }
  }

  /** @inheritdoc */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const release of this.waiting.splice(0)) release();
  }
}

/** A token bucket of `rps` requests per second and `burst` tokens (bottleneck), for quotas with a documented burst. */
export class TokenBucketLimiter implements RateLimiter {
  private readonly limiter: Bottleneck;
  /** Across instances the bucket's burst is not shared: slots are spaced at its steady rate. */
  readonly spacingMs: number;

  /**
   * @param rps steady requests per second
   * @param burst tokens available at once
   * @param name the operation group it limits, for messages
   */
  constructor(
    readonly rps: number,
    burst: number,
    readonly name: string,
  ) {
    const interval = 1000 / rps;
    this.spacingMs = interval;
    this.limiter = new Bottleneck({
      reservoir: burst,
      reservoirIncreaseAmount: 1,
      reservoirIncreaseInterval: interval,
      reservoirIncreaseMaximum: burst,
      // bottleneck refills on its heartbeat: tick at least twice per token
      heartbeatInterval: Math.max(10, Math.floor(interval / 2)),
    });
  }

  /** @inheritdoc */
  async acquire(maxQueueWaitMs: number, gateway: string): Promise<void> {
    const counts = this.limiter.counts();
    const ahead = (counts.QUEUED ?? 0) + (counts.RECEIVED ?? 0);
    const waitMs = (ahead / this.rps) * 1000;
    if (waitMs > maxQueueWaitMs) throw refuse(gateway, ahead, this.name, this.rps, waitMs);
    await this.limiter.schedule(async () => undefined);
  }

  /** @inheritdoc */
  async stop(): Promise<void> {
    await this.limiter.disconnect();
  }
}

/** Rates of one limiter set. */
export interface LimiterRates {
  /** CreateApiKey attempts per second. */
  createApiKey: number;
  /** DeleteApiKey attempts per second. */
  deleteApiKey: number;
  /** Other API Gateway attempts per second. */
  apiGateway: number;
  /** Burst of {@link LimiterRates.apiGateway}, requests. */
  apiGatewayBurst: number;
  /** Attempts per second of each Cognito operation on one user pool. */
  cognitoPerOperation: number;
  /** Milliseconds added to each 1-second window of the sliding-window limiters. */
  windowMarginMs: number;
}

/** The limiters of one AWS account + region (+ endpoint). */
export class LimiterSet {
  /** CreateApiKey's own quota. */
  readonly createApiKey: RateLimiter;
  /** DeleteApiKey's own quota. */
  readonly deleteApiKey: RateLimiter;
  /** Every other API Gateway operation. */
  readonly apiGateway: RateLimiter;
  private readonly cognitoOps = new Map<string, RateLimiter>();

  constructor(private readonly rates: LimiterRates) {
    this.createApiKey = this.window(rates.createApiKey, "CreateApiKey");
    this.deleteApiKey = this.window(rates.deleteApiKey, "DeleteApiKey");
    this.apiGateway = new TokenBucketLimiter(rates.apiGateway, rates.apiGatewayBurst, "API Gateway");
  }

  /** A sliding window of `rps` attempts per (1 s + margin); fractional rates widen the window instead (0.5 rps = 1 per 2 s). */
  private window(rps: number, name: string): RateLimiter {
    const limit = Math.max(1, Math.floor(rps));
    return new SlidingWindowLimiter(limit, (limit / rps) * 1000 + this.rates.windowMarginMs, name);
  }

  /** The limiter of an API Gateway operation (SDK command name without `Command`). */
  apiGatewayOperation(operation: string): RateLimiter {
    if (operation === "CreateApiKey") return this.createApiKey;
    if (operation === "DeleteApiKey") return this.deleteApiKey;
    return this.apiGateway;
  }

  /** The limiter of one Cognito operation on one user pool. */
  cognito(userPoolId: string, operation: string): RateLimiter {
    const key = `${userPoolId}|${operation}`;
    let l = this.cognitoOps.get(key);
    if (!l) this.cognitoOps.set(key, (l = this.window(this.rates.cognitoPerOperation, operation)));
    return l;
  }

  /** Stops every limiter's timers (attempts still queued are released). */
  async stop(): Promise<void> {
    const all = [this.createApiKey, this.deleteApiKey, this.apiGateway, ...this.cognitoOps.values()];
    await Promise.allSettled(all.map((l) => l.stop()));
  }
}

const shared = new SharedResourcePool<LimiterSet>((set) => set.stop());

/**
 * Returns the limiter set of `scope` (account, region, endpoint), shared with
 * every other gateway of this process that has the same scope and rates.
 * Call `release()` once when the gateway closes.
 */
export function acquireLimiters(scope: string, rates: LimiterRates): { set: LimiterSet; release: () => Promise<void> } {
  const { value, release } = shared.acquire(`${scope}|${JSON.stringify(rates)}`, () => new LimiterSet(rates));
  return { set: value, release };
}
