/**
 * The PostgreSQL store's failures as core's typed errors: a database that is
 * away, starting up, shutting down, failing over or out of resources is a
 * {@link StoreUnavailable} (503 + Retry-After, "the credential store is
 * unavailable"), never a raw driver error (a 500) and never a gateway's fault.
 * SQLSTATE codes: https://www.postgresql.org/docs/current/errcodes-appendix.html
 */
import { isCredhookError, StoreUnavailable } from "@credhook/core/errors";

/** Node network errors: the database cannot be reached, or the connection broke. */
const NETWORK = new Map([
  ["ECONNREFUSED", "connection refused"],
  ["ECONNRESET", "connection reset"],
  ["ETIMEDOUT", "connection timed out"],
  ["EPIPE", "connection broken"],
  ["ECONNABORTED", "connection aborted"],
  ["ENOTFOUND", "host not found"],
  ["EAI_AGAIN", "host name lookup failed"],
  ["EHOSTUNREACH", "host unreachable"],
  ["ENETUNREACH", "network unreachable"],
]);

/**
 * SQLSTATE classes and codes of a database that cannot serve now: 08 connection exception,
 * 53 insufficient resources (disk full, too many connections), 57P01–57P03 shutdown and start-up,
 * 58 system error (I/O), 40001/40P01 serialization failure/deadlock, 25006 read-only transaction
 * (a standby after a failover), 55P03 lock not available.
 */
function unavailableSqlState(code: string): boolean {
  return /^(08|53|58)/.test(code) || ["57P01", "57P02", "57P03", "40001", "40P01", "25006", "55P03"].includes(code);
}

/** node-postgres' own messages for a connection that broke or could not be had. */
const DRIVER =
  /Connection terminated|timeout exceeded when trying to connect|connection error|Client was closed|Cannot use a pool after calling end|Connection terminated due to connection timeout/i;

/**
 * True when `err` says the database cannot serve now (see the module comment), rather than a bug or a constraint.
 */
export function isUnavailable(err: unknown): boolean {
  const e = (err ?? {}) as { code?: unknown; message?: unknown; errors?: unknown[] };
  const code = typeof e.code === "string" ? e.code : "";
  if (NETWORK.has(code) || (code.length === 5 && unavailableSqlState(code))) return true;
  if (Array.isArray(e.errors) && e.errors.some(isUnavailable)) return true; // AggregateError (IPv4 and IPv6 both refused)
  return typeof e.message === "string" && DRIVER.test(e.message);
}

/** A short, secret-free reason for an unavailable database: `connection refused (ECONNREFUSED)`, `the database system is starting up (57P03)`. */
export function reasonOf(err: unknown): string {
  const e = (err ?? {}) as { code?: unknown; message?: unknown; errors?: unknown[] };
  const code = typeof e.code === "string" ? e.code : "";
  if (NETWORK.has(code)) return `${NETWORK.get(code)} (${code})`;
  if (Array.isArray(e.errors) && e.errors.length > 0) return reasonOf(e.errors[0]);
  const message =
    typeof e.message === "string"
      ? e.message
          .split("\n")[0]!
          .replace(/\w+:\/\/\S+/g, "<url>")
          .slice(0, 200)
      : "unknown error";
  return code.length === 5 ? `${message} (${code})` : message;
}

/**
 * `err` as the store's typed error: a {@link StoreUnavailable} naming `store.postgres` and
 * `what` was being done when the database cannot serve; a typed error as it is; anything
 * else (a bug, a constraint) unchanged.
 * @param what the store's step, e.g. `a query`, `an app's lock`, `a rate-limit slot`
 */
export function asStoreError(err: unknown, what: string): unknown {
  if (isCredhookError(err) || !isUnavailable(err)) return err;
  return new StoreUnavailable(`store.postgres: ${what} failed: ${reasonOf(err)}`, 5, { cause: err });
}
