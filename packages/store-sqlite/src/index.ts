/**
 * @credhook/store-sqlite: the credential store on SQLite (better-sqlite3), the
 * embedded default (`store: { sqlite: ./data/credhook.db }`).
 *
 * The database file is created with mode 0600 (its directory 0700), runs in WAL
 * mode, and is migrated on {@link SqliteCredentialStore.init}. It holds
 * credential records (ids, app identity, API set, each gateway's secret-free
 * resources) and providers' namespaced state — never a plaintext secret.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import {
  Conflict,
  NotFound,
  type CredentialRecord,
  type CredentialStore,
  type CredentialType,
  type JsonValue,
  type ProviderStateStore,
} from "@credhook/core";

/** Options of {@link SqliteCredentialStore}. */
export interface SqliteStoreOptions {
  /** Database file path (relative to the working directory), or `:memory:`. */
  path: string;
  /** How long a write waits for another process's lock, ms. @default 5000 */
  busyTimeoutMs?: number;
}

/**
 * Ordered schema migrations; `schema_migrations` records the applied versions.
 * Append only: never edit a released migration.
 */
const MIGRATIONS: Array<{ version: number; sql: string }> = [
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
];

type Row = { record: string };

/** A {@link CredentialStore} on one SQLite file. Synchronous underneath; safe for one process (WAL allows readers elsewhere). */
export class SqliteCredentialStore implements CredentialStore {
  private readonly db: Database.Database;
  /** Absolute path of the database file (or `:memory:`). */
  readonly path: string;

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
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.db.pragma("foreign_keys = ON");
    this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  }

  /** Applies pending migrations in one transaction each. */
  async init(): Promise<void> {
    this.db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
    const applied = new Set((this.db.prepare("SELECT version FROM schema_migrations").all() as Array<{ version: number }>).map((r) => r.version));
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      this.db.transaction(() => {
        this.db.exec(m.sql);
        this.db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(m.version, new Date().toISOString());
      })();
    }
  }

  /** Schema version now applied. */
  schemaVersion(): number {
    const row = this.db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number | null };
    return row.v ?? 0;
  }

  async insert(record: CredentialRecord): Promise<void> {
    try {
      this.db
        .prepare(
          "INSERT INTO credentials (id, credential_type, app_key, public_id, status, record, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .run(record.id, record.credentialType, record.appKey, record.publicId, record.status, JSON.stringify(record), record.createdAt, record.updatedAt);
    } catch (err) {
      throw this.constraintAsConflict(err, record);
    }
  }

  async save(record: CredentialRecord): Promise<void> {
    let res;
    try {
      res = this.db
        .prepare("UPDATE credentials SET credential_type = ?, app_key = ?, public_id = ?, status = ?, record = ?, updated_at = ? WHERE id = ?")
        .run(record.credentialType, record.appKey, record.publicId, record.status, JSON.stringify(record), record.updatedAt, record.id);
    } catch (err) {
      throw this.constraintAsConflict(err, record);
    }
    if (res.changes === 0) throw new NotFound(`credential record ${record.id} does not exist`);
  }

  /** A unique-constraint failure as a Conflict (409); anything else unchanged. */
  private constraintAsConflict(err: unknown, record: CredentialRecord): unknown {
    if ((err as { code?: string }).code?.startsWith("SQLITE_CONSTRAINT")) {
      return new Conflict(`a credential for app '${record.appKey}' (${record.credentialType}) is already recorded`, { cause: err });
    }
    return err;
  }

  async get(id: string): Promise<CredentialRecord | undefined> {
    return this.parse(this.db.prepare("SELECT record FROM credentials WHERE id = ?").get(id) as Row | undefined);
  }

  async findByPublicId(credentialType: CredentialType, publicId: string): Promise<CredentialRecord | undefined> {
    if (publicId === "") return undefined;
    return this.parse(
      this.db.prepare("SELECT record FROM credentials WHERE credential_type = ? AND public_id = ? ORDER BY created_at LIMIT 1").get(credentialType, publicId) as
        | Row
        | undefined,
    );
  }

  async findByAppKey(appKey: string, credentialType: CredentialType): Promise<CredentialRecord | undefined> {
    return this.parse(this.db.prepare("SELECT record FROM credentials WHERE app_key = ? AND credential_type = ?").get(appKey, credentialType) as Row | undefined);
  }

  async delete(id: string): Promise<boolean> {
    return this.db.prepare("DELETE FROM credentials WHERE id = ?").run(id).changes > 0;
  }

  async listUnfinished(before: string): Promise<CredentialRecord[]> {
    const rows = this.db
      .prepare("SELECT record FROM credentials WHERE status IN ('pending','revoking') AND updated_at < ? ORDER BY updated_at")
      .all(before) as Row[];
    return rows.map((r) => this.parse(r)!);
  }

  async list(): Promise<CredentialRecord[]> {
    return (this.db.prepare("SELECT record FROM credentials ORDER BY created_at").all() as Row[]).map((r) => this.parse(r)!);
  }

  stateFor(gateway: string): ProviderStateStore {
    const db = this.db;
    return {
      async get(key) {
        const row = db.prepare("SELECT value FROM provider_state WHERE gateway = ? AND key = ?").get(gateway, key) as { value: string } | undefined;
        return row ? (JSON.parse(row.value) as JsonValue) : undefined;
      },
      async put(key, value) {
        db.prepare("INSERT INTO provider_state (gateway, key, value) VALUES (?, ?, ?) ON CONFLICT (gateway, key) DO UPDATE SET value = excluded.value").run(
          gateway,
          key,
          JSON.stringify(value),
        );
      },
      async delete(key) {
        return db.prepare("DELETE FROM provider_state WHERE gateway = ? AND key = ?").run(gateway, key).changes > 0;
      },
      async list(prefix) {
        const rows = db
          .prepare("SELECT key, value FROM provider_state WHERE gateway = ? AND substr(key, 1, ?) = ? ORDER BY key")
          .all(gateway, prefix.length, prefix) as Array<{ key: string; value: string }>;
        return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as JsonValue }));
      },
    };
  }

  async health(): Promise<void> {
    this.db.prepare("SELECT 1").get();
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private parse(row: Row | undefined): CredentialRecord | undefined {
    return row ? (JSON.parse(row.record) as CredentialRecord) : undefined;
  }
}

/** Opens and migrates a store at `path`. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<SqliteCredentialStore> {
  const store = new SqliteCredentialStore(options);
  await store.init();
  return store;
}
