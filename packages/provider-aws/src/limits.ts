/**
 * Client-side rate limiting (with `bottleneck`) that keeps credhook under AWS's
 * per-account control-plane quotas, so a burst of portal requests queues
 * instead of being refused:
 *
 * - API Gateway (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html#api-gateway-control-service-limits-table):
 *   CreateApiKey 5 rps, DeleteApiKey 5 rps, every other operation 10 rps with a burst of 40.
 * - Cognito (https://docs.aws.amazon.com/cognito/latest/developerguide/quotas.html#category_operations):
 *   ≤ 5 rps per operation and user pool (credhook's conservative reading of the
 *   UserPoolClient/ResourceServer categories).
 *
 * Quotas are per account and region, so gateways of one process that share an
 * account, region and endpoint share one set of limiters.
 */
import Bottleneck from "bottleneck";
import { SharedResourcePool, Throttled } from "@credhook/core";

/** A limiter with its steady rate (requests per second), used to estimate queueing time. */
export class RateLimiter {
  /**
   * @param limiter the bottleneck instance
   * @param rps steady requests per second it lets through
   * @param name the AWS operation (or group) it limits, for messages
   */
  constructor(
    readonly limiter: Bottleneck,
    readonly rps: number,
    readonly name: string,
  ) {}

  /**
   * Runs `fn` when the limiter lets it through.
   * @param maxQueueWaitMs longest acceptable wait in the queue, in milliseconds
   * @param gateway gateway name for the error message
   * @throws Throttled (503, Retry-After = the estimated wait) when the queue is already longer than `maxQueueWaitMs`
   */
  async run<T>(fn: () => Promise<T>, maxQueueWaitMs: number, gateway: string): Promise<T> {
    const counts = this.limiter.counts();
    const ahead = (counts.QUEUED ?? 0) + (counts.RECEIVED ?? 0);
    const waitMs = (ahead / this.rps) * 1000;
    if (waitMs > maxQueueWaitMs) {
      throw new Throttled(
        `[gateway ${gateway}] ${ahead} ${this.name} calls are already queued to stay under AWS's ${this.rps} requests/s quota; try again later`,
        waitMs / 1000,
        { gateway },
      );
    }
    return this.limiter.schedule(fn);
  }
}

/** Builds a limiter of `rps` requests per second, smoothly spaced (no burst). */
function spaced(rps: number, name: string): RateLimiter {
  return new RateLimiter(new Bottleneck({ minTime: Math.ceil(1000 / rps) }), rps, name);
}

/** Builds a token-bucket limiter of `rps` requests per second and `burst` tokens. */
function bucket(rps: number, burst: number, name: string): RateLimiter {
  const interval = 1000 / rps;
  return new RateLimiter(
    new Bottleneck({
      reservoir: burst,
      reservoirIncreaseAmount: 1,
      reservoirIncreaseInterval: interval,
      reservoirIncreaseMaximum: burst,
      // bottleneck refills on its heartbeat: tick at least twice per token
      heartbeatInterval: Math.max(10, Math.floor(interval / 2)),
    }),
    rps,
    name,
  );
}

/** Rates of one limiter set (requests per second). */
export interface LimiterRates {
  createApiKey: number;
  deleteApiKey: number;
  apiGateway: number;
  apiGatewayBurst: number;
  cognitoPerOperation: number;
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
    this.createApiKey = spaced(rates.createApiKey, "CreateApiKey");
    this.deleteApiKey = spaced(rates.deleteApiKey, "DeleteApiKey");
    this.apiGateway = bucket(rates.apiGateway, rates.apiGatewayBurst, "API Gateway");
  }

  /** The limiter of one Cognito operation on one user pool. */
  cognito(userPoolId: string, operation: string): RateLimiter {
    const key = `${userPoolId}|${operation}`;
    let l = this.cognitoOps.get(key);
    if (!l) this.cognitoOps.set(key, (l = spaced(this.rates.cognitoPerOperation, operation)));
    return l;
  }

  /** Stops every limiter's timers (queued jobs still run). */
  async stop(): Promise<void> {
    const all = [this.createApiKey, this.deleteApiKey, this.apiGateway, ...this.cognitoOps.values()];
    await Promise.allSettled(all.map((l) => l.limiter.disconnect()));
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
