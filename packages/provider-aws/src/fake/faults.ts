/**
 * Fault injection and quota enforcement shared by the API Gateway and Cognito
 * fakes: per-operation token buckets that model AWS's documented control-plane
 * quotas, and one-shot faults (throttling with `Retry-After`, 5xx, latency)
 * armed from tests through JS methods.
 */

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
  | { kind: "error"; status: number; errorType: string; message: string };

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
   */
  constructor(
    readonly ratePerS: number,
    readonly capacity: number,
  ) {
    this.tokens = capacity;
    this.last = performance.now();
  }

  /** Takes one token; returns 0 when granted, or the seconds until a token will be available. */
  take(): number {
    const now = performance.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) / 1000) * this.ratePerS);
    this.last = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return (1 - this.tokens) / this.ratePerS;
  }
}

/** Counters a fake keeps per operation (for tests and the benchmark). */
export interface FakeStats {
  /** Requests received per operation (including rejected ones). */
  calls: Record<string, number>;
  /** Requests answered with a throttling error (quota or injected) per operation. */
  throttled: Record<string, number>;
}

/**
 * The control surface tests use to inject faults into a running fake. Every
 * method arms a fault for the next `count` matching requests (default 1).
 */
export class FaultInjector {
  private faults: ArmedFault[] = [];
  private latencies: ArmedLatency[] = [];
  private readonly stats: FakeStats = { calls: {}, throttled: {} };

  /**
   * Answers the next `count` matching requests with the service's throttling
   * error (API Gateway: 429 TooManyRequestsException; Cognito: 400
   * TooManyRequestsException) and a `Retry-After` header of `retryAfterS` seconds.
   */
  throttle(match: FaultMatch & { count?: number; retryAfterS?: number } = {}): void {
    this.faults.push({ ...match, fault: { kind: "throttle", retryAfterS: match.retryAfterS ?? 1 }, remaining: match.count ?? 1 });
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

  /** Delays the next `count` matching requests (default: every one, `Infinity`) by `ms` milliseconds before answering. */
  latency(ms: number, match: FaultMatch & { count?: number } = {}): void {
    this.latencies.push({ ...match, ms, remaining: match.count ?? Number.POSITIVE_INFINITY });
  }

  /** Disarms every fault and latency. */
  clear(): void {
    this.faults = [];
    this.latencies = [];
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

  /** @internal Counts a call and returns the latency to apply and the fault to answer with, if any. */
  take(service: FakeService, operation: string): { delayMs: number; fault?: Fault } {
    this.stats.calls[operation] = (this.stats.calls[operation] ?? 0) + 1;
    const matches = (m: FaultMatch) => (m.service === undefined || m.service === service) && (m.operation === undefined || m.operation === operation);
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

/** Sleeps `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
