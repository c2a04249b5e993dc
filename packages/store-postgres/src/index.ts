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
 *   pool for the length of the operation, plus a fenced lease per app: an
 *   operation whose lock session ends stops before its next write, and no other
 *   instance acts on the app until it has stopped (`locks.ts`).
 * - A database that is away, starting up or failing over answers every call
 *   with core's StoreUnavailable (503), never a raw driver error (`errors.ts`).
 */
import pg from "pg";
import { Kysely, Migrator, PostgresDialect, sql, type Migration, type MigrationProvider } from "kysely";
import {
  assertFenceHeld,
  AvailabilityLog,
  CREDENTIALS_INDEXES_SQL,
  credentialsTableSql,
  currentFence,
  type AppRecords,
  type CredentialRecord,
  type CredentialStore,
  type CredentialType,
  type JsonValue,
  type Logger,
  type ProviderStateStore,
  type RateSlots,
  type StoreFactory,
  type StoreLocks,
  EVENT_INSERT_COLUMNS,
  eventRow,
  eventsTableSql,
  EVENTS_PARTIAL_INDEXES_SQL,
  storedEventOf,
  type CredentialEvent,
  type EventOutbox,
  type EventRowRead,
  eventCountsOf,
  examinedMaxOf,
  pageOfExamined,
  pageStartOf,
  recordCountsOf,
  statePageBounds,
  statePageOf,
  type CredentialCounts,
  type CredentialListQuery,
  type CredentialPage,
  type PageWalk,
  type UnsettledListQuery,
} from "@credhook/core/store";
import { ConfigError, isStoreFailure, StoreUnavailable, Conflict, LockLost, NotFound } from "@credhook/core/errors";
import { asStoreError, isUnavailable, reasonOf } from "./errors.js";
import { AdvisoryLocks } from "./locks.js";
import {
  CLAIM_SQL,
  SETTLE_ALL_SQL,
  COUNT_UNFINISHED_SQL,
  COUNTS_SQL,
  eventsListQuery,
  GET_MANY_SQL,
  NEWEST_EVENTS_SQL,
  PRUNE_SQL,
  SETTLE_UNSENT_SQL,
  LIST_ABANDONED_SQL,
  LIST_UNFINISHED_SQL,
  LIST_UNSETTLED_SQL,
  listPageQuery,
  migrateHotReads,
  PROVIDER_STATE_KEY_ORDER_SQL,
  requeueDeadQuery,
  statePageQuery,
  unsettledPageQuery,
  type Query,
} from "./queries.js";

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
  /**
   * Length of an operation's lease on its app, ms: renewed every third of it while the
   * operation runs; an instance that dies leaves its apps' leases to run out after it, and
   * an operation that cannot renew stops starting writes when half of it is left. Must be
   * more than twice the longest cloud call (the providers' timeouts: 10 s by default).
   * @default 30000
   */
  leaseTtlMs?: number;
  /**
   * At start, a database that cannot be reached (refused, starting up, failing over) is waited
   * for, with exponential backoff (0.5 s doubling up to 10 s), while `credhook serve` listens and
   * reports not ready; `true`: the start fails at once instead (StoreUnavailable naming store.postgres).
   * @default false for `credhook serve`; true for one-shot commands (`reconcile`, `adopt`) and Lambda
   */
  failFast?: boolean;
  /** The longest wait for the database at start, ms; then the start fails. 0: as long as it takes. @default 0 */
  startupTimeoutMs?: number;
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

MIGRATIONS["0002_app_leases"] = {
  async up(db) {
    // One lease per app while an operation holds its lock (locks.ts); tokens only grow.
    await sql`CREATE SEQUENCE lease_tokens`.execute(db);
    await sql`
      CREATE TABLE app_leases (
        app_key TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        token BIGINT NOT NULL,
        expires_at_ms BIGINT NOT NULL
      )`.execute(db);
  },
};

MIGRATIONS["0003_events"] = {
  async up(db) {
    // The event outbox (events written with the record changes, delivered by `credhook serve`).
    for (const statement of eventsTableSql("BIGSERIAL PRIMARY KEY", "JSONB")) await sql.raw(statement).execute(db);
  },
};

MIGRATIONS["0004_events_partial_indexes"] = {
  async up(db) {
    // The outbox's indexes: pending (and dead) events only, partial.
    for (const statement of EVENTS_PARTIAL_INDEXES_SQL) await sql.raw(statement).execute(db);
  },
};

MIGRATIONS["0005_credentials_fingerprint"] = {
  async up(db) {
    // Records by their key's fingerprint (findByFingerprint): leak response answers from an index.
    await sql`CREATE INDEX credentials_fingerprint ON credentials ((record->>'keyFingerprint')) WHERE record ? 'keyFingerprint'`.execute(
      db,
    );
  },
};

MIGRATIONS["0006_hot_reads"] = {
  // An index for every hot read (the paged walks, unsettled records, events by app) and the counts kept by triggers.
  up: migrateHotReads,
};

MIGRATIONS["0007_provider_state_key_order"] = {
  // Provider-state keys in byte order, so that a page of a prefix's keys is one range of the primary key (listPage).
  async up(db) {
    await sql.raw(PROVIDER_STATE_KEY_ORDER_SQL).execute(db);
  },
};

const migrationProvider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

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
  private readonly options: PostgresStoreOptions;
  private closed = false;
  /** The database's outages, logged once each (then a summary a minute, then its end), never per failed call. */
  private readonly availability: AvailabilityLog;

  /**
   * Creates the pools (no connection is made until {@link init}).
   * @throws ConfigError an invalid schema name
   */
  constructor(options: PostgresStoreOptions, logger?: Logger) {
    this.schema = options.schema ?? "credhook";
    if (!SCHEMA_NAME.test(this.schema))
      throw new ConfigError([`store.postgres.schema must match ${SCHEMA_NAME.source} (got '${this.schema}')`]);
    this.logger = logger;
    this.options = options;
    const common = {
      connectionString: options.url,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 10_000,
      application_name: "credhook",
    };
    this.pool = new pg.Pool({ ...common, max: options.poolMax ?? 10 });
    const lockWaitMs = options.lockWaitTimeoutMs ?? 60_000;
    // A lock session waits for the lock at most lockWaitMs (statement_timeout), and for a connection as long.
    this.lockPool = new pg.Pool({
      ...common,
      connectionTimeoutMillis: lockWaitMs,
      max: options.lockPoolMax ?? 10,
      idleTimeoutMillis: 30_000,
      statement_timeout: lockWaitMs,
    });
    // Every query runs in credhook's schema.
    for (const p of [this.pool, this.lockPool])
      p.on("connect", (client) => void client.query(`SET search_path TO "${this.schema}"`).catch(() => undefined));
    // A connection that dies (server restart, network) is dropped by the pool; say so.
    // A connection that dies (server restart, network) is dropped by the pool, which reconnects: logged once per outage, not per connection.
    for (const p of [this.pool, this.lockPool])
      p.on("error", (err) => this.availability.failed(`a connection was lost: ${reasonOf(err)}`));
    this.availability = new AvailabilityLog(logger, { store: "store.postgres" }, "the credential store");
    this.locks = new AdvisoryLocks({
      lockPool: this.lockPool,
      pool: this.pool,
      namespace: this.schema,
      leaseTtlMs: options.leaseTtlMs ?? 30_000,
      lockWaitMs,
      logger,
      onSessionLost: (err) => this.availability.failed(`a lock session ended: ${reasonOf(err)}`),
    });
    const q = this.q.bind(this);
    this.rateSlots = {
      // One statement on the database's clock, GCRA: next_at_ms is the key's theoretical arrival
      // time (TAT); it becomes max(TAT, now) + interval, and the slot starts at
      // max(now, old TAT - (burst - 1) × interval) = new TAT - burst × interval, if later than now.
      async reserve(key, intervalMs, burst = 1) {
        // A slot that cannot be booked is the store's failure (StoreUnavailable), never the cloud's.
        const { rows } = await q<{ wait_ms: string }>(
          `WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
           INSERT INTO rate_slots AS r (key, next_at_ms) SELECT $1, now.ms + $2 FROM now
           ON CONFLICT (key) DO UPDATE SET next_at_ms = GREATEST(r.next_at_ms, (SELECT ms FROM now)) + $2
           RETURNING r.next_at_ms - $2 * $3::bigint - (SELECT ms FROM now) AS wait_ms`,
          [key, Math.ceil(intervalMs), Math.max(1, Math.floor(burst))],
          "a rate-limit slot",
        );
        return Math.max(0, Number(rows[0]?.wait_ms ?? 0));
      },
    };
  }

  /**
   * Creates the schema when missing and applies pending migrations. Several
   * instances may call it at once on an empty database: Kysely's migration
   * lock lets one migrate while the others wait. A database that cannot be
   * reached is waited for with backoff (logged once, then a summary a minute),
   * unless {@link PostgresStoreOptions.failFast}.
   * @throws StoreUnavailable (503, naming store.postgres) the database cannot be reached and failFast is set, or startupTimeoutMs passed
   * @throws Error a migration failed
   */
  async init(): Promise<void> {
    const started = Date.now();
    for (let delay = 500; ; delay = Math.min(delay * 2, 10_000)) {
      try {
        await this.migrate();
        this.availability.succeeded();
        return;
      } catch (err) {
        const typed = asStoreError(err, "connecting at start");
        if (!isStoreFailure(typed) || this.options.failFast) throw typed;
        const timeout = this.options.startupTimeoutMs ?? 0;
        if (timeout > 0 && Date.now() - started + delay > timeout)
          throw new StoreUnavailable(
            `store.postgres: the database could not be reached within ${timeout} ms of the start: ${reasonOf(err)}`,
            5,
            { cause: err },
          );
        this.availability.failed(
          `${typed.messages[1] ?? typed.message} (waiting for it, retrying every ${Math.round(delay / 100) / 10} s or more; store.postgres.failFast: true fails the start instead)`,
        );
        if (this.closed) throw typed;
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  /** One attempt of {@link init}. */
  private async migrate(): Promise<void> {
    await this.pool.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`).catch((err: { code?: string }) => {
      // Two instances creating it at the same moment: one wins, the other sees it exist.
      if (err.code !== "23505" && err.code !== "42P06") throw err;
    });
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: this.pool }) });
    const migrator = new Migrator({ db, provider: migrationProvider, migrationTableSchema: this.schema });
    const { error, results } = await migrator.migrateToLatest();
    if (error) {
      if (isUnavailable(error)) throw error;
      throw new Error(`PostgreSQL store: migration failed: ${(error as Error).message ?? String(error)}`, {
        cause: error,
      });
    }
    for (const r of results ?? [])
      if (r.status === "Success") this.logger?.info({ migration: r.migrationName }, "PostgreSQL store migrated");
  }

  /** Names of the applied migrations, oldest first. */
  async appliedMigrations(): Promise<string[]> {
    const { rows } = await this.pool.query<{ name: string }>(
      `SELECT name FROM "${this.schema}".kysely_migration ORDER BY name`,
    );
    return rows.map((r) => r.name);
  }

  /**
   * A query on the query pool; a database that cannot serve throws StoreUnavailable (503) naming `store.postgres`.
   * @param what the step, for the message (`a query`, `a rate-limit slot`)
   */
  private q<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    what = "a query",
  ): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(text, values).then(
      (res) => {
        this.availability.succeeded();
        return res;
      },
      (err: unknown) => {
        const typed = asStoreError(err, what);
        if (isStoreFailure(typed)) this.availability.failed(typed.messages[1] ?? typed.message);
        throw typed;
      },
    );
  }

  /**
   * A record write, fenced: refused (LockLost) when the running operation lost its app's lock,
   * and — under a lock with a fencing token — applied only while that token still holds the
   * lease (`cond` is appended to the statement's WHERE; `$n` is the lease's key, `$n+1` the token).
   * @param text the statement; `{fence}` is replaced by the token condition, or `TRUE` outside a lock
   */
  private async fencedWrite(
    text: string,
    values: unknown[],
    record: CredentialRecord,
    events: readonly CredentialEvent[] = [],
  ): Promise<{ rowCount: number }> {
    assertFenceHeld();
    const fence = currentFence();
    const n = values.length;
    const cond =
      fence?.token !== undefined
        ? `EXISTS (SELECT 1 FROM app_leases WHERE app_key = $${n + 1} AND token = $${n + 2})`
        : "TRUE";
    const params = fence?.token !== undefined ? [...values, fence.key, fence.token] : values;
    let statement = text.replace("{fence}", cond);
    if (events.length > 0) {
      // One statement, so one transaction: the events are inserted only when the record write changed a row
      // (the fence held, the record existed), in the order given.
      const e = params.length;
      const rows = events.map(eventRow);
      const columns = EVENT_INSERT_COLUMNS.split(", ");
      params.push(...columns.map((_, i) => rows.map((r) => r[i])));
      statement = `WITH rec AS (${statement} RETURNING 1),
        ev AS (INSERT INTO events (${EVENT_INSERT_COLUMNS})
          SELECT ${columns.map((c) => (c === "event" ? "t.event::jsonb" : `t.${c}`)).join(", ")}
          FROM unnest(${columns.map((_, i) => `$${e + i + 1}::text[]`).join(", ")}) WITH ORDINALITY AS t(${EVENT_INSERT_COLUMNS}, ord)
          WHERE EXISTS (SELECT 1 FROM rec) ORDER BY t.ord)
        SELECT count(*)::int AS n FROM rec`;
    }
    const raw = await this.q(statement, params, "a record write").catch((err: unknown) => {
      throw this.uniqueAsConflict(err, record);
    });
    const res = { rowCount: events.length > 0 ? Number(raw.rows[0]?.n ?? 0) : (raw.rowCount ?? 0) };
    if (res.rowCount === 0 && fence?.token !== undefined) {
      const { rows } = await this.q("SELECT 1 FROM app_leases WHERE app_key = $1 AND token = $2", [
        fence.key,
        fence.token,
      ]);
      if (rows.length === 0) throw new LockLost("another instance took over its lease on the app");
    }
    return res;
  }

  async insert(record: CredentialRecord, events?: readonly CredentialEvent[]): Promise<void> {
    // Serialised now, not when pg sends the query (after a pooled connection is free): the caller may change the object at once.
    const json = JSON.stringify(record);
    await this.fencedWrite(
      "INSERT INTO credentials (id, credential_type, app_key, public_id, status, record, created_at, updated_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE {fence}",
      [
        record.id,
        record.credentialType,
        record.appKey,
        record.publicId,
        record.status,
        json,
        record.createdAt,
        record.updatedAt,
      ],
      record,
      events,
    );
  }

  async save(record: CredentialRecord, events?: readonly CredentialEvent[]): Promise<void> {
    const json = JSON.stringify(record); // now: see insert
    const res = await this.fencedWrite(
      "UPDATE credentials SET credential_type = $1, app_key = $2, public_id = $3, status = $4, record = $5, updated_at = $6 WHERE id = $7 AND {fence}",
      [record.credentialType, record.appKey, record.publicId, record.status, json, record.updatedAt, record.id],
      record,
      events,
    );
    if (res.rowCount === 0) throw new NotFound(`credential record ${record.id} does not exist`);
  }

  /** A unique violation (SQLSTATE 23505) as a Conflict (409); anything else unchanged. */
  private uniqueAsConflict(err: unknown, record: CredentialRecord): unknown {
    if ((err as { code?: string }).code === "23505") {
      return new Conflict(`a credential for app '${record.appKey}' (${record.credentialType}) is already recorded`, {
        cause: err,
      });
    }
    return err;
  }

  private async one(text: string, values: unknown[]): Promise<CredentialRecord | undefined> {
    const { rows } = await this.q<Row>(text, values);
    return rows[0]?.record;
  }

  private async many(text: string, values: unknown[] = []): Promise<CredentialRecord[]> {
    const { rows } = await this.q<Row>(text, values);
    return rows.map((r) => r.record);
  }

  get(id: string): Promise<CredentialRecord | undefined> {
    return this.one("SELECT record FROM credentials WHERE id = $1", [id]);
  }

  /**
   * {@inheritDoc CredentialStore.getMany} One statement (`GET_MANY_SQL`, queries.ts) on the primary key, read and
   * decoded as {@link get} reads a record: one round trip for a page of `credhook reconcile`'s listing.
   */
  async getMany(ids: readonly string[]): Promise<Map<string, CredentialRecord>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.q<Row & { id: string }>(GET_MANY_SQL, [ids]);
    return new Map(rows.map((r) => [r.id, r.record]));
  }

  async findByPublicId(credentialType: CredentialType, publicId: string): Promise<CredentialRecord | undefined> {
    if (publicId === "") return undefined;
    return this.one(
      "SELECT record FROM credentials WHERE credential_type = $1 AND public_id = $2 ORDER BY created_at LIMIT 1",
      [credentialType, publicId],
    );
  }

  /** {@inheritDoc CredentialStore.findByFingerprint} On the `credentials_fingerprint` expression index. */
  findByFingerprint(fingerprint: string): Promise<CredentialRecord[]> {
    return this.many("SELECT record FROM credentials WHERE record->>'keyFingerprint' = $1 ORDER BY created_at", [
      fingerprint,
    ]);
  }

  findByAppKey(appKey: string, credentialType: CredentialType): Promise<CredentialRecord | undefined> {
    return this.one(
      "SELECT record FROM credentials WHERE app_key = $1 AND credential_type = $2 AND status <> 'abandoned'",
      [appKey, credentialType],
    );
  }

  listAbandoned(appKey?: string): Promise<CredentialRecord[]> {
    return appKey === undefined
      ? this.many(LIST_ABANDONED_SQL)
      : this.many("SELECT record FROM credentials WHERE app_key = $1 AND status = 'abandoned' ORDER BY updated_at", [
          appKey,
        ]);
  }

  /** {@inheritDoc CredentialStore.findApp} One round trip instead of two. */
  async findApp(appKey: string, credentialType: CredentialType): Promise<AppRecords> {
    const rows = await this.many(
      "SELECT record FROM credentials WHERE app_key = $1 AND (status = 'abandoned' OR credential_type = $2) ORDER BY updated_at",
      [appKey, credentialType],
    );
    return {
      live: rows.find((r) => r.status !== "abandoned"),
      abandoned: rows.filter((r) => r.status === "abandoned"),
    };
  }

  /** {@inheritDoc CredentialStore.listUnsettled} From the partial `credentials_unsettled` index. */
  listUnsettled(): Promise<CredentialRecord[]> {
    return this.many(LIST_UNSETTLED_SQL);
  }

  /** {@inheritDoc CredentialStore.listPage} SQL: `listPageQuery` (queries.ts). */
  async listPage(query: CredentialListQuery = {}): Promise<CredentialPage> {
    const { limit, after } = pageStartOf("listPage", query);
    const examinedMax = examinedMaxOf(limit, query);
    return this.page("listPage", listPageQuery(query, after, limit, examinedMax), limit, examinedMax);
  }

  /** {@inheritDoc CredentialStore.listUnsettledPage} SQL: `unsettledPageQuery` (queries.ts), on the partial `credentials_unsettled` index. */
  async listUnsettledPage(query: UnsettledListQuery = {}): Promise<CredentialPage> {
    const { limit, after } = pageStartOf("listUnsettledPage", query);
    return this.page("listUnsettledPage", unsettledPageQuery(after, query.dueAt, limit), limit, limit);
  }

  /** The page of `walk` that `query` reads (rows `id`, `position`, `record` — NULL where a filter dropped it). */
  private async page(walk: PageWalk, query: Query, limit: number, examinedMax: number): Promise<CredentialPage> {
    const { rows } = await this.q<{ id: string; position: string; record: CredentialRecord | null }>(
      query.text,
      query.values,
    );
    return pageOfExamined(
      walk,
      rows.map((r) => ({ id: r.id, position: r.position, record: r.record ?? undefined })),
      limit,
      examinedMax,
    );
  }

  /** {@inheritDoc CredentialStore.counts} From `store_counts` (kept by triggers) and the partial and `(status, updated_at)` indexes. */
  async counts(unfinishedBefore?: string): Promise<CredentialCounts> {
    const [{ rows }, unfinished] = await Promise.all([
      this.q<Record<string, number>>(COUNTS_SQL),
      unfinishedBefore === undefined ? undefined : this.q<{ n: number }>(COUNT_UNFINISHED_SQL, [unfinishedBefore]),
    ]);
    const row = rows[0]!;
    return {
      byStatus: recordCountsOf(row),
      unsettled: row.unsettled!,
      ...(unfinished ? { unfinished: unfinished.rows[0]!.n } : {}),
    };
  }

  async delete(id: string, events?: readonly CredentialEvent[]): Promise<boolean> {
    const res = await this.fencedWrite(
      "DELETE FROM credentials WHERE id = $1 AND {fence}",
      [id],
      { id, appKey: "", credentialType: "API_KEY" } as CredentialRecord,
      events,
    );
    return res.rowCount > 0;
  }

  /**
   * {@inheritDoc CredentialStore.outbox} Instances share it: a claim takes each app's oldest pending event
   * with `FOR UPDATE SKIP LOCKED` and a lease (`holder`, `lease_until`), so each event is delivered by one
   * instance at a time, and an instance that dies leaves its claims to run out.
   */
  get outbox(): EventOutbox {
    const q = this.q.bind(this);
    this.outboxImpl ??= {
      async append(events) {
        assertFenceHeld();
        const rows = events.map(eventRow);
        const columns = EVENT_INSERT_COLUMNS.split(", ");
        await q(
          `INSERT INTO events (${EVENT_INSERT_COLUMNS})
           SELECT ${columns.map((c) => (c === "event" ? "t.event::jsonb" : `t.${c}`)).join(", ")}
           FROM unnest(${columns.map((_, i) => `$${i + 1}::text[]`).join(", ")}) WITH ORDINALITY AS t(${EVENT_INSERT_COLUMNS}, ord)
           ORDER BY t.ord`,
          columns.map((_, i) => rows.map((r) => r[i])),
          "an event write",
        );
      },
      async claim(now, leaseUntil, holder, limit) {
        const { rows } = await q<EventRowRead>(CLAIM_SQL, [holder, now, leaseUntil, limit]);
        return rows.map(storedEventOf).sort((a, b) => a.seq - b.seq);
      },
      async settle(id, holder, s) {
        return (await this.settleAll!(holder, [{ id, ...s }])).length > 0;
      },
      async settleAll(holder, settlements) {
        const { rows } = await q<{ id: string }>(SETTLE_ALL_SQL, [
          holder,
          settlements.map((s) => s.id),
          settlements.map((s) => s.status),
          settlements.map((s) => s.attempts),
          settlements.map((s) => s.nextAttemptAt),
          settlements.map((s) => JSON.stringify(s.sinksDone)),
          settlements.map((s) => s.lastError ?? null),
          settlements.map((s) => s.settledAt ?? null),
        ]);
        return rows.map((r) => r.id);
      },
      async list(filter = {}) {
        const { text, values } = eventsListQuery(filter);
        const { rows } = await q<EventRowRead>(text, values);
        return rows.reverse().map(storedEventOf);
      },
      async newestEvents(credentials) {
        const { rows } = await q<EventRowRead & { credential_id: string }>(NEWEST_EVENTS_SQL, [
          credentials.map((c) => c.appKey),
          credentials.map((c) => c.credentialId),
        ]);
        return new Map(rows.map((row) => [row.credential_id, storedEventOf(row)]));
      },
      async counts() {
        const { rows } = await q<Record<string, number>>(COUNTS_SQL);
        return eventCountsOf(rows[0]!);
      },
      async prune(before, limit) {
        return (await q(PRUNE_SQL, [before, limit ?? null])).rowCount ?? 0;
      },
      async settleUnsent(now, limit) {
        return (await q(SETTLE_UNSENT_SQL, [now, limit ?? null])).rowCount ?? 0;
      },
      async requeueDead(now, app) {
        const { text, values } = requeueDeadQuery(now, app);
        return (await q(text, values)).rowCount ?? 0;
      },
    };
    return this.outboxImpl;
  }
  private outboxImpl: EventOutbox | undefined;

  listUnfinished(before: string): Promise<CredentialRecord[]> {
    return this.many(LIST_UNFINISHED_SQL, [before]);
  }

  async countUnfinishedSince(since: string): Promise<number> {
    const { rows } = await this.q<{ n: string }>(
      "SELECT COUNT(*) AS n FROM credentials WHERE status IN ('pending','revoking') AND updated_at >= $1",
      [since],
    );
    return Number(rows[0]?.n ?? 0);
  }

  list(): Promise<CredentialRecord[]> {
    return this.many("SELECT record FROM credentials ORDER BY created_at");
  }

  stateFor(gateway: string): ProviderStateStore {
    const q = <R extends pg.QueryResultRow>(text: string, values: unknown[], write = false) => {
      if (write) assertFenceHeld();
      return this.q<R>(text, values, write ? "a provider-state write" : "a query");
    };
    return {
      async get(key) {
        const { rows } = await q<{ value: JsonValue }>(
          "SELECT value FROM provider_state WHERE gateway = $1 AND key = $2",
          [gateway, key],
        );
        return rows[0]?.value;
      },
      async put(key, value) {
        await q(
          "INSERT INTO provider_state (gateway, key, value) VALUES ($1, $2, $3::jsonb) ON CONFLICT (gateway, key) DO UPDATE SET value = excluded.value",
          [gateway, key, JSON.stringify(value)],
          true,
        );
      },
      async delete(key) {
        return (
          ((await q("DELETE FROM provider_state WHERE gateway = $1 AND key = $2", [gateway, key], true)).rowCount ??
            0) > 0
        );
      },
      async write(changes) {
        const puts = changes.filter((c): c is { key: string; value: JsonValue } => !("delete" in c));
        const deletes = changes.filter((c) => "delete" in c).map((c) => c.key);
        // One statement, so one transaction and one round trip: the deletes in a CTE beside the upsert.
        await q(
          `WITH removed AS (DELETE FROM provider_state WHERE gateway = $1 AND key = ANY($2::text[]))
           INSERT INTO provider_state (gateway, key, value) SELECT $1, k, v::jsonb FROM unnest($3::text[], $4::text[]) AS t(k, v)
           ON CONFLICT (gateway, key) DO UPDATE SET value = excluded.value`,
          [gateway, deletes, puts.map((p) => p.key), puts.map((p) => JSON.stringify(p.value))],
          true,
        );
      },
      async list(prefix) {
        const { rows } = await q<{ key: string; value: JsonValue }>(
          'SELECT key, value FROM provider_state WHERE gateway = $1 AND left(key, $2) = $3 ORDER BY key COLLATE "C"',
          [gateway, prefix.length, prefix],
        );
        return rows;
      },
      async listPage(prefix, query) {
        const bounds = statePageBounds(prefix, query);
        const { text, values } = statePageQuery(gateway, bounds);
        return statePageOf((await q<{ key: string; value: JsonValue }>(text, values)).rows, bounds);
      },
    };
  }

  async health(): Promise<void> {
    await this.q("SELECT 1", [], "a health check");
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.pool.end(), this.lockPool.end()]);
  }
}

/**
 * Opens and migrates a store.
 * @throws ConfigError | Error as {@link PostgresCredentialStore} and {@link PostgresCredentialStore.init}
 */
export async function openPostgresStore(
  options: PostgresStoreOptions,
  logger?: Logger,
): Promise<PostgresCredentialStore> {
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
      // the connection string carries the password: writeOnly masks it wherever credhook prints or logs it
      { type: "string", minLength: 1, pattern: "^postgres(ql)?://", writeOnly: true },
      {
        type: "object",
        additionalProperties: false,
        required: ["url"],
        properties: {
          url: { type: "string", minLength: 1, pattern: "^postgres(ql)?://", writeOnly: true },
          poolMax: { type: "integer", minimum: 1, maximum: 1000 },
          lockPoolMax: { type: "integer", minimum: 1, maximum: 1000 },
          schema: { type: "string", pattern: SCHEMA_NAME.source },
          connectionTimeoutMs: { type: "integer", minimum: 100, maximum: 600000 },
          lockWaitTimeoutMs: { type: "integer", minimum: 100, maximum: 3600000 },
          leaseTtlMs: { type: "integer", minimum: 1000, maximum: 3600000 },
          failFast: { type: "boolean" },
          startupTimeoutMs: { type: "integer", minimum: 0, maximum: 86400000 },
        },
      },
    ],
  },
  create(options, context) {
    const o = typeof options === "string" ? { url: options } : options;
    // Only a serving process waits for a database that is away at start (it reports not ready meanwhile).
    return openPostgresStore({ ...o, failFast: o.failFast ?? !context.waitAtStart }, context.logger);
  },
};
export default postgresStoreFactory;
