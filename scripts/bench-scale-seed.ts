/**
 * The seeder of `pnpm bench --scale` (scripts/bench-scale.ts): N credentials with their events written straight into
 * a store's tables — not through the webhook — shaped as `credhook serve` on a `provider: local` gateway writes them,
 * so that serve and the commands treat them as their own:
 *
 * - the record (`credentials`): one API on gateway `local`, its binding (`lk…` native id, `resources: { kind:
 *   "apiKey" }`), the key's fingerprint, and the expiry mark of {@link SCALE_EXPIRY} as the pass of a day ago left it;
 * - the embedded provider's state (`provider_state`, gateway `local`): `cred:<nativeId>` with the key's SHA-256
 *   digest only — never the key —, the `key:<digest>` index the embedded gateway finds keys by, the
 *   `cid:<credentialId>:<nativeId>` index `findByCredential` reads, the change stamp, and the marks that both indexes
 *   are complete (`meta:key-index-complete`, `meta:credential-index-complete`: packages/provider-local/src/index.ts);
 * - serve's own state (namespace `@credhook-serve`, packages/server/src/drift-check.ts): the gateways its earlier
 *   starts had (`gateways: ["local"]`), so that its start-up drift count runs after ready;
 * - its events (`events`): `credential.created` and `credential.updated` (its plan moved), `credential.expiring` and
 *   `credential.expired` where the mark says the pass wrote them; all delivered, but for a backlog of pending
 *   `credential.updated` events on the newest apps, which a sink then receives ({@link SeedOptions.backlog}).
 *
 * The store is thus as a running credhook leaves it, and a serve start on it is an ordinary restart: no one-time pass
 * (the key-index pass of an upgrade, the first start's drift walk before ready). {@link forgetStarts} takes serve's
 * and the embedded provider's marks and the `cid:` entries away again, for the figure of a first start after an upgrade.
 *
 * Creation times are spread evenly over the 91 days before the seed, oldest first (record ids are UUIDv7 of that
 * time, as core makes them), so that an expiry pass finds about 1/91 of them due to warn and 1/91 due to expire.
 * Rows are generated a batch at a time and written in order: memory stays flat whatever N is. The count triggers
 * fire on every insert, so `store_counts` stays exact. SQLite: one prepared statement per table, a transaction per
 * batch, the WAL truncated after each; PostgreSQL: one multi-row `INSERT … SELECT FROM unnest(…)` per table per batch.
 */
import { createHash, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import pg from "pg";
import {
  type CredentialEvent,
  credentialEvent,
  credentialExpiry,
  type GatewayExpiryConfig,
  resolveExpiryPolicies,
} from "../packages/core/src/index.js";
import { appKeyOf, type CredentialRecord, EVENT_INSERT_COLUMNS, eventRow } from "../packages/core/src/entry/store.js";
import { openPostgresStore } from "../packages/store-postgres/src/index.js";
import { SERVE_STATE } from "../packages/server/src/drift-check.js";
import { openSqliteStore } from "../packages/store-sqlite/src/index.js";

/** The seeded credentials' gateway (a `provider: local` gateway of the bench's config). */
export const SCALE_GATEWAY = "local";

/** The expiry policy of {@link SCALE_GATEWAY} (`gateways.local.expiry` in the bench's config): the marks are seeded by it. */
export const SCALE_EXPIRY: GatewayExpiryConfig = { maxAgeDays: 90, warnDays: 7, action: "notify" };

const DAY_MS = 86_400_000;
/** The seeded creation times span this long, ending two hours before the seed (every update then lies in the past). */
const SPAN_MS = 91 * DAY_MS - 2 * 3_600_000;
/** The expiry pass the seeded marks say ran last: a day before the seed. */
const LAST_PASS_MS = DAY_MS;
/** Credentials per generated batch (and per statement on PostgreSQL). */
const BATCH = 1000;
/**
 * The rows a running credhook has written besides the credentials' own, `[gateway, key, value]`: the embedded
 * provider's change stamp (a UUIDv7 of `now`) and the marks of its complete indexes, and the gateways serve's starts
 * remembered.
 */
function startRows(now: number): Array<[string, string, unknown]> {
  return [
    [SCALE_GATEWAY, "meta:changed", uuidV7(now)],
    [SCALE_GATEWAY, "meta:key-index-complete", true],
    [SCALE_GATEWAY, "meta:credential-index-complete", true],
    [SERVE_STATE, "gateways", [SCALE_GATEWAY]],
  ];
}

/** Credentials per SQLite transaction. */
const COMMIT_EVERY = 50 * BATCH;

/** What to seed. */
export interface SeedOptions {
  /** Credentials (apps: one credential each). */
  count: number;
  /** Pending events (`credential.updated`) on the newest apps, after their delivered ones, for a sink to drain. @default 0 */
  backlog?: number;
  /** The seed's "now", ms since the epoch. @default Date.now() */
  now?: number;
}

/** What a seed wrote, and how long it took. */
export interface SeedSummary {
  credentials: number;
  /** Events written, the pending backlog included. */
  events: number;
  /** Of those, pending. */
  pending: number;
  /** Provider-state rows (the key and credential-id indexes, the credentials' state, the change stamp, the marks). */
  stateRows: number;
  /** Wall time of the whole seed, ms (the store's migrations included). */
  ms: number;
}

/** The app of seeded credential `i`: its slug is `scale-app-<i>`, which `credhook inspect` and `audit --app` take. */
export function seededApp(i: number): { appName: string; developer: string; appSlug: string } {
  return { appName: `Scale app ${i}`, developer: `dev${i % 1000}@example.com`, appSlug: `scale-app-${i}` };
}

/** A UUID version 7 of time `ms` (RFC 9562, section 5.7), as core's record ids are. */
function uuidV7(ms: number): string {
  const t = ms.toString(16).padStart(12, "0");
  const r = randomBytes(10).toString("hex");
  const variant = (8 | (Number.parseInt(r[3]!, 16) & 3)).toString(16);
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(7, 19)}`;
}

/** One seeded credential's rows. */
interface SeedRows {
  record: CredentialRecord;
  events: Array<{ event: CredentialEvent; pending: boolean }>;
  /** `[key, value]` of gateway {@link SCALE_GATEWAY}. */
  state: Array<[string, unknown]>;
}

/** The rows of credentials `from` to `to` − 1 (oldest first). */
function* credentialRows(from: number, to: number, o: Required<SeedOptions>): Generator<SeedRows> {
  const { policies } = resolveExpiryPolicies({ [SCALE_GATEWAY]: { expiry: SCALE_EXPIRY } });
  const iso = (ms: number) => new Date(ms).toISOString();
  const start = o.now - 91 * DAY_MS;
  const lastPass = iso(o.now - LAST_PASS_MS);
  const backlogFrom = Math.max(0, o.count - o.backlog);
  const backlogApps = o.count - backlogFrom;
  for (let i = from; i < to; i++) {
    const created = start + Math.floor((i * SPAN_MS) / o.count);
    const createdAt = iso(created);
    const updatedAt = iso(created + 3_600_000);
    const nativeId = `lk${created.toString(36).padStart(9, "0")}${randomBytes(10).toString("hex").slice(0, 13)}`;
    const digest = createHash("sha256").update(randomBytes(30).toString("base64url")).digest("hex");
    const app = seededApp(i);
    const binding = { gateway: SCALE_GATEWAY, nativeId, resources: { kind: "apiKey" } };
    const record: CredentialRecord = {
      id: uuidV7(created),
      credentialType: "API_KEY",
      appKey: appKeyOf(app),
      app,
      publicId: nativeId,
      status: "active",
      apis: [{ id: "5aba4csvd4", gateway: SCALE_GATEWAY, usagePlans: ["1el57v"] }],
      bindings: [binding],
      createdAt,
      updatedAt: createdAt,
      keyFingerprint: `sha256:${digest.slice(0, 32)}`,
    };
    const events: SeedRows["events"] = [
      { event: credentialEvent("credential.created", record, createdAt), pending: false },
    ];
    record.apis = [{ id: "5aba4csvd4", gateway: SCALE_GATEWAY, usagePlans: ["2plan2"] }];
    record.updatedAt = updatedAt;
    events.push({ event: credentialEvent("credential.updated", record, updatedAt), pending: false });
    // The mark as the pass of a day ago left it (the values the pass computes: the next one rewrites none).
    const decided = credentialExpiry(record, policies)!;
    const mark: NonNullable<CredentialRecord["expiry"]> = {
      expiresAt: decided.expiresAt,
      warnAt: decided.warnAt,
      action: decided.policy.action,
      policy: decided.policy.path,
    };
    const data = () => ({
      expiry: {
        expiresAt: mark.expiresAt,
        action: mark.action,
        policy: mark.policy,
        maxAgeDays: decided.policy.maxAgeDays,
        warnDays: decided.policy.warnDays,
      },
    });
    record.expiry = mark;
    if (mark.warnAt <= lastPass && mark.warnAt < mark.expiresAt) {
      mark.warnedAt = mark.warnAt;
      record.updatedAt = mark.warnAt;
      events.push({
        event: credentialEvent("credential.expiring", record, mark.warnAt, { reason: "expiring", ...data() }),
        pending: false,
      });
    }
    if (mark.expiresAt <= lastPass) {
      mark.expiredAt = mark.expiresAt;
      mark.actedAt = mark.expiresAt;
      record.updatedAt = mark.expiresAt;
      events.push({
        event: credentialEvent("credential.expired", record, mark.expiresAt, { reason: "expired", ...data() }),
        pending: false,
      });
    }
    if (i >= backlogFrom) {
      const j = i - backlogFrom;
      const n = Math.floor(o.backlog / backlogApps) + (j < o.backlog % backlogApps ? 1 : 0);
      for (let k = 0; k < n; k++)
        events.push({ event: credentialEvent("credential.updated", record, record.updatedAt), pending: true });
    }
    const state = {
      credentialType: "API_KEY",
      credentialId: record.id,
      secretHash: digest,
      enabled: true,
      apis: [{ id: "5aba4csvd4", usagePlans: ["2plan2"] }],
      appName: app.appName,
      developer: app.developer,
      createdAt,
      updatedAt,
    };
    yield {
      record,
      events,
      state: [
        [`key:${digest}`, { nativeId }],
        [`cred:${nativeId}`, state],
        [`cid:${record.id}:${nativeId}`, true],
      ],
    };
  }
}

/** The batches of a seed, {@link BATCH} credentials each, generated as they are taken. */
function* batches(o: Required<SeedOptions>): Generator<SeedRows[]> {
  for (let from = 0; from < o.count; from += BATCH) yield [...credentialRows(from, Math.min(o.count, from + BATCH), o)];
}

/** The options with their defaults. */
function resolved(options: SeedOptions): Required<SeedOptions> {
  return { backlog: 0, now: Date.now(), ...options };
}

/** How a store takes a JSON column's value: SQLite as text, PostgreSQL as the value (in one JSON document per statement). */
type JsonColumn = (value: unknown) => unknown;

/** The columns the seeder writes per table; `json` marks the one holding a JSON document (JSONB on PostgreSQL). */
const TABLES = {
  credentials: {
    columns: ["id", "credential_type", "app_key", "public_id", "status", "record", "created_at", "updated_at"],
    json: "record",
  },
  events: {
    columns: [...EVENT_INSERT_COLUMNS.split(", "), "status", "settled_at"],
    json: "event",
  },
  provider_state: { columns: ["gateway", "key", "value"], json: "value" },
} as const;

/** A record's row. */
function credentialRow(r: CredentialRecord, json: JsonColumn): Record<string, unknown> {
  return {
    id: r.id,
    credential_type: r.credentialType,
    app_key: r.appKey,
    public_id: r.publicId,
    status: r.status,
    record: json(r),
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  };
}

/** An event's row: {@link eventRow}'s columns, then its delivery state (delivered a second after the change, or pending). */
function eventRowOf(e: SeedRows["events"][number], json: JsonColumn): Record<string, unknown> {
  const values = eventRow(e.event);
  const row: Record<string, unknown> = Object.fromEntries(
    EVENT_INSERT_COLUMNS.split(", ").map((c, i) => [c, values[i]]),
  );
  row.event = json(e.event);
  row.status = e.pending ? "pending" : "delivered";
  row.settled_at = e.pending ? null : new Date(Date.parse(e.event.time) + 1000).toISOString();
  return row;
}

/** The rows of `rows` per table. */
function tableRows(rows: SeedRows[], json: JsonColumn): Record<keyof typeof TABLES, Array<Record<string, unknown>>> {
  return {
    credentials: rows.map((r) => credentialRow(r.record, json)),
    events: rows.flatMap((r) => r.events.map((e) => eventRowOf(e, json))),
    provider_state: rows.flatMap((r) =>
      r.state.map(([key, value]) => ({ gateway: SCALE_GATEWAY, key, value: json(value) })),
    ),
  };
}

/** Counts what a seed writes as it goes. */
function tally(): SeedSummary & { add(rows: SeedRows[]): void } {
  return {
    credentials: 0,
    events: 0,
    pending: 0,
    stateRows: startRows(0).length,
    ms: 0,
    add(rows) {
      for (const r of rows) {
        this.credentials += 1;
        this.events += r.events.length;
        this.pending += r.events.filter((e) => e.pending).length;
        this.stateRows += r.state.length;
      }
    },
  };
}

/** The summary of `t`, its time set from `t0` (performance.now()). */
function summary(t: ReturnType<typeof tally>, t0: number): SeedSummary {
  const { add: _, ...s } = t;
  return { ...s, ms: performance.now() - t0 };
}

/** What the seeder uses of better-sqlite3's `Database` (https://github.com/WiseLibs/better-sqlite3/blob/master/docs/api.md). */
interface SqliteDb {
  pragma(source: string): unknown;
  prepare(sql: string): { run(...params: unknown[]): unknown };
  exec(sql: string): unknown;
  readonly inTransaction: boolean;
  close(): void;
}

/**
 * The SQLite file at `path`, opened with the store's own driver (a dependency of the SQLite store's package, not of
 * this checkout's root).
 */
function openSqliteFile(path: string): SqliteDb {
  const Database = createRequire(new URL("../packages/store-sqlite/package.json", import.meta.url))(
    "better-sqlite3",
  ) as new (
    path: string,
  ) => SqliteDb;
  return new Database(path);
}

/**
 * Seeds the SQLite store at `path` (made and migrated by the store itself first; no server may hold it).
 * @throws the driver's error when the file cannot be written
 */
export async function seedSqlite(path: string, options: SeedOptions): Promise<SeedSummary> {
  const t0 = performance.now();
  const o = resolved(options);
  await (await openSqliteStore({ path })).close();
  const db = openSqliteFile(path);
  const t = tally();
  try {
    db.pragma("synchronous = OFF");
    // A page cache of 256 MiB (bounded, whatever N is): the random keys of the key index and the events' ids
    // otherwise miss SQLite's default 2 MiB at every insert once the indexes outgrow it.
    db.pragma("cache_size = -262144");
    const insert = Object.fromEntries(
      Object.entries(TABLES).map(([table, { columns }]) => [
        table,
        db.prepare(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`),
      ]),
    ) as Record<keyof typeof TABLES, { run(row: Record<string, unknown>): unknown }>;
    // A transaction per COMMIT_EVERY credentials (a page the batches share goes to the WAL once per commit), then
    // the WAL copied into the file and truncated: it never holds more than one transaction's pages.
    db.exec("BEGIN");
    for (const rows of batches(o)) {
      const all = tableRows(rows, (v) => JSON.stringify(v));
      for (const table of Object.keys(TABLES) as Array<keyof typeof TABLES>)
        for (const row of all[table]) insert[table].run(row);
      t.add(rows);
      if (t.credentials % COMMIT_EVERY === 0) {
        db.exec("COMMIT");
        db.pragma("wal_checkpoint(TRUNCATE)");
        db.exec("BEGIN");
      }
    }
    for (const [gateway, key, value] of startRows(o.now))
      insert.provider_state.run({ gateway, key, value: JSON.stringify(value) });
    db.exec("COMMIT");
    db.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    if (db.inTransaction) db.exec("ROLLBACK");
    db.close();
  }
  return summary(t, t0);
}

/**
 * Seeds the PostgreSQL store at `url` in `schema` (made and migrated by the store itself first).
 * @throws the driver's error when the database cannot be reached or written
 */
export async function seedPostgres(url: string, schema: string, options: SeedOptions): Promise<SeedSummary> {
  const t0 = performance.now();
  const o = resolved(options);
  await (await openPostgresStore({ url, schema, failFast: true })).close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const t = tally();
  /** One `INSERT … SELECT FROM json_to_recordset(…)` per table, in one transaction: a batch's rows in one JSON document each. */
  const write = async (all: Record<keyof typeof TABLES, Array<Record<string, unknown>>>) => {
    await client.query("BEGIN");
    for (const [table, { columns, json }] of Object.entries(TABLES) as Array<
      [keyof typeof TABLES, (typeof TABLES)[keyof typeof TABLES]]
    >) {
      const types = columns.map((c) => `${c} ${c === json ? "jsonb" : "text"}`).join(", ");
      await client.query(
        `INSERT INTO "${schema}".${table} (${columns.join(", ")}) SELECT ${columns.join(", ")} FROM json_to_recordset($1::json) AS r(${types})`,
        [JSON.stringify(all[table])],
      );
    }
    await client.query("COMMIT");
  };
  try {
    await client.query("SET synchronous_commit = off");
    // The next batch is generated while the database writes the one before (one in flight).
    let inFlight: Promise<void> | undefined;
    for (const rows of batches(o)) {
      const all = tableRows(rows, (v) => v);
      await inFlight;
      inFlight = write(all);
      inFlight.catch(() => undefined); // awaited (and thrown) at the next batch or after the last
      t.add(rows);
    }
    await inFlight;
    for (const [gateway, key, value] of startRows(o.now))
      await client.query(`INSERT INTO "${schema}".provider_state (gateway, key, value) VALUES ($1, $2, $3::jsonb)`, [
        gateway,
        key,
        JSON.stringify(value),
      ]);
    await client.query(`ANALYZE "${schema}".credentials, "${schema}".events, "${schema}".provider_state`);
  } finally {
    await client.end();
  }
  return summary(t, t0);
}

/**
 * The `WHERE` clause of what {@link forgetStarts} deletes from `provider_state`: the rows of {@link startRows} but the
 * change stamp, and every `cid:` entry.
 */
const FORGET_STARTS_WHERE = `(gateway = '${SCALE_GATEWAY}' AND (key LIKE 'cid:%' OR key IN ('meta:key-index-complete', 'meta:credential-index-complete'))) OR gateway = '${SERVE_STATE}'`;

/**
 * Makes a seeded store one that an older credhook left, whose next serve start is the first after an upgrade: the
 * embedded provider's `cid:` entries and its marks of complete indexes, and serve's remembered gateways, deleted. That
 * start then pays the one-time passes (the key-index pass over every credential, the drift walk before ready).
 * @param store where the seed went: a SQLite file's path, or a PostgreSQL URL and schema
 * @returns the provider-state rows deleted
 * @throws the driver's error when the store cannot be written
 */
export async function forgetStarts(store: { sqlite: string } | { url: string; schema: string }): Promise<number> {
  if ("sqlite" in store) {
    const db = openSqliteFile(store.sqlite);
    try {
      return (db.prepare(`DELETE FROM provider_state WHERE ${FORGET_STARTS_WHERE}`).run() as { changes: number })
        .changes;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: store.url });
  await client.connect();
  try {
    return (
      (await client.query(`DELETE FROM "${store.schema}".provider_state WHERE ${FORGET_STARTS_WHERE}`)).rowCount ?? 0
    );
  } finally {
    await client.end();
  }
}
