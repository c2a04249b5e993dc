/**
 * Maps AWS SDK v3 errors (API Gateway restJson, Cognito JSON 1.1, credential
 * providers, the Node HTTP handler) to core's typed errors. No raw SDK error
 * leaves the provider: the original is kept as `cause` for logs only.
 */
import {
  Conflict,
  isCredhookError,
  NotFound,
  Throttled,
  UpstreamError,
  UpstreamTimeout,
  UpstreamUnavailable,
  type CredhookError,
} from "@credhook/core/errors";
import { GatewayErrors, parseRetryAfter, redactSecrets } from "@credhook/core/provider-kit";

/** The fields of an SDK error this module reads. */
interface SdkErrorLike {
  name?: string;
  message?: string;
  code?: string;
  retryAfterSeconds?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

/** Error names (API Gateway and Cognito) that mean "slow down". */
const THROTTLING = new Set([
  "TooManyRequestsException",
  "ThrottlingException",
  "Throttling",
  "RequestLimitExceeded",
  "SlowDown",
]);
/** Node/undici network failure codes: AWS could not be reached. */
const NETWORK = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
]);

/** The SDK error's name (`NotFoundException`, `ResourceNotFoundException` …), or undefined. */
export function awsErrorName(err: unknown): string | undefined {
  const name = (err as SdkErrorLike | null)?.name;
  return typeof name === "string" ? name : undefined;
}

/** True when `err` is a not-found answer from API Gateway (404 NotFoundException) or Cognito (ResourceNotFoundException). */
export function isAwsNotFound(err: unknown): boolean {
  const name = awsErrorName(err);
  return name === "NotFoundException" || name === "ResourceNotFoundException";
}

/** True when `err` is API Gateway's 409 ConflictException. */
export function isAwsConflict(err: unknown): boolean {
  return awsErrorName(err) === "ConflictException";
}

/** Seconds from the error's Retry-After (header or modelled `retryAfterSeconds`, read by core's `parseRetryAfter`), if any. */
export function retryAfterSeconds(err: unknown): number | undefined {
  const e = err as SdkErrorLike | null;
  return parseRetryAfter(
    e?.retryAfterSeconds ?? e?.$response?.headers?.["retry-after"] ?? e?.$response?.headers?.["Retry-After"],
  );
}

/**
 * Maps an error thrown by an AWS SDK call to core's typed error.
 *
 * | AWS | credhook |
 * |---|---|
 * | NotFoundException, ResourceNotFoundException | NotFound (404) |
 * | ConflictException | Conflict (409) |
 * | throttling (429, TooManyRequestsException, API Gateway LimitExceededException 429) after the SDK's retries | Throttled (503 + Retry-After) |
 * | 503 ServiceUnavailable | UpstreamUnavailable (503 + Retry-After) |
 * | request timeout, abort | UpstreamTimeout (504) |
 * | everything else (4xx the provider did not expect, 5xx, network, credentials, access denied) | UpstreamError (502) |
 *
 * @param err what the SDK threw (a credhook error is returned unchanged)
 * @param what the action and its target, e.g. `CreateApiKey for app "Orders"`, for the message
 * @param gateway the gateway's name, prefixed to the message as `[gateway <name>]`
 * @param secrets values that must never appear in a message (the imported key value), redacted whatever their length
 */
export function toTypedError(
  err: unknown,
  what: string,
  gateway: string,
  secrets: Array<string | undefined> = [],
): CredhookError {
  if (isCredhookError(err)) return err;
  const e = (err ?? {}) as SdkErrorLike;
  const name = e.name ?? "Error";
  const status = e.$metadata?.httpStatusCode;
  const awsMessage = redactSecrets(String(e.message ?? ""), secrets).slice(0, 300);
  const g = new GatewayErrors(gateway);
  const opts = { cause: err };

  if (name === "NotFoundException" || name === "ResourceNotFoundException")
    return g.error(NotFound, `${what}: not found (${awsMessage})`, opts);
  if (name === "ConflictException") return g.error(Conflict, `${what}: conflict (${awsMessage})`, opts);
  if (THROTTLING.has(name) || status === 429) {
    return g.error(
      Throttled,
      `${what}: AWS is still throttling after retries; try again later`,
      retryAfterSeconds(err) ?? 1,
      opts,
    );
  }
  if (name === "TimeoutError" || name === "AbortError" || e.code === "ETIMEDOUT" || e.code === "ESOCKETTIMEDOUT") {
    return g.error(UpstreamTimeout, `${what}: AWS did not answer in time`, opts);
  }
  if (name === "ServiceUnavailableException" || name === "ServiceUnavailable" || status === 503) {
    return g.error(UpstreamUnavailable, `${what}: AWS is unavailable (${name})`, retryAfterSeconds(err) ?? 5, opts);
  }
  if (NETWORK.has(e.code ?? "") || NETWORK.has(name))
    return g.error(UpstreamError, `${what}: cannot reach AWS (${e.code ?? name})`, opts);
  if (
    name === "CredentialsProviderError" ||
    name === "ExpiredTokenException" ||
    name === "UnrecognizedClientException" ||
    name === "InvalidSignatureException"
  ) {
    return g.error(UpstreamError, `${what}: AWS credentials are missing, expired or invalid (${name})`, opts);
  }
  if (
    name === "AccessDeniedException" ||
    name === "UnauthorizedException" ||
    name === "NotAuthorizedException" ||
    status === 403
  ) {
    return g.error(
      UpstreamError,
      `${what}: AWS denied the call (${name}); check the IAM policy in the provider-aws README`,
      opts,
    );
  }
  if (status !== undefined && status >= 500)
    return g.error(UpstreamError, `${what}: AWS failed with ${status} ${name}`, opts);
  return g.error(UpstreamError, `${what}: AWS refused the call: ${name}${awsMessage ? ` (${awsMessage})` : ""}`, opts);
}

/**
 * Sets what a failed create/update left (`partial`) and whether a write may
 * still land unseen (`outcomeUnknown`) on a typed error, for core to
 * compensate (see core's provider.ts, "Providers never clean up alone").
 * Fields already set by a deeper call are kept.
 */
export function reportPartial<E extends CredhookError>(
  err: E,
  partial: CredhookError["partial"],
  outcomeUnknown: boolean,
): E {
  err.partial ??= partial;
  err.outcomeUnknown = (err.outcomeUnknown ?? false) || outcomeUnknown;
  return err;
}
