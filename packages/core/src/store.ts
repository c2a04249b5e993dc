/**
 * The credential store interface: where core records which native resource each
 * gateway holds for a credential — before the cloud calls (intent, status
 * `pending`) and after them — so that a crash in between is recoverable
 * (`credhook reconcile`), never an orphaned live key.
 *
 * A store never receives a secret: only ids, the app's identity, the API set and
 * each provider's secret-free resources. Implementations: `@credhook/store-sqlite`
 * (embedded default); later `store-postgres`.
 */
import { v7 as uuidv7 } from "uuid";
import type { CredentialType } from "./contract.js";
import { pooledRandomBytes } from "./secrets.js";
import type { Logger } from "./logger.js";
import type { AppIdentity, GatewayApi, ProviderResources, ProviderStateStore } from "./provider.js";
import type { CredentialEvent, EventOutbox } from "./events.js";

/**
 * Lifecycle of a credential record (docs/multi-cloud.md, "The life of a credential record"):
 * - `pending`: intent recorded, cloud calls under way (or interrupted by a crash);
 * - `active`: every gateway holds it;
 * - `revoking`: revoke started and not finished on every gateway;
 * - `abandoned`: a create failed and the portal never received the credential,
 *   but a cloud write may have landed (outcome unknown) or its cleanup failed:
 *   the record keeps every hint to find what exists (bindings, the credential
 *   id that marks it, the gateways to search) until cleanup has found nothing
 *   left for {@link AbandonedInfo.settleUntil}. Never returned to the portal,
 *   never matched by an app's next create (which gets a new credential id).
 * A fully revoked credential's record is deleted.
 */
export type CredentialStatus = "pending" | "active" | "revoking" | "abandoned";

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
 * A new credential record id: a UUID version 7 (RFC 9562, section 5.7: 48 bits of Unix
 * time in ms, then 74 random bits; the `uuid` package), so ids sort by creation time. The
 * stores' primary-key index then grows at one end: the records of one commit share its last
 * page instead of each dirtying a page of its own (with the embedded provider's time-ordered
 * key ids, about 40 % fewer WAL frames per create on SQLite, and shorter commits and
 * checkpoints; measured). Records written before keep their version 4 ids.
 */
export function newRecordId(): string {
  // The random bits from core's buffered CSPRNG bytes: the package's own source makes one getrandom call per id (2–3 µs, 10× a v4 id's).
  return uuidv7({ random: pooledRandomBytes(16) });
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

/** Why and since when a record is `abandoned`, and where to search for what it may own. */
export interface AbandonedInfo {
  /** ISO 8601 time the create was given up. */
  at: string;
  /** Secret-free reason, for logs and `credhook reconcile`'s report. */
  reason: string;
  /** Gateways where a write of this credential may have landed unseen: searched by the credential's mark until settled. */
  uncertain: string[];
  /**
   * ISO 8601 time until which a search that finds nothing does not yet prove
   * that nothing exists (a cloud may still complete a write the client gave up
   * on). The record is deleted at the first clean search after this time.
   */
  settleUntil: string;
  /** Cleanup attempts so far. */
  attempts: number;
  /** ISO 8601 time of the last cleanup attempt. */
  lastAttemptAt?: string;
  /** The last cleanup error per gateway, secret-free. */
  lastErrors?: string[];
}

/**
 * Gateways of a live credential where a failed update (or its rollback, or an
 * update a crash interrupted) may still change something after credhook gave
 * up on the call: a cloud may complete a write the client gave up on
 * (docs/cloud-facts.md). Once `settleUntil` has passed, a pass brings each such
 * gateway back to the record — re-applying the record's API set where the
 * credential is bound, revoking whatever carries its mark where it is not —
 * and the field goes.
 */
export interface UnsettledInfo {
  /** Each gateway with the API set the uncertain write asked for (what may have landed there). */
  gateways: Array<{ gateway: string; attempted: GatewayApi[] }>;
  /** ISO 8601 time after which the convergence pass runs (before it, a late write may still land). */
  settleUntil: string;
  /** Convergence attempts so far. */
  attempts: number;
  /** The last attempt's errors per gateway, secret-free. */
  lastErrors?: string[];
}

/** What one gateway holds for a credential. */
export interface GatewayBinding {
  /** Gateway name (key under `gateways:`). */
  gateway: string;
  /** Native id on that gateway (API key id, client id, subscription id …). */
  nativeId: string;
  /** Provider's secret-free resources for later update/revoke. */
  resources: ProviderResources;
  /**
   * The credential id the resource's ownership mark carries, when it differs
   * from the record's id: `""` when the record was rebuilt from the request's
   * ids after the store lost it (the provider then checks only the gateway's
   * mark). Absent: the record's id.
   */
  markId?: string;
}

/** The operation a `pending` record was in when it was last written. */
export interface PendingOperation {
  op: "create" | "update";
  /** ISO 8601 time the operation started. */
  startedAt: string;
  /** Gateways the operation meant to create the credential on. */
  createOn: string[];
  /** Gateways the operation meant to remove it from. */
  removeFrom: string[];
  /** The API set before the operation (for rolling an interrupted update back). */
  previousApis: GatewayApiWithGateway[];
  /** The API set the operation was moving to. */
  desiredApis?: GatewayApiWithGateway[];
}

/** An API of the app and the gateway it is routed to. */
export interface GatewayApiWithGateway extends GatewayApi {
  gateway: string;
}

/** Why and since when a credential is turned off ({@link CredentialRecord.disabled}). */
export interface DisabledInfo {
  /** ISO 8601 time of the decision (written before any gateway is called). */
  at: string;
  /** Why, in words, secret-free (`leaked`, an alert's source, `expired`). */
  reason?: string;
  /** The gateways that confirmed it is off; fewer than the bindings while a disable is unfinished (a retry completes it). */
  gateways: string[];
}

/**
 * A credential's expiry (docs/expiry.md), as the expiry pass last decided it from the config
 * (`gateways.<name>.expiry`), and the marks of what the pass did: each event is written once.
 */
export interface ExpiryInfo {
  /** ISO 8601 time it expires: its creation time + the deciding policy's `maxAgeDays`. */
  expiresAt: string;
  /** ISO 8601 time `credential.expiring` is due (`expiresAt` − `warnDays`; equal to `expiresAt`: no warning). */
  warnAt: string;
  /** What happens at the expiry: `notify`, `disable` or `revoke`. */
  action: "notify" | "disable" | "revoke";
  /** The YAML path of the deciding policy (`gateways.aws-us.expiry`, `gateways.aws-us.expiry.plans.gold`). */
  policy: string;
  /** ISO 8601 time `credential.expiring` was written. */
  warnedAt?: string;
  /** ISO 8601 time `credential.expired` was written; from then on the mark no longer follows the config. */
  expiredAt?: string;
  /** ISO 8601 time the action completed (a `notify` at once); absent after `expiredAt`: the next pass retries it. */
  actedAt?: string;
}

/** One credential as the store keeps it. */
export interface CredentialRecord {
  /** credhook's id (UUID v4). */
  id: string;
  credentialType: CredentialType;
  /** Identity of the app, as `appKeyOf` encodes it: `slug:<developer>/<appSlug>`, or `app:<developer>/<appName>` without a slug. */
  appKey: string;
  app: AppIdentity;
  /** The id returned to the portal (apiKeyId / clientId): the first gateway's native id. Empty until known. */
  publicId: string;
  status: CredentialStatus;
  /** The app's full API set, each with its gateway. */
  apis: GatewayApiWithGateway[];
  /** What each gateway holds. */
  bindings: GatewayBinding[];
  /** Set while status is `pending`. */
  pending?: PendingOperation;
  /** Set while status is `abandoned`. */
  abandoned?: AbandonedInfo;
  /** Set while a failed or interrupted update's writes may still land on some gateways (status `active`). */
  unsettled?: UnsettledInfo;
  /**
   * The fingerprint of the credential's secret (`secretFingerprint` in events.ts: a truncated SHA-256, one-way),
   * when credhook saw the value (a create, a rotation); never the value. Events carry it.
   */
  keyFingerprint?: string;
  /**
   * Set while an operator, a secret-scanning alert or expiry has turned the credential off on its gateways
   * (`credhook disable`; the record and every gateway's resource are kept, calls with it are refused).
   * The portal's update is refused (409) until `credhook enable`; its revoke works as always.
   */
  disabled?: DisabledInfo;
  /** ISO 8601 time the key was first reported leaked: its `credential.leaked` event is written once. */
  leakedAt?: string;
  /** Its expiry and what the expiry pass did (docs/expiry.md); absent while no expiry policy applies to it. */
  expiry?: ExpiryInfo;
  /** Non-secret extras returned to the portal at create (token endpoint, scopes), kept for replayed creates. */
  customCredentials?: Record<string, string>;
  /** ISO 8601 creation time. */
  createdAt: string;
  /** ISO 8601 time of the last write. */
  updatedAt: string;
}

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

/**
 * Call slots shared by every instance on the store, for the clouds' quotas,
 * which are per account — not per instance (docs/cloud-facts.md). Each call of a
 * limited operation reserves the next slot of its key. The slots of a key form
 * one token bucket for all instances (GCRA, the generic cell rate algorithm:
 * one "theoretical arrival time" per key): after an idle period up to `burst`
 * slots start at once, then one every `intervalMs`, so at most
 * `burst - 1 + t / intervalMs` calls start in any `t` ms, wherever they run.
 * With `burst` 1, slots are at least `intervalMs` apart.
 */
export interface RateSlots {
  /**
   * Reserves the next slot of `key`.
   * @param intervalMs spacing between two slots of the key at the steady rate, ms
   * @param burst slots that may start at once after an idle period (≥ 1) @default 1
   * @returns how long to wait before making the call, ms (0: now)
   */
  reserve(key: string, intervalMs: number, burst?: number): Promise<number>;
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
   * The records that carry {@link CredentialRecord.unsettled}, oldest first.
   * Optional: without it core filters {@link list}.
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
  /** Every record (for drift reports). */
  list(): Promise<CredentialRecord[]>;
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
