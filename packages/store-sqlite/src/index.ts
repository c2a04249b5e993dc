/**
 * @credhook/store-sqlite: the credential store on SQLite (better-sqlite3), the
 * embedded default (`store: { sqlite: ./data/credhook.db }`).
 *
 * The database file is created with mode 0600 (its directory 0700), runs in WAL
 * mode, and is migrated on {@link SqliteCredentialStore.init}. It holds
 * credential records (ids, app identity, API set, each gateway's secret-free
 * resources) and providers' namespaced state — never a plaintext secret.
 *
 * Deleted content is overwritten with zeros (`PRAGMA secure_delete = ON`,
 * https://www.sqlite.org/pragma.html#pragma_secure_delete), and the WAL file is
 * truncated to nothing whenever a checkpoint resets it (`journal_size_limit = 0`),
 * so a revoked key's digest does not linger in freed pages or old WAL frames.
 * The store checkpoints the WAL itself, every 250 ms after writes, also while
 * they never pause (instead of SQLite's automatic checkpoint every 1000 pages, which under load
 * copied the same hot pages back over a dozen times a second), truncating it to
 * nothing when no other process is reading an older snapshot. A checkpoint is
 * synchronous (it blocks the event loop while it copies pages and syncs files):
 * at every 200 ms it took about 4 % of the server's CPU time under load.
 */
import { chmodSync, closeSync, mkdirSync, openSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import Database from "better-sqlite3";
import { asStoreError } from "./errors.js";
import { migrateLegacyAppKey } from "./legacy-app-key.js";
import {
  CLAIM_SQL,
  RELEASE_CLAIMS_SQL,
  COUNT_UNFINISHED_SQL,
  COUNTS_SQL,
  eventsListSql,
  NEWEST_EVENT_SQL,
  PRUNE_SQL,
  SETTLE_UNSENT_SQL,
  GET_SQL,
  LIST_ABANDONED_SQL,
  LIST_UNFINISHED_SQL,
  LIST_UNSETTLED_SQL,
  listPageSql,
  requeueDeadSql,
  statePageSql,
  unsettledPageSql,
  VERSION_8_SQL,
} from "./queries.js";
import {
  CREDENTIALS_INDEXES_SQL,
  credentialsTableSql,
  KeyedLock,
  type StoreFactory,
  type StoreLocks,
  type AppRecords,
  type CredentialRecord,
  type CredentialStore,
  type CredentialType,
  type JsonValue,
  type ProviderStateStore,
  EVENT_INSERT_COLUMNS,
  eventRow,
  eventsTableSql,
  EVENTS_PARTIAL_INDEXES_SQL,
  storedEventOf,
  type CredentialEvent,
  type EventOutbox,
  type EventRowRead,
  type StoredEvent,
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
import { Conflict, NotFound } from "@credhook/core/errors";

/** {@link SqliteStoreOptions.cacheSizeMiB}'s default, MiB. */
export const DEFAULT_CACHE_SIZE_MIB = 4;

/** Options of {@link SqliteCredentialStore}. */
export interface SqliteStoreOptions {
  /** Database file path (relative to the working directory), or `:memory:`. */
  path: string;
  /** How long a write waits for another process's lock, ms. @default 5000 */
  busyTimeoutMs?: number;
  /**
   * How often the WAL is checkpointed into the database file and truncated,
   * when something was written since the last time, ms: by a timer when writes
   * pause, and right after a commit while they do not (under sustained writes a
   * write transaction is open whenever the timer fires). SQLite's own automatic
   * checkpoint is off. A checkpoint blocks the event loop while it copies pages: a shorter interval
   * makes each pause shorter (measured under sustained creates: about 120–200 ms after 1000 ms of
   * writes, 15–40 ms after 100 ms) for about the same CPU in all, since each page is copied once per
   * checkpoint either way; 250 ms brought the bench's p99 from about 100 ms to about 60. @default 250
   */
  checkpointIntervalMs?: number;
  /**
   * SQLite's page cache for this connection, MiB (`PRAGMA cache_size`, https://www.sqlite.org/pragma.html#pragma_cache_size):
   * what the process holds of the database file beyond what the operating system caches anyway. The store's memory
   * is bounded by this, not by the file: a walk over every record (`credhook expire`, `reconcile`) fills the cache
   * once and then reuses it. Without it the driver's default applied (16 MiB, better-sqlite3's build), and a pass
   * over 100,000 credentials or more ended 20–30 % above the same pass at 1,000 (143 → 173–185 MiB); at 4 MiB
   * 1.08–1.23× at a million (`pnpm bench --scale`, docs/benchmark.md). A larger cache buys nothing measurable at a
   * million credentials: a random key lookup plus a random record read took 25 µs with 2, 4, 8 or 16 MiB alike (the
   * working set is the file, gigabytes; the OS caches it).
   * @default 4
   */
  cacheSizeMiB?: number;
}

/** One schema migration: SQL, or a function of the connection; run in one transaction unless `transaction` is false. */
interface Migration {
  version: number;
  sql?: string;
  up?: (db: Database.Database) => void;
  /** @default true */
  transaction?: boolean;
}

/**
 * Ordered schema migrations; `schema_migrations` records the applied versions.
 * Append only: never edit a released migration.
 */
const MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE credentials (
        id TEXT PRIMARY KEY,
        credential_type TEXT NOT NULL CHECK (credential_type IN ('API_KEY','CLIENT_CREDENTIALS')),
        app_key TEXT NOT NULL,
        public_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending','active','revoking')),
        record TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX credentials_app ON credentials (app_key, credential_type);
      CREATE INDEX credentials_public_id ON credentials (credential_type, public_id);
      CREATE INDEX credentials_unfinished ON credentials (status, updated_at);
      CREATE TABLE provider_state (
        gateway TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (gateway, key)
      );
    `,
  },
  {
    // Status 'abandoned' (a failed create kept until its cleanup is proven): an app may hold
    // several abandoned records besides its one live record, so the unique index skips them.
    version: 2,
    sql: `
      ${credentialsTableSql("credentials_v2", "TEXT")};
      INSERT INTO credentials_v2 SELECT id, credential_type, app_key, public_id, status, record, created_at, updated_at FROM credentials;
      DROP TABLE credentials;
      ALTER TABLE credentials_v2 RENAME TO credentials;
      ${CREDENTIALS_INDEXES_SQL.join(";\n")};
    `,
  },
  // App identities written before version 3 (`slug:<appSlug>`, `app:<developer>/<appName>`) were ambiguous
  // (developer "D" + app "x/Y" and developer "D/x" + app "Y" shared a key) and ignored the
  // developer for slugs: rewrite each to core's unambiguous encoding, keeping the identity it had.
  { version: 3, up: (db) => rewriteLegacyAppKeys(db) },
  // Pages freed before secure_delete may still hold old digests: rebuild the file once.
  { version: 4, sql: "VACUUM", transaction: false },
  // The event outbox (events written with the record changes, delivered by `credhook serve`).
  { version: 5, sql: `${eventsTableSql("INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT").join(";\n")};` },
  // The outbox's indexes: pending (and dead) events only, partial.
  { version: 6, sql: `${EVENTS_PARTIAL_INDEXES_SQL.join(";\n")};` },
  // Records by their key's fingerprint (findByFingerprint): leak response answers from an index.
  {
    version: 7,
    sql: "CREATE INDEX credentials_fingerprint ON credentials (json_extract(record, '$.keyFingerprint')) WHERE json_extract(record, '$.keyFingerprint') IS NOT NULL;",
  },
  // An index for every hot read (the paged walks, unsettled records, events by app) and the counts kept by triggers.
  { version: 8, sql: `${VERSION_8_SQL.join(";\n")};` },
];

function rewriteLegacyAppKeys(db: Database.Database): void {
  const rows = db.prepare("SELECT id, app_key, record FROM credentials").all() as Array<{
    id: string;
    app_key: string;
    record: string;
  }>;
  // Move every key aside first, so that no intermediate state trips the unique index.
  db.prepare("UPDATE credentials SET app_key = 'migrating:' || id").run();
  const update = db.prepare("UPDATE credentials SET app_key = ?, record = ? WHERE id = ?");
  for (const row of rows) {
    const record = JSON.parse(row.record) as CredentialRecord;
    record.appKey = migrateLegacyAppKey(row.app_key, record.app);
    update.run(record.appKey, JSON.stringify(record), row.id);
  }
}

type Row = { record: string };
/** Oldest `updated_at` first (ISO 8601 strings sort as times). */
const byUpdatedAt = (a: { updated_at: string }, b: { updated_at: string }) =>
  a.updated_at < b.updated_at ? -1 : a.updated_at > b.updated_at ? 1 : 0;
/** One provider-state change as stored: the value's JSON, or undefined to delete the key. */
type StateRow = { key: string; json?: string };
/** A provider-state put (replacing) and delete: by {@link ProviderStateStore.put}/`delete` and in {@link ProviderStateStore.write}'s savepoint. */
const PUT_STATE_SQL =
  "INSERT INTO provider_state (gateway, key, value) VALUES (?, ?, ?) ON CONFLICT (gateway, key) DO UPDATE SET value = excluded.value";
const DELETE_STATE_SQL = "DELETE FROM provider_state WHERE gateway = ? AND key = ?";
const INSERT_EVENT_SQL = `INSERT INTO events (${EVENT_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * A {@link CredentialStore} on one SQLite file. Synchronous underneath; one
 * serving process per file ({@link claimServer}); other processes may read
 * (WAL), e.g. `credhook reconcile --dry-run` beside a running server.
 */
export class SqliteCredentialStore implements CredentialStore {
  private readonly db: Database.Database;
  /** Prepared statements by SQL text: each is compiled once per connection (better-sqlite3 statements are reusable). */
  private readonly statements = new Map<string, Database.Statement>();
  /** The writes of the open group commit, each waiting for its COMMIT; undefined when no transaction is open. */
  private batch: Array<{ resolve: () => void; reject: (err: unknown) => void }> | undefined;
  /** Per-app locks: in-process, since only one server may use the file. */
  readonly locks: StoreLocks = new KeyedLock();
  readonly shared = false;
  private serverLock: Database.Database | undefined;
  /** Absolute path of the database file (or `:memory:`). */
  readonly path: string;
  private readonly busyTimeoutMs: number;
  /** Whether anything was committed since the last checkpoint. */
  private dirty = false;
  /** Whether the checkpoint timer fired while a group was open: the group's commit then checkpoints. */
  private checkpointDue = false;
  private readonly checkpointTimer: NodeJS.Timeout | undefined;

  /**
   * Opens (creating with mode 0600 if needed) the database file.
   * @throws Error when the directory cannot be created or the file opened
   */
  constructor(options: SqliteStoreOptions) {
    this.path = options.path === ":memory:" ? ":memory:" : resolve(options.path);
    if (this.path !== ":memory:") {
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
      closeSync(openSync(this.path, "a", 0o600));
      chmodSync(this.path, 0o600);
    }
    this.db = new Database(this.path);
    this.db.pragma("secure_delete = ON");
    this.db.pragma("journal_size_limit = 0");
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("foreign_keys = ON");
    // Statement journals (a savepoint's undo pages) in memory, not in a temporary file: a provider-state
    // write's savepoint costs a few µs instead of a file write. https://www.sqlite.org/tempfiles.html
    this.db.pragma("temp_store = MEMORY");
    // A negative cache_size is in KiB (a positive one counts pages).
    this.db.pragma(`cache_size = ${-Math.round((options.cacheSizeMiB ?? DEFAULT_CACHE_SIZE_MIB) * 1024)}`);
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    if (this.path !== ":memory:") {
      this.db.pragma("wal_autocheckpoint = 0");
      this.checkpointTimer = setInterval(() => {
        if (this.batch) this.checkpointDue = true;
        else this.checkpoint();
      }, options.checkpointIntervalMs ?? 250).unref();
    }
  }

  /**
   * Copies the WAL into the database file and truncates it to nothing
   * (`wal_checkpoint(TRUNCATE)`), if anything was written since the last time
   * and no write transaction is open. It never waits: while another process
   * reads an older snapshot the checkpoint does what it can now, and the rest
   * is done at the next tick. https://www.sqlite.org/pragma.html#pragma_wal_checkpoint
   */
  private checkpoint(): void {
    this.checkpointDue = false;
    if (!this.dirty || this.batch || !this.db.open) return;
    this.db.pragma("busy_timeout = 0");
    try {
      const [row] = this.db.pragma("wal_checkpoint(TRUNCATE)") as Array<{ busy: number }>;
      this.dirty = row?.busy !== 0;
    } catch {
      // SQLITE_BUSY or LOCKED: another process is writing; the next tick tries again.
    } finally {
      this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    }
  }

  /** The savepoint function of {@link applyStateRows}, made on first use (making one costs a closure and a savepoint name). */
  private stateRows: ((gateway: string, rows: StateRow[]) => void) | undefined;

  /**
   * Applies provider-state rows of `gateway` in a savepoint inside the group's transaction
   * (better-sqlite3 nests a transaction function as one): a failing statement undoes the
   * earlier ones of the same call too.
   * @throws the failing statement's SqliteError
   */
  private applyStateRows(gateway: string, rows: StateRow[]): void {
    this.stateRows ??= this.db.transaction((g: string, rs: StateRow[]) => {
      const put = this.stmt(PUT_STATE_SQL);
      const del = this.stmt(DELETE_STATE_SQL);
      for (const r of rs) {
        if (r.json === undefined) del.run(g, r.key);
        else put.run(g, r.key, r.json);
      }
    });
    this.stateRows(gateway, rows);
  }

  /** The prepared statement of `sql`, compiled on first use. */
  private stmt(sql: string): Database.Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  /**
   * Group commit: runs the write `fn` at once inside the transaction shared by every
   * write of this turn of the event loop (opened by the first, committed by
   * `setImmediate` after the turn's I/O callbacks), and resolves with its result
   * only once that transaction has committed — so a write awaited is a write
   * committed, as with one transaction per statement, but 64 concurrent requests
   * pay one COMMIT (one append to the WAL) instead of dozens.
   * A statement that fails (a unique constraint) is undone alone and rejects at
   * once; a COMMIT that fails rejects every write of the group.
   * Reads on this connection see the group's writes before they commit; they
   * come from this process, whose per-app locks keep one request per app at a time.
   */
  private write<T>(fn: () => T): Promise<T> {
    if (!this.batch) {
      this.db.exec("BEGIN IMMEDIATE");
      this.batch = [];
      setImmediate(() => this.commit());
    }
    let value: T;
    try {
      value = fn();
    } catch (err) {
      // An I/O or full-disk error may have rolled the whole transaction back: its other writes fail too.
      if (!this.db.inTransaction) this.settle(err);
      return Promise.reject(err);
    }
    return new Promise<T>((resolve, reject) => this.batch!.push({ resolve: () => resolve(value), reject }));
  }

  /** Commits the open group (see {@link write}) and settles its writes. */
  private commit(): void {
    if (!this.batch) return;
    if (!this.db.inTransaction) return this.settle(new Error("the SQLite transaction was rolled back"));
    try {
      this.db.exec("COMMIT");
      this.dirty = true;
    } catch (err) {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      return this.settle(err);
    }
    this.settle(undefined);
    // Under sustained writes the timer always finds a group open: it leaves the checkpoint to this
    // commit, between two groups. Before, it was put off until the writes paused: the WAL grew by about
    // 10 MB a second of load (1,300 creates a second), and the checkpoint after it blocked 150 ms or more.
    if (this.checkpointDue) this.checkpoint();
  }

  /** Ends the group: resolves its writes, or rejects them all with `err`. */
  private settle(err: unknown): void {
    const waiting = this.batch ?? [];
    this.batch = undefined;
    for (const w of waiting) {
      if (err === undefined) w.resolve();
      else w.reject(err);
    }
  }

  /** Applies pending migrations in one transaction each. */
  async init(): Promise<void> {
    this.db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    );
    const applied = new Set(
      (this.db.prepare("SELECT version FROM schema_migrations").all() as Array<{ version: number }>).map(
        (r) => r.version,
      ),
    );
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      const apply = () => {
        if (m.sql) this.db.exec(m.sql);
        m.up?.(this.db);
        // Outside a transaction another process may have applied it meanwhile (an idempotent step, e.g. VACUUM).
        this.db
          .prepare(
            `INSERT ${m.transaction === false ? "OR IGNORE " : ""}INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
          )
          .run(m.version, new Date().toISOString());
      };
      if (m.transaction === false) apply();
      else this.db.transaction(apply)();
    }
    this.dirty = true; // whatever the migrations wrote: checkpointed at the next tick
  }

  /** Schema version now applied. */
  schemaVersion(): number {
    const row = this.db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number | null };
    return row.v ?? 0;
  }

  async insert(record: CredentialRecord, events?: readonly CredentialEvent[]): Promise<void> {
    const json = JSON.stringify(record);
    try {
      await this.withEvents(events, () =>
        this.stmt(
          "INSERT INTO credentials (id, credential_type, app_key, public_id, status, record, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ).run(
          record.id,
          record.credentialType,
          record.appKey,
          record.publicId,
          record.status,
          json,
          record.createdAt,
          record.updatedAt,
        ),
      );
    } catch (err) {
      throw this.constraintAsConflict(err, record);
    }
  }

  async save(record: CredentialRecord, events?: readonly CredentialEvent[]): Promise<void> {
    let res;
    const json = JSON.stringify(record);
    try {
      res = await this.withEvents(events, () =>
        this.stmt(
          "UPDATE credentials SET credential_type = ?, app_key = ?, public_id = ?, status = ?, record = ?, updated_at = ? WHERE id = ?",
        ).run(record.credentialType, record.appKey, record.publicId, record.status, json, record.updatedAt, record.id),
      );
    } catch (err) {
      throw this.constraintAsConflict(err, record);
    }
    if (res.changes === 0) throw new NotFound(`credential record ${record.id} does not exist`);
  }

  /** A unique-constraint failure (the app's live credential, the id) as a Conflict (409); anything else unchanged. */
  private constraintAsConflict(err: unknown, record: CredentialRecord): unknown {
    const code = (err as { code?: string }).code;
    if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
      return new Conflict(`a credential for app '${record.appKey}' (${record.credentialType}) is already recorded`, {
        cause: err,
      });
    }
    return err;
  }

  async get(id: string): Promise<CredentialRecord | undefined> {
    return this.parse(this.stmt(GET_SQL).get(id) as Row | undefined);
  }

  /**
   * {@inheritDoc CredentialStore.getMany} `get`'s prepared statement (`GET_SQL`, queries.ts: the primary key) run
   * once per distinct id within the one call: no round trip to save on an embedded database, and no await between
   * the reads.
   */
  async getMany(ids: readonly string[]): Promise<Map<string, CredentialRecord>> {
    const read = this.stmt(GET_SQL);
    const found = new Map<string, CredentialRecord>();
    for (const id of ids) {
      if (found.has(id)) continue;
      const rec = this.parse(read.get(id) as Row | undefined);
      if (rec) found.set(id, rec);
    }
    return found;
  }

  /**
   * The oldest record with this public id (there is one, but for a crash's leftovers). The oldest is
   * picked here rather than by `ORDER BY created_at LIMIT 1`, whose sorter tripled the cost of the
   * lookup (about 5 µs → 15 µs a call, measured) on the update and revoke path.
   */
  async findByPublicId(credentialType: CredentialType, publicId: string): Promise<CredentialRecord | undefined> {
    if (publicId === "") return undefined;
    const rows = this.stmt(
      "SELECT record, created_at FROM credentials WHERE credential_type = ? AND public_id = ?",
    ).all(credentialType, publicId) as Array<Row & { created_at: string }>;
    let oldest = rows[0];
    for (const r of rows) if (r.created_at < oldest!.created_at) oldest = r;
    return this.parse(oldest);
  }

  /** {@inheritDoc CredentialStore.findByFingerprint} On the `credentials_fingerprint` expression index. */
  async findByFingerprint(fingerprint: string): Promise<CredentialRecord[]> {
    const rows = this.stmt(
      "SELECT record FROM credentials WHERE json_extract(record, '$.keyFingerprint') = ? ORDER BY created_at",
    ).all(fingerprint) as Row[];
    return rows.map((r) => this.parse(r)!);
  }

  async findByAppKey(appKey: string, credentialType: CredentialType): Promise<CredentialRecord | undefined> {
    return this.parse(
      this.stmt(
        "SELECT record FROM credentials WHERE app_key = ? AND credential_type = ? AND status <> 'abandoned'",
      ).get(appKey, credentialType) as Row | undefined,
    );
  }

  /** {@inheritDoc CredentialStore.listAbandoned} Sorted here, not by `ORDER BY`: every create asks for its app's, and there are almost never any (a sorter costs more than the lookup). */
  async listAbandoned(appKey?: string): Promise<CredentialRecord[]> {
    const rows = (
      appKey === undefined
        ? this.stmt(LIST_ABANDONED_SQL).all()
        : this.stmt("SELECT record, updated_at FROM credentials WHERE app_key = ? AND status = 'abandoned'").all(appKey)
    ) as Array<Row & { updated_at: string }>;
    if (rows.length > 1) rows.sort(byUpdatedAt);
    return rows.map((r) => this.parse(r)!);
  }

  /** {@inheritDoc CredentialStore.findApp} One statement instead of two, on the (app_key, status) index. */
  async findApp(appKey: string, credentialType: CredentialType): Promise<AppRecords> {
    const rows = this.stmt(
      "SELECT record, status, updated_at FROM credentials WHERE app_key = ? AND (status = 'abandoned' OR credential_type = ?)",
    ).all(appKey, credentialType) as Array<Row & { status: string; updated_at: string }>;
    const abandoned = rows.filter((r) => r.status === "abandoned");
    if (abandoned.length > 1) abandoned.sort(byUpdatedAt);
    return {
      live: this.parse(rows.find((r) => r.status !== "abandoned")),
      abandoned: abandoned.map((r) => this.parse(r)!),
    };
  }

  /** {@inheritDoc CredentialStore.listUnsettled} From the partial `credentials_unsettled` index, sorted here. */
  async listUnsettled(): Promise<CredentialRecord[]> {
    const rows = this.stmt(LIST_UNSETTLED_SQL).all() as Array<Row & { updated_at: string }>;
    if (rows.length > 1) rows.sort(byUpdatedAt);
    return rows.map((r) => this.parse(r)!);
  }

  /** {@inheritDoc CredentialStore.listPage} SQL: `listPageSql` (queries.ts). */
  async listPage(query: CredentialListQuery = {}): Promise<CredentialPage> {
    const { limit, after } = pageStartOf("listPage", query);
    const examinedMax = examinedMaxOf(limit, query);
    const params = Object.fromEntries(
      Object.entries({
        status: query.status,
        app: query.app,
        developer: query.developer,
        gateway: query.gateway,
        createdBefore: query.createdBefore,
        afterPosition: after?.position,
        afterId: after?.id,
      }).filter(([, v]) => v !== undefined),
    );
    return this.page(
      "listPage",
      listPageSql(query, after !== undefined),
      { ...params, n: examinedMax + 1 },
      limit,
      examinedMax,
    );
  }

  /** {@inheritDoc CredentialStore.listUnsettledPage} SQL: `unsettledPageSql` (queries.ts), on the partial `credentials_unsettled` index. */
  async listUnsettledPage(query: UnsettledListQuery = {}): Promise<CredentialPage> {
    const { limit, after } = pageStartOf("listUnsettledPage", query);
    const params = {
      ...(after ? { afterPosition: after.position, afterId: after.id } : {}),
      ...(query.dueAt !== undefined ? { dueAt: query.dueAt } : {}),
      n: limit + 1,
    };
    return this.page(
      "listUnsettledPage",
      unsettledPageSql(after !== undefined, query.dueAt !== undefined),
      params,
      limit,
      limit,
    );
  }

  /** The page of `walk` that `sql` reads with `params` (rows `id`, `position`, `record` — NULL where a filter dropped it). */
  private page(
    walk: PageWalk,
    sql: string,
    params: Record<string, unknown>,
    limit: number,
    examinedMax: number,
  ): CredentialPage {
    const rows = this.stmt(sql).iterate(params) as IterableIterator<{
      id: string;
      position: string;
      record: string | null;
    }>;
    const parse = this.parse.bind(this);
    return pageOfExamined(
      walk,
      (function* () {
        for (const r of rows)
          yield { id: r.id, position: r.position, record: r.record === null ? undefined : parse({ record: r.record }) };
      })(),
      limit,
      examinedMax,
    );
  }

  /** {@inheritDoc CredentialStore.counts} From `store_counts` (kept by triggers) and the partial and `(status, updated_at)` indexes. */
  async counts(unfinishedBefore?: string): Promise<CredentialCounts> {
    const row = this.stmt(COUNTS_SQL).get() as Record<string, number>;
    return {
      byStatus: recordCountsOf(row),
      unsettled: row.unsettled!,
      ...(unfinishedBefore !== undefined
        ? { unfinished: (this.stmt(COUNT_UNFINISHED_SQL).get(unfinishedBefore) as { n: number }).n }
        : {}),
    };
  }

  async countUnfinishedSince(since: string): Promise<number> {
    const row = this.stmt(
      "SELECT COUNT(*) AS n FROM credentials WHERE status IN ('pending','revoking') AND updated_at >= ?",
    ).get(since) as { n: number };
    return row.n;
  }

  async delete(id: string, events?: readonly CredentialEvent[]): Promise<boolean> {
    return (await this.withEvents(events, () => this.stmt("DELETE FROM credentials WHERE id = ?").run(id))).changes > 0;
  }

  /**
   * A record write `run` and its events, in the group's transaction (see {@link write}): the events are
   * inserted right after the write, and only when it changed a row. No savepoint: a failing record
   * statement (a unique constraint) is undone by SQLite alone, before any event is written; an event
   * insert that fails after the record statement changed a row (only an I/O error or a full disk can:
   * the `events` table has no constraint a generated event could break) rolls the whole group back, so
   * a record change never commits without its event. A savepoint cost about 30 µs a write (measured:
   * 190 → 105 µs CPU for a create, update and revoke with their three events, 64 at a time).
   */
  private withEvents(
    events: readonly CredentialEvent[] | undefined,
    run: () => Database.RunResult,
  ): Promise<Database.RunResult> {
    if (!events || events.length === 0) return this.write(run);
    const rows = events.map(eventRow); // serialised now, like the record
    return this.write(() => {
      const res = run();
      if (res.changes === 0) return res;
      try {
        for (const e of rows) this.stmt(INSERT_EVENT_SQL).run(...e);
      } catch (err) {
        if (this.db.inTransaction) this.db.exec("ROLLBACK"); // the record change must not commit alone
        throw err;
      }
      return res;
    });
  }

  /** {@inheritDoc CredentialStore.outbox} One server per file: its claims need no lock beyond the group's transaction. */
  readonly outbox: EventOutbox = typed<EventOutbox>({
    append: async (events) => {
      const rows = events.map(eventRow);
      await this.write(() => {
        for (const r of rows) this.stmt(INSERT_EVENT_SQL).run(...r);
      });
    },
    claim: async (now, leaseUntil, holder, limit) => {
      const rows = await this.write(
        () => this.stmt(CLAIM_SQL).all(holder, leaseUntil, now, now, limit) as EventRowRead[],
      );
      return rows.map(storedEventOf).sort((a, b) => a.seq - b.seq);
    },
    settle: async (id, holder, s) => (await this.outbox.settleAll!(holder, [{ id, ...s }])).length > 0,
    settleAll: async (holder, settlements) => {
      const changes = await this.write(() =>
        settlements.map(
          (s) =>
            this.stmt(
              `UPDATE events SET status = ?, attempts = ?, next_attempt_at = ?, sinks_done = ?, last_error = ?, settled_at = ?,
                 holder = NULL, lease_until = NULL WHERE id = ? AND holder = ?`,
            ).run(
              s.status,
              s.attempts,
              s.nextAttemptAt,
              JSON.stringify(s.sinksDone),
              s.lastError ?? null,
              s.settledAt ?? null,
              s.id,
              holder,
            ).changes,
        ),
      );
      return settlements.filter((_, i) => changes[i]! > 0).map((s) => s.id);
    },
    list: async (filter = {}) => {
      const rows = this.stmt(eventsListSql(filter)).all({
        ...(filter.app !== undefined ? { app: filter.app } : {}),
        ...(filter.since !== undefined ? { since: filter.since } : {}),
        ...(filter.fingerprint !== undefined ? { fingerprint: filter.fingerprint } : {}),
        ...(filter.credentialId !== undefined ? { credentialId: filter.credentialId } : {}),
        limit: filter.limit ?? 1000,
      }) as EventRowRead[];
      return rows.reverse().map(storedEventOf);
    },
    newestEvents: async (credentials) => {
      const newest = new Map<string, StoredEvent>();
      const read = this.stmt(NEWEST_EVENT_SQL);
      for (const { credentialId, appKey } of credentials) {
        const row = read.get(appKey, credentialId) as EventRowRead | undefined;
        if (row) newest.set(credentialId, storedEventOf(row));
      }
      return newest;
    },
    counts: async () => {
      const row = this.stmt(COUNTS_SQL).get() as Record<string, number>;
      return eventCountsOf(row);
    },
    prune: async (before, limit) => {
      const { changes } = await this.write(() => this.stmt(PRUNE_SQL).run({ before, limit: limit ?? -1 }));
      // A backlog's batches dirty many pages (every index of each row, freed pages zeroed by secure_delete): they are
      // copied into the database after each batch (19-38 ms a batch of 500 with it, at 100k), not 250 ms of batches
      // in one checkpoint on the event loop (170-360 ms).
      if (changes > 0 && !this.batch) this.checkpoint();
      return changes;
    },
    requeueDead: async (now, app) =>
      (
        await this.write(() =>
          this.stmt(requeueDeadSql(app !== undefined)).run({ now, ...(app !== undefined ? { app } : {}) }),
        )
      ).changes,
    settleUnsent: async (now, limit) =>
      (await this.write(() => this.stmt(SETTLE_UNSENT_SQL).run({ now, limit: limit ?? -1 }))).changes,
  });

  async listUnfinished(before: string): Promise<CredentialRecord[]> {
    const rows = this.stmt(LIST_UNFINISHED_SQL).all(before) as Row[];
    return rows.map((r) => this.parse(r)!);
  }

  async list(): Promise<CredentialRecord[]> {
    return (this.stmt("SELECT record FROM credentials ORDER BY created_at").all() as Row[]).map((r) => this.parse(r)!);
  }

  stateFor(gateway: string): ProviderStateStore {
    return typed({
      get: async (key) => {
        const row = this.stmt("SELECT value FROM provider_state WHERE gateway = ? AND key = ?").get(gateway, key) as
          | { value: string }
          | undefined;
        return row ? (JSON.parse(row.value) as JsonValue) : undefined;
      },
      put: async (key, value) => {
        const json = JSON.stringify(value);
        const put = this.stmt(PUT_STATE_SQL);
        await this.write(() => put.run(gateway, key, json));
      },
      delete: async (key) => {
        const del = this.stmt(DELETE_STATE_SQL);
        return (await this.write(() => del.run(gateway, key))).changes > 0;
      },
      write: async (changes) => {
        const rows = changes.map((c) =>
          "delete" in c ? { key: c.key } : { key: c.key, json: JSON.stringify(c.value) },
        );
        await this.write(() => this.applyStateRows(gateway, rows));
      },
      list: async (prefix) => {
        const rows = this.stmt(
          "SELECT key, value FROM provider_state WHERE gateway = ? AND substr(key, 1, ?) = ? ORDER BY key",
        ).all(gateway, prefix.length, prefix) as Array<{
          key: string;
          value: string;
        }>;
        return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as JsonValue }));
      },
      listPage: async (prefix, query) => {
        const b = statePageBounds(prefix, query);
        const rows = this.stmt(statePageSql(b.inclusive, b.to !== undefined)).all(
          gateway,
          b.from,
          ...(b.to !== undefined ? [b.to] : []),
          b.limit + 1,
        ) as Array<{ key: string; value: string }>;
        return statePageOf(
          rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as JsonValue })),
          b,
        );
      },
    });
  }

  async health(): Promise<void> {
    this.stmt("SELECT 1").get();
  }

  /**
   * Claims the file for this serving process: takes an exclusive SQLite lock
   * on `<file>-server.lock` beside it (found through the file's real path, so
   * any spelling of the path or any dataDir meets the same lock), held until
   * {@link close} or the process ends — the operating system releases it even
   * after kill -9, so it is never stale. Readers (`reconcile --dry-run`) are
   * not affected. Releases the event claims an earlier server held (its outbox
   * deliveries resume at once after a crash, not when their leases run out).
   * @throws Conflict another `credhook serve` holds the file (within about 1 s)
   */
  async claimServer(): Promise<void> {
    if (this.path === ":memory:" || this.serverLock) return;
    const lockPath = `${realpathSync(this.path)}-server.lock`;
    closeSync(openSync(lockPath, "a", 0o600));
    const lock = new Database(lockPath);
    try {
      lock.pragma("busy_timeout = 1000");
      lock.pragma("locking_mode = EXCLUSIVE");
      lock.exec("BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS server (pid INTEGER); COMMIT;");
      lock.prepare("INSERT INTO server (pid) VALUES (?)").run(process.pid);
    } catch (err) {
      lock.close();
      if ((err as { code?: string }).code?.startsWith("SQLITE_BUSY")) {
        throw new Conflict(
          `the store ${this.path} is in use by another credhook server: one server per SQLite file (several instances need store: { postgres: … })`,
          {
            cause: err,
          },
        );
      }
      throw err;
    }
    this.serverLock = lock;
    // Event claims held now are a server's before this one, which is gone (the lock above proves it):
    // released, so that its undelivered events go out now rather than when their leases run out.
    await this.write(() => {
      this.stmt(RELEASE_CLAIMS_SQL).run();
    });
  }

  /**
   * The connection's settings as SQLite reports them (PRAGMAs read back, not the options echoed): the page cache in
   * MiB, the busy timeout in ms and the journal mode.
   * @throws the driver's error when the connection is closed
   */
  connectionSettings(): { cacheSizeMiB: number; busyTimeoutMs: number; journalMode: string } {
    const cacheSize = this.db.pragma("cache_size", { simple: true }) as number;
    return {
      // negative: KiB; positive: pages of `page_size` bytes
      cacheSizeMiB:
        cacheSize < 0
          ? -cacheSize / 1024
          : (cacheSize * (this.db.pragma("page_size", { simple: true }) as number)) / 2 ** 20,
      busyTimeoutMs: this.db.pragma("busy_timeout", { simple: true }) as number,
      journalMode: this.db.pragma("journal_mode", { simple: true }) as string,
    };
  }

  async close(): Promise<void> {
    this.commit(); // the writes of this turn, if any
    if (this.checkpointTimer) clearInterval(this.checkpointTimer);
    if (this.checkpointTimer) this.checkpoint(); // what this connection wrote leaves the WAL now, even while another process keeps the file open
    if (this.serverLock?.open) this.serverLock.close();
    this.serverLock = undefined;
    if (this.db.open) this.db.close();
  }

  private parse(row: Row | undefined): CredentialRecord | undefined {
    return row ? (JSON.parse(row.record) as CredentialRecord) : undefined;
  }
}

/**
 * `target` with each of its methods' failures as the store's typed errors ({@link asStoreError}):
 * a full disk or a busy file is a 503 StoreUnavailable, never a raw driver error.
 */
function typed<T extends object>(target: T, names: Array<keyof T> = Object.keys(target) as Array<keyof T>): T {
  for (const name of names) {
    const method = target[name] as unknown as (...args: unknown[]) => Promise<unknown>;
    (target as Record<keyof T, unknown>)[name] = async function (this: unknown, ...args: unknown[]) {
      try {
        return await method.apply(this, args);
      } catch (err) {
        throw asStoreError(err);
      }
    };
  }
  return target;
}

// Every call of the store interface that touches the database answers a failure of it as StoreUnavailable.
typed(SqliteCredentialStore.prototype, [
  "insert",
  "save",
  "get",
  "findByPublicId",
  "findByAppKey",
  "listAbandoned",
  "findApp",
  "listUnsettled",
  "listPage",
  "listUnsettledPage",
  "counts",
  "countUnfinishedSince",
  "delete",
  "listUnfinished",
  "list",
  "health",
  "init",
]);

/** Opens and migrates a store at `path`. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteCredentialStore> {
  const store = new SqliteCredentialStore(options);
  await store.init();
  return store;
}

/** Options under `store.sqlite`: the file path, or `{ path, busyTimeoutMs, checkpointIntervalMs, cacheSizeMiB }`. Relative paths are relative to the config file. */
export type SqliteStoreConfig = string | SqliteStoreOptions;

/** The `store: { sqlite: … }` factory (the embedded default). */
const sqliteStoreFactory: StoreFactory<SqliteStoreConfig> = {
  type: "sqlite",
  optionsSchema: {
    oneOf: [
      { type: "string", minLength: 1 },
      {
        type: "object",
        additionalProperties: false,
        required: ["path"],
        properties: {
          path: { type: "string", minLength: 1 },
          busyTimeoutMs: { type: "integer", minimum: 0, maximum: 600000 },
          checkpointIntervalMs: { type: "integer", minimum: 10, maximum: 600000 },
          cacheSizeMiB: { type: "integer", minimum: 1, maximum: 65536 },
        },
      },
    ],
  },
  async create(options, context) {
    const o = typeof options === "string" ? { path: options } : options;
    const path = o.path === ":memory:" || isAbsolute(o.path) ? o.path : resolve(context.baseDir, o.path);
    return openSqliteStore({ ...o, path });
  },
};
export default sqliteStoreFactory;
