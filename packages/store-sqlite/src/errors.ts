/**
 * The SQLite store's failures as core's typed errors: a full disk, a busy or
 * locked file, an I/O error, a file that cannot be opened or written is a
 * {@link StoreUnavailable} (503 + Retry-After, "the credential store is
 * unavailable"), never a raw driver error (a 500). SQLite rolls back a
 * statement or transaction that fails, so nothing is half-written.
 * Result codes: https://www.sqlite.org/rescode.html
 */
import { isCredhookError, StoreUnavailable } from "@credhook/core/errors";

/** Primary result codes of a database that cannot serve now, with what an operator should read. */
const UNAVAILABLE: Record<string, string> = {
  SQLITE_FULL: "the disk is full: writes are refused until space is freed",
  SQLITE_BUSY: "the database file is busy (another process holds its lock)",
  SQLITE_LOCKED: "the database is locked",
  SQLITE_IOERR: "an I/O error on the database file",
  SQLITE_CANTOPEN: "the database file cannot be opened",
  SQLITE_READONLY: "the database file cannot be written",
  SQLITE_NOMEM: "out of memory",
  SQLITE_PROTOCOL: "the database's locking protocol failed",
  SQLITE_CORRUPT: "the database file is damaged",
  SQLITE_NOTADB: "the file is not an SQLite database",
};

/** The primary code of a better-sqlite3 error (`SQLITE_IOERR_WRITE` → `SQLITE_IOERR`), or undefined. */
function primaryCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return undefined;
  return Object.keys(UNAVAILABLE).find((c) => code === c || code.startsWith(`${c}_`));
}

/**
 * `err` as the store's typed error: a {@link StoreUnavailable} naming `store.sqlite` when the
 * database cannot serve (see the module comment); anything else unchanged.
 * @param retryAfterS seconds before a retry makes sense (a full disk waits for an operator) @default 5
 */
export function asStoreError(err: unknown, retryAfterS = 5): unknown {
  if (isCredhookError(err)) return err;
  const primary = primaryCode(err);
  if (!primary) return err;
  const code = (err as { code: string }).code;
  return new StoreUnavailable(
    `store.sqlite: ${UNAVAILABLE[primary]} (${code})`,
    primary === "SQLITE_FULL" ? Math.max(retryAfterS, 30) : retryAfterS,
    { cause: err },
  );
}
