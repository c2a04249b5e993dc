/**
 * Bounded logging of a dependency's outages (the credential store, a gateway's
 * circuit): one line when it becomes unavailable, one summary line per
 * `summaryEveryMs` while it stays so, and one line when it is back — never a
 * line per failed call, which during an outage would be tens per second.
 */
import type { Logger } from "./logger.js";

/** Tracks whether one dependency is available, logging only its state changes and periodic summaries. */
export class AvailabilityLog {
  private downSince: number | undefined;
  private failures = 0;
  private lastSummary = 0;
  private reason = "";

  /**
   * @param logger where the lines go
   * @param fields fields on every line, e.g. `{ store: "store.postgres" }`
   * @param what the dependency, in the messages (`the credential store`)
   * @param summaryEveryMs minimum time between two "still unavailable" lines, ms @default 60000
   * @param now the clock, ms @default Date.now
   */
  constructor(
    private readonly logger: Logger | undefined,
    private readonly fields: Record<string, unknown>,
    private readonly what: string,
    private readonly summaryEveryMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** True unless a failure was recorded after the last success. */
  get available(): boolean {
    return this.downSince === undefined;
  }

  /** The reason of the last failure while unavailable (secret-free), else undefined. */
  get lastReason(): string | undefined {
    return this.downSince === undefined ? undefined : this.reason;
  }

  /** Records a failed call: logs the first of an outage, then a summary at most every `summaryEveryMs`. */
  failed(reason: string): void {
    const t = this.now();
    this.reason = reason;
    this.failures += 1;
    if (this.downSince === undefined) {
      this.downSince = t;
      this.lastSummary = t;
      this.logger?.warn(
        { ...this.fields, reason },
        `${this.what} is unavailable: requests that need it answer 503 + Retry-After until it is back`,
      );
    } else if (t - this.lastSummary >= this.summaryEveryMs) {
      this.lastSummary = t;
      this.logger?.warn(
        { ...this.fields, reason, failures: this.failures, downForS: Math.round((t - this.downSince) / 1000) },
        `${this.what} is still unavailable`,
      );
    }
  }

  /** Records a successful call: logs the end of an outage, with its length and failed calls. */
  succeeded(): void {
    if (this.downSince === undefined) return;
    this.logger?.info(
      { ...this.fields, failures: this.failures, downForS: Math.round((this.now() - this.downSince) / 100) / 10 },
      `${this.what} is available again`,
    );
    this.downSince = undefined;
    this.failures = 0;
  }
}
