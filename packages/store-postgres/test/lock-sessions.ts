/**
 * Test helper: ends the PostgreSQL session that holds an app's advisory lock, as a database
 * restart or failover ends every session (or an operator's `pg_terminate_backend`).
 */
import { createHash } from "node:crypto";
import pg from "pg";

/**
 * Ends the session holding the advisory lock of `key` in store schema `schema`, and only that one
 * (other test files share the PostgreSQL server, and their instances hold advisory locks of their own).
 * The key as the store derives it: the first 8 bytes of SHA-256(schema NUL key), signed; PostgreSQL shows a
 * bigint advisory key as classid (high 32 bits) and objid (low 32 bits) with objsubid 1.
 * @returns how many sessions were ended (1 when the lock was held)
 */
export async function terminateLockSession(url: string, schema: string, key: string): Promise<number> {
  const k = createHash("sha256").update(`${schema}\u0000${key}`).digest().readBigInt64BE(0).toString();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    // With a timeout, pg_terminate_backend returns once the session has ended (its locks released), not
    // when the signal is sent (PostgreSQL 14+).
    const { rowCount } = await admin.query(
      "SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND ((classid::bigint << 32) | objid::bigint) = $1::bigint",
      [k],
    );
    return rowCount ?? 0;
  } finally {
    await admin.end();
  }
}
