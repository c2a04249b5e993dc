/**
 * The SQL of the store's hot reads (schema version 8): the paged record walks, the counts `/metrics` reads, the
 * outbox's claim and its reads by app. Each is shaped so that SQLite's planner takes the index meant for it — the
 * store's tests hold every one to its plan (`EXPLAIN QUERY PLAN`), so a dropped index or a rewritten query that
 * falls back to a scan fails them.
 */
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
} from "@credhook/core/store";

/** The settle time of a record's unsettled gateways; the expression of the `credentials_unsettled` index (the reads repeat it exactly). */
export const SETTLE_UNTIL = "json_extract(record, '$.unsettled.settleUntil')";
/** The app's slug and name in a record; the expressions of the `credentials_app_slug` and `credentials_app_name` indexes. */
const APP_SLUG = "json_extract(record, '$.app.appSlug')";
const APP_NAME = "json_extract(record, '$.app.appName')";

/**
 * The triggers that keep `store_counts` (one row) as `table`'s rows are inserted, deleted and change state: in the
 * statement's own transaction, so a statement undone (a conflict, a rolled-back group) undoes its counts too.
 */
function countTriggersSql(table: "credentials" | "events", statuses: readonly string[]): string[] {
  const set = (row: "NEW" | "OLD" | "both") =>
    statuses
      .map((s) => {
        const col = `${table}_${s}`;
        const plus = `(NEW.status = '${s}')`;
        const minus = `(OLD.status = '${s}')`;
        return `${col} = ${col} ${row === "NEW" ? `+ ${plus}` : row === "OLD" ? `- ${minus}` : `+ ${plus} - ${minus}`}`;
      })
      .join(", ");
  return [
    `CREATE TRIGGER ${table}_count_insert AFTER INSERT ON ${table} BEGIN UPDATE store_counts SET ${set("NEW")}; END`,
    `CREATE TRIGGER ${table}_count_delete AFTER DELETE ON ${table} BEGIN UPDATE store_counts SET ${set("OLD")}; END`,
    `CREATE TRIGGER ${table}_count_update AFTER UPDATE OF status ON ${table} WHEN OLD.status IS NOT NEW.status
       BEGIN UPDATE store_counts SET ${set("both")}; END`,
  ];
}

/**
 * Schema version 8: indexes for every hot read, and the counts kept as the writes happen.
 * - `credentials_created (created_at, id)`: the walk of `listPage` and the expiry pass, page by page;
 *   `credentials_status_created`: the same walk within one state;
 * - `credentials_unsettled`: the records with unsettled gateways only (partial), by settle time;
 * - `credentials_app_slug`, `credentials_app_name`: an app's records by its slug or name (by key: `credentials_app_status`);
 * - the events' indexes by app ({@link EVENTS_APP_INDEXES_SQL});
 * - `store_counts`: one row, the records and events in each state, counted once here and kept by triggers since.
 * The keys of the walk indexes grow at one end (creation times), so a write adds an entry on a page it already dirtied.
 */
export const VERSION_8_SQL: readonly string[] = [
  "CREATE INDEX credentials_created ON credentials (created_at, id)",
  "CREATE INDEX credentials_status_created ON credentials (status, created_at, id)",
  `CREATE INDEX credentials_unsettled ON credentials (${SETTLE_UNTIL}, id) WHERE ${SETTLE_UNTIL} IS NOT NULL`,
  `CREATE INDEX credentials_app_slug ON credentials (${APP_SLUG}) WHERE ${APP_SLUG} IS NOT NULL`,
  `CREATE INDEX credentials_app_name ON credentials (${APP_NAME})`,
  ...EVENTS_APP_INDEXES_SQL,
  `CREATE TABLE store_counts (slot INTEGER PRIMARY KEY, ${STORE_COUNT_COLUMNS.map((c) => `${c} INTEGER NOT NULL`).join(", ")})`,
  `INSERT INTO store_counts SELECT 0, ${STORE_COUNT_FIRST_COUNTS.map(([, count]) => count).join(", ")}`,
  ...countTriggersSql("credentials", CREDENTIAL_STATUSES),
  ...countTriggersSql("events", EVENT_STATUSES),
];

/** The counts `/metrics` reads: each state's records and events from `store_counts`, the unsettled records from their partial index. */
export const COUNTS_SQL = `SELECT ${STORE_COUNT_COLUMNS.join(", ")},
  (SELECT COUNT(*) FROM credentials WHERE ${SETTLE_UNTIL} IS NOT NULL) AS unsettled FROM store_counts`;

/** The `pending` and `revoking` records last written before `?`, counted from `credentials_unfinished (status, updated_at)`. */
export const COUNT_UNFINISHED_SQL =
  "SELECT COUNT(*) AS n FROM credentials WHERE status IN ('pending','revoking') AND updated_at < ?";

/**
 * One page of `listPage`: at most `@n` rows in (created_at, id) order after the cursor (`@afterPosition`,
 * `@afterId`), from `credentials_created`, `credentials_status_created` with a state, or the app's own records
 * (by key, slug or name, each from its index; the other conditions then carry SQLite's unary `+`, which keeps the
 * planner from walking a whole index to meet them) with an app. The filters no index serves (developer, gateway)
 * leave `record` NULL on a row they drop, so the page's cursor still moves past it.
 */
export function listPageSql(query: CredentialListQuery, hasCursor: boolean): string {
  const p = query.app !== undefined ? "+" : ""; // with an app, its few records drive the read
  const where = [
    ...(query.app !== undefined
      ? [
          `rowid IN (SELECT rowid FROM credentials WHERE app_key = @app UNION SELECT rowid FROM credentials WHERE ${APP_SLUG} = @app
            UNION SELECT rowid FROM credentials WHERE ${APP_NAME} = @app)`,
        ]
      : []),
    ...(hasCursor ? [`(${p}created_at, ${p}id) > (@afterPosition, @afterId)`] : []),
    ...(query.status !== undefined ? [`${p}status = @status`] : []),
    ...(query.createdBefore !== undefined ? [`${p}created_at < @createdBefore`] : []),
  ];
  const residual = [
    ...(query.developer !== undefined ? ["json_extract(record, '$.app.developer') = @developer"] : []),
    ...(query.gateway !== undefined
      ? [
          `(EXISTS (SELECT 1 FROM json_each(record, '$.bindings') WHERE value ->> 'gateway' = @gateway)
            OR EXISTS (SELECT 1 FROM json_each(record, '$.apis') WHERE value ->> 'gateway' = @gateway))`,
        ]
      : []),
  ];
  return `SELECT id, created_at AS position, ${residual.length > 0 ? `CASE WHEN ${residual.join(" AND ")} THEN record END` : "record"} AS record
    FROM credentials${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at, id LIMIT @n`;
}

/**
 * A record by its id (`get`, and `getMany` once per id within its call), from the primary key's index
 * (`sqlite_autoindex_credentials_1`: `id TEXT PRIMARY KEY` on a rowid table).
 */
export const GET_SQL = "SELECT record FROM credentials WHERE id = ?";

/** Every `abandoned` record (`listAbandoned()`, which `/metrics` reads), from an index led by the state; sorted by the caller. */
export const LIST_ABANDONED_SQL = "SELECT record, updated_at FROM credentials WHERE status = 'abandoned'";

/** The `pending` and `revoking` records last written before `?`, oldest first (`listUnfinished`, which `/metrics` reads), from `credentials_unfinished`. */
export const LIST_UNFINISHED_SQL =
  "SELECT record FROM credentials WHERE status IN ('pending','revoking') AND updated_at < ? ORDER BY updated_at";

/** Every record with unsettled gateways (`listUnsettled`), from the partial `credentials_unsettled` index; sorted by the caller. */
export const LIST_UNSETTLED_SQL = `SELECT record, updated_at FROM credentials WHERE ${SETTLE_UNTIL} IS NOT NULL`;

/** One page of `listUnsettledPage`: at most `@n` records in (settle time, id) order, from the partial `credentials_unsettled` index. */
export function unsettledPageSql(hasCursor: boolean, hasDueAt: boolean): string {
  return `SELECT id, ${SETTLE_UNTIL} AS position, record FROM credentials WHERE ${SETTLE_UNTIL} IS NOT NULL
    ${hasCursor ? `AND (${SETTLE_UNTIL}, id) > (@afterPosition, @afterId)` : ""} ${hasDueAt ? `AND ${SETTLE_UNTIL} <= @dueAt` : ""}
    ORDER BY ${SETTLE_UNTIL}, id LIMIT @n`;
}

/**
 * The claim: each app's oldest pending event from the partial index `events_pending (subject, seq) WHERE status =
 * 'pending'` (one group per app, as many entries as there are pending events: never a delivered one), of those the
 * due and unleased ones, oldest first. Parameters: holder, lease until, now, now, limit.
 */
export const CLAIM_SQL = `UPDATE events SET holder = ?, lease_until = ? WHERE seq IN (
    SELECT e.seq FROM (SELECT MIN(seq) AS seq FROM events WHERE status = 'pending' GROUP BY subject) AS head
      JOIN events e ON e.seq = head.seq
    WHERE e.next_attempt_at <= ? AND (e.lease_until IS NULL OR e.lease_until <= ?)
    ORDER BY e.seq LIMIT ?)
  RETURNING ${EVENT_READ_COLUMNS}`;

/**
 * `claimServer`'s release of the event claims a server before this one held: only a pending event is ever claimed
 * (a settle clears its claim), so the claimed ones are found in the partial index `events_pending`, not by a scan of
 * every event (0.25 s at start-up with 100,000 credentials' events before).
 */
export const RELEASE_CLAIMS_SQL =
  "UPDATE events SET holder = NULL, lease_until = NULL WHERE status = 'pending' AND holder IS NOT NULL";

/** The events of the app `@app` names (its key — the subject —, slug or name): their seqs, each from its own index. */
const APP_EVENTS = `seq IN (SELECT seq FROM events WHERE subject = @app UNION SELECT seq FROM events WHERE app_slug = @app
  UNION SELECT seq FROM events WHERE app_name = @app)`;

/**
 * The read of `EventOutbox.list` for the filters given, newest first (`@limit` of them), each filter from its index:
 * - an app's events from the app indexes ({@link APP_EVENTS});
 * - `pending` ones from the partial `events_pending`, `dead` ones from the partial `events_dead` (the state is
 *   written into the SQL, so that the planner sees the partial index's condition; without the `IN`, SQLite walked
 *   the whole table newest first to save sorting the few pending ones);
 * - `since`: from the first event at or after that time (`events_time`; `MIN(+seq)`: the `+` keeps SQLite from
 *   looking for it in seq order from the oldest event) onward, newest first — the rows before that event's seq are
 *   never read, even when fewer than `@limit` match;
 * - `delivered`, or no filter: the newest rows, down until `@limit` matched.
 * @throws ValidationError a status that is not an event state (it is written into the SQL)
 */
export function eventsListSql(filter: EventFilter): string {
  const status = filter.status === undefined ? undefined : eventStatusOf(filter.status);
  const where = [
    ...(filter.app !== undefined ? [APP_EVENTS] : []),
    ...(status === "pending" ? ["seq IN (SELECT seq FROM events WHERE status = 'pending')"] : []),
    ...(status !== undefined ? [`status = '${status}'`] : []),
    // The app's or the pending events are few: a seq bound from the time index would cost more than it saves.
    ...(filter.since !== undefined && filter.app === undefined && status !== "pending"
      ? ["seq >= (SELECT MIN(+seq) FROM events WHERE time >= @since)"]
      : []),
    ...(filter.since !== undefined ? ["time >= @since"] : []),
    // A key's events (`credhook revoke` run again answers from them): an operator's rare read, not indexed.
    ...(filter.fingerprint !== undefined ? ["json_extract(event, '$.data.keyFingerprint') = @fingerprint"] : []),
    // A credential's events, of those its app's indexes read (`credhook list` and `inspect`: its newest event).
    ...(filter.credentialId !== undefined ? ["json_extract(event, '$.data.credentialId') = @credentialId"] : []),
  ];
  return `SELECT ${EVENT_READ_COLUMNS} FROM events
    ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY seq DESC LIMIT @limit`;
}

/**
 * `EventOutbox.newestEvents`, run once per credential within one call: the subject's events newest first from
 * `events_subject` (a backward range of the index), the first whose `data.credentialId` is the credential's.
 * Parameters: the app key (the events' subject), the credential id.
 */
export const NEWEST_EVENT_SQL = `SELECT ${EVENT_READ_COLUMNS}
  FROM events WHERE subject = ? AND json_extract(event, '$.data.credentialId') = ? ORDER BY seq DESC LIMIT 1`;

/**
 * `settleUnsent`: at most `@limit` (-1: all) pending events that no live claim holds, settled as delivered at `@now`:
 * the batch read from the partial index `events_pending`, in its order (which first does not matter: the delivery
 * loop follows a full batch with another), so that one statement stays short whatever the backlog.
 */
export const SETTLE_UNSENT_SQL = `UPDATE events SET status = 'delivered', settled_at = @now, holder = NULL, lease_until = NULL
  WHERE seq IN (SELECT seq FROM events WHERE status = 'pending' AND (lease_until IS NULL OR lease_until <= @now) LIMIT @limit)`;

/**
 * `prune`: at most `@limit` (-1: all) delivered or dead events older than `@before`, oldest first from `events_time`
 * (`credhook serve` deletes them in batches, a turn of the event loop between two).
 */
export const PRUNE_SQL = `DELETE FROM events WHERE seq IN (
  SELECT seq FROM events WHERE time < @before AND status <> 'pending' ORDER BY time LIMIT @limit)`;

/** `requeueDead`: the dead events (of the app `@app` names, when `hasApp`), from the partial index `events_dead`. */
export function requeueDeadSql(hasApp: boolean): string {
  return `UPDATE events SET status = 'pending', attempts = 0, next_attempt_at = @now, settled_at = NULL, holder = NULL, lease_until = NULL
    WHERE status = 'dead'${hasApp ? ` AND ${APP_EVENTS}` : ""}`;
}

/**
 * A page of a gateway's provider state (`ProviderStateStore.listPage`): one range of the table's primary key
 * (gateway, key) — SQLite's BINARY collation is UTF-8 byte order, the order of `statePageBounds` — from the prefix
 * (`key >= ?`) or the cursor (`key > ?`) to the prefix's end (`key < ?`, absent for the prefix ""), `limit + 1` rows.
 * Parameters: the gateway, the lower bound, the upper bound when `bounded`, the row count.
 */
export function statePageSql(inclusive: boolean, bounded: boolean): string {
  return `SELECT key, value FROM provider_state WHERE gateway = ? AND key ${inclusive ? ">=" : ">"} ?${
    bounded ? " AND key < ?" : ""
  } ORDER BY key LIMIT ?`;
}
