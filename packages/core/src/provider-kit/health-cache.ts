/**
 * Cached health probes. A provider's `health()` runs one cheap cloud read; the
 * answer is reused so that `/readyz` polling does not spend the cloud's quota.
 *
 * The rule, the same for every provider: a success is reused for its TTL
 * (`successTtlMs`, the provider's `healthCacheMs` option), a failure for its
 * own, shorter TTL (`failureTtlMs`, by default the smaller of 5,000 ms and
 * `successTtlMs`), so that a recovered gateway is seen soon. Concurrent checks
 * while a probe runs share that probe (one cloud call).
 */

/** Settings of a {@link CachedHealthProbe}. */
export interface HealthCacheOptions {
  /** How long a successful probe is reused, ms (0: never). */
  successTtlMs: number;
  /**
   * How long a failed probe (its error) is reused, ms (0: never).
   * @default Math.min(DEFAULT_HEALTH_FAILURE_TTL_MS, successTtlMs)
   */
  failureTtlMs?: number;
  /** The clock, ms (injectable for tests). @default Date.now */
  now?: () => number;
}

/** Default longest reuse of a failed probe, ms. */
export const DEFAULT_HEALTH_FAILURE_TTL_MS = 5_000;

/** A health probe whose successes and failures are reused for their own TTLs (see the module comment). */
export class CachedHealthProbe {
  private cached: { until: number; ok: true } | { until: number; ok: false; error: unknown } | undefined;
  private inFlight: Promise<void> | undefined;
  private readonly successTtlMs: number;
  private readonly failureTtlMs: number;
  private readonly now: () => number;

  /**
   * @param probe the cloud read; resolves when healthy, rejects with the (typed) error to answer otherwise
   * @param options TTLs and clock
   */
  constructor(
    private readonly probe: () => Promise<void>,
    options: HealthCacheOptions,
  ) {
    this.successTtlMs = options.successTtlMs;
    this.failureTtlMs = options.failureTtlMs ?? Math.min(DEFAULT_HEALTH_FAILURE_TTL_MS, options.successTtlMs);
    this.now = options.now ?? Date.now;
  }

  /**
   * Resolves when healthy: a reused success, else the probe's answer.
   * @throws the probe's error (reused within `failureTtlMs`)
   */
  check(): Promise<void> {
    const c = this.cached;
    if (c && this.now() < c.until) return c.ok ? Promise.resolve() : Promise.reject(c.error);
    this.inFlight ??= this.probe()
      .then(
        () => {
          this.cached = { until: this.now() + this.successTtlMs, ok: true };
        },
        (error: unknown) => {
          this.cached = { until: this.now() + this.failureTtlMs, ok: false, error };
          throw error;
        },
      )
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }

  /** Forgets the cached answer: the next {@link check} probes. */
  reset(): void {
    this.cached = undefined;
  }
}
