/**
 * Maps what the Azure SDK throws (RestError, AbortError, identity errors, the
 * Retry-After cap) to core's typed errors. Messages say what and where and
 * never carry a key value: every known secret is redacted (core's redactSecrets) before use.
 *
 * ARM error shape: `{"error":{"code","message","details":[{code,target,message}]}}`
 * https://learn.microsoft.com/azure/azure-resource-manager/management/common-deployment-errors
 */
import {
  Conflict,
  NotFound,
  Throttled,
  UpstreamError,
  UpstreamTimeout,
  UpstreamUnavailable,
  isCredhookError,
  type CredhookError,
} from "@credhook/core/errors";
import {
  containsSecret,
  GatewayErrors,
  RateLimitQueueFull,
  redactSecrets,
  retryAfterFromHeaders,
} from "@credhook/core/provider-kit";
import type { PipelineRequest } from "@azure/core-rest-pipeline";
import { RetryAfterTooLong, attemptsOf } from "./client.js";

/** What the SDK's RestError looks like to us. */
interface RestErrorLike {
  name: string;
  message: string;
  statusCode?: number;
  code?: string;
  details?: unknown;
  response?: { headers: { get(name: string): string | undefined } };
}

/** HTTP status of an SDK error, if it came from a response. */
export function statusOf(err: unknown): number | undefined {
  const s = (err as RestErrorLike | null)?.statusCode;
  return typeof s === "number" ? s : undefined;
}

/** ARM error code of an SDK error (`ValidationError`, `ResourceNotFound` …). */
export function armCodeOf(err: unknown): string | undefined {
  const c = (err as RestErrorLike | null)?.code;
  return typeof c === "string" ? c : undefined;
}

/** ARM's `details[]` of an error, each as `target: message`. */
export function armDetailsOf(err: unknown): Array<{ target?: string; message?: string }> {
  const d = (err as RestErrorLike | null)?.details as { error?: { details?: unknown } } | undefined;
  const list = d?.error?.details;
  return Array.isArray(list) ? (list as Array<{ target?: string; message?: string }>) : [];
}

/** ARM's message of an error with its details, masked and on one line. */
export function armMessageOf(err: unknown, secrets: readonly string[]): string {
  const base = String((err as RestErrorLike | null)?.message ?? "").trim();
  const details = armDetailsOf(err)
    .map((d) => [d.target, d.message].filter(Boolean).join(": "))
    .filter((s) => s.length > 0);
  const text = details.length > 0 ? `${base} ${details.join("; ")}` : base;
  return redactSecrets(text.replace(/\s+/g, " "), secrets).slice(0, 500);
}

/**
 * True when the write that threw `err` certainly did not take effect: every
 * attempt of the request was refused outright (a 4xx other than 408 — 429
 * included —, or credhook's limiter before sending). False, "outcome unknown",
 * for a timeout, a network error, a 5xx or 408 on any attempt, and an error
 * whose request history is not known (see `attemptTrackingPolicy` in client.ts).
 */
export function writeRefused(err: unknown): boolean {
  const request = (err as { request?: PipelineRequest } | null)?.request;
  const seen = request ? attemptsOf(request) : undefined;
  if (!seen || seen.ambiguous) return false;
  if (err instanceof RateLimitQueueFull) return true;
  if (err instanceof RetryAfterTooLong) return err.status === 429;
  const status = statusOf(err);
  return status !== undefined && status >= 400 && status < 500 && status !== 408;
}

/** True when an error is the SDK's (or the platform's) abort after the call's time limit. */
export function isAbort(err: unknown): boolean {
  const name = (err as { name?: string } | null)?.name;
  return name === "AbortError" || name === "TimeoutError";
}

/**
 * The error to keep as `cause` (logged, never sent): the SDK error itself, or —
 * when its message contains a secret — a plain copy with the secret masked.
 * (RestError keeps `request`/`response` non-enumerable, so loggers do not print bodies.)
 */
function safeCause(err: unknown, secrets: readonly string[]): unknown {
  const message = (err as { message?: unknown } | null)?.message;
  if (typeof message !== "string" || !containsSecret(message, secrets)) return err;
  const e = err as RestErrorLike;
  const copy = new Error(redactSecrets(message, secrets));
  copy.name = e.name;
  return Object.assign(copy, { statusCode: e.statusCode, code: e.code });
}

/** Context of one mapped call. */
export interface MapContext {
  /** Gateway name, for the `[gateway x]` prefix and the error's `gateway`. */
  gateway: string;
  /** What was being done, e.g. `creating subscription x on service y`. */
  what: string;
  /** The call's time limit (ms), for timeout messages. */
  timeoutMs: number;
  /** Values that must not appear in a message (key values). */
  secrets?: readonly string[];
}

/**
 * Core's typed error for anything an SDK call threw.
 * - 429 (after the SDK's retries) or a Retry-After above the cap → Throttled (503, Retry-After)
 * - abort after `timeoutMs` → UpstreamTimeout (504)
 * - 404 → NotFound; 409 / 412 → Conflict
 * - 401 / 403 → UpstreamError (502) naming the missing permission
 * - 503 / 408 / network errors / token acquisition failures → UpstreamUnavailable or UpstreamError
 * - anything else → UpstreamError (502) with ARM's code and (masked) message
 */
export function toTypedError(err: unknown, ctx: MapContext): CredhookError {
  if (isCredhookError(err)) return err;
  const secrets = ctx.secrets ?? [];
  const g = new GatewayErrors(ctx.gateway);
  const opts = { cause: safeCause(err, secrets) };
  if (err instanceof RetryAfterTooLong || (err as { name?: string } | null)?.name === "RetryAfterTooLong") {
    const s = (err as RetryAfterTooLong).retryAfterS;
    return g.error(
      Throttled,
      `Azure Resource Manager throttled ${ctx.what} and asked to wait ${Math.ceil(s)} s`,
      s,
      opts,
    );
  }
  if (err instanceof RateLimitQueueFull) {
    const waitS = err.waitMs / 1000;
    return g.error(
      Throttled,
      `${ctx.what}: too many ARM ${err.limiter}s are queued to stay under ARM's ${err.perSecond}/s; try again in ${Math.ceil(waitS)} s`,
      waitS,
      opts,
    );
  }
  if (isAbort(err)) return g.error(UpstreamTimeout, `${ctx.what} did not finish within ${ctx.timeoutMs} ms`, opts);
  const status = statusOf(err);
  const code = armCodeOf(err);
  const arm = armMessageOf(err, secrets);
  const tail = code ? ` (${code}: ${arm})` : arm ? ` (${arm})` : "";
  if (status === undefined) {
    const name = (err as { name?: string } | null)?.name ?? "Error";
    if (/Credential|Authentication/i.test(name)) {
      return g.error(
        UpstreamError,
        `could not get an Azure AD token for ${ctx.what} (${name}); check the gateway's credential option`,
        opts,
      );
    }
    const sys = (err as { code?: string } | null)?.code;
    return g.error(
      UpstreamError,
      `${ctx.what} failed: Azure Resource Manager is not reachable${sys ? ` (${sys})` : ""}`,
      opts,
    );
  }
  if (status === 429) {
    const headers = (err as RestErrorLike).response?.headers;
    const s = headers ? retryAfterFromHeaders((n) => headers.get(n)) : undefined;
    return g.error(Throttled, `Azure Resource Manager still throttled ${ctx.what} after retries`, s ?? 1, opts);
  }
  if (status === 404) return g.error(NotFound, `${ctx.what}: not found${tail}`, opts);
  if (status === 409 || status === 412)
    return g.error(Conflict, `${ctx.what}: the resource changed or exists already${tail}`, opts);
  if (status === 401 || status === 403) {
    return g.error(
      UpstreamError,
      `Azure Resource Manager refused ${ctx.what}${tail}; grant the principal the provider's role on the service (README: RBAC), or "API Management Service Contributor"`,
      opts,
    );
  }
  if (status === 503 || status === 408) {
    const headers = (err as RestErrorLike).response?.headers;
    const s = headers ? retryAfterFromHeaders((n) => headers.get(n)) : undefined;
    return g.error(
      UpstreamUnavailable,
      `${ctx.what} failed: the service is unavailable (HTTP ${status})${tail}`,
      s ?? 5,
      opts,
    );
  }
  return g.error(UpstreamError, `${ctx.what} failed with HTTP ${status}${tail}`, opts);
}
