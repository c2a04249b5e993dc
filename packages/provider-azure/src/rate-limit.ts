/**
 * Client-side token buckets (core's `TokenBucketLimiter`) mirroring ARM's throttling, so
 * that a burst of portal requests queues inside credhook instead of drawing a
 * storm of 429s whose retries all wake at the same second.
 *
 * ARM throttles per subscription and principal with token buckets: writes
 * (PUT/PATCH/DELETE/POST) 200 burst and 10/s refill, reads 250 and 25/s.
 * https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling
 *
 * Gateways of one process that share an endpoint, Azure subscription and
 * credential share one set of buckets (ARM counts them together).
 */
import type { PipelinePolicy } from "@azure/core-rest-pipeline";
import { RateLimitQueueFull, SharedResourcePool, TokenBucketLimiter } from "@credhook/core/provider-kit";
import type { RateSlots } from "@credhook/core/provider";
import { optionsSchema } from "./schema.js";
import type { AzureProviderOptionsWithDefaults } from "./types.js";

/** Bucket sizes and refill rates; a rate of 0 turns that bucket off (the `rateLimit` option with its defaults; see `schema.ts`). */
export type ArmRateLimit = AzureProviderOptionsWithDefaults["rateLimit"];

/** The `rateLimit` option's schema, whose defaults are ARM's documented buckets. */
const RATE_LIMIT = optionsSchema.properties.rateLimit.properties;

/** ARM's documented buckets: the schema's defaults of the `rateLimit` option. */
export const ARM_RATE_LIMIT: ArmRateLimit = {
  writesPerSecond: RATE_LIMIT.writesPerSecond.default,
  writeBurst: RATE_LIMIT.writeBurst.default,
  readsPerSecond: RATE_LIMIT.readsPerSecond.default,
  readBurst: RATE_LIMIT.readBurst.default,
};

/** The read and write buckets of one ARM principal (core's {@link TokenBucketLimiter}s). */
export class ArmBuckets {
  private readonly writes: TokenBucketLimiter | undefined;
  private readonly reads: TokenBucketLimiter | undefined;
  constructor(limits: ArmRateLimit) {
    this.writes =
      limits.writesPerSecond > 0
        ? new TokenBucketLimiter(limits.writesPerSecond, Math.max(1, limits.writeBurst), "write")
        : undefined;
    this.reads =
      limits.readsPerSecond > 0
        ? new TokenBucketLimiter(limits.readsPerSecond, Math.max(1, limits.readBurst), "read")
        : undefined;
  }

  /**
   * A pipeline policy (per retry: every attempt takes a token) that waits for a
   * token, or throws core's {@link RateLimitQueueFull} (its `limiter` is `read` or `write`, and it
   * carries the refused `request`) when the wait would exceed `maxWaitS` seconds.
   * With `shared` (several credhook instances on one store), each attempt also
   * waits for its slot among all instances (`ProviderContext.rateSlots`), spaced
   * at the bucket's refill rate: ARM counts the principal's calls together.
   */
  policy(maxWaitS: number, shared?: { slots: RateSlots; key: string }): PipelinePolicy {
    return {
      name: "credhookArmRateLimit",
      sendRequest: async (request, next) => {
        const read = request.method === "GET" || request.method === "HEAD";
        const kind = read ? "read" : "write";
        const bucket = read ? this.reads : this.writes;
        if (!bucket) return next(request);
        try {
          await bucket.acquire(
            maxWaitS * 1000,
            shared ? { slots: shared.slots, key: `azure|${shared.key}|${kind}` } : undefined,
          );
        } catch (err) {
          // The request refused before sending (non-enumerable: never logged), for writeRefused's attempt count.
          if (err instanceof RateLimitQueueFull)
            Object.defineProperty(err, "request", { value: request, enumerable: false });
          throw err;
        }
        return next(request);
      },
    };
  }

  /** Stops the buckets' timers. */
  async stop(): Promise<void> {
    await Promise.allSettled([this.writes?.stop(), this.reads?.stop()]);
  }
}

const shared = new SharedResourcePool<ArmBuckets>((buckets) => buckets.stop());

/**
 * The buckets of one principal (`key`: endpoint, Azure subscription, credential),
 * shared by every gateway of the process with the same key and limits.
 * Call `release()` once when the gateway closes.
 */
export function acquireBuckets(
  key: string,
  limits: ArmRateLimit,
): { buckets: ArmBuckets; release: () => Promise<void> } {
  const k = `${key}|${limits.writesPerSecond}/${limits.writeBurst}|${limits.readsPerSecond}/${limits.readBurst}`;
  const { value, release } = shared.acquire(k, () => new ArmBuckets(limits));
  return { buckets: value, release };
}
