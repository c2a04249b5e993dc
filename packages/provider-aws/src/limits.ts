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
 * installs {@link acquireAttempt} as SDK middleware after the retry step
 * (runtime.ts), so the SDK's own retries queue here like first attempts and
 * never exceed the quota (docs/cloud-facts.md: "SDK retries count against quotas").
 *
 * The limiters are core's (provider-kit). The "N per second" quotas use a strict sliding window (`SlidingWindowLimiter`):
 * at most N attempts leave in any window of 1 s + `windowMarginMs`, measured
 * when each attempt is released. The margin absorbs network and event-loop
 * jitter between this process and AWS, whose own window is measured on arrival.
 * The 10 rps / burst 40 quota is a token bucket (`TokenBucketLimiter`) that keeps one token of its burst back, for the
 * same jitter (one read of 1,000 was throttled in `credhook apply`'s figures with the whole burst in use).
 *
 * Quotas are per account and region, so gateways of one process that share an
 * account, region and endpoint share one set of limiters.
 */
import {
  gatewayError,
  RateLimitQueueFull,
  SharedResourcePool,
  SlidingWindowLimiter,
  TokenBucketLimiter,
  type RateLimiter,
  type SharedSlots,
} from "@credhook/core/provider-kit";
import { Throttled } from "@credhook/core/errors";

/**
 * Waits for `limiter`'s slot for one HTTP attempt (core's limiters, see
 * `@credhook/core` provider-kit), and, with `shared`, for its slot among every
 * instance on the store.
 * @param maxQueueWaitMs longest acceptable wait, ms
 * @param gateway gateway name for the error message
 * @throws Throttled (503, Retry-After = the estimated wait in seconds) when the
 *   wait would exceed `maxQueueWaitMs`; a refusal by this process's sliding
 *   window is thrown synchronously
 */
export function acquireAttempt(
  limiter: RateLimiter,
  maxQueueWaitMs: number,
  gateway: string,
  shared?: SharedSlots,
): Promise<void> {
  const refuse = (err: unknown): never => {
    if (!(err instanceof RateLimitQueueFull)) throw err;
    const quota = `to stay under AWS's ${err.perSecond} requests/s quota; try again later`;
    throw err.acrossInstances
      ? gatewayError(
          gateway,
          Throttled,
          `${err.limiter} calls of every instance are queued ${Math.ceil(err.waitMs / 1000)} s ahead ${quota}`,
          err.waitMs / 1000,
        )
      : gatewayError(
          gateway,
          Throttled,
          `${err.queued} ${err.limiter} calls are already queued ${quota}`,
          err.waitMs / 1000,
        );
  };
  let waiting: Promise<void>;
  try {
    waiting = limiter.acquire(maxQueueWaitMs, shared);
  } catch (err) {
    return refuse(err);
  }
  return waiting.catch(refuse);
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
    // One token of the burst is kept back (40 → 39): AWS counts arrivals, and jitter that brings two attempts closer
    // than credhook sent them would otherwise find AWS's bucket one token short. The steady rate stays AWS's.
    const burst = Math.max(1, rates.apiGatewayBurst - 1);
    this.apiGateway = new TokenBucketLimiter(rates.apiGateway, burst, "API Gateway");
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
