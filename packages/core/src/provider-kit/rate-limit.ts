/**
 * Client-side rate limiting of a cloud's control-plane quota, for every
 * provider: a burst of portal requests queues inside credhook (FIFO) instead of
 * drawing a storm of 429s, and a queue longer than the caller will wait is
 * refused at once ({@link RateLimitQueueFull}) so the portal gets 503 +
 * Retry-After instead of a hanging request.
 *
 * Two shapes of quota:
 * - {@link TokenBucketLimiter}: `perSecond` steady, `burst` at once — AWS API Gateway's 10 rps / burst 40, ARM's buckets, Google's
 *   per-minute quotas;
 * - {@link SlidingWindowLimiter}: at most N in any window — AWS's strict
 *   "N requests per second" quotas.
 *
 * Several credhook instances on one store draw from the same cloud quota: with
 * `shared` ({@link SharedSlots}, from `ProviderContext.rateSlots`), each
 * attempt also waits for its slot among all instances: {@link RateLimiter.sharedBurst}
 * at once after an idle period, then one per {@link RateLimiter.spacingMs} (the
 * limiter's steady rate) — a token bucket's burst across instances, a strict
 * window's slots evenly spaced.
 * Each provider keeps its cloud's documented figures and links; gateways of one
 * process that share a quota share one limiter through core's `SharedResourcePool`.
 */
import { assertFenceHeld } from "../fence.js";
import type { RateSlots } from "../provider.js";

/**
 * Refusal of an attempt whose wait would exceed the caller's limit. A plain
 * Error (not a CredhookError): each provider maps it to its typed error
 * (usually Throttled, 503, Retry-After = `waitMs` / 1000) with its cloud's words.
 */
export class RateLimitQueueFull extends Error {
  override readonly name = "RateLimitQueueFull";
  constructor(
    /** The limiter's name (the operation or group it limits). */
    readonly limiter: string,
    /** Estimated wait the attempt would have had, ms. */
    readonly waitMs: number,
    /** The limiter's steady rate, attempts per second. */
    readonly perSecond: number,
    /** Attempts already waiting in this process's queue. */
    readonly queued: number,
    /** True when the wait is for the slots shared by every instance ({@link SharedSlots}), not this process's queue. */
    readonly acrossInstances: boolean,
  ) {
    super(
      `${queued} ${limiter} attempts queued; the wait would be ${Math.ceil(waitMs)} ms at ${perSecond}/s${acrossInstances ? " (across instances)" : ""}`,
    );
  }
}

/** The slots shared by every instance on one store, for one quota. */
export interface SharedSlots {
  /** `ProviderContext.rateSlots`. */
  slots: RateSlots;
  /** The quota's key among all instances, e.g. `aws|<account/region>|CreateApiKey`. */
  key: string;
}

/** A client-side limiter of one quota: a slot for one HTTP attempt, FIFO. */
export interface RateLimiter {
  /** The operation (or group) it limits, for messages. */
  readonly name: string;
  /** Steady attempts per second it lets through. */
  readonly perSecond: number;
  /** Spacing of two attempts across every instance sharing the store, ms (see {@link SharedSlots}). */
  readonly spacingMs: number;
  /** Attempts every instance together may start at once after an idle period, before the spacing applies (≥ 1). */
  readonly sharedBurst: number;
  /**
   * Resolves when one more attempt may be sent now.
   * @param maxQueueWaitMs longest acceptable wait, ms
   * @param shared the slots every instance shares, when several instances use one store
   * @throws RateLimitQueueFull (or rejects with it) when the wait would exceed `maxQueueWaitMs`
   */
  acquire(maxQueueWaitMs: number, shared?: SharedSlots): Promise<void>;
  /** Stops timers; attempts still waiting are released at once. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Waits for the attempt's slot among every instance (none without `shared`), then checks that
 * the running operation still holds its app's lock: the last step before the attempt is sent.
 * @throws LockLost the operation lost its lock; StoreUnavailable the shared slot could not be booked
 */
async function sharedSlot(
  limiter: RateLimiter,
  maxQueueWaitMs: number,
  shared: SharedSlots | undefined,
): Promise<void> {
  if (!shared) return assertFenceHeld();
  const waitMs = await shared.slots.reserve(shared.key, limiter.spacingMs, limiter.sharedBurst);
  if (waitMs > maxQueueWaitMs) throw new RateLimitQueueFull(limiter.name, waitMs, limiter.perSecond, 0, true);
  if (waitMs > 0) await sleep(waitMs);
  assertFenceHeld();
}

/**
 * At most `limit` attempts in any sliding window of `windowMs` milliseconds,
 * released first-in first-out. Release times are the moments attempts actually
 * leave (not planned times), so a late timer never squeezes two attempts
 * closer than the window allows.
 */
export class SlidingWindowLimiter implements RateLimiter {
  /** Release times (on {@link now}'s clock, ms) of the last `limit` attempts, oldest first. */
  private readonly released: number[] = [];
  private readonly now: () => number;
  private readonly waiting: Array<() => void> = [];
  private timer: NodeJS.Timeout | undefined;
  readonly perSecond: number;
  readonly spacingMs: number;
  /**
   * 1: across instances the window's slots are evenly spaced. Shared slots are a token bucket
   * (GCRA), and a bucket of `limit` would let `limit` start at once and one more a spacing later:
   * `limit + 1` in one window, which the strict quota refuses.
   */
  readonly sharedBurst = 1;

  /**
   * @param limit attempts per window
   * @param windowMs window length, ms (for "N per second": 1,000 + a safety margin for jitter)
   * @param name the operation it limits, for messages
   * @param now the clock, ms (injectable for tests, which advance it with fake timers instead of waiting) @default performance.now
   */
  constructor(
    readonly limit: number,
    readonly windowMs: number,
    readonly name: string,
    now: () => number = () => performance.now(),
  ) {
    this.perSecond = limit;
    this.spacingMs = windowMs / limit;
    this.now = now;
  }

  /** Milliseconds the next attempt to join the queue would wait (an estimate for the queue check). */
  estimateWaitMs(now = this.now()): number {
    const ahead = this.waiting.length;
    const free = this.limit - this.released.filter((t) => t > now - this.windowMs).length;
    if (ahead < free) return 0;
    const rounds = Math.floor((ahead - free) / this.limit) + 1;
    const firstFree = this.released.length > 0 ? Math.max(0, this.released[0]! + this.windowMs - now) : 0;
    return firstFree + (rounds - 1) * this.windowMs;
  }

  /**
   * {@inheritDoc RateLimiter.acquire}
   * A refusal by this process's queue is thrown synchronously.
   */
  acquire(maxQueueWaitMs: number, shared?: SharedSlots): Promise<void> {
    const waitMs = this.estimateWaitMs();
    if (waitMs > maxQueueWaitMs)
      throw new RateLimitQueueFull(this.name, waitMs, this.perSecond, this.waiting.length, false);
    const slot = new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.pump();
    });
    return slot.then(() => sharedSlot(this, maxQueueWaitMs, shared));
  }

  private pump(): void {
    if (this.timer) return;
    for (;;) {
      if (this.waiting.length === 0) return;
      const now = this.now();
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

  /** {@inheritDoc RateLimiter.stop} */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const release of this.waiting.splice(0)) release();
  }
}

/**
 * A token bucket of `burst` tokens refilled at `perSecond`, computed exactly
 * as the generic cell rate algorithm (GCRA, the virtual-scheduling form of a
 * token bucket): each admitted attempt is given its start time at once, so
 * attempts leave first-in first-out, at most `burst` at once and then one
 * every `1000 / perSecond` ms, and the wait of the next attempt is known
 * exactly — an attempt that would wait longer than `maxQueueWaitMs` is
 * refused without taking a place.
 * (bottleneck's reservoir, used before, shows its tokens only asynchronously,
 * so a queue limit on it was an estimate.)
 */
export class TokenBucketLimiter implements RateLimiter {
  /** Milliseconds between two tokens. */
  readonly intervalMs: number;
  /** Spacing of the slots shared across instances: the steady rate. */
  readonly spacingMs: number;
  /**
   * The bucket's size (`burst`, at least 1): this process's bucket, and across instances the
   * shared one's, since the cloud's bucket is one for all of them.
   */
  readonly sharedBurst: number;
  /** Theoretical arrival time of the next attempt at the steady rate (ms, on `now`'s clock). */
  private tat = Number.NEGATIVE_INFINITY;
  /** Attempts admitted and still waiting for their start, with their release. */
  private readonly waiting = new Map<NodeJS.Timeout, () => void>();
  private readonly now: () => number;

  /**
   * @param perSecond steady attempts per second (a per-minute quota: its rate / 60)
   * @param burst attempts that may start at once after an idle period (≥ 1)
   * @param name the operation group it limits, for messages
   * @param now the clock, ms (injectable for tests) @default performance.now
   */
  constructor(
    readonly perSecond: number,
    readonly burst: number,
    readonly name: string,
    now: () => number = () => performance.now(),
  ) {
    this.intervalMs = 1000 / perSecond;
    this.spacingMs = this.intervalMs;
    this.sharedBurst = Math.max(1, Math.floor(burst));
    this.now = now;
  }

  /** Start time (on the clock) the next attempt would get. */
  private nextStart(now: number): number {
    return Math.max(now, this.tat - (this.sharedBurst - 1) * this.intervalMs);
  }

  /** Milliseconds the next attempt to join the queue would wait for its token. */
  estimateWaitMs(now = this.now()): number {
    return this.nextStart(now) - now;
  }

  /** {@inheritDoc RateLimiter.acquire} */
  acquire(maxQueueWaitMs: number, shared?: SharedSlots): Promise<void> {
    const now = this.now();
    const waitMs = this.estimateWaitMs(now);
    if (waitMs > maxQueueWaitMs)
      return Promise.reject(new RateLimitQueueFull(this.name, waitMs, this.perSecond, this.waiting.size, false));
    this.tat = Math.max(this.tat, now) + this.intervalMs;
    const slot =
      waitMs <= 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              this.waiting.delete(timer);
              resolve();
            }, waitMs);
            this.waiting.set(timer, resolve);
          });
    return slot.then(() => sharedSlot(this, maxQueueWaitMs, shared));
  }

  /** Stops the timers; attempts still waiting are released at once. */
  async stop(): Promise<void> {
    for (const [timer, release] of this.waiting) {
      clearTimeout(timer);
      release();
    }
    this.waiting.clear();
  }
}
