/**
 * Fault injection and quota enforcement shared by the API Gateway and Cognito
 * fakes: per-operation token buckets (or strict sliding windows) that model
 * AWS's documented control-plane quotas, and faults armed from tests through
 * JS methods — throttling with `Retry-After`, 5xx, IAM denials (403), latency,
 * writes that land after the client gave up, and failures after the write was
 * applied. Clouds do not cancel work when a client gives up (docs/cloud-facts.md),
 * and neither does the fake.
 */

import { type FakeClock, systemClock } from "../clock.js";

/** Which fake an operation belongs to. */
export type FakeService = "apigateway" | "cognito";

/** Selects the operations a fault applies to. Omitted fields match everything. */
export interface FaultMatch {
  /** `apigateway` or `cognito`. */
  service?: FakeService;
  /** Operation name as in the AWS API reference, e.g. `CreateApiKey`, `CreateUserPoolClient`, `Token` (the OAuth2 endpoint). */
  operation?: string;
}

/** An armed fault: answered instead of the real operation, `count` times. */
export type Fault =
  | { kind: "throttle"; retryAfterS: number }
  | { kind: "error"; status: number; errorType: string; message: string }
  | { kind: "deny" };

/** What happens to a request that is applied: when, and what the client hears afterwards. */
export interface ApplyDirective {
  /** Milliseconds between the request's arrival (and quota check) and applying it; the answer follows the apply. */
  applyDelayMs: number;
  /** After applying: answer this status (5xx) instead of the result, or close the connection without an answer. */
  afterApply?: { status: number; errorType: string } | { drop: true };
  /** Called once the delayed write was applied (or refused): a late write is then no longer pending. */
  applied?: () => void;
}

interface ArmedApply extends FaultMatch {
  remaining: number;
  applyDelayMs: number;
  afterApply?: ApplyDirective["afterApply"];
}

interface ArmedFault extends FaultMatch {
  fault: Fault;
  remaining: number;
}

interface ArmedLatency extends FaultMatch {
  ms: number;
  remaining: number;
}

/**
 * A token bucket: `capacity` tokens, refilled continuously at `ratePerS`.
 * Models AWS's "N requests per second, burst B" throttling quotas.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  /**
   * @param ratePerS steady rate in requests per second
   * @param capacity burst size (tokens available at once)
   * @param clock the refill's clock (injectable: a test advances a `ManualClock` instead of waiting) @default systemClock
   */
  constructor(
    readonly ratePerS: number,
    readonly capacity: number,
    private readonly clock: Pick<FakeClock, "now"> = systemClock,
  ) {
    this.tokens = capacity;
    this.last = clock.now();
  }

  /** Takes one token; returns 0 when granted, or the seconds until a token will be available. */
  take(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) / 1000) * this.ratePerS);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return (1 - this.tokens) / this.ratePerS;
  }
}

/**
 * A strict sliding-window quota: at most `limit` accepted requests in any
 * window of `windowMs` milliseconds, both ends included (a request exactly
 * `windowMs` after the oldest counted one is still refused). Refused requests
 * do not count.
 */
export class SlidingWindow {
  private readonly accepted: number[] = [];

  /**
   * @param limit requests per window
   * @param windowMs window length in milliseconds
   * @param clock the window's clock (injectable: a test advances a `ManualClock` instead of waiting) @default systemClock
   */
  constructor(
    readonly limit: number,
    readonly windowMs = 1000,
    private readonly clock: Pick<FakeClock, "now"> = systemClock,
  ) {}

  /** Takes one slot; returns 0 when granted, or the seconds until one frees up. */
  take(): number {
    const now = this.clock.now();
    while (this.accepted.length > 0 && this.accepted[0]! < now - this.windowMs) this.accepted.shift();
    if (this.accepted.length < this.limit) {
      this.accepted.push(now);
      return 0;
    }
    return Math.max(0.001, (this.accepted[0]! + this.windowMs - now) / 1000);
  }
}

/** Counters a fake keeps per operation (for tests and the benchmark). */
export interface FakeStats {
  /** Requests received per operation (including rejected ones). */
  calls: Record<string, number>;
  /** Requests answered with a throttling error (quota or injected) per operation. */
  throttled: Record<string, number>;
  /**
   * Writes delayed by {@link FaultInjector.lateApply} that have not been applied (or refused)
   * yet: a test waits for 0 instead of sleeping past the delay.
   */
  lateWritesPending: number;
}

/**
 * The control surface tests use to inject faults into a running fake. Every
 * method arms a fault for the next `count` matching requests (default 1).
 */
export class FaultInjector {
  private faults: ArmedFault[] = [];
  private latencies: ArmedLatency[] = [];
  private applies: ArmedApply[] = [];
  private readonly stats: FakeStats = { calls: {}, throttled: {}, lateWritesPending: 0 };

  /**
   * Answers the next `count` matching requests with the service's throttling
   * error (API Gateway: 429 TooManyRequestsException; Cognito: 400
   * TooManyRequestsException) and a `Retry-After` header of `retryAfterS` seconds.
   */
  throttle(match: FaultMatch & { count?: number; retryAfterS?: number } = {}): void {
    this.faults.push({
      ...match,
      fault: { kind: "throttle", retryAfterS: match.retryAfterS ?? 1 },
      remaining: match.count ?? 1,
    });
  }

  /** Answers the next `count` matching requests with an HTTP `status` (default 503) error of `errorType`. */
  serverError(match: FaultMatch & { count?: number; status?: number; errorType?: string } = {}): void {
    const status = match.status ?? 503;
    this.faults.push({
      ...match,
      fault: {
        kind: "error",
        status,
        errorType: match.errorType ?? (status === 503 ? "ServiceUnavailableException" : "InternalErrorException"),
        message: "injected failure",
      },
      remaining: match.count ?? 1,
    });
  }

  /**
   * Refuses the next `count` matching requests as IAM does when the caller's
   * policy lacks the action or resource (e.g. a usage plan missing from a
   * least-privilege policy): API Gateway 403, Cognito (JSON 1.1) 400, error
   * type `AccessDeniedException`, message `User: … is not authorized to
   * perform: <action> on resource: <arn>`. Nothing is applied.
   */
  deny(match: FaultMatch & { count?: number } = {}): void {
    this.faults.push({ ...match, fault: { kind: "deny" }, remaining: match.count ?? 1 });
  }

  /** Delays the next `count` matching requests (default: every one, `Infinity`) by `ms` milliseconds before answering. */
  latency(ms: number, match: FaultMatch & { count?: number } = {}): void {
    this.latencies.push({ ...match, ms, remaining: match.count ?? Number.POSITIVE_INFINITY });
  }

  /**
   * A write that lands after the client gave up: the next `count` matching
   * requests (default 1) are accepted on arrival (quota counted) and applied
   * `delayMs` milliseconds later — set it above the client's timeout — then
   * answered (to a client that is usually gone). Validation happens at apply
   * time, as in AWS (e.g. a duplicate key value is refused then, unseen).
   */
  lateApply(delayMs: number, match: FaultMatch & { count?: number } = {}): void {
    this.applies.push({ ...match, applyDelayMs: delayMs, remaining: match.count ?? 1 });
  }

  /**
   * A failure after the write was applied: the next `count` matching requests
   * (default 1) are applied, then answered with `status` (default 500,
   * `InternalFailure`) — or, with `drop: true`, the connection is closed with
   * no answer at all.
   */
  failAfterApply(
    match: FaultMatch & { count?: number; status?: number; errorType?: string; drop?: boolean } = {},
  ): void {
    const status = match.status ?? 500;
    this.applies.push({
      ...match,
      applyDelayMs: 0,
      afterApply: match.drop
        ? { drop: true }
        : {
            status,
            errorType: match.errorType ?? (status === 503 ? "ServiceUnavailableException" : "InternalFailure"),
          },
      remaining: match.count ?? 1,
    });
  }

  /** Disarms every fault and latency. */
  clear(): void {
    this.faults = [];
    this.latencies = [];
    this.applies = [];
  }

  /** A copy of the per-operation counters. */
  snapshot(): FakeStats {
    return structuredClone(this.stats);
  }

  /** Resets the counters. */
  resetStats(): void {
    this.stats.calls = {};
    this.stats.throttled = {};
  }

  /** @internal How the next matching request that gets past faults and quotas is applied. */
  takeApply(service: FakeService, operation: string): ApplyDirective {
    const armed = this.applies.find(
      (a) =>
        a.remaining > 0 &&
        (a.service === undefined || a.service === service) &&
        (a.operation === undefined || a.operation === operation),
    );
    if (!armed) return { applyDelayMs: 0 };
    armed.remaining -= 1;
    this.applies = this.applies.filter((a) => a.remaining > 0);
    const late = armed.applyDelayMs > 0;
    if (late) this.stats.lateWritesPending += 1;
    return {
      applyDelayMs: armed.applyDelayMs,
      ...(armed.afterApply ? { afterApply: armed.afterApply } : {}),
      ...(late ? { applied: () => void (this.stats.lateWritesPending -= 1) } : {}),
    };
  }

  /** @internal Counts a call and returns the latency to apply and the fault to answer with, if any. */
  take(service: FakeService, operation: string): { delayMs: number; fault?: Fault } {
    this.stats.calls[operation] = (this.stats.calls[operation] ?? 0) + 1;
    const matches = (m: FaultMatch) =>
      (m.service === undefined || m.service === service) && (m.operation === undefined || m.operation === operation);
    let delayMs = 0;
    for (const l of this.latencies) {
      if (l.remaining > 0 && matches(l)) {
        l.remaining -= 1;
        delayMs = Math.max(delayMs, l.ms);
      }
    }
    this.latencies = this.latencies.filter((l) => l.remaining > 0);
    const armed = this.faults.find((f) => f.remaining > 0 && matches(f));
    if (!armed) return { delayMs };
    armed.remaining -= 1;
    this.faults = this.faults.filter((f) => f.remaining > 0);
    return { delayMs, fault: armed.fault };
  }

  /** @internal Counts a throttled answer. */
  countThrottled(operation: string): void {
    this.stats.throttled[operation] = (this.stats.throttled[operation] ?? 0) + 1;
  }
}

/** An AWS error as the service sends it: HTTP status, error type (`x-amzn-ErrorType` / `__type`), message, extra headers. */
export class AwsFakeError extends Error {
  constructor(
    readonly status: number,
    readonly errorType: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** Random lower-case alphanumeric id of `length` characters (AWS resource id shape). */
export function randomId(length: number, alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"): string {
  let out = "";
  const bytes = new Uint8Array(length * 2);
  crypto.getRandomValues(bytes);
  for (let i = 0; out.length < length; i++) {
    const b = bytes[i % bytes.length]!;
    // rejection sampling: no modulo bias
    if (b < 256 - (256 % alphabet.length)) out += alphabet[b % alphabet.length];
    if (i % bytes.length === bytes.length - 1) crypto.getRandomValues(bytes);
  }
  return out;
}

/** Opaque pagination token for an offset. */
export function encodeToken(offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset })).toString("base64url");
}

/** Offset of a pagination token, or undefined when it is not one of ours. */
export function decodeToken(token: string): number | undefined {
  try {
    const v = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as { o?: unknown };
    return typeof v.o === "number" && Number.isInteger(v.o) && v.o >= 0 ? v.o : undefined;
  } catch {
    return undefined;
  }
}

/** Minimal response surface {@link applyAndAnswer} needs. */
interface Answerable {
  destroyed: boolean;
  socket: { destroyed: boolean; destroy(): void } | null;
}

/**
 * Applies a request as `directive` says — after its delay on `clock`, then answering,
 * failing with a 5xx, or closing the connection unanswered — and returns
 * nothing once answered. Validation errors thrown by `apply` propagate (the
 * caller answers them; to a client that left, nothing is written).
 */
export async function applyAndAnswer<T>(
  directive: ApplyDirective,
  res: Answerable,
  apply: () => T,
  answer: (result: T) => void,
  clock: FakeClock,
): Promise<void> {
  if (directive.applyDelayMs > 0) await clock.sleep(directive.applyDelayMs);
  let result: T;
  try {
    result = apply();
  } finally {
    directive.applied?.();
  }
  const after = directive.afterApply;
  if (after && "drop" in after) {
    res.socket?.destroy();
    return;
  }
  if (after)
    throw new AwsFakeError(after.status, after.errorType, "We encountered an internal error. Please try again.");
  if (res.destroyed || res.socket?.destroyed) return;
  answer(result);
}

/** The IAM denial a fake answers for `action` on `resource` (API Gateway 403; JSON 1.1 services 400). */
export function accessDenied(status: number, action: string, resource: string): AwsFakeError {
  return new AwsFakeError(
    status,
    "AccessDeniedException",
    `User: arn:aws:sts::123456789012:assumed-role/credhook/session is not authorized to perform: ${action} on resource: ${resource}`,
  );
}

/**
 * Called by a service fake for every request before its quota: counts the
 * call, applies injected latency, and throws an armed fault (throttling, 5xx,
 * IAM denial of `iam.action` on `iam.resource`).
 */
export type OperationHook = (operation: string, iam: { action: string; resource: string }) => Promise<void>;
