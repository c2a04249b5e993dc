/**
 * When and how long the provider retries a failed Google API Keys call
 * (cockatiel does the retrying and the back-off arithmetic).
 *
 * - **429 / RESOURCE_EXHAUSTED** is retried on every call: Google refused it
 *   before doing anything, and the API Keys quotas are per minute, so a short
 *   wait usually succeeds. The wait is Google's `google.rpc.RetryInfo` delay
 *   (or `Retry-After`) when it sends one — it usually does not — else an
 *   exponential back-off with jitter starting at `throttleInitialDelayMs`.
 * - **Transient failures** (5xx, UNAVAILABLE, connection resets, the request
 *   time-out) are retried up to `maxAttempts` in all. Every call the provider
 *   makes is safe to repeat: reads and operation polls are idempotent, and each
 *   write is idempotent as used (deterministic keyId: a repeated createKey
 *   answers ALREADY_EXISTS and the provider adopts its own key by its
 *   annotations; updates and deletes carry the key's etag).
 * - Every wait of one provider operation (a create with its createKey, polls
 *   and reads) is drawn from ONE {@link RetryBudget} (`budgetMs`, 10 s by
 *   default): a retry whose wait does not fit is not made, and the last
 *   failure is thrown (a 429 becomes Throttled: 503 + Retry-After).
 *
 * Google's guidance: https://cloud.google.com/apis/design/errors#retrying_errors
 */
import { DelegateBackoff, ExponentialBackoff, handleWhen, retry, type IBackoff, type RetryPolicy } from "cockatiel";
import { CredhookError } from "@credhook/core/errors";
import type { GcpProviderOptionsWithDefaults } from "./types.js";
import { isTransient, NotRetriable, readFailure, type GoogleFailure } from "./google-errors.js";

/** Retry settings: the `retry` options with their defaults applied (each one's meaning is its `description` in `schema.ts`). */
export type RetrySettings = GcpProviderOptionsWithDefaults["retry"];

/** Longest back-off after one 429 without a retry hint (ms). */
const THROTTLE_MAX_DELAY_MS = 5000;

/**
 * The back-off time one provider operation (create, update, revoke, …) may
 * still spend waiting between retries, shared by all its calls.
 */
export class RetryBudget {
  private spent = 0;

  /** @param budgetMs total waiting allowed, in ms */
  constructor(readonly budgetMs: number) {}

  /** Milliseconds left. */
  get remainingMs(): number {
    return Math.max(0, this.budgetMs - this.spent);
  }

  /** Takes `ms` from the budget when it fits; false (and nothing taken) when it does not. */
  take(ms: number): boolean {
    if (this.spent + ms > this.budgetMs) return false;
    this.spent += ms;
    return true;
  }
}

/** Connection failures that prove the request was never sent. */
const NEVER_SENT = /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/;

/**
 * True when a failed write may nevertheless have been applied by Google: no
 * answer (time-out, connection reset), or a 5xx (an error after the request
 * was accepted). False for answers that refuse the request (4xx, 429) and for
 * connections never made.
 */
export function mayHaveApplied(f: GoogleFailure): boolean {
  if (f.status === "NETWORK") return !NEVER_SENT.test(f.message);
  if (f.status === "TIMEOUT" || f.status === "DEADLINE_EXCEEDED" || f.status === "UNKNOWN") return true;
  return f.httpStatus !== undefined
    ? f.httpStatus >= 500
    : f.status === "INTERNAL" || f.status === "UNAVAILABLE" || f.status === "DATA_LOSS";
}

/** Hooks of one call's retry policy. */
export interface RetryHooks {
  /** Called for each failed attempt that may have been applied (writes only). */
  onMaybeApplied?: () => void;
  /** Called before each retry, with the failure's status and the wait (ms). */
  onRetry?: (status: string, delayMs: number) => void;
}

/**
 * A cockatiel retry policy for ONE call: retries 429s and transient failures
 * as described above, drawing each wait from `budget`.
 * @param kind `write` also reports attempts that may have been applied
 */
export function retryPolicyFor(
  settings: RetrySettings,
  kind: "read" | "write",
  budget: RetryBudget,
  hooks: RetryHooks = {},
): RetryPolicy {
  const transientBackoff = new ExponentialBackoff({
    initialDelay: settings.initialDelayMs,
    maxDelay: settings.maxDelayMs,
  });
  const throttleBackoff = new ExponentialBackoff({
    initialDelay: settings.throttleInitialDelayMs,
    maxDelay: THROTTLE_MAX_DELAY_MS,
  });
  let transientChain: IBackoff<unknown> | undefined;
  let throttleChain: IBackoff<unknown> | undefined;
  let transientRetries = 0;
  let planned = 0;

  const shouldRetry = (err: unknown): boolean => {
    // typed errors come from the provider itself (the limiter's refusal): never sent, never retried
    if (err instanceof CredhookError || err instanceof NotRetriable) return false;
    const f = readFailure(err);
    if (kind === "write" && mayHaveApplied(f)) hooks.onMaybeApplied?.();
    let delay: number;
    if (f.status === "RESOURCE_EXHAUSTED") {
      if (f.retryAfterS !== undefined) {
        delay = Math.ceil(f.retryAfterS * 1000);
      } else {
        throttleChain = throttleChain ? throttleChain.next(undefined) : throttleBackoff.next();
        delay = Math.round(throttleChain.duration);
      }
    } else if (isTransient(f) && transientRetries < settings.maxAttempts - 1) {
      transientChain = transientChain ? transientChain.next(undefined) : transientBackoff.next();
      delay = Math.round(transientChain.duration);
      transientRetries += 1;
    } else {
      return false;
    }
    if (!budget.take(delay)) return false;
    planned = delay;
    hooks.onRetry?.(f.status, delay);
    return true;
  };

  return retry(handleWhen(shouldRetry), {
    maxAttempts: Number.MAX_SAFE_INTEGER,
    backoff: new DelegateBackoff(() => planned),
  });
}
