/**
 * Reading the errors the `@google-cloud/apikeys` client throws, and mapping
 * them to core's typed errors.
 *
 * With the REST transport the client throws one of:
 * - a `GaxiosError` (non-2xx HTTP answers): `status` is the HTTP status, the
 *   `message` is Google's JSON body `{"error":{code,message,status,details}}`,
 *   `response.headers` has `Retry-After` when sent;
 * - a `GoogleError` (a failed long-running operation, or a decoded HTTP error):
 *   `code` is the gRPC status number, `statusDetails` the decoded details;
 * - a system error (`ECONNREFUSED`, `ECONNRESET`, …) when the endpoint cannot be reached.
 * Google's error model: https://cloud.google.com/apis/design/errors
 */
import { Conflict, CredhookError, NotFound, Throttled, UpstreamError, UpstreamTimeout } from "@credhook/core/errors";
import { GatewayErrors, parseRetryAfter } from "@credhook/core/provider-kit";

/** gRPC status names by number (https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto). */
const GRPC_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

/** HTTP status → canonical gRPC status name, for answers without a `status` string. */
function grpcNameOfHttp(status: number): string {
  switch (status) {
    case 400:
      return "INVALID_ARGUMENT";
    case 401:
      return "UNAUTHENTICATED";
    case 403:
      return "PERMISSION_DENIED";
    case 404:
      return "NOT_FOUND";
    case 409:
      return "ABORTED";
    case 429:
      return "RESOURCE_EXHAUSTED";
    case 499:
      return "CANCELLED";
    case 501:
      return "UNIMPLEMENTED";
    case 503:
      return "UNAVAILABLE";
    case 504:
      return "DEADLINE_EXCEEDED";
    default:
      return status >= 500 ? "INTERNAL" : "UNKNOWN";
  }
}

/** Seconds a Google error asks the caller to wait, from a RetryInfo detail (`"7s"` or `{seconds, nanos}`). */
function retryDelayOf(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const d of details as Array<Record<string, unknown>>) {
    const delay = d?.retryDelay;
    if (typeof delay === "string" && /^\d+(\.\d+)?s$/.test(delay)) return Number(delay.slice(0, -1));
    if (delay && typeof delay === "object") {
      const { seconds, nanos } = delay as { seconds?: unknown; nanos?: unknown };
      return Number(seconds ?? 0) + Number(nanos ?? 0) / 1e9;
    }
  }
  return undefined;
}

/** What the provider needs to know about a failed call. Never holds a secret, a header or a request. */
export interface GoogleFailure {
  /** Canonical status name (`NOT_FOUND`, `ALREADY_EXISTS`, `RESOURCE_EXHAUSTED`, …), `NETWORK` or `TIMEOUT`. */
  status: string;
  /** HTTP status, when an HTTP answer came. */
  httpStatus?: number;
  /** Google's own message (about the request's fields; never a key string). */
  message: string;
  /** Seconds to wait, from `Retry-After` or a `google.rpc.RetryInfo` detail. */
  retryAfterS?: number;
}

/** Thrown by the provider's own request time-out. */
export class RequestTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = "RequestTimeout";
  }
}

/** Thrown when a long-running operation does not finish within the operation time-out. */
export class OperationTimeout extends Error {
  constructor(
    readonly operation: string,
    readonly timeoutMs: number,
  ) {
    super(`operation ${operation} not done within ${timeoutMs} ms`);
    this.name = "OperationTimeout";
  }
}

/** Wraps an error that must not be retried (e.g. a long-running operation that finished with an error); read as the error it wraps. */
export class NotRetriable extends Error {
  constructor(readonly inner: unknown) {
    super(inner instanceof Error ? inner.message : String(inner));
    this.name = "NotRetriable";
  }
}

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_SOCKET",
]);

/** Reads any error thrown by the client (or the provider's time-outs) into a {@link GoogleFailure}. */
export function readFailure(err: unknown): GoogleFailure {
  if (err instanceof NotRetriable) return readFailure(err.inner);
  if (err instanceof RequestTimeout) return { status: "TIMEOUT", message: err.message };
  if (err instanceof OperationTimeout) return { status: "DEADLINE_EXCEEDED", message: err.message };
  const e = (err ?? {}) as {
    status?: unknown;
    code?: unknown;
    message?: unknown;
    statusDetails?: unknown;
    response?: { status?: number; headers?: { get?(name: string): string | null } };
  };
  const text = typeof e.message === "string" ? e.message : String(err);
  const httpStatus =
    typeof e.status === "number" ? e.status : typeof e.response?.status === "number" ? e.response.status : undefined;
  if (httpStatus !== undefined) {
    let body: { error?: { status?: string; message?: string; details?: unknown } } | undefined;
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      body = undefined;
    }
    const headerS = parseRetryAfter(e.response?.headers?.get?.("retry-after"));
    const retryAfterS = headerS ?? retryDelayOf(body?.error?.details);
    return {
      status: body?.error?.status ?? grpcNameOfHttp(httpStatus),
      httpStatus,
      message: body?.error?.message ?? `HTTP ${httpStatus}`,
      ...(retryAfterS !== undefined ? { retryAfterS } : {}),
    };
  }
  if (typeof e.code === "number" && e.code >= 0 && e.code < GRPC_NAMES.length) {
    const retryAfterS = retryDelayOf(e.statusDetails);
    return { status: GRPC_NAMES[e.code]!, message: text, ...(retryAfterS !== undefined ? { retryAfterS } : {}) };
  }
  if (typeof e.code === "string" && NETWORK_CODES.has(e.code)) return { status: "NETWORK", message: e.code };
  if (/socket hang up|ECONNREFUSED|ECONNRESET|fetch failed/i.test(text))
    return { status: "NETWORK", message: "connection failed" };
  return { status: "UNKNOWN", message: text };
}

/** True for transient failures: 5xx, connection errors, request time-outs (429 is handled on its own, see retry.ts). */
export function isTransient(f: GoogleFailure): boolean {
  return (
    f.status === "NETWORK" ||
    f.status === "TIMEOUT" ||
    f.status === "UNAVAILABLE" ||
    f.status === "INTERNAL" ||
    (f.status === "DEADLINE_EXCEEDED" && f.httpStatus !== undefined) ||
    (f.httpStatus !== undefined && f.httpStatus >= 500)
  );
}

/**
 * Retry-After (s) answered when Google still throttles after the provider's
 * own retries and its 429 carries no retry hint: the API Keys quotas are per
 * minute (https://cloud.google.com/api-keys/docs/quotas), so a full window
 * always has room again.
 */
export const DEFAULT_THROTTLE_RETRY_AFTER_S = 60;

/**
 * Safe summary of a failure for a message: status, HTTP code and, for a 400
 * (a field Google rejected), Google's message shortened. Other messages (which
 * may name projects and principals) stay in the `cause`, for logs only.
 */
function summary(f: GoogleFailure): string {
  const code = f.httpStatus !== undefined ? `${f.httpStatus} ${f.status}` : f.status;
  const detail = f.httpStatus === 400 && f.message ? `: ${f.message.slice(0, 200)}` : "";
  return `${code}${detail}`;
}

/**
 * Maps a failed call to core's typed errors of `gateway` (message prefixed
 * `[gateway <name>]` by core's GatewayErrors). `what` names the call and its
 * object (`createKey credhook-abc…`).
 * - NOT_FOUND → NotFound (404); ALREADY_EXISTS, ABORTED, FAILED_PRECONDITION → Conflict (409)
 * - RESOURCE_EXHAUSTED / 429 → Throttled (503 + Retry-After)
 * - TIMEOUT, DEADLINE_EXCEEDED → UpstreamTimeout (504)
 * - everything else (401/403 credentials or IAM, 400, 5xx, connection errors) → UpstreamError (502)
 * The `cause` kept for logs is a plain Error with the same safe text — never the
 * client's error, whose request config carries the access token.
 */
export function toTypedError(err: unknown, what: string, gateway: string): CredhookError {
  if (err instanceof CredhookError) return err;
  const f = readFailure(err);
  const cause = new Error(
    `${what}: ${f.status}${f.httpStatus ? ` (HTTP ${f.httpStatus})` : ""}: ${f.message.slice(0, 500)}`,
  );
  const opts = { cause };
  const g = new GatewayErrors(gateway);
  switch (f.status) {
    case "NOT_FOUND":
      return g.error(NotFound, `${what}: the key does not exist`, opts);
    case "ALREADY_EXISTS":
      return g.error(Conflict, `${what}: the key exists already`, opts);
    case "ABORTED":
    case "FAILED_PRECONDITION":
      return g.error(Conflict, `${what}: the key changed concurrently (${f.status})`, opts);
    case "RESOURCE_EXHAUSTED":
      return g.error(
        Throttled,
        `${what}: Google API Keys quota exceeded (429), try again later`,
        f.retryAfterS ?? DEFAULT_THROTTLE_RETRY_AFTER_S,
        opts,
      );
    case "TIMEOUT":
      return g.error(UpstreamTimeout, `${what}: Google API Keys did not answer in time (${f.message})`, opts);
    case "DEADLINE_EXCEEDED":
      return g.error(UpstreamTimeout, `${what}: ${f.httpStatus ? "Google API Keys timed out" : f.message}`, opts);
    case "UNAUTHENTICATED":
      return g.error(
        UpstreamError,
        `${what}: Google rejected the credentials (${summary(f)}); check the gateway's credentials option`,
        opts,
      );
    case "PERMISSION_DENIED":
      return g.error(
        UpstreamError,
        `${what}: permission denied (${summary(f)}); the principal needs roles/serviceusage.apiKeysAdmin on the project`,
        opts,
      );
    case "NETWORK":
      return g.error(UpstreamError, `${what}: Google API Keys could not be reached (${f.message})`, opts);
    default:
      return g.error(UpstreamError, `${what} failed: ${summary(f)}`, opts);
  }
}
