/**
 * The credential store interface: where core records which native resource each
 * gateway holds for a credential — before the cloud calls (intent, status
 * `pending`) and after them — so that a crash in between is recoverable
 * (`credhook reconcile`), never an orphaned live key.
 *
 * A store never receives a secret: only ids, the app's identity, the API set and
 * each provider's secret-free resources. Implementations: `@credhook/store-sqlite`
 * (embedded default) and `@credhook/store-postgres`. What a record is: `credential-record.ts`.
 */
import type { CredentialType } from "./contract.js";
import type { CredentialRecord, CredentialStatus } from "./credential-record.js";
import type { CredentialEvent, EventOutbox } from "./events.js";
import type { Logger } from "./logger.js";
import type { ProviderStateStore, RateSlots } from "./provider.js";

/**
 * The SQL that makes the `credentials` table both SQL stores keep (SQLite from its schema
 * version 2, PostgreSQL from its migration 0001): one row per {@link CredentialRecord}, the
 * record itself as JSON in `record`, beside the columns its indexes need. At most one record
 * that is not `abandoned` per app and credential type (`credentials_app`). Frozen: released
 * migrations run it, so a later change to the table is a new migration in each store, never
 * an edit here.
 * @param table the table's name (a trusted identifier, not quoted)
 * @param recordType the SQL type of the `record` column: `JSONB` on PostgreSQL, `TEXT` on SQLite
 * @returns the `CREATE TABLE` statement, without a trailing semicolon
 */
export function credentialsTableSql(table: string, recordType: "JSONB" | "TEXT"): string {
  return `CREATE TABLE ${table} (
    id TEXT PRIMARY KEY,
    credential_type TEXT NOT NULL CHECK (credential_type IN ('API_KEY','CLIENT_CREDENTIALS')),
    app_key TEXT NOT NULL,
    public_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending','active','revoking','abandoned')),
    record ${recordType} NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`;
}

/** An app's records as {@link CredentialStore.findApp} reads them. */
export interface AppRecords {
  /** The live (not `abandoned`) record of the asked type, if any. */
  live: CredentialRecord | undefined;
  /** The app's `abandoned` records of any type, oldest `updatedAt` first. */
  abandoned: CredentialRecord[];
}

/**
 * The indexes of the table {@link credentialsTableSql} makes, one `CREATE INDEX` statement
 * each (no trailing semicolon), valid on SQLite and PostgreSQL alike. Frozen like the table.
 */
export const CREDENTIALS_INDEXES_SQL: readonly string[] = [
  "CREATE UNIQUE INDEX credentials_app ON credentials (app_key, credential_type) WHERE status <> 'abandoned'",
  "CREATE INDEX credentials_app_status ON credentials (app_key, status)",
  "CREATE INDEX credentials_public_id ON credentials (credential_type, public_id)",
  "CREATE INDEX credentials_unfinished ON credentials (status, updated_at)",
];

/**
 * Mutual exclusion per key (an app's identity, or a job name) across every
 * instance that shares the store: an in-process lock for the embedded SQLite
 * store (one server per file), PostgreSQL session-level advisory locks for
 * `store-postgres` — held by the instance's database session, so they die
 * with the instance (kill -9 included) and are never stale.
 */
export interface StoreLocks {
  /** Runs `fn` holding the lock of `key`, waiting for it first; returns `fn`'s result. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` holding the lock of `key` only if it is free now (no instance holds it).
   * @returns `{ ran: true, value }`, or `{ ran: false }` when another holder has it
   */
  tryRun<T>(key: string, fn: () => Promise<T>): Promise<{ ran: true; value: T } | { ran: false }>;
}

/** Records per page when a query names no `limit` ({@link CredentialListQuery}, {@link UnsettledListQuery}). */
export const PAGE_LIMIT_DEFAULT = 100;
/** The most records one page may hold: a larger `limit` is a ValidationError. */
export const PAGE_LIMIT_MAX = 1000;
/**
 * The most rows a SQL store examines for one page when a filter no index serves (`developer`, `gateway`) narrows
 * the walk: such a page may hold fewer records than its `limit`, even none, and still have a `next` cursor.
 */
export const PAGE_SCAN_ROWS = 2000;

/**
 * A page of {@link CredentialStore.listPage}: the records in the walk's order, oldest `createdAt` first (ties by
 * `id`, compared as byte strings), filtered by every field given (each one narrows the others).
 *
 * Cursor semantics: `after` is the `next` of the page before (absent: the walk starts at the oldest record). The
 * cursor names a position in that order — the last record the page examined, not a row — so a walk returns every
 * record that exists from its first page to its last exactly once and in order, also while records are written:
 * `createdAt` and `id` never change, a record saved or deleted behind the cursor is not seen again, one inserted
 * ahead of it (a newer `createdAt`) is seen, one deleted ahead of it is not. A cursor stays valid across restarts
 * and on any instance of the same store, with any filters (it is a position only).
 */
export interface CredentialListQuery {
  /** The `next` of the page before; absent: from the start. @throws ValidationError a string no page of this method returned */
  after?: string;
  /** Most records in the page, 1 to {@link PAGE_LIMIT_MAX}. @default {@link PAGE_LIMIT_DEFAULT} */
  limit?: number;
  /** Only records in this state. Served by an index. */
  status?: CredentialStatus;
  /** Only the records of the app this names: its app key (`slug:…`, `app:…`), its slug or its name. Served by indexes. */
  app?: string;
  /** Only records whose app's developer is this (exact). Filtered as the walk goes (no index: see {@link PAGE_SCAN_ROWS}). */
  developer?: string;
  /** Only records on this gateway: one of its bindings or APIs names it. Filtered as the walk goes (no index). */
  gateway?: string;
  /**
   * Only records created before this ISO 8601 time (`createdAt < createdBefore`): the credentials older than an
   * age, as the expiry pass walks them (with `status: "active"`), ending at the first younger one. Served by the index.
   */
  createdBefore?: string;
}

/**
 * A page of {@link CredentialStore.listUnsettledPage}: the records that carry {@link CredentialRecord.unsettled},
 * earliest `unsettled.settleUntil` first (ties by `id`). `after` and `limit` as in {@link CredentialListQuery}
 * (a cursor of one method is refused by the other); the position is the settle time and id, so a record whose
 * `unsettled` is removed or rewritten behind the cursor is not seen again in the same walk.
 */
export interface UnsettledListQuery {
  /** The `next` of the page before; absent: from the start. @throws ValidationError a string no page of this method returned */
  after?: string;
  /** Most records in the page, 1 to {@link PAGE_LIMIT_MAX}. @default {@link PAGE_LIMIT_DEFAULT} */
  limit?: number;
  /** Only the records whose settle window has ended at this ISO 8601 time (`unsettled.settleUntil <= dueAt`): what a sweep acts on. */
  dueAt?: string;
}

/** One page of records and where the next one starts. */
export interface CredentialPage {
  /** The page's records, in the walk's order; fewer than the limit (even none) does not mean the walk is over. */
  records: CredentialRecord[];
  /** The cursor of the next page (pass it as `after`); absent when the walk is complete. Opaque: do not parse or build it. */
  next?: string;
}

/**
 * The store's figures {@link CredentialStore.counts} reads without a scan: what `/metrics` reports of the records.
 */
export interface CredentialCounts {
  /** Records in each state. The SQL stores keep these as they write (triggers in each write's transaction): read in O(1). */
  byStatus: Record<CredentialStatus, number>;
  /** Records that carry {@link CredentialRecord.unsettled}: read from a partial index of those records only. */
  unsettled: number;
  /**
   * With `unfinishedBefore`: records `pending` or `revoking` last written before that time (operations a crash
   * interrupted), read from the `(status, updated_at)` index (as many entries as there are such records).
   */
  unfinished?: number;
}

/** The credential store. All methods may throw the driver's errors wrapped as core errors. */
export interface CredentialStore {
  /**
   * Cross-instance locks (see {@link StoreLocks}). Absent: core serialises per
   * app within its own process only (a store for a single instance).
   */
  readonly locks?: StoreLocks;
  /**
   * Shared call slots (see {@link RateSlots}) on a store several instances
   * share; providers space quota-limited calls through them. Absent: a single
   * instance, whose in-process limiters see every call.
   */
  readonly rateSlots?: RateSlots;
  /**
   * True when several `credhook serve` instances may share this store
   * (PostgreSQL): `credhook serve` then runs the reconcile loop by default.
   * @default false
   */
  readonly shared?: boolean;
  /**
   * Claims the store for a serving instance (`credhook serve`, not `reconcile`).
   * A store only one server may use (the SQLite file) refuses a second one.
   * @throws Conflict another server holds the store
   */
  claimServer?(): Promise<void>;
  /** Creates the schema / runs migrations. Idempotent. */
  init(): Promise<void>;
  /**
   * The event outbox (events.ts): events written with record changes, delivered by `credhook serve`,
   * listed by `credhook audit`. Absent: the store keeps no events (its `events` arguments are ignored).
   */
  readonly outbox?: EventOutbox;
  /**
   * Inserts a new record. The record is taken as it is when `insert` is called (serialised or copied
   * before it returns its promise): the caller may change its object at once, so it need not copy it.
   * @param events written to the {@link outbox} in the same transaction as the record: both or neither
   * @throws Conflict a record with the same id, or a live (not `abandoned`) record with the same appKey + credentialType, exists
   */
  insert(record: CredentialRecord, events?: readonly CredentialEvent[]): Promise<void>;
  /**
   * Replaces an existing record (matched by id); sets nothing itself. Like {@link insert}, takes the
   * record as it is when called: the caller may go on changing its object.
   * @param events written to the {@link outbox} in the same transaction as the record: both or neither
   * @throws NotFound no such id
   */
  save(record: CredentialRecord, events?: readonly CredentialEvent[]): Promise<void>;
  /** The record with this id, or undefined. */
  get(id: string): Promise<CredentialRecord | undefined>;
  /**
   * The records of `ids` in one store read, each as {@link get} reads it: what `credhook reconcile` asks for a page of
   * a gateway's listing (the records its resources' marks name). Optional: a store without it is read one {@link get}
   * per id, one after the other (`recordsById` in store-pages.ts does either) — one round trip each on a networked
   * database: `credhook reconcile --dry-run` took 391 s at a million credentials on PostgreSQL that way (2.2 s at
   * 1,000, 35 s at 100,000; docs/benchmark.md), nearly all of it those round trips. The SQL stores read the
   * credentials table's primary key.
   * @param ids credential ids, in any order; duplicates allowed; empty: an empty map. Core asks for at most
   *   {@link PAGE_LIMIT_MAX} at a time
   * @returns each id's record, keyed by id; an id without a record is absent
   */
  getMany?(ids: readonly string[]): Promise<Map<string, CredentialRecord>>;
  /** The record whose publicId (apiKeyId/clientId) and type match, or undefined. */
  findByPublicId(credentialType: CredentialType, publicId: string): Promise<CredentialRecord | undefined>;
  /**
   * The records whose secret has this fingerprint (`sha256:` and 32 lowercase hex digits, {@link CredentialRecord.keyFingerprint}),
   * oldest first: `credhook inspect --fingerprint`, `credhook revoke|disable --fingerprint`, a secret-scanning alert.
   * Optional: without it the server filters {@link list}. The SQL stores answer from an index.
   */
  findByFingerprint?(fingerprint: string): Promise<CredentialRecord[]>;
  /** The live (not `abandoned`) record of this app and type, or undefined. */
  findByAppKey(appKey: string, credentialType: CredentialType): Promise<CredentialRecord | undefined>;
  /** The `abandoned` records, of one app (any type) when `appKey` is given, else all; oldest first. */
  listAbandoned(appKey?: string): Promise<CredentialRecord[]>;
  /**
   * What a create asks first, in one read: the app's live record of `credentialType` (as
   * {@link findByAppKey}) and its `abandoned` records of any type, oldest first (as
   * {@link listAbandoned} with `appKey`). Optional: core makes those two calls without it.
   */
  findApp?(appKey: string, credentialType: CredentialType): Promise<AppRecords>;
  /**
   * The records that carry {@link CredentialRecord.unsettled}, oldest `updatedAt` first, all at once.
   * Optional: without it core filters {@link list}. At scale, walk {@link listUnsettledPage} instead.
   */
  listUnsettled?(): Promise<CredentialRecord[]>;
  /**
   * Deletes a record; true when it existed.
   * @param events written to the {@link outbox} in the same transaction, only when the record existed
   */
  delete(id: string, events?: readonly CredentialEvent[]): Promise<boolean>;
  /** Records with status `pending` or `revoking` last written before `before` (ISO 8601), oldest first. */
  listUnfinished(before: string): Promise<CredentialRecord[]>;
  /** How many records are `pending` or `revoking` and were last written at or after `since` (ISO 8601): what reconcile skips as too recent. */
  countUnfinishedSince(since: string): Promise<number>;
  /**
   * Every record, oldest `createdAt` first (for drift reports). Reads them all at once: at scale, walk
   * {@link listPage} instead.
   */
  list(): Promise<CredentialRecord[]>;
  /**
   * One page of the records, oldest `createdAt` first, filtered: `credhook list` and `inspect`, the expiry pass's
   * walk by age. Bounded: a page reads at most `limit` records from an index, or examines at most
   * {@link PAGE_SCAN_ROWS} rows when `developer` or `gateway` narrows it. See {@link CredentialListQuery} for the
   * order, the filters and the cursor.
   * @throws ValidationError a `limit` out of 1…{@link PAGE_LIMIT_MAX} or not an integer, or an `after` this method did not return
   */
  listPage(query?: CredentialListQuery): Promise<CredentialPage>;
  /**
   * One page of the records with unsettled gateways, earliest settle time first (only those due at `dueAt` when
   * given): the settle sweep's walk, from a partial index of those records only. See {@link UnsettledListQuery}.
   * @throws ValidationError as {@link listPage}
   */
  listUnsettledPage(query?: UnsettledListQuery): Promise<CredentialPage>;
  /**
   * The records' counts `/metrics` reports, without reading the records (see {@link CredentialCounts}); the event
   * counts are the outbox's `counts()`.
   * @param unfinishedBefore ISO 8601: also count the `pending` and `revoking` records last written before it
   */
  counts(unfinishedBefore?: string): Promise<CredentialCounts>;
  /** Persistent key–value state for one gateway's provider. */
  stateFor(gateway: string): ProviderStateStore;
  /** @throws Error when the store cannot be read */
  health(): Promise<void>;
  /** Closes the connection; further calls fail. */
  close(): Promise<void>;
}

/** What core passes to {@link StoreFactory.create}. */
export interface StoreContext {
  /** YAML path of the store's options, e.g. `store.postgres`, for error messages. */
  configPath: string;
  /** The config file's directory: relative paths in options are relative to it. */
  baseDir: string;
  logger: Logger;
  /**
   * True for a serving process (`credhook serve`, which listens and reports not ready meanwhile):
   * a database that cannot be reached at start may be waited for. One-shot commands and Lambda
   * leave it unset: they fail at once. @default false
   */
  waitAtStart?: boolean;
}

/**
 * What a store package default-exports (`store: { <name>: <options> }` in
 * YAML): `sqlite` loads `@credhook/store-sqlite`, `postgres`
 * `@credhook/store-postgres`, any other name is imported as a package.
 */
export interface StoreFactory<Options = unknown> {
  /** Short type name (`sqlite`, `postgres`, or the third party's). */
  readonly type: string;
  /** JSON Schema (draft 2020-12) of the options value under `store.<name>`. */
  readonly optionsSchema: Record<string, unknown>;
  /**
   * Opens the store and applies its migrations (safe when several instances start at once).
   * @throws ConfigError options valid in shape but unusable; Error when the database cannot be reached
   */
  create(options: Options, context: StoreContext): Promise<CredentialStore>;
}
