/**
 * Per-app locks across instances, with fencing.
 *
 * A lock is a session-level advisory lock (`pg_advisory_lock`) held by a
 * connection of the lock pool for the length of the operation: it ends with the
 * session, so a dead instance (kill -9 included) never leaves a stale lock.
 *
 * A session can also end while its instance lives on (the database restarts or
 * fails over, `pg_terminate_backend`): PostgreSQL then frees the lock at once,
 * while the holder may still have a cloud call in flight. So each holding also
 * takes a **lease** on the app in `app_leases`, with a **fencing token** from a
 * sequence:
 * - the holder's {@link Fence} fails (LockLost) as soon as its lock session
 *   reports an error or stops answering the heartbeat, or its lease has less
 *   than half its length left — core checks it before every provider call and
 *   every HTTP attempt, the store before every record write, and record writes
 *   are conditional on the token (`WHERE EXISTS … token = $n`);
 * - the holder renews its lease every third of its length (through its own lock
 *   session, so never behind the query pool's queue) for as long as its
 *   operation runs — after losing the lock too, until its in-flight calls have
 *   returned — and deletes it when the operation ends;
 * - a new holder takes the lease only when none is left or it has expired, so
 *   no instance acts on the app while an earlier holder may still be writing:
 *   it waits for the earlier holder to stop (or its lease to run out), then
 *   finishes the interrupted operation from its record.
 * A holder that cannot renew (the database is away) stops starting writes when
 * half the lease is left: its in-flight call (shorter than half the lease: the
 * providers' timeouts are 10 s by default against a 30 s lease) ends before the
 * lease does. A crashed instance's lease runs out after `leaseTtlMs`.
 *
 * PostgreSQL docs: advisory locks https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS
 */
import { createHash, randomUUID } from "node:crypto";
import type pg from "pg";
import { KeyedLock, runFenced, type Fence, type Logger, type StoreLocks } from "@credhook/core/store";
import { LockLost, UpstreamUnavailable } from "@credhook/core/errors";
import { asStoreError } from "./errors.js";

/** A signed 64-bit advisory-lock key (as a decimal string) for `key` in `namespace`. */
function lockKey(namespace: string, key: string): string {
  return createHash("sha256").update(`${namespace}\u0000${key}`).digest().readBigInt64BE(0).toString();
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The SQL that takes an app's lease when it is free or expired; returns the new token, or no row. */
const TAKE_LEASE = `WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
  INSERT INTO app_leases AS l (app_key, holder, token, expires_at_ms) SELECT $1, $2, nextval('lease_tokens'), now.ms + $3 FROM now
  ON CONFLICT (app_key) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires_at_ms = excluded.expires_at_ms
  WHERE l.expires_at_ms < (SELECT ms FROM now)
  RETURNING l.token::text AS token`;

/** Options of {@link AdvisoryLocks}. */
export interface AdvisoryLockOptions {
  /** Pool of the lock sessions (one per holding). */
  lockPool: pg.Pool;
  /** The query pool: renews and releases a lease after its holding lost its lock session (the holder is still writing until it stops). */
  pool: pg.Pool;
  /** Namespace of the advisory-lock keys (the schema). */
  namespace: string;
  /** Length of a lease, ms. */
  leaseTtlMs: number;
  /** Longest wait for an earlier holder's lease to end, ms (then 503). */
  lockWaitMs: number;
  logger?: Logger | undefined;
  /** Called with each lock session's loss (for the store's bounded outage logging). */
  onSessionLost?: (err: Error) => void;
}

/**
 * {@link StoreLocks} on PostgreSQL session-level advisory locks plus fenced
 * leases (see the module comment). An in-process lock queues this instance's
 * own callers first, so each key costs at most one lock connection per instance.
 */
export class AdvisoryLocks implements StoreLocks {
  private readonly local = new KeyedLock();
  /** This instance's name in `app_leases.holder`. */
  readonly holder = `${process.pid}-${randomUUID().slice(0, 8)}`;

  constructor(private readonly o: AdvisoryLockOptions) {}

  /**
   * A lock connection, and a flag set when it dies while checked out (the server restarted, the session was terminated).
   * @throws StoreUnavailable (503) when none can be had within the lock wait timeout
   */
  private async connect(): Promise<{
    client: pg.PoolClient;
    lost: { reason?: string };
    done: (err?: unknown) => void;
  }> {
    const client = await this.o.lockPool.connect().catch((err: unknown) => {
      throw asStoreError(err, "a lock connection");
    });
    const lost: { reason?: string } = {};
    const onError = (err: Error) => {
      if (lost.reason === undefined) this.o.onSessionLost?.(err);
      lost.reason ??= `its PostgreSQL lock session ended: ${err.message}`;
    };
    const onEnd = () => (lost.reason ??= "its PostgreSQL lock session ended");
    client.on("error", onError);
    client.on("end", onEnd);
    return {
      client,
      lost,
      done: (err) => {
        client.off("error", onError);
        client.off("end", onEnd);
        // A session whose unlock failed is destroyed: ending the session frees its locks.
        client.release(err instanceof Error ? err : lost.reason !== undefined ? new Error(lost.reason) : undefined);
      },
    };
  }

  /**
   * Takes the lease of `key` for this holding.
   * @param wait false: give up at once when another holder's lease is live
   * @returns the fencing token, or undefined when another holder's lease is live and `wait` is false
   * @throws UpstreamUnavailable (503) when another holder's lease outlasts the lock wait
   */
  private async takeLease(client: pg.PoolClient, key: string, wait: boolean): Promise<string | undefined> {
    const deadline = performance.now() + this.o.lockWaitMs;
    for (let logged = false; ; ) {
      const { rows } = await client
        .query<{ token: string }>(TAKE_LEASE, [key, this.holder, this.o.leaseTtlMs])
        .catch((err: unknown) => {
          throw asStoreError(err, "an app's lease");
        });
      if (rows[0]) return rows[0].token;
      if (!wait) return undefined;
      const { rows: held } = await client
        .query<{ holder: string; left_ms: string }>(
          "SELECT holder, expires_at_ms - (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS left_ms FROM app_leases WHERE app_key = $1",
          [key],
        )
        .catch((err: unknown) => {
          throw asStoreError(err, "an app's lease");
        });
      const leftMs = Math.max(0, Number(held[0]?.left_ms ?? 0));
      if (!logged) {
        this.o.logger?.warn(
          { holder: held[0]?.holder, leaseLeftMs: leftMs },
          "an earlier holder of this app's lock may still be writing (it lost its lock session): waiting for it to stop before acting on the app",
        );
        logged = true;
      }
      if (performance.now() + Math.min(leftMs, 250) > deadline) {
        throw new UpstreamUnavailable(
          "an earlier operation on this app by another instance may still be writing (it lost its database session); try again shortly",
          Math.max(1, leftMs / 1000),
        );
      }
      await sleep(Math.min(250, Math.max(20, leftMs)));
    }
  }

  /**
   * Holds the session lock of `key` and its lease around `fn`, inside a
   * {@link Fence}, when `take` (pg_advisory_lock or pg_try_advisory_lock) gets
   * the lock and the lease is free; releases both after. A session whose unlock
   * failed is destroyed, which frees its locks.
   * @returns `{ ran: false }` when `take` did not get the lock, or (try) the lease was another's
   */
  private async hold<T>(
    key: string,
    take: "pg_advisory_lock" | "pg_try_advisory_lock",
    fn: () => Promise<T>,
  ): Promise<{ ran: true; value: T } | { ran: false }> {
    const { client, lost, done } = await this.connect();
    const k = lockKey(this.o.namespace, key);
    let broken: unknown;
    try {
      const { rows } = await client
        .query<{ ok: boolean | string }>(`SELECT ${take}($1::bigint) AS ok`, [k])
        .catch((err: { code?: string }) => {
          // 57014: the session's statement_timeout (the lock wait timeout) ended the wait
          if (err.code === "57014")
            throw new UpstreamUnavailable("another instance has held this app's lock too long; try again shortly", 2, {
              cause: err,
            });
          throw asStoreError(err, "an app's lock");
        });
      if (rows[0]?.ok === false) return { ran: false }; // pg_advisory_lock returns void ("")
      try {
        const token = await this.takeLease(client, key, take === "pg_advisory_lock");
        if (token === undefined) return { ran: false };
        return { ran: true, value: await this.fenced(key, token, client, lost, fn) };
      } finally {
        if (lost.reason === undefined)
          await client.query("SELECT pg_advisory_unlock($1::bigint)", [k]).catch((err: unknown) => (broken = err));
      }
    } catch (err) {
      broken ??= err;
      throw err;
    } finally {
      done(broken);
    }
  }

  /** Runs `fn` inside the fence of a holding with `token`, renewing its lease until `fn` has settled, then releasing it. */
  private async fenced<T>(
    key: string,
    token: string,
    client: pg.PoolClient,
    lost: { reason?: string },
    fn: () => Promise<T>,
  ): Promise<T> {
    const ttl = this.o.leaseTtlMs;
    let leaseFrom = performance.now(); // when the last successful take/renewal was sent (the lease runs at least ttl from then)
    const fence: Fence = {
      key,
      token,
      assertHeld() {
        if (lost.reason !== undefined) throw new LockLost(lost.reason);
        if (performance.now() - leaseFrom > ttl / 2)
          throw new LockLost("its lease on the app could not be renewed in time");
      },
    };
    const RENEW =
      "UPDATE app_leases SET expires_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $3 WHERE app_key = $1 AND token = $2";
    const renew = async () => {
      const sent = performance.now();
      // Through the holding's own lock session (idle while the operation runs: no wait behind the query pool's load),
      // which answering also proves alive — a session cut off without an error event (a network partition) is lost
      // all the same; after the session is lost, through the query pool, until the operation has stopped.
      let r: pg.QueryResult | undefined;
      if (lost.reason === undefined)
        r = await client
          .query(RENEW, [key, token, ttl])
          .catch(
            (err: Error) => void (lost.reason ??= `its PostgreSQL lock session stopped answering: ${err.message}`),
          );
      if (lost.reason !== undefined) r = await this.o.pool.query(RENEW, [key, token, ttl]).catch(() => undefined);
      if (r && r.rowCount === 0) lost.reason ??= "another instance took over its lease on the app";
      else if (r) leaseFrom = sent;
    };
    let renewing: Promise<void> | undefined;
    const timer = setInterval(
      () => (renewing ??= renew().finally(() => (renewing = undefined))),
      Math.max(50, ttl / 3),
    );
    try {
      return await runFenced(fence, fn);
    } finally {
      clearInterval(timer);
      await renewing;
      await this.releaseLease(
        lost.reason === undefined ? client : this.o.pool,
        key,
        token,
        performance.now() - leaseFrom < ttl,
      );
    }
  }

  /**
   * Deletes the lease of a holding that has stopped (awaited: the next holder on this instance
   * takes it at once); a failed delete is retried in the background while the lease has not run out by itself.
   */
  private releaseLease(via: pg.PoolClient | pg.Pool, key: string, token: string, live: boolean): Promise<void> {
    if (!live) return Promise.resolve();
    const until = performance.now() + this.o.leaseTtlMs;
    const attempt = (delay: number, on: pg.PoolClient | pg.Pool = via): Promise<void> =>
      on.query("DELETE FROM app_leases WHERE app_key = $1 AND token = $2", [key, token]).then(
        () => undefined,
        () => {
          if (performance.now() + delay < until)
            setTimeout(() => void attempt(Math.min(delay * 2, 5000), this.o.pool), delay).unref();
        },
      );
    return attempt(250);
  }

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.local.run(key, async () => {
      const r = await this.hold(key, "pg_advisory_lock", fn);
      return (r as { ran: true; value: T }).value;
    });
  }

  async tryRun<T>(key: string, fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }> {
    const outer = await this.local.tryRun(key, () => this.hold(key, "pg_try_advisory_lock", fn));
    return outer.ran ? outer.value : outer;
  }
}
