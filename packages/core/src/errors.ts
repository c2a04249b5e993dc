/**
 * credhook's typed error model. Providers, stores and core throw these; the
 * server turns each into the contract's ErrorResponse with {@link CredhookError.status}.
 * A raw SDK or driver error never reaches a response: providers map them here.
 *
 * Every `messages` entry is safe to show the portal: it says what and where,
 * never a stack trace or a secret.
 */

/** Stable, UPPER_SNAKE machine codes carried by every {@link CredhookError} (logged, not sent). */
export const ErrorCodes = {
  VALIDATION_FAILED: "VALIDATION_FAILED",
  UNAUTHORIZED: "UNAUTHORIZED",
  NOT_FOUND: "NOT_FOUND",
  CONFLICT: "CONFLICT",
  INVALID_REFERENCE: "INVALID_REFERENCE",
  UNROUTABLE: "UNROUTABLE",
  POLICY_VIOLATION: "POLICY_VIOLATION",
  TOO_MANY_REQUESTS: "TOO_MANY_REQUESTS",
  THROTTLED: "THROTTLED",
  SHUTTING_DOWN: "SHUTTING_DOWN",
  UPSTREAM_FAILED: "UPSTREAM_FAILED",
  UPSTREAM_UNAVAILABLE: "UPSTREAM_UNAVAILABLE",
  UPSTREAM_TIMEOUT: "UPSTREAM_TIMEOUT",
  STORE_UNAVAILABLE: "STORE_UNAVAILABLE",
  LOCK_LOST: "LOCK_LOST",
  CIRCUIT_OPEN: "CIRCUIT_OPEN",
  CONFIG_INVALID: "CONFIG_INVALID",
  INTERNAL: "INTERNAL",
} as const;

/** One of {@link ErrorCodes}. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** Options shared by every {@link CredhookError} constructor. */
export interface CredhookErrorOptions {
  /** Extra safe messages (one problem each); the first message is the constructor's `message`. */
  messages?: string[];
  /** The underlying error, kept for logs only (never serialised into a response). */
  cause?: unknown;
  /** Name of the gateway (YAML key under `gateways:`) the error came from, when any. */
  gateway?: string;
  /**
   * A provider's report of what exists after a failed create/update: the
   * native id and secret-free resources of what it made before the failure.
   * Core records it and compensates (revokes it); the provider never cleans up alone.
   */
  partial?: { nativeId: string; resources: Record<string, unknown> };
  /**
   * True when a cloud write may have taken effect although the call failed
   * (sent and not answered, timed out, a 5xx after the request was accepted).
   * Core then keeps the credential's record (status `abandoned`) and searches
   * the gateway for the credential's mark until the outcome is known.
   * Unset: core assumes it for 5xx failures of create and not for 4xx.
   */
  outcomeUnknown?: boolean;
}

/**
 * Base class of every error credhook answers with. `status` is the HTTP status
 * the server returns; `messages` become ErrorResponse.messages.
 */
export class CredhookError extends Error {
  /** HTTP status code the server answers with (4xx/5xx). */
  readonly status: number;
  /** Stable machine code, for logs and metrics. */
  readonly code: ErrorCode;
  /** Human-readable, secret-free problems, one per entry. */
  readonly messages: string[];
  /** Gateway the error came from, if any. */
  gateway: string | undefined;
  /** What a failed create/update left on the gateway (see {@link CredhookErrorOptions.partial}). */
  partial: { nativeId: string; resources: Record<string, unknown> } | undefined;
  /** A cloud write may have taken effect (see {@link CredhookErrorOptions.outcomeUnknown}). */
  outcomeUnknown: boolean | undefined;

  constructor(status: number, code: ErrorCode, message: string, options: CredhookErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.messages = [message, ...(options.messages ?? [])];
    this.gateway = options.gateway;
    this.partial = options.partial;
    this.outcomeUnknown = options.outcomeUnknown;
  }
}

/** 400: the request body or a parameter breaks the contract. `messages` lists every problem. */
export class ValidationError extends CredhookError {
  constructor(messages: string[], options: Omit<CredhookErrorOptions, "messages"> = {}) {
    super(400, ErrorCodes.VALIDATION_FAILED, messages[0] ?? "request is invalid", {
      ...options,
      messages: messages.slice(1),
    });
  }
}

/** 401: missing or wrong Basic credentials. The server adds `WWW-Authenticate`. */
export class Unauthorized extends CredhookError {
  constructor(message = "valid Basic credentials are required", options: CredhookErrorOptions = {}) {
    super(401, ErrorCodes.UNAUTHORIZED, message, options);
  }
}

/**
 * 404: the credential (or a native resource of it) does not exist.
 * Revoke treats it as success; update answers 404 when neither the store nor
 * the request's ids find the credential.
 */
export class NotFound extends CredhookError {
  constructor(message: string, options: CredhookErrorOptions = {}) {
    super(404, ErrorCodes.NOT_FOUND, message, options);
  }
}

/** 409: the resource already exists or changed underneath (duplicate key value, ETag mismatch). */
export class Conflict extends CredhookError {
  constructor(message: string, options: CredhookErrorOptions = {}) {
    super(409, ErrorCodes.CONFLICT, message, options);
  }
}

/** 422: the request names something its gateway does not know, e.g. an unknown usage plan or product. */
export class InvalidReference extends CredhookError {
  constructor(message: string, options: CredhookErrorOptions = {}) {
    super(422, ErrorCodes.INVALID_REFERENCE, message, options);
  }
}

/** 422: an API id matches no route, or names a gateway that is not configured. */
export class Unroutable extends CredhookError {
  constructor(message: string, options: CredhookErrorOptions = {}) {
    super(422, ErrorCodes.UNROUTABLE, message, options);
  }
}

/**
 * 422: the request routes, but credhook's multi-gateway rules forbid it: the
 * app's APIs need different credential types, two gateways would each generate
 * their own key value, client credentials would span several gateways, or a
 * gateway cannot import the app's key value (docs/architecture.md, "Credentials across
 * several gateways"). A provider throws it, before any write, for a request its
 * gateway's configuration cannot serve although each name in it is known (Kong:
 * usage plans whose merged limits Kong's rate-limiting plugin refuses): the
 * configuration's problem, not the gateway's failure, so never a 502 to retry.
 */
export class PolicyViolation extends CredhookError {
  constructor(message: string, options: CredhookErrorOptions = {}) {
    super(422, ErrorCodes.POLICY_VIOLATION, message, options);
  }
}

/** 429: too many failed logins from one client. `retryAfterS` becomes `Retry-After` (seconds). */
export class TooManyRequests extends CredhookError {
  /** Seconds the client should wait before trying again. */
  readonly retryAfterS: number;
  constructor(message: string, retryAfterS: number, options: CredhookErrorOptions = {}) {
    super(429, ErrorCodes.TOO_MANY_REQUESTS, message, options);
    this.retryAfterS = retryAfterS;
  }
}

/**
 * 503: the cloud still throttled the call after client-side rate limiting and
 * the SDK's retries. `retryAfterS` becomes `Retry-After` (seconds).
 */
export class Throttled extends CredhookError {
  /** Seconds the portal should wait before retrying. */
  readonly retryAfterS: number;
  constructor(message: string, retryAfterS = 1, options: CredhookErrorOptions = {}) {
    super(503, ErrorCodes.THROTTLED, message, options);
    this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }
}

/**
 * 503: this instance is shutting down (SIGTERM) and takes no new request; the
 * portal retries on another instance. `retryAfterS` becomes `Retry-After` (seconds).
 */
export class ShuttingDown extends CredhookError {
  /** Seconds the portal should wait before retrying. */
  readonly retryAfterS: number;
  constructor(message: string, retryAfterS = 5, options: CredhookErrorOptions = {}) {
    super(503, ErrorCodes.SHUTTING_DOWN, message, options);
    this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }
}

/** 502: a cloud call failed (an unexpected answer, a 5xx, a refused connection). */
export class UpstreamError extends CredhookError {
  constructor(message: string, options: CredhookErrorOptions = {}) {
    super(502, ErrorCodes.UPSTREAM_FAILED, message, options);
  }
}

/** 503: a gateway is not reachable or not healthy right now (health checks, shutdown). */
export class UpstreamUnavailable extends CredhookError {
  /** Seconds after which trying again makes sense. */
  readonly retryAfterS: number;
  constructor(message: string, retryAfterS = 5, options: CredhookErrorOptions = {}) {
    super(503, ErrorCodes.UPSTREAM_UNAVAILABLE, message, options);
    this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }
}

/** 504: a cloud call or long-running operation did not finish within its timeout. */
export class UpstreamTimeout extends CredhookError {
  constructor(message: string, options: CredhookErrorOptions = {}) {
    super(504, ErrorCodes.UPSTREAM_TIMEOUT, message, options);
  }
}

/**
 * 503: the credential store (the database) cannot be reached or cannot take the
 * write right now — connection refused or lost, the database starting up or
 * shutting down, SQLite's disk full or its file busy. Never a gateway's fault:
 * it carries no gateway. The first message is always
 * "the credential store is unavailable"; the second says what and where
 * (`store.postgres: connection refused (ECONNREFUSED)`).
 * `retryAfterS` becomes `Retry-After` (seconds).
 */
export class StoreUnavailable extends CredhookError {
  /** Seconds after which trying again makes sense. */
  readonly retryAfterS: number;
  /**
   * @param detail what failed and where, secret-free (`store.postgres: the database system is starting up`)
   * @param retryAfterS seconds before a retry makes sense @default 5
   */
  constructor(detail: string, retryAfterS = 5, options: Omit<CredhookErrorOptions, "gateway"> = {}) {
    super(503, ErrorCodes.STORE_UNAVAILABLE, "the credential store is unavailable", {
      ...options,
      messages: [detail, ...(options.messages ?? [])],
    });
    this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }
}

/**
 * 503: the operation lost its app's lock while it ran (its PostgreSQL lock
 * session ended: the database restarted or failed over, or the session was
 * terminated) or could not renew its lease on the app. The operation stopped
 * before its next cloud write or record save; its record stays as it was (an
 * interrupted operation whose outcome is unknown) for recovery, which another
 * instance starts only once this one has stopped (see `Fence`).
 */
export class LockLost extends CredhookError {
  /** Seconds after which trying again makes sense. */
  readonly retryAfterS: number;
  /** @param detail why the lock is gone, secret-free */
  constructor(detail: string, retryAfterS = 5, options: Omit<CredhookErrorOptions, "gateway"> = {}) {
    super(503, ErrorCodes.LOCK_LOST, "the credential store is unavailable", {
      ...options,
      messages: [
        `this instance lost its lock on the app (${detail}); the operation stopped before its next write and is left for recovery; try again shortly`,
      ],
    });
    this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }
}

/**
 * 503: the gateway's circuit breaker is open — its recent calls failed one after
 * another (the cloud is down or unreachable), so credhook refuses requests that
 * need it at once, before any store or cloud write, until a trial call succeeds.
 * `retryAfterS` (until the next trial) becomes `Retry-After`.
 */
export class CircuitOpen extends CredhookError {
  /** Seconds until the breaker lets a trial call through. */
  readonly retryAfterS: number;
  constructor(gateway: string, retryAfterS: number, options: Omit<CredhookErrorOptions, "gateway"> = {}) {
    // Refused before any call: nothing can have landed.
    super(
      503,
      ErrorCodes.CIRCUIT_OPEN,
      `gateway '${gateway}' is unavailable: its recent calls failed, so credhook stopped calling it for now (circuit breaker open); try again later`,
      { ...options, gateway, outcomeUnknown: false },
    );
    this.retryAfterS = Math.max(1, Math.ceil(retryAfterS));
  }
}

/** True when `err` is a failure of the credential store ({@link StoreUnavailable} or {@link LockLost}), not of a gateway. */
export function isStoreFailure(err: unknown): err is StoreUnavailable | LockLost {
  const code = (err as { code?: unknown } | null)?.code;
  return isCredhookError(err) && (code === ErrorCodes.STORE_UNAVAILABLE || code === ErrorCodes.LOCK_LOST);
}

/** Configuration is invalid; thrown at start-up. `messages` name the YAML path of each problem. */
export class ConfigError extends CredhookError {
  constructor(messages: string[], options: Omit<CredhookErrorOptions, "messages"> = {}) {
    super(500, ErrorCodes.CONFIG_INVALID, messages[0] ?? "configuration is invalid", {
      ...options,
      messages: messages.slice(1),
    });
  }
}

/** True when `err` is a {@link CredhookError} (works across duplicated module copies). */
export function isCredhookError(err: unknown): err is CredhookError {
  return (
    err instanceof CredhookError ||
    (typeof err === "object" &&
      err !== null &&
      typeof (err as CredhookError).status === "number" &&
      typeof (err as CredhookError).code === "string" &&
      Array.isArray((err as CredhookError).messages))
  );
}

/** The `Retry-After` seconds an error carries, if any. */
export function retryAfterOf(err: unknown): number | undefined {
  const v = (err as { retryAfterS?: unknown } | null)?.retryAfterS;
  return typeof v === "number" ? v : undefined;
}
