/**
 * `@credhook/core/errors`: the typed errors every package throws and the server maps to
 * status codes (docs/status-codes.md), each with a stable `code`. Named exports only
 * (packages/core/README.md, "Public surface").
 */
export type { CredhookErrorOptions, ErrorCode } from "../errors.js";
export {
  CircuitOpen,
  ConfigError,
  Conflict,
  CredhookError,
  ErrorCodes,
  InvalidReference,
  isCredhookError,
  isStoreFailure,
  LockLost,
  NotFound,
  PolicyViolation,
  retryAfterOf,
  ShuttingDown,
  StoreUnavailable,
  Throttled,
  TooManyRequests,
  Unauthorized,
  Unroutable,
  UpstreamError,
  UpstreamTimeout,
  UpstreamUnavailable,
  ValidationError,
} from "../errors.js";
