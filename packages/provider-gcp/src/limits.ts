/**
 * Client-side rate limiting of the API Keys quotas, shared per project.
 *
 * Google counts the API Keys quotas per consumer project: 240 reads and 120
 * writes per minute (https://cloud.google.com/api-keys/docs/quotas). Every
 * gateway of this process that manages keys of the same project (same
 * endpoint, same project, same limits) draws from ONE pair of token buckets,
 * so two gateways on one project cannot overshoot the quota together. The
 * buckets live in core's {@link SharedResourcePool} and stop when the last
 * gateway using them closes.
 */
import { SharedResourcePool, TokenBucketLimiter } from "@credhook/core/provider-kit";
import type { GcpProviderOptionsWithDefaults } from "./types.js";

/** Rates of one project's buckets: the `rateLimit` options with their defaults applied (meanings: `schema.ts`). */
export type QuotaRates = GcpProviderOptionsWithDefaults["rateLimit"];

/** One quota's token bucket (core's {@link TokenBucketLimiter}) and its rate per minute, for messages. */
export interface QuotaBucket {
  limiter: TokenBucketLimiter;
  /** The sustained rate, per minute. */
  perMinute: number;
}

/** A token bucket for one quota: `burst` tokens, refilled one per `60000 / perMinute` ms. */
function bucket(perMinute: number, burst: number, name: string): QuotaBucket {
  return { limiter: new TokenBucketLimiter(perMinute / 60, burst, name), perMinute };
}

/** The read and write buckets of one project. */
export class ProjectLimiters {
  readonly reads: QuotaBucket;
  readonly writes: QuotaBucket;

  constructor(rates: QuotaRates) {
    this.reads = bucket(rates.readsPerMinute, rates.readBurst, "read");
    this.writes = bucket(rates.writesPerMinute, rates.writeBurst, "write");
  }

  /** Stops the buckets' timers (queued calls are released). */
  async stop(): Promise<void> {
    await Promise.allSettled([this.reads.limiter.stop(), this.writes.limiter.stop()]);
  }
}

const shared = new SharedResourcePool<ProjectLimiters>((limiters) => limiters.stop());

/**
 * The buckets of `project` (the endpoint and project id, e.g.
 * `apikeys.googleapis.com:443|my-project`), shared by every gateway of this
 * process with the same project and rates. Call `release()` once when the
 * gateway closes.
 */
export function acquireProjectLimiters(
  project: string,
  rates: QuotaRates,
): { limiters: ProjectLimiters; release: () => Promise<void> } {
  const key = `${project}|${rates.writesPerMinute}/${rates.writeBurst}|${rates.readsPerMinute}/${rates.readBurst}|${rates.maxQueueWaitMs}`;
  const { value, release } = shared.acquire(key, () => new ProjectLimiters(rates));
  return { limiters: value, release };
}

/** Number of projects whose buckets are held now (internal: read by test/throttling.test.ts, not exported by the package). */
export function sharedLimiterCount(): number {
  return shared.size;
}
