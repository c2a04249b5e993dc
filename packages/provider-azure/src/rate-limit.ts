/**
 * Client-side token buckets (with `bottleneck`) mirroring ARM's throttling, so
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
import Bottleneck from "bottleneck";
import type { PipelinePolicy, PipelineRequest } from "@azure/core-rest-pipeline";
import { SharedResourcePool, type RateSlots } from "@credhook/core";

/** Bucket sizes and refill rates; a rate of 0 turns that bucket off. */
export interface ArmRateLimit {
  /** Writes per second (refill). @default 10 */
  writesPerSecond: number;
  /** Write burst (bucket size). @default 200 */
  writeBurst: number;
  /** Reads per second (refill). @default 25 */
  readsPerSecond: number;
  /** Read burst (bucket size). @default 250 */
  readBurst: number;
}

/** ARM's documented buckets. */
export const ARM_RATE_LIMIT: ArmRateLimit = { writesPerSecond: 10, writeBurst: 200, readsPerSecond: 25, readBurst: 250 };

/** Thrown (inside the pipeline) when the local queue is already longer than the caller is willing to wait. */
export class RateLimitQueueFull extends Error {
  override readonly name = "RateLimitQueueFull";
  /** The request refused before sending (non-enumerable: never logged). */
  declare readonly request?: PipelineRequest;
  constructor(
    /** Estimated wait in the queue, seconds. */
    readonly waitS: number,
    /** `read` or `write`. */
    readonly kind: "read" | "write",
    /** The bucket's refill rate, per second. */
    readonly perSecond: number,
    request?: PipelineRequest,
  ) {
    super(`the ARM ${kind} queue would take ${Math.ceil(waitS)} s at ${perSecond} ${kind}s/s`);
    Object.defineProperty(this, "request", { value: request, enumerable: false });
  }
}

/** One token bucket and its refill rate. */
class Bucket {
  readonly limiter: Bottleneck;
  constructor(
    readonly perSecond: number,
    burst: number,
  ) {
    const interval = 1000 / perSecond;
    this.limiter = new Bottleneck({
      reservoir: burst,
      reservoirIncreaseAmount: 1,
      reservoirIncreaseInterval: interval,
      reservoirIncreaseMaximum: burst,
      heartbeatInterval: Math.max(10, Math.floor(interval / 2)),
    });
  }

  /** Seconds a call scheduled now would wait for its token. */
  async waitS(): Promise<number> {
    const c = this.limiter.counts();
    const ahead = (c.RECEIVED ?? 0) + (c.QUEUED ?? 0);
    const tokens = (await this.limiter.currentReservoir()) ?? 0;
    return Math.max(0, ahead + 1 - tokens) / this.perSecond;
  }
}

/** The read and write buckets of one ARM principal. */
export class ArmBuckets {
  private readonly writes: Bucket | undefined;
  private readonly reads: Bucket | undefined;
  constructor(limits: ArmRateLimit) {
    this.writes = limits.writesPerSecond > 0 ? new Bucket(limits.writesPerSecond, Math.max(1, limits.writeBurst)) : undefined;
    this.reads = limits.readsPerSecond > 0 ? new Bucket(limits.readsPerSecond, Math.max(1, limits.readBurst)) : undefined;
  }

  /**
   * A pipeline policy (per retry: every attempt takes a token) that waits for a
   * token, or throws {@link RateLimitQueueFull} when the wait would exceed `maxWaitS` seconds.
   * With `shared` (several credhook instances on one store), each attempt also
   * waits for its slot among all instances (`ProviderContext.rateSlots`), spaced
   * at the bucket's refill rate: ARM counts the principal's calls together.
   */
  policy(maxWaitS: number, shared?: { slots: RateSlots; key: string }): PipelinePolicy {
    return {
      name: "credhookArmRateLimit",
      sendRequest: async (request, next) => {
        const read = request.method === "GET" || request.method === "HEAD";
        const bucket = read ? this.reads : this.writes;
        if (!bucket) return next(request);
        const waitS = await bucket.waitS();
        if (waitS > maxWaitS) throw new RateLimitQueueFull(waitS, read ? "read" : "write", bucket.perSecond, request);
        return bucket.limiter.schedule(async () => {
          if (shared) {
            const slotMs = await shared.slots.reserve(`azure|${shared.key}|${read ? "read" : "write"}`, 1000 / bucket.perSecond);
            if (slotMs > maxWaitS * 1000) throw new RateLimitQueueFull(slotMs / 1000, read ? "read" : "write", bucket.perSecond, request);
            if (slotMs > 0) await new Promise((r) => setTimeout(r, slotMs));
          }
          return next(request);
        });
      },
    };
  }

  /** Stops the buckets' timers. */
  async stop(): Promise<void> {
    await Promise.allSettled([this.writes?.limiter.disconnect(false), this.reads?.limiter.disconnect(false)]);
  }
}

const shared = new SharedResourcePool<ArmBuckets>((buckets) => buckets.stop());

/**
 * The buckets of one principal (`key`: endpoint, Azure subscription, credential),
 * shared by every gateway of the process with the same key and limits.
 * Call `release()` once when the gateway closes.
 */
export function acquireBuckets(key: string, limits: ArmRateLimit): { buckets: ArmBuckets; release: () => Promise<void> } {
  const k = `${key}|${limits.writesPerSecond}/${limits.writeBurst}|${limits.readsPerSecond}/${limits.readBurst}`;
  const { value, release } = shared.acquire(k, () => new ArmBuckets(limits));
  return { buckets: value, release };
}
