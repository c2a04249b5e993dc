/**
 * `@credhook/fakes/clock`: the one clock every fake of this package reads where
 * it waits or stamps time — throttle windows and token buckets, injected
 * latencies and held requests, delayed applies of long-running operations,
 * timestamps (`created_at`, `createTime` …) and token expiry.
 *
 * A fake takes it as its `clock` option, {@link systemClock} by default. A test
 * that checks "5 per second", "after the delay" or "the held write lands
 * later" passes a {@link ManualClock} and advances it instead of sleeping, so a
 * slow machine cannot make it miss (or hit) a deadline:
 *
 * ```ts
 * const clock = new ManualClock();
 * const fake = await startKongFake({ clock, throttle: { requests: 2, windowMs: 1000 } });
 * // … two calls pass, the third is 429 with Retry-After: 1 …
 * await clock.advance(1000); // the window has moved: the next call passes
 * ```
 *
 * Only the fake's own time is faked: the client under test (an SDK's back-off,
 * its time-out) keeps real time.
 */

/** The time source of a fake. */
export interface FakeClock {
  /** The current time, ms since the Unix epoch (fractions allowed; monotonic for {@link systemClock}). */
  now(): number;
  /**
   * Resolves once `ms` milliseconds of this clock have passed (at once for `ms` ≤ 0, on a later tick).
   * Rejects with an `AbortError` when `signal` aborts first.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

const abortError = () => new DOMException("The operation was aborted", "AbortError");

/**
 * Real time: `now()` is `performance.timeOrigin + performance.now()` (the wall clock at start-up,
 * then monotonic: a stepped system clock does not refill a bucket or reopen a window), `sleep` a timer.
 */
export const systemClock: FakeClock = {
  now: () => performance.timeOrigin + performance.now(),
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortError());
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortError());
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

interface Sleeper {
  due: number;
  seq: number;
  resolve(): void;
}

/** Lets every continuation that is ready run (promise jobs and the I/O they started, one event-loop turn). */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A test clock that moves only when told: `now()` stays put, and a `sleep` resolves when
 * {@link ManualClock.advance} reaches its due time — never before, in due-time order (ties in the
 * order the sleeps began), with `now()` at that due time while its continuation runs.
 */
export class ManualClock implements FakeClock {
  private t: number;
  private seq = 0;
  private sleepers: Sleeper[] = [];
  private watchers: Array<{ count: number; resolve(): void }> = [];

  /**
   * @param startMs the initial `now()`, ms since the epoch @default `Date.now()` when constructed: the
   *   fakes' timestamps and expiries (STS credentials, Cognito tokens) stay plausible to an SDK that
   *   compares them with its own real clock
   */
  constructor(startMs = Date.now()) {
    this.t = startMs;
  }

  /** The clock's time, ms since the epoch. */
  now(): number {
    return this.t;
  }

  /** Sleeps not resolved yet (a fake holding requests, a delayed operation …). */
  get pending(): number {
    return this.sleepers.length;
  }

  /**
   * Resolves when {@link ManualClock.advance} reaches now + `ms` (at once for `ms` ≤ 0); rejects with an
   * `AbortError` when `signal` aborts first (the sleep then no longer counts as pending).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortError());
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = {
        due: this.t + ms,
        seq: this.seq++,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(abortError());
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.sleepers.push(sleeper);
      this.notify();
    });
  }

  /**
   * Resolves once at least `count` sleeps are pending — e.g. a request the fake now holds — so
   * that a test advances the clock only after the fake started waiting. Waits in real time, as
   * long as the test's time-out allows.
   */
  whenSleeping(count = 1): Promise<void> {
    if (this.sleepers.length >= count) return Promise.resolve();
    return new Promise<void>((resolve) => this.watchers.push({ count, resolve }));
  }

  /**
   * Moves the clock `ms` milliseconds forward: each sleep due by then resolves in turn, the clock
   * standing at its due time while what it held runs (one event-loop turn); a sleep begun meanwhile
   * and due within the step resolves too. Ends with `now()` = start + `ms`.
   * @throws RangeError for a negative `ms`
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`ManualClock.advance: ms must be ≥ 0, got ${ms}`);
    const target = this.t + ms;
    await turn();
    for (;;) {
      const next = this.sleepers.reduce<Sleeper | undefined>(
        (a, s) => (s.due <= target && (!a || s.due < a.due || (s.due === a.due && s.seq < a.seq)) ? s : a),
        undefined,
      );
      if (!next) break;
      this.sleepers = this.sleepers.filter((s) => s !== next);
      this.t = Math.max(this.t, next.due);
      next.resolve();
      await turn();
    }
    this.t = target;
  }

  private notify(): void {
    const ready = this.watchers.filter((w) => this.sleepers.length >= w.count);
    this.watchers = this.watchers.filter((w) => this.sleepers.length < w.count);
    for (const w of ready) w.resolve();
  }
}
