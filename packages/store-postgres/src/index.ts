/**
 * @credhook/store-postgres: the credential store on PostgreSQL, for running
 * any number of credhook instances behind one load balancer
 * (`store: { postgres: "${DATABASE_URL}" }`).
 *
 * - The same record model as the SQLite store (ids, app identity, API set,
 *   each gateway's secret-free resources; providers' namespaced state) — never
 *   a secret.
 * - Migrations run at start through Kysely's migrator, whose lock lets several
 *   instances start at once on an empty database: one migrates, the others wait.
 * - Requests for one app are serialised across instances with session-level
 *   advisory locks (`pg_advisory_lock`), held by a connection of a separate lock
 *   pool for the length of the operation: they end with the session, so a dead
 *   instance (kill -9 included) never leaves a stale lock, and the reconcile
 *   loop tells a dead instance's interrupted work (lock free) from a live one's
 *   (lock held) without waiting for it to age.
 *
 * PostgreSQL docs: advisory locks https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { Kysely, Migrator, PostgresDialect, sql, type Migration, type MigrationProvider } from "kysely";
import { ConfigError, Conflict, CREDENTIALS_INDEXES_SQL, credentialsTableSql, KeyedLock, NotFound, UpstreamUnavailable, type AppRecords, type CredentialRecord, type CredentialStore, type CredentialType, type JsonValue, type Logger, type ProviderStateStore, type RateSlots, type StoreFactory, type StoreLocks } from "@credhook/core";

/** Options of {@link PostgresCredentialStore} (`store.postgres` as an object). */
export interface PostgresStoreOptions {
  /**
   * Connection string, `postgres://user:password@host:5432/db`. TLS as the
   * string says (`?sslmode=require`, `sslrootcert=…`; see node-postgres'
   * connection-string parsing, https://node-postgres.com/features/ssl).
   */
  url: string;
  /** Connections for queries, per instance. @default 10 */
  poolMax?: number;
  /**
   * Connections that hold the per-app advisory locks, per instance: one per app
   * operation in flight; more operations wait for one. Separate from the query
   * pool so that operations holding locks can always reach the database.
   * @default 10
   */
  lockPoolMax?: number;
  /** Schema of credhook's tables (created when missing). @default "credhook" */
  schema?: string;
  /** How long a wait for a query connection may take before it fails, ms. @default 10000 */
  connectionTimeoutMs?: number;
  /**
   * How long an operation may wait for its app's lock (a lock connection, then
   * the lock itself, which another instance may hold) before it is answered
   * 503 + Retry-After, ms.
   * @default 60000
   */
  lockWaitTimeoutMs?: number;
}

/** `store.postgres`: a connection string, or {@link PostgresStoreOptions}. */
export type PostgresStoreConfig = string | PostgresStoreOptions;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Ordered schema migrations (Kysely): append only, never edit a released one. */
const MIGRATIONS: Record<string, Migration> = {
  "0001_credentials": {
    async up(db) {
      await sql.raw(credentialsTableSql("credentials", "JSONB")).execute(db);
      for (const index of CREDENTIALS_INDEXES_SQL) await sql.raw(index).execute(db);
      await sql`
        CREATE TABLE rate_slots (
          key TEXT PRIMARY KEY,
          next_at_ms BIGINT NOT NULL
        )`.execute(db);
      await sql`
        CREATE TABLE provider_state (
          gateway TEXT NOT NULL,
          key TEXT NOT NULL,
          value JSONB NOT NULL,
          PRIMARY KEY (gateway, key)
        )`.execute(db);
    },
  },
};

const migrationProvider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/** A signed 64-bit advisory-lock key (as a decimal string) for `key` in `namespace`. */
function lockKey(namespace: string, key: string): string {
  return createHash("sha256").update(`${namespace}\u0000${key}`).digest().readBigInt64BE(0).toString();
}

/**
 * {@link StoreLocks} on PostgreSQL session-level advisory locks. An in-process
 * lock queues this instance's own callers first, so each key costs at most one
 * lock connection per instance.
 */
class AdvisoryLocks implements StoreLocks {
  private readonly local = new KeyedLock();

  constructor(
    private readonly pool: pg.Pool,
    private readonly namespace: string,
    private readonly logger: Logger | undefined,
  ) {}

  /**
   * A lock connection, with a listener for its death while checked out (the server restarted, the session was terminated).
   * @throws UpstreamUnavailable (503) when none frees up within the lock wait timeout
   */
  private async connect(): Promise<{ client: pg.PoolClient; done: (err?: unknown) => void }> {
    const client = await this.pool.connect().catch((err: unknown) => {
      throw new UpstreamUnavailable("the credential store is busy: every lock connection is held by operations in flight; try again shortly", 2, { cause: err });
    });
    const onError = (err: Error) => this.logger?.warn({ err: err.message }, "PostgreSQL lock session lost: its advisory locks are released");
    client.on("error", onError);
    return {
      client,
      done: (err) => {
        client.off("error", onError);
        // A session whose unlock failed is destroyed: ending the session frees its locks.
        client.release(err instanceof Error ? err : undefined);
      },
    };
  }

  /**
   * Holds the session lock of `key` around `fn` when `take` (pg_advisory_lock
   * or pg_try_advisory_lock) gets it; unlocks after. A session whose unlock
   * failed is destroyed, which frees its locks.
   * @returns `{ ran: false }` when `take` did not get the lock
   */
  private async hold<T>(key: string, take: "pg_advisory_lock" | "pg_try_advisory_lock", fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }> {
    const { client, done } = await this.connect();
    const k = lockKey(this.namespace, key);
    let broken: unknown;
    try {
      const { rows } = await client.query<{ ok: boolean | string }>(`SELECT ${take}($1::bigint) AS ok`, [k]).catch((err: { code?: string }) => {
        // 57014: the session's statement_timeout (the lock wait timeout) ended the wait
        if (err.code === "57014") throw new UpstreamUnavailable("another instance has held this app's lock too long; try again shortly", 2, { cause: err });
        throw err;
      });
      if (rows[0]?.ok === false) return { ran: false }; // pg_advisory_lock returns void ("")
      try {
        return { ran: true, value: await fn() };
      } finally {
        await client.query("SELECT pg_advisory_unlock($1::bigint)", [k]).catch((err: unknown) => (broken = err));
      }
    } catch (err) {
      broken ??= err;
      throw err;
    } finally {
      done(broken);
    }
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

type Row = { record: CredentialRecord };

/** A {@link CredentialStore} on PostgreSQL, shared by every instance. */
export class PostgresCredentialStore implements CredentialStore {
  readonly shared = true;
  readonly locks: StoreLocks;
  readonly rateSlots: RateSlots;
  /** The schema credhook's tables live in. */
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly lockPool: pg.Pool;
  private readonly logger: Logger | undefined;

  /**
   * Creates the pools (no connection is made until {@link init}).
   * @throws ConfigError an invalid schema name
   */
  constructor(options: PostgresStoreOptions, logger?: Logger) {
    this.schema = options.schema ?? "credhook";
    if (!SCHEMA_NAME.test(this.schema)) throw new ConfigError([`store.postgres.schema must match ${SCHEMA_NAME.source} (got '${this.schema}')`]);
    this.logger = logger;
    const common = { connectionString: options.url, connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000, application_name: "credhook" };
    this.pool = new pg.Pool({ ...common, max: options.poolMax ?? 10 });
    const lockWaitMs = options.lockWaitTimeoutMs ?? 60_000;
    // A lock session waits for the lock at most lockWaitMs (statement_timeout), and for a connection as long.
    this.lockPool = new pg.Pool({ ...common, connectionTimeoutMillis: lockWaitMs, max: options.lockPoolMax ?? 10, idleTimeoutMillis: 30_000, statement_timeout: lockWaitMs });
    // Every query runs in credhook's schema.
    this.pool.on("connect", (client) => void client.query(`SET search_path TO "${this.schema}"`).catch(() => undefined));
    // A connection that dies (server restart, network) is dropped by the pool; say so.
    for (const p of [this.pool, this.lockPool]) p.on("error", (err) => this.logger?.warn({ err: err.message }, "PostgreSQL connection lost; the pool reconnects"));
    this.locks = new AdvisoryLocks(this.lockPool, this.schema, logger);
    const pool = this.pool;
    this.rateSlots = {
      // One statement on the database's clock, GCRA: next_at_ms is the key's theoretical arrival
      // time (TAT); it becomes max(TAT, now) + interval, and the slot starts at
      // max(now, old TAT - (burst - 1) × interval) = new TAT - burst × interval, if later than now.
      async reserve(key, intervalMs, burst = 1) {
        const { rows } = await pool.query<{ wait_ms: string }>(
          `WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
           INSERT INTO rate_slots AS r (key, next_at_ms) SELECT $1, now.ms + $2 FROM now
           ON CONFLICT (key) DO UPDATE SET next_at_ms = GREATEST(r.next_at_ms, (SELECT ms FROM now)) + $2
           RETURNING r.next_at_ms - $2 * $3::bigint - (SELECT ms FROM now) AS wait_ms`,
          [key, Math.ceil(intervalMs), Math.max(1, Math.floor(burst))],
        );
        return Math.max(0, Number(rows[0]?.wait_ms ?? 0));
      },
    };
  }

  /**
   * Creates the schema when missing and applies pending migrations. Several
   * instances may call it at once on an empty database: Kysely's migration
   * lock lets one migrate while the others wait.
   * @throws Error the database cannot be reached, or a migration failed
   */
  async init(): Promise<void> {
    await this.pool.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`).catch((err: { code?: string }) => {
      // Two instances creating it at the same moment: one wins, the other sees it exist.
      if (err.code !== "23505" && err.code !== "42P06") throw err;
    });
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: this.pool }) });
    const migrator = new Migrator({ db, provider: migrationProvider, migrationTableSchema: this.schema });
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw new Error(`PostgreSQL store: migration failed: ${(error as Error).message ?? String(error)}`, { cause: error });
    for (const r of results ?? []) if (r.status === "Success") this.logger?.info({ migration: r.migrationName }, "PostgreSQL store migrated");
  }

  /** Names of the applied migrations, oldest first. */
  async appliedMigrations(): Promise<string[]> {
    const { rows } = await this.pool.query<{ name: string }>(`SELECT name FROM "${this.schema}".kysely_migration ORDER BY name`);
    return rows.map((r) => r.name);
  }

  async insert(record: CredentialRecord): Promise<void> {
    // Serialised now, not when pg sends the query (after a pooled connection is free): the caller may change the object at once.
    const json = JSON.stringify(record);
    await this.pool
      .query(
        "INSERT INTO credentials (id, credential_type, app_key, public_id, status, record, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        [record.id, record.credentialType, record.appKey, record.publicId, record.status, json, record.createdAt, record.updatedAt],
      )
      .catch((err: unknown) => {
        throw this.uniqueAsConflict(err, record);
      });
  }

  async save(record: CredentialRecord): Promise<void> {
    const json = JSON.stringify(record); // now: see insert
    const res = await this.pool
      .query("UPDATE credentials SET credential_type = $1, app_key = $2, public_id = $3, status = $4, record = $5, updated_at = $6 WHERE id = $7", [
        record.credentialType,
        record.appKey,
        record.publicId,
        record.status,
        json,
        record.updatedAt,
        record.id,
      ])
      .catch((err: unknown) => {
        throw this.uniqueAsConflict(err, record);
      });
    if (res.rowCount === 0) throw new NotFound(`credential record ${record.id} does not exist`);
  }

  /** A unique violation (SQLSTATE 23505) as a Conflict (409); anything else unchanged. */
  private uniqueAsConflict(err: unknown, record: CredentialRecord): unknown {
    if ((err as { code?: string }).code === "23505") {
      return new Conflict(`a credential for app '${record.appKey}' (${record.credentialType}) is already recorded`, { cause: err });
    }
    return err;
  }

  private async one(text: string, values: unknown[]): Promise<CredentialRecord | undefined> {
    const { rows } = await this.pool.query<Row>(text, values);
    return rows[0]?.record;
  }

  private async many(text: string, values: unknown[] = []): Promise<CredentialRecord[]> {
    const { rows } = await this.pool.query<Row>(text, values);
    return rows.map((r) => r.record);
  }

  get(id: string): Promise<CredentialRecord | undefined> {
    return this.one("SELECT record FROM credentials WHERE id = $1", [id]);
  }

  async findByPublicId(credentialType: CredentialType, publicId: string): Promise<CredentialRecord | undefined> {
    if (publicId === "") return undefined;
    return this.one("SELECT record FROM credentials WHERE credential_type = $1 AND public_id = $2 ORDER BY created_at LIMIT 1", [credentialType, publicId]);
  }

  findByAppKey(appKey: string, credentialType: CredentialType): Promise<CredentialRecord | undefined> {
    return this.one("SELECT record FROM credentials WHERE app_key = $1 AND credential_type = $2 AND status <> 'abandoned'", [appKey, credentialType]);
  }

  listAbandoned(appKey?: string): Promise<CredentialRecord[]> {
    return appKey === undefined
      ? this.many("SELECT record FROM credentials WHERE status = 'abandoned' ORDER BY updated_at")
      : this.many("SELECT record FROM credentials WHERE app_key = $1 AND status = 'abandoned' ORDER BY updated_at", [appKey]);
  }

  /** {@inheritDoc CredentialStore.findApp} One round trip instead of two. */
  async findApp(appKey: string, credentialType: CredentialType): Promise<AppRecords> {
    const rows = await this.many("SELECT record FROM credentials WHERE app_key = $1 AND (status = 'abandoned' OR credential_type = $2) ORDER BY updated_at", [appKey, credentialType]);
    return { live: rows.find((r) => r.status !== "abandoned"), abandoned: rows.filter((r) => r.status === "abandoned") };
  }

  /** {@inheritDoc CredentialStore.listUnsettled} */
  listUnsettled(): Promise<CredentialRecord[]> {
    return this.many("SELECT record FROM credentials WHERE record ? 'unsettled' ORDER BY updated_at");
  }

  async delete(id: string): Promise<boolean> {
    return ((await this.pool.query("DELETE FROM credentials WHERE id = $1", [id])).rowCount ?? 0) > 0;
  }

  listUnfinished(before: string): Promise<CredentialRecord[]> {
    return this.many("SELECT record FROM credentials WHERE status IN ('pending','revoking') AND updated_at < $1 ORDER BY updated_at", [before]);
  }

  async countUnfinishedSince(since: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>("SELECT COUNT(*) AS n FROM credentials WHERE status IN ('pending','revoking') AND updated_at >= $1", [since]);
    return Number(rows[0]?.n ?? 0);
  }

  list(): Promise<CredentialRecord[]> {
    return this.many("SELECT record FROM credentials ORDER BY created_at");
  }

  stateFor(gateway: string): ProviderStateStore {
    const pool = this.pool;
    return {
      async get(key) {
        const { rows } = await pool.query<{ value: JsonValue }>("SELECT value FROM provider_state WHERE gateway = $1 AND key = $2", [gateway, key]);
        return rows[0]?.value;
      },
      async put(key, value) {
        await pool.query(
          "INSERT INTO provider_state (gateway, key, value) VALUES ($1, $2, $3::jsonb) ON CONFLICT (gateway, key) DO UPDATE SET value = excluded.value",
          [gateway, key, JSON.stringify(value)],
        );
      },
      async delete(key) {
        return ((await pool.query("DELETE FROM provider_state WHERE gateway = $1 AND key = $2", [gateway, key])).rowCount ?? 0) > 0;
      },
      async write(changes) {
        const puts = changes.filter((c): c is { key: string; value: JsonValue } => !("delete" in c));
        const deletes = changes.filter((c) => "delete" in c).map((c) => c.key);
        // One statement, so one transaction and one round trip: the deletes in a CTE beside the upsert.
        await pool.query(
          `WITH removed AS (DELETE FROM provider_state WHERE gateway = $1 AND key = ANY($2::text[]))
           INSERT INTO provider_state (gateway, key, value) SELECT $1, k, v::jsonb FROM unnest($3::text[], $4::text[]) AS t(k, v)
           ON CONFLICT (gateway, key) DO UPDATE SET value = excluded.value`,
          [gateway, deletes, puts.map((p) => p.key), puts.map((p) => JSON.stringify(p.value))],
        );
      },
      async list(prefix) {
        const { rows } = await pool.query<{ key: string; value: JsonValue }>(
          "SELECT key, value FROM provider_state WHERE gateway = $1 AND left(key, $2) = $3 ORDER BY key COLLATE \"C\"",
          [gateway, prefix.length, prefix],
        );
        return rows;
      },
    };
  }

  async health(): Promise<void> {
    await this.pool.query("SELECT 1");
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.pool.end(), this.lockPool.end()]);
  }
}

/**
 * Opens and migrates a store.
 * @throws ConfigError | Error as {@link PostgresCredentialStore} and {@link PostgresCredentialStore.init}
 */
export async function openPostgresStore(options: PostgresStoreOptions, logger?: Logger): Promise<PostgresCredentialStore> {
  const store = new PostgresCredentialStore(options, logger);
  try {
    await store.init();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

/** The `store: { postgres: … }` factory. */
const postgresStoreFactory: StoreFactory<PostgresStoreConfig> = {
  type: "postgres",
  optionsSchema: {
    oneOf: [
      { type: "string", minLength: 1, pattern: "^postgres(ql)?://" },
      {
        type: "object",
        additionalProperties: false,
        required: ["url"],
        properties: {
          url: { type: "string", minLength: 1, pattern: "^postgres(ql)?://" },
          poolMax: { type: "integer", minimum: 1, maximum: 1000 },
          lockPoolMax: { type: "integer", minimum: 1, maximum: 1000 },
          schema: { type: "string", pattern: SCHEMA_NAME.source },
          connectionTimeoutMs: { type: "integer", minimum: 100, maximum: 600000 },
          lockWaitTimeoutMs: { type: "integer", minimum: 100, maximum: 3600000 },
        },
      },
    ],
  },
  create(options, context) {
    return openPostgresStore(typeof options === "string" ? { url: options } : options, context.logger);
  },
};
export default postgresStoreFactory;
