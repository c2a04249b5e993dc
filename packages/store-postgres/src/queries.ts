/**
 * The SQL of the store's hot reads (migration 0006): the paged record walks, the counts `/metrics` reads, the
 * outbox's claim and its reads by app, and the migration that gives each its index and keeps the counts. The
 * store's tests hold every read to its plan (`EXPLAIN (FORMAT JSON)` over enough rows that the planner must choose),
 * so a dropped index or a rewritten query that falls back to a scan fails them.
 *
 * The walks order by `COLLATE "C"` (byte order, as SQLite's BINARY and the other stores): the database's default
 * collation may order punctuation otherwise, and a cursor's position must compare exactly as its index orders.
 */
import { sql, type Kysely } from "kysely";
import {
  CREDENTIAL_STATUSES,
  EVENT_READ_COLUMNS,
  EVENT_STATUSES,
  EVENTS_APP_INDEXES_SQL,
  STORE_COUNT_COLUMNS,
  STORE_COUNT_FIRST_COUNTS,
  type CredentialListQuery,
  type EventFilter,
  eventStatusOf,
  type PagePosition,
  type StatePageBounds,
} from "@credhook/core/store";

/** The settle time of a record's unsettled gateways; the expression of the `credentials_unsettled` index (the reads repeat it exactly). */
export const SETTLE_UNTIL = "(record->'unsettled'->>'settleUntil')";
/**
 * The records with unsettled gateways: the condition of the partial `credentials_unsettled` index. `?` rather than
 * `SETTLE_UNTIL IS NOT NULL`: PostgreSQL keeps no statistics of an expression outside an index, and estimated that
 * nearly every record has a non-null settle time (a scan, measured); it estimates `?` as selective.
 */
const UNSETTLED = "record ? 'unsettled'";
/** The app's slug and name in a record; the expressions of the `credentials_app_slug` and `credentials_app_name` indexes. */
const APP_SLUG = "(record->'app'->>'appSlug')";
const APP_NAME = "(record->'app'->>'appName')";

/** Slots of `store_counts`: a write adds its deltas to the row of its session (`pg_backend_pid() % COUNT_SLOTS`), so that concurrent writers seldom wait for one row's lock. */
export const COUNT_SLOTS = 32;

/**
 * The trigger function that keeps `store_counts` for `table`: statement-level, over the statement's transition
 * tables (`new_rows`, `old_rows`), so a statement of thousands of rows (`settleUnsent`) adds its deltas in one
 * update. It writes only the row of its session's slot, and only when a count changed; in the statement's
 * transaction, so a statement rolled back takes its counts with it. One row per transaction: no deadlock between
 * two writers of one slot.
 * @param schema the store's schema, written into the function (a trigger may fire under another search_path)
 */
function countFunctionSql(schema: string, table: "credentials" | "events", statuses: readonly string[]): string {
  const sums = statuses.map((s) => `coalesce(sum(sign) FILTER (WHERE status = '${s}'), 0)`).join(", ");
  const set = statuses.map((s, i) => `${table}_${s} = ${table}_${s} + d[${i + 1}]`).join(", ");
  const zero = statuses.map(() => "0").join(", ");
  return `CREATE FUNCTION "${schema}".store_count_${table}() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE d bigint[];
    BEGIN
      IF TG_OP = 'INSERT' THEN
        SELECT ARRAY[${sums}] INTO d FROM (SELECT status, 1 AS sign FROM new_rows) t;
      ELSIF TG_OP = 'DELETE' THEN
        SELECT ARRAY[${sums}] INTO d FROM (SELECT status, -1 AS sign FROM old_rows) t;
      ELSE
        SELECT ARRAY[${sums}] INTO d FROM (SELECT status, 1 AS sign FROM new_rows UNION ALL SELECT status, -1 FROM old_rows) t;
      END IF;
      IF d <> ARRAY[${zero}]::bigint[] THEN
        UPDATE "${schema}".store_counts SET ${set} WHERE slot = pg_backend_pid() % ${COUNT_SLOTS};
      END IF;
      RETURN NULL;
    END $fn$`;
}

/** The three statement-level triggers (insert, delete, update) that run {@link countFunctionSql}'s function (a trigger with transition tables serves one event). */
function countTriggersSql(table: "credentials" | "events"): string[] {
  const run = `FOR EACH STATEMENT EXECUTE FUNCTION store_count_${table}()`;
  return [
    `CREATE TRIGGER ${table}_count_insert AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_rows ${run}`,
    `CREATE TRIGGER ${table}_count_delete AFTER DELETE ON ${table} REFERENCING OLD TABLE AS old_rows ${run}`,
    `CREATE TRIGGER ${table}_count_update AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows ${run}`,
  ];
}

/**
 * Migration 0006: an index for every hot read, and the counts kept as the writes happen.
 * - `credentials_created (created_at, id)`: the walk of `listPage` and the expiry pass; `credentials_status_created`:
 *   the same walk within one state;
 * - `credentials_unsettled`: the records with unsettled gateways only (partial), by settle time;
 * - `credentials_app_slug`, `credentials_app_name`: an app's records by its slug or name (by key: `credentials_app_status`);
 * - the events' indexes by app ({@link EVENTS_APP_INDEXES_SQL});
 * - `store_counts`: {@link COUNT_SLOTS} rows of the records and events in each state, kept by triggers. The tables
 *   are locked against writes (by instances not yet upgraded) from the triggers' creation to the one-time count,
 *   so that no write is counted twice or missed; the indexes are built under the same lock (a few seconds a
 *   million rows).
 */
export async function migrateHotReads(db: Kysely<unknown>): Promise<void> {
  const { rows } = await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(db);
  const schema = rows[0]!.schema;
  const statements = [
    "LOCK TABLE credentials, events IN SHARE ROW EXCLUSIVE MODE",
    'CREATE INDEX credentials_created ON credentials (created_at COLLATE "C", id COLLATE "C")',
    'CREATE INDEX credentials_status_created ON credentials (status, created_at COLLATE "C", id COLLATE "C")',
    `CREATE INDEX credentials_unsettled ON credentials (${SETTLE_UNTIL} COLLATE "C", id COLLATE "C") WHERE ${UNSETTLED}`,
    `CREATE INDEX credentials_app_slug ON credentials (${APP_SLUG}) WHERE ${APP_SLUG} IS NOT NULL`,
    `CREATE INDEX credentials_app_name ON credentials (${APP_NAME})`,
    ...EVENTS_APP_INDEXES_SQL,
    `CREATE TABLE store_counts (slot SMALLINT PRIMARY KEY, ${STORE_COUNT_COLUMNS.map((c) => `${c} BIGINT NOT NULL DEFAULT 0`).join(", ")})`,
    `INSERT INTO store_counts (slot) SELECT generate_series(0, ${COUNT_SLOTS - 1})`,
    countFunctionSql(schema, "credentials", CREDENTIAL_STATUSES),
    countFunctionSql(schema, "events", EVENT_STATUSES),
    ...countTriggersSql("credentials"),
    ...countTriggersSql("events"),
    `UPDATE store_counts SET ${STORE_COUNT_FIRST_COUNTS.map(([column, count]) => `${column} = ${count}`).join(", ")} WHERE slot = 0`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

/** The counts `/metrics` reads: the sums of `store_counts`' slots, and the unsettled records from their partial index. */
export const COUNTS_SQL = `SELECT ${STORE_COUNT_COLUMNS.map((c) => `sum(${c})::int AS ${c}`).join(", ")},
  (SELECT count(*)::int FROM credentials WHERE ${UNSETTLED}) AS unsettled FROM store_counts`;

/** The `pending` and `revoking` records last written before `$1`, counted from `credentials_unfinished (status, updated_at)`. */
export const COUNT_UNFINISHED_SQL =
  "SELECT count(*)::int AS n FROM credentials WHERE status IN ('pending','revoking') AND updated_at < $1";

/** Every `abandoned` record, oldest write first (`listAbandoned()`, which `/metrics` reads), from `credentials_unfinished (status, updated_at)`. */
export const LIST_ABANDONED_SQL = "SELECT record FROM credentials WHERE status = 'abandoned' ORDER BY updated_at";

/** The `pending` and `revoking` records last written before `$1`, oldest first (`listUnfinished`, which `/metrics` reads), from `credentials_unfinished`. */
export const LIST_UNFINISHED_SQL =
  "SELECT record FROM credentials WHERE status IN ('pending','revoking') AND updated_at < $1 ORDER BY updated_at";

/** Every record with unsettled gateways (`listUnsettled`), oldest write first, from the partial `credentials_unsettled` index. */
export const LIST_UNSETTLED_SQL = `SELECT record FROM credentials WHERE ${UNSETTLED} ORDER BY updated_at`;

/**
 * `getMany`: the records of the ids in `$1` (a text array; duplicates and unknown ids allowed), in one statement
 * from the primary key `credentials_pkey`. Rows: `id` and `record`, one per id that has a record.
 */
export const GET_MANY_SQL = "SELECT id, record FROM credentials WHERE id = ANY($1::text[])";

/** A statement and its parameters. */
export interface Query {
  text: string;
  values: unknown[];
}

/** Collects parameters: `$(v)` adds `v` and returns its placeholder. */
function params(): { values: unknown[]; $: (v: unknown) => string } {
  const values: unknown[] = [];
  return { values, $: (v) => `$${values.push(v)}` };
}

/**
 * One page of `listPage`: rows in (created_at, id) order after the cursor, from `credentials_created`,
 * `credentials_status_created` with a state, or the app's records (key, slug or name: a bitmap of the three
 * indexes) with an app; `examinedMax + 1` rows at most. With a filter no index serves (developer, gateway), a row it
 * drops comes back with `record` NULL, and only the rows up to the page's end (the `limit`-th match, and the match
 * after it, which tells that the walk goes on) leave the database.
 */
export function listPageQuery(
  query: CredentialListQuery,
  after: PagePosition | undefined,
  limit: number,
  examinedMax: number,
): Query {
  const { values, $ } = params();
  const where = [
    ...(after ? [`(created_at COLLATE "C", id COLLATE "C") > (${$(after.position)}, ${$(after.id)})`] : []),
    ...(query.status !== undefined ? [`status = ${$(query.status)}`] : []),
    ...(query.createdBefore !== undefined ? [`created_at COLLATE "C" < ${$(query.createdBefore)}`] : []),
    ...(query.app !== undefined
      ? [
          (() => {
            const app = $(query.app);
            return `(app_key = ${app} OR ${APP_SLUG} = ${app} OR ${APP_NAME} = ${app})`;
          })(),
        ]
      : []),
  ];
  const residual = [
    ...(query.developer !== undefined ? [`record->'app'->>'developer' = ${$(query.developer)}`] : []),
    ...(query.gateway !== undefined
      ? [
          (() => {
            const on = `jsonb_build_array(jsonb_build_object('gateway', ${$(query.gateway)}::text))`;
            return `(record->'bindings' @> ${on} OR record->'apis' @> ${on})`;
          })(),
        ]
      : []),
  ];
  const order = 'ORDER BY created_at COLLATE "C", id COLLATE "C"';
  const scan = (columns: string) =>
    `SELECT id, created_at AS position, ${columns} FROM credentials${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""} ${order} LIMIT ${$(examinedMax + 1)}`;
  if (residual.length === 0) return { text: scan("record"), values };
  const n = $(limit);
  return {
    text: `SELECT id, position, CASE WHEN matched THEN record END AS record FROM (
        SELECT *, count(*) FILTER (WHERE matched) OVER (ORDER BY position COLLATE "C", id COLLATE "C") AS k
        FROM (${scan(`record, (${residual.join(" AND ")}) AS matched`)}) examined) counted
      WHERE k <= ${n} OR (k = ${n} + 1 AND matched) ORDER BY position COLLATE "C", id COLLATE "C"`,
    values,
  };
}

/** One page of `listUnsettledPage`: `limit + 1` records at most in (settle time, id) order, from the partial `credentials_unsettled` index. */
export function unsettledPageQuery(after: PagePosition | undefined, dueAt: string | undefined, limit: number): Query {
  const { values, $ } = params();
  const where = [
    UNSETTLED,
    ...(after ? [`(${SETTLE_UNTIL} COLLATE "C", id COLLATE "C") > (${$(after.position)}, ${$(after.id)})`] : []),
    ...(dueAt !== undefined ? [`${SETTLE_UNTIL} COLLATE "C" <= ${$(dueAt)}`] : []),
  ];
  return {
    text: `SELECT id, ${SETTLE_UNTIL} AS position, record FROM credentials WHERE ${where.join(" AND ")}
      ORDER BY ${SETTLE_UNTIL} COLLATE "C", id COLLATE "C" LIMIT ${$(limit + 1)}`,
    values,
  };
}

/**
 * The claim: each app's oldest pending event from the partial index `events_pending (subject, seq) WHERE status =
 * 'pending'` (one group per app, as many entries as there are pending events: never a delivered one), of those the
 * due and unleased ones, oldest first, locked with `SKIP LOCKED` (another instance's claim in flight is passed over).
 * Parameters: holder, now, lease until, limit.
 */
export const CLAIM_SQL = `UPDATE events SET holder = $1, lease_until = $3 WHERE seq IN (
    SELECT e.seq FROM events e
    WHERE e.seq IN (SELECT min(seq) FROM events WHERE status = 'pending' GROUP BY subject)
      AND e.status = 'pending' AND e.next_attempt_at <= $2 AND (e.lease_until IS NULL OR e.lease_until <= $2)
    ORDER BY e.seq LIMIT $4 FOR UPDATE OF e SKIP LOCKED)
  RETURNING ${EVENT_READ_COLUMNS}`;

/**
 * `settleAll`: a batch of attempts' ends in one statement (the rows of `unnest` over one array per column, matched by
 * the unique `id`), each only while `$1` still holds the event's claim; returns the ids settled. Parameters: holder,
 * then the arrays of ids, states, attempts, next attempt times, sinks done (JSON), last errors and settle times.
 */
export const SETTLE_ALL_SQL = `UPDATE events e SET status = t.status, attempts = t.attempts, next_attempt_at = t.next_attempt_at,
    sinks_done = t.sinks_done, last_error = t.last_error, settled_at = t.settled_at, holder = NULL, lease_until = NULL
  FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[])
    AS t(id, status, attempts, next_attempt_at, sinks_done, last_error, settled_at)
  WHERE e.id = t.id AND e.holder = $1
  RETURNING e.id`;

/** The events of the app `app` names (its key — the subject —, slug or name): a bitmap of their three indexes. */
const appEvents = (app: string) => `(subject = ${app} OR app_slug = ${app} OR app_name = ${app})`;

/**
 * The read of `EventOutbox.list` for the filters given, newest first: an app's events from the app indexes,
 * `pending` and `dead` ones from their partial indexes (the state is written into the SQL, so that the planner sees
 * the partial index's condition), a time range from `events_time`.
 * @throws ValidationError a status that is not an event state (it is written into the SQL)
 */
export function eventsListQuery(filter: EventFilter): Query {
  const { values, $ } = params();
  const status = filter.status === undefined ? undefined : eventStatusOf(filter.status);
  const where = [
    ...(filter.app !== undefined ? [appEvents($(filter.app))] : []),
    ...(status !== undefined ? [`status = '${status}'`] : []),
    ...(filter.since !== undefined ? [`time >= ${$(filter.since)}`] : []),
    // A key's events (`credhook revoke` run again answers from them): an operator's rare read, not indexed.
    ...(filter.fingerprint !== undefined ? [`event->'data'->>'keyFingerprint' = ${$(filter.fingerprint)}`] : []),
    // A credential's events, of those its app's indexes read (`credhook list` and `inspect`: its newest event).
    ...(filter.credentialId !== undefined ? [`event->'data'->>'credentialId' = ${$(filter.credentialId)}`] : []),
  ];
  return {
    text: `SELECT ${EVENT_READ_COLUMNS} FROM events${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""}
      ORDER BY seq DESC LIMIT ${$(filter.limit ?? 1000)}`,
    values,
  };
}

/**
 * `EventOutbox.newestEvents`: each credential's newest event in one statement — per pair of the two arrays (`$1` the
 * app keys, the events' subject; `$2` the credential ids), the subject's events newest first from `events_subject`
 * (a backward range of the index), the first whose `data.credentialId` is the credential's. Rows: the event's columns
 * and `credential_id`; a credential without events has no row.
 */
export const NEWEST_EVENTS_SQL = `SELECT t.credential_id, e.* FROM unnest($1::text[], $2::text[]) AS t(subject, credential_id)
  CROSS JOIN LATERAL (SELECT ${EVENT_READ_COLUMNS} FROM events WHERE subject = t.subject
    AND event->'data'->>'credentialId' = t.credential_id ORDER BY seq DESC LIMIT 1) AS e`;

/**
 * `settleUnsent`: at most `$2` (NULL: all) pending events that no live claim holds, settled as delivered at `$1`:
 * the batch read from the partial index `events_pending` and locked with `SKIP LOCKED` (another instance settling
 * at the same time takes other rows instead of waiting for these), so that one statement stays short whatever the
 * backlog.
 */
export const SETTLE_UNSENT_SQL = `UPDATE events SET status = 'delivered', settled_at = $1, holder = NULL, lease_until = NULL
  WHERE seq = ANY(ARRAY(SELECT seq FROM events WHERE status = 'pending' AND (lease_until IS NULL OR lease_until <= $1)
    LIMIT $2 FOR UPDATE SKIP LOCKED))`;

/**
 * `prune`: at most `$2` (NULL: all) delivered or dead events older than `$1`, oldest first from `events_time`, then
 * each by its primary key (`seq = ANY(ARRAY(…))`: with `IN (…)` the planner joined the batch to a scan of the table).
 */
export const PRUNE_SQL = `DELETE FROM events WHERE seq = ANY(ARRAY(
  SELECT seq FROM events WHERE time < $1 AND status <> 'pending' ORDER BY time LIMIT $2 FOR UPDATE SKIP LOCKED))`;

/** `requeueDead`: the dead events (of the app `app` names, when given), from the partial index `events_dead` or the app indexes. */
export function requeueDeadQuery(now: string, app: string | undefined): Query {
  const { values, $ } = params();
  const at = $(now);
  return {
    text: `UPDATE events SET status = 'pending', attempts = 0, next_attempt_at = ${at}, settled_at = NULL, holder = NULL, lease_until = NULL
      WHERE status = 'dead'${app !== undefined ? ` AND ${appEvents($(app))}` : ""}`,
    values,
  };
}

/**
 * The migration that gives `provider_state.key` byte order (`COLLATE "C"`, migration 0007): its primary key
 * (gateway, key) is rebuilt in that order, so that a page of a prefix's keys ({@link statePageQuery}) is one range of
 * it. Before, the key had the database's default collation, whose order (punctuation ignored, say) neither matches
 * the other stores' nor keeps a prefix's keys together. The table is not rewritten (text to text); its index is.
 */
export const PROVIDER_STATE_KEY_ORDER_SQL = 'ALTER TABLE provider_state ALTER COLUMN key TYPE TEXT COLLATE "C"';

/**
 * A page of a gateway's provider state (`ProviderStateStore.listPage`): one range of the primary key (gateway, key)
 * in byte order, from the prefix (`key >= …`) or the cursor (`key > …`) to the prefix's end (absent for the prefix
 * ""), `limit + 1` rows.
 */
export function statePageQuery(gateway: string, bounds: StatePageBounds): Query {
  const { values, $ } = params();
  const text = `SELECT key, value FROM provider_state WHERE gateway = ${$(gateway)} AND key ${bounds.inclusive ? ">=" : ">"} ${$(bounds.from)}${
    bounds.to !== undefined ? ` AND key < ${$(bounds.to)}` : ""
  } ORDER BY key LIMIT ${$(bounds.limit + 1)}`;
  return { text, values };
}
