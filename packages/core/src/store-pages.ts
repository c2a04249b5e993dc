/**
 * What every store shares to answer the paged reads of `store.ts` ({@link CredentialStore.listPage},
 * {@link CredentialStore.listUnsettledPage}) alike: the page size's bounds, the cursor's encoding, the filters'
 * meaning, and a page cut from the rows a query examined.
 *
 * A cursor is `base64url(JSON [kind, position, id])`: the walk it belongs to (`c`: by creation time, `u`: by
 * settle time), the last examined record's position in it (`createdAt`, or `unsettled.settleUntil`) and its id.
 * Opaque to callers; a store decodes it with {@link decodeCursor}, which refuses one of another walk.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { CREDENTIAL_STATUSES, type CredentialRecord, type CredentialStatus } from "./credential-record.js";
import { ValidationError } from "./errors.js";
import { EVENT_STATUSES, type EventStatus } from "./events.js";
import {
  type CredentialListQuery,
  type CredentialPage,
  type CredentialStore,
  PAGE_LIMIT_DEFAULT,
  PAGE_LIMIT_MAX,
  PAGE_SCAN_ROWS,
} from "./store.js";

/** The walks a cursor may belong to: by creation time (`listPage`) or by settle time (`listUnsettledPage`). */
export type PageWalk = "listPage" | "listUnsettledPage";

const WALK_TAGS: Record<PageWalk, string> = { listPage: "c", listUnsettledPage: "u" };

/** A decoded cursor: the position (an ISO 8601 time) and id of the last record a page examined. */
export interface PagePosition {
  position: string;
  id: string;
}

/**
 * The page size of a query: its `limit`, or {@link PAGE_LIMIT_DEFAULT}.
 * @param method the paged read, for the message (`listPage`, a provider state's `state.listPage`)
 * @throws ValidationError a limit that is not an integer from 1 to {@link PAGE_LIMIT_MAX}
 */
export function pageLimitOf(limit: number | undefined, method: string): number {
  if (limit === undefined) return PAGE_LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT_MAX)
    throw new ValidationError([
      `${method}: limit must be an integer from 1 to ${PAGE_LIMIT_MAX} (got ${String(limit)})`,
    ]);
  return limit;
}

/**
 * Where a page of `walk` starts and how many records it holds: the query's `limit` (checked, or the default) and its
 * `after` decoded.
 * @throws ValidationError as {@link pageLimitOf} and {@link decodeCursor}
 */
export function pageStartOf(
  walk: PageWalk,
  query: { after?: string; limit?: number },
): { limit: number; after: PagePosition | undefined } {
  return {
    limit: pageLimitOf(query.limit, walk),
    after: query.after === undefined ? undefined : decodeCursor(walk, query.after),
  };
}

/** The cursor of the position `position` (an ISO 8601 time) and `id` in `walk`. */
export function encodeCursor(walk: PageWalk, position: string, id: string): string {
  return Buffer.from(JSON.stringify([WALK_TAGS[walk], position, id]), "utf8").toString("base64url");
}

/**
 * The position a cursor of `walk` names.
 * @throws ValidationError a string that is not a cursor `walk` returned (malformed, or another walk's)
 */
export function decodeCursor(walk: PageWalk, cursor: string): PagePosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    parsed[0] !== WALK_TAGS[walk] ||
    typeof parsed[1] !== "string" ||
    typeof parsed[2] !== "string"
  ) {
    const shown = cursor.length > 60 ? `${cursor.slice(0, 60)}…` : cursor;
    throw new ValidationError([
      `${walk}: the cursor '${shown}' is not one this method returned (pass a page's next as it came, to the method that returned it)`,
    ]);
  }
  return { position: parsed[1], id: parsed[2] };
}

/** Whether `record` belongs to the app `app` names: its app key, its slug or its name (what `--app` matches). */
export function isRecordOfApp(record: CredentialRecord, app: string): boolean {
  return record.appKey === app || record.app.appSlug === app || record.app.appName === app;
}

/** Whether `record` is on `gateway`: one of its bindings or APIs names it. */
export function isRecordOnGateway(record: CredentialRecord, gateway: string): boolean {
  return record.bindings.some((b) => b.gateway === gateway) || record.apis.some((a) => a.gateway === gateway);
}

/** Whether `record` passes every filter of `query` (the meaning each store's SQL implements; cursor and limit aside). */
export function matchesListQuery(record: CredentialRecord, query: CredentialListQuery): boolean {
  return (
    (query.status === undefined || record.status === query.status) &&
    (query.app === undefined || isRecordOfApp(record, query.app)) &&
    (query.developer === undefined || record.app.developer === query.developer) &&
    (query.gateway === undefined || isRecordOnGateway(record, query.gateway)) &&
    (query.createdBefore === undefined || record.createdAt < query.createdBefore)
  );
}

/** Byte order of two strings of a record's position (ISO 8601 times, ids): the order of the SQL stores' indexes. */
export function comparePositions(a: PagePosition, b: PagePosition): number {
  return compareBytes(a.position, b.position) || compareBytes(a.id, b.id);
}

/** Compares as UTF-8 bytes (SQLite's BINARY collation, PostgreSQL's `COLLATE "C"`), not as UTF-16 code units. */
export function compareBytes(a: string, b: string): number {
  return a === b ? 0 : Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** A row a SQL store examined for a page: its position, and its record when it passed the page's filters. */
export interface ExaminedRow {
  position: string;
  id: string;
  /** The record, when the row passed every filter; undefined when a filter the index does not serve dropped it. */
  record: CredentialRecord | undefined;
}

/**
 * The page a query's examined rows make: their records up to `limit`, and the cursor after the last row used.
 * The query asks for at most `examinedMax + 1` rows (`examinedMax`: `limit`, or {@link PAGE_SCAN_ROWS} when filters
 * no index serves drop rows): a row beyond the last one used tells that the walk goes on. `rows` is read lazily and
 * left as soon as the page is known (a SQLite statement's iterator stops there).
 */
export function pageOfExamined(
  walk: PageWalk,
  rows: Iterable<ExaminedRow>,
  limit: number,
  examinedMax: number,
): CredentialPage {
  const records: CredentialRecord[] = [];
  let examined = 0;
  let last: ExaminedRow | undefined;
  for (const row of rows) {
    if (examined === examinedMax || records.length === limit)
      return last ? { records, next: encodeCursor(walk, last.position, last.id) } : { records };
    examined += 1;
    last = row;
    if (row.record) records.push(row.record);
  }
  return { records };
}

/** How many rows a page of `limit` examines at most: `limit` when every filter is served by an index, else {@link PAGE_SCAN_ROWS}. */
export function examinedMaxOf(limit: number, query: CredentialListQuery): number {
  return query.developer !== undefined || query.gateway !== undefined ? Math.max(limit, PAGE_SCAN_ROWS) : limit;
}

/**
 * Every page of a paged walk, in its order: `read` is called with each page's `next` (undefined first) until a
 * page has none; a page is read only when the one before has been consumed, so a walk holds one page in memory.
 * Each page after the first is read on a later turn of the event loop (`setImmediate`): a store whose reads answer at
 * once (SQLite's driver is synchronous) would otherwise run the whole walk as one chain of promise callbacks, with
 * no request, probe or timer served until it ends — serve's expiry pass held the event loop 0.9–1.0 s at a million
 * credentials (177 pages of about 5.6 ms), and its drift count 2 s at 100,000 before it yielded this way.
 * The shape of every cursor walk credhook has: the records' ({@link walkPages}) and a provider state's
 * (`statePages`, `ProviderStateStore.listPage`).
 * @param read reads one page, e.g. `(after) => store.listPage({ status: "active", ...(after ? { after } : {}) })`
 */
export async function* pagesOf<P extends { next?: string }>(
  read: (after: string | undefined) => Promise<P>,
): AsyncGenerator<P> {
  let after: string | undefined;
  do {
    if (after !== undefined) await nextTurn();
    const page = await read(after);
    yield page;
    after = page.next;
  } while (after !== undefined);
}

/**
 * Every record of a paged walk, in its order ({@link pagesOf}: one page held at a time).
 * @param read reads one page, e.g. `(after) => store.listPage({ status: "active", ...(after ? { after } : {}) })`
 */
export async function* walkPages(
  read: (after: string | undefined) => Promise<CredentialPage>,
): AsyncGenerator<CredentialRecord> {
  for await (const page of pagesOf(read)) yield* page.records;
}

/**
 * The records of `ids` in `store`, by id: {@link CredentialStore.getMany} when the store has it (one store read: one
 * statement on PostgreSQL), else a {@link CredentialStore.get} per id, one after the other. Each id is read once,
 * however often it is given; none given, nothing is read. What `credhook reconcile` reads for each page of a
 * gateway's listing: the records its resources' marks name.
 * @param ids credential ids, in any order; duplicates allowed; at most a page's ({@link PAGE_LIMIT_MAX}) from core:
 *   they are read in one call, and their records held together
 * @returns each id's record, keyed by id; an id without a record is absent
 * @throws what the store's read throws (`StoreUnavailable` when the database cannot serve)
 */
export async function recordsById(
  store: CredentialStore,
  ids: readonly string[],
): Promise<Map<string, CredentialRecord>> {
  const distinct = [...new Set(ids)];
  if (distinct.length === 0) return new Map();
  if (store.getMany) return store.getMany(distinct);
  const found = new Map<string, CredentialRecord>();
  for (const id of distinct) {
    const rec = await store.get(id);
    if (rec) found.set(id, rec);
  }
  return found;
}

/**
 * The columns of the `store_counts` table both SQL stores keep (SQLite from schema version 8, PostgreSQL from
 * migration 0006): `credentials_<state>` for each {@link CredentialStatus}, then `events_<state>` for each event
 * state, kept by triggers in each write's transaction.
 */
export const STORE_COUNT_COLUMNS: readonly string[] = [
  ...CREDENTIAL_STATUSES.map((s) => `credentials_${s}`),
  ...EVENT_STATUSES.map((s) => `events_${s}`),
];

/** Each column of {@link STORE_COUNT_COLUMNS} and the SQL (valid on both stores) that counts it once, when the table is made. */
export const STORE_COUNT_FIRST_COUNTS: ReadonlyArray<readonly [column: string, count: string]> = [
  ...CREDENTIAL_STATUSES.map(
    (s) => [`credentials_${s}`, `(SELECT COUNT(*) FROM credentials WHERE status = '${s}')`] as const,
  ),
  ...EVENT_STATUSES.map((s) => [`events_${s}`, `(SELECT COUNT(*) FROM events WHERE status = '${s}')`] as const),
];

/** The records in each state, from a row of {@link STORE_COUNT_COLUMNS} (numbers, or the strings a driver reads bigints as). */
export function recordCountsOf(row: Record<string, unknown>): Record<CredentialStatus, number> {
  return Object.fromEntries(CREDENTIAL_STATUSES.map((s) => [s, Number(row[`credentials_${s}`])])) as Record<
    CredentialStatus,
    number
  >;
}

/** The events in each state, from a row of {@link STORE_COUNT_COLUMNS}. */
export function eventCountsOf(row: Record<string, unknown>): Record<EventStatus, number> {
  return Object.fromEntries(EVENT_STATUSES.map((s) => [s, Number(row[`events_${s}`])])) as Record<EventStatus, number>;
}
