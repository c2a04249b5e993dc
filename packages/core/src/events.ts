/**
 * Credential lifecycle events (docs/events.md): every change of a credential is a CloudEvents 1.0
 * event (https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/spec.md), written to the store
 * in the same transaction as the record change — a transactional outbox — and delivered later, at
 * least once, by `credhook serve`. No event carries a secret: a key value or client secret appears
 * only as its fingerprint ({@link secretFingerprint}).
 *
 * Core builds plain objects in the CloudEvents 1.0 structured JSON shape; the server sends them with
 * the `cloudevents` package (which also validates them), so core's request path pays no validator.
 */
import { createHash } from "node:crypto";
import type { CredentialType } from "./contract.js";
import { newRecordId, type CredentialRecord } from "./credential-record.js";
import { ValidationError } from "./errors.js";
import type { AppIdentity } from "./provider.js";

/**
 * The event types, `credential.<change>`:
 * - `created`: a create finished on every gateway (the portal got the credential);
 * - `updated`: an update finished (its API set, plans or gateways changed), or a replayed create rotated the secret;
 * - `revoked`: a revoke finished on every gateway;
 * - `abandoned`: a create failed or was interrupted: the portal never got it, clean-up follows;
 * - `cleaned_up`: an abandoned create's clean-up is proven complete and its record deleted;
 * - `adopted`: a credential made outside credhook was brought under it (`credhook adopt`), or recorded again from its gateway's mark;
 * - `drift_found`: `credhook reconcile` found a resource with credhook's mark that no record explains;
 * - `leaked`: the key was reported leaked (`credhook revoke|disable --reason leaked`, a secret-scanning alert):
 *   written with the record's move to `revoking` (or its `disabled` mark) before any gateway is called;
 *   `revoked` (or `disabled`) follows once every gateway acted;
 * - `disabled`: the credential was turned off on every gateway, its record and resources kept (`credhook disable`);
 * - `enabled`: a disabled credential was turned on again on every gateway (`credhook enable`);
 * - `expiring`: the credential reached its expiry policy's warning time (once; `data.expiry` says when it expires);
 * - `expired`: the credential reached its expiry (once); its policy's action (`data.expiry.action`) follows.
 */
export const CREDENTIAL_EVENT_TYPES = [
  "credential.created",
  "credential.updated",
  "credential.revoked",
  "credential.abandoned",
  "credential.cleaned_up",
  "credential.adopted",
  "credential.drift_found",
  "credential.leaked",
  "credential.disabled",
  "credential.enabled",
  "credential.expiring",
  "credential.expired",
] as const;

/** One of {@link CREDENTIAL_EVENT_TYPES}. */
export type CredentialEventType = (typeof CREDENTIAL_EVENT_TYPES)[number];

/** The CloudEvents `source` of credhook's events (a URI-reference, as the spec requires). */
export const CREDENTIAL_EVENT_SOURCE = "/credhook";

/** What a credential event says (its CloudEvents `data`): ids, the app, where the credential lives — never a secret. */
export interface CredentialEventData {
  /** credhook's credential id (the record's id); absent for drift, which no record explains. */
  credentialId?: string;
  credentialType?: CredentialType;
  /** The id the portal holds (apiKeyId / clientId); empty while unknown (an abandoned create). */
  publicId?: string;
  /** The app's identity. */
  app?: AppIdentity;
  /**
   * Each gateway the credential is on, with its native id and the usage plans of its APIs there; `dualHomed: true`
   * where the gateway still grants APIs `credhook apply` moved to another gateway until `credhook apply --prune`
   * (docs/gateway-migration.md).
   */
  gateways: EventGateway[];
  /**
   * `credential.updated` of a change of the gateways (`credhook apply` moving or pruning it, a portal update reaching
   * a new gateway or leaving one): where the credential was before the change, in the shape of {@link gateways}.
   */
  previousGateways?: EventGateway[];
  /** The app's API set, each with its gateway and plans. */
  apis?: Array<{ id: string; gateway: string; usagePlans: string[] }>;
  /** The secret's fingerprint ({@link secretFingerprint}), when credhook saw the value; never the value. */
  keyFingerprint?: string;
  /** Why, in words (an abandoned create's failure, a drift's resource), secret-free. */
  reason?: string;
  /**
   * `credential.expiring` and `credential.expired`: when it expires (ISO 8601), the action at the expiry, and the
   * deciding policy's YAML path and figures (days) — docs/expiry.md.
   */
  expiry?: {
    expiresAt: string;
    action: "notify" | "disable" | "revoke";
    policy: string;
    maxAgeDays?: number;
    warnDays?: number;
  };
}

/** One gateway a credential is on, as an event says it ({@link CredentialEventData.gateways}). */
export interface EventGateway {
  gateway: string;
  nativeId: string;
  /** The usage plans of its APIs on that gateway (its dual-homed ones included). */
  plans: string[];
  /** Set when the gateway still grants APIs moved to another gateway (`GatewayBinding.dualHomed`). */
  dualHomed?: true;
}

/**
 * A credential event in the CloudEvents 1.0 structured JSON shape (spec section 3, "Context Attributes"):
 * `id` is a UUID version 7 (unique per event, and the Standard Webhooks `webhook-id` of every delivery
 * attempt, so a sink can drop a redelivery), `subject` the app's identity (`appKeyOf`).
 */
export interface CredentialEvent {
  specversion: "1.0";
  id: string;
  source: string;
  type: CredentialEventType;
  /** The app key the event belongs to (events of one app are delivered in order). */
  subject: string;
  /** ISO 8601 time of the change. */
  time: string;
  datacontenttype: "application/json";
  data: CredentialEventData;
}

/**
 * The fingerprint of a secret (an API key value, a client secret): `sha256:` and the first 32 hex digits
 * (128 bits) of its SHA-256 digest. One-way: the keys credhook generates carry at least 238 random bits,
 * far beyond a search of their digests; a leaked key is looked up by computing its fingerprint.
 */
export function secretFingerprint(secret: string): string {
  return `sha256:${createHash("sha256").update(secret, "utf8").digest("hex").slice(0, 32)}`;
}

/** What an event may say that its record does not: a reason, a fingerprint the record does not keep, the gateways it was on. */
export type CredentialEventExtra = Partial<
  Pick<CredentialEventData, "reason" | "keyFingerprint" | "gateways" | "previousGateways" | "expiry">
>;

/** The gateways `rec` is on, as its events say them ({@link CredentialEventData.gateways}). */
export function eventGatewaysOf(rec: CredentialRecord): EventGateway[] {
  return rec.bindings.map((b) => {
    const held = new Set(b.dualHomed?.apiIds ?? []);
    const apis = rec.apis.filter((a) => a.gateway === b.gateway || held.has(a.id));
    return {
      gateway: b.gateway,
      nativeId: b.nativeId,
      plans: [...new Set(apis.flatMap((a) => a.usagePlans))],
      ...(b.dualHomed ? { dualHomed: true as const } : {}),
    };
  });
}

/**
 * The event of a change of `rec` (as the record is after the change), at `time` (ISO 8601).
 * @param extra what the record does not say: a reason, a fingerprint the record does not keep
 */
export function credentialEvent(
  type: CredentialEventType,
  rec: CredentialRecord,
  time: string,
  extra: CredentialEventExtra = {},
): CredentialEvent {
  const fingerprint = extra.keyFingerprint ?? rec.keyFingerprint;
  return {
    specversion: "1.0",
    id: newRecordId(),
    source: CREDENTIAL_EVENT_SOURCE,
    type,
    subject: rec.appKey,
    time,
    datacontenttype: "application/json",
    data: {
      credentialId: rec.id,
      credentialType: rec.credentialType,
      publicId: rec.publicId,
      app: { ...rec.app },
      gateways: extra.gateways ?? eventGatewaysOf(rec),
      ...(extra.previousGateways ? { previousGateways: extra.previousGateways } : {}),
      apis: rec.apis.map((a) => ({ id: a.id, gateway: a.gateway, usagePlans: [...a.usagePlans] })),
      ...(fingerprint ? { keyFingerprint: fingerprint } : {}),
      ...(extra.reason ? { reason: extra.reason } : {}),
      ...(extra.expiry ? { expiry: { ...extra.expiry } } : {}),
    },
  };
}

/**
 * A `credential.drift_found` event: a resource on `gateway` carries credhook's mark and no record explains it.
 * Its subject is `gateway:<name>` (drift belongs to no app): one gateway's drift is delivered in order.
 */
export function driftEvent(
  gateway: string,
  resource: { nativeId: string; credentialId?: string; description?: string },
  time: string,
): CredentialEvent {
  return {
    specversion: "1.0",
    id: newRecordId(),
    source: CREDENTIAL_EVENT_SOURCE,
    type: "credential.drift_found",
    subject: `gateway:${gateway}`,
    time,
    datacontenttype: "application/json",
    data: {
      ...(resource.credentialId ? { credentialId: resource.credentialId } : {}),
      gateways: [{ gateway, nativeId: resource.nativeId, plans: [] }],
      reason: `a resource with credhook's mark that no credential record explains${resource.description ? `: ${resource.description}` : ""}`,
    },
  };
}

/**
 * Where an event is in its delivery: `pending` (waiting for its turn or its next attempt), `delivered`
 * (every sink that wants it accepted it; with no such sink, at once), `dead` (a sink refused it
 * `events.retry.maxAttempts` times: kept, listed by `credhook audit --undelivered`, counted by a metric,
 * and no longer holding back its app's later events).
 */
export type EventStatus = "pending" | "delivered" | "dead";

/** An event's delivery state: how a delivery attempt ended, for {@link EventOutbox.settle}, and part of a {@link StoredEvent}. */
export interface EventSettlement {
  status: EventStatus;
  /** Delivery attempts so far. */
  attempts: number;
  /** ISO 8601 time before which the event is not tried again. */
  nextAttemptAt: string;
  /** Names (URLs) of the sinks that accepted it so far: a retry sends only to the others. */
  sinksDone: string[];
  /** The last failed attempt's error, secret-free. */
  lastError?: string;
  /** ISO 8601 time it was delivered (or given up as dead): with status `delivered` or `dead`. */
  settledAt?: string;
}

/** One claimed event's settlement for {@link EventOutbox.settleAll}: the event's id and how its attempt ended. */
export interface EventSettlementOf extends EventSettlement {
  /** The event's id (its CloudEvents `id`). */
  id: string;
}

/** An event as the outbox keeps it: the event and its delivery state. */
export interface StoredEvent extends EventSettlement {
  /** The store's sequence number: events of one app are delivered in this order. */
  seq: number;
  event: CredentialEvent;
}

/**
 * Filters of {@link EventOutbox.list}. Each narrows the others; the SQL stores serve `app` from the indexes of
 * {@link EVENTS_APP_INDEXES_SQL}, `status` `pending` and `dead` from their partial indexes and `since` from the
 * `time` index, so a read costs about as many rows as it returns (never a scan of every event) unless `status:
 * "delivered"` or no filter at all asks for most of the table, newest first.
 */
export interface EventFilter {
  /** Only this app's events: its app key (`slug:…`, `app:…`; the events' subject), its slug or its name. */
  app?: string;
  /** Only events at or after this ISO 8601 time. */
  since?: string;
  /** Only events in this state. */
  status?: EventStatus;
  /**
   * Only events of the credential whose key has this fingerprint (`data.keyFingerprint`, as {@link secretFingerprint}
   * makes it: `sha256:` and 32 lowercase hex digits): `credhook revoke --fingerprint` finds a key revoked before, whose
   * record is gone. The stores read it from the event, without an index: an operator's command, not a request path.
   */
  fingerprint?: string;
  /**
   * Only events of this credential (`data.credentialId`): with `app` and `limit: 1`, a credential's newest event, as
   * `credhook list` and `inspect` show it. The stores filter the app's events (read from the app indexes) by it, so
   * give `app` with it: alone it is filtered from the newest events down.
   */
  credentialId?: string;
  /** At most this many, the newest ones (still listed oldest first). @default 1000 */
  limit?: number;
}

/**
 * How many old events `credhook serve` deletes per {@link EventOutbox.prune} call, a turn of the event loop between two
 * calls. Measured on SQLite at 100,000 credentials: 8-20 ms a batch, 19-38 ms with the checkpoint the SQLite store
 * runs after each (200 a batch: 15-35 ms, the checkpoint's sync being most of it).
 */
export const PRUNE_BATCH_SIZE = 500;

/** A credential as {@link EventOutbox.newestEvents} looks for its events: its id and its app key (their subject). */
export interface EventOwner {
  credentialId: string;
  /** The credential's app key (`CredentialRecord.appKey`): the subject of its events. */
  appKey: string;
}

/**
 * The outbox of a {@link CredentialStore}: events are written by the store's record writes
 * (`insert`, `save`, `delete` with `events`, in the same transaction) and by {@link append}; the
 * deliverer claims them, an app's oldest undelivered event at a time, and settles each.
 */
export interface EventOutbox {
  /** Appends events that go with no record change (drift found). Fenced like a record write. */
  append(events: readonly CredentialEvent[]): Promise<void>;
  /**
   * Claims events due for delivery for `holder` until `leaseUntil`: of each app (subject) whose earlier
   * events are all delivered or dead, its oldest pending event, when its next attempt is due at `now` and
   * no other holder's lease on it is running. On a shared store each event is claimed by one instance at a time.
   * The SQL stores read the partial index of pending events only (each app's oldest from it), never the delivered ones.
   * @param now ISO 8601; @param leaseUntil ISO 8601; @param limit most events returned
   * @returns the claimed events, oldest first
   */
  claim(now: string, leaseUntil: string, holder: string, limit: number): Promise<StoredEvent[]>;
  /**
   * Records an attempt's end and releases the claim — only while `holder` still holds it.
   * @returns false when the claim was lost (its lease ran out and another holder took the event)
   */
  settle(id: string, holder: string, settlement: EventSettlement): Promise<boolean>;
  /**
   * {@link settle} for a batch: records the ends of several attempts and releases their claims in one store write
   * (one transaction on SQLite, one statement on PostgreSQL) — each only while `holder` still holds it. The deliverer
   * settles each pass's batch with it. Optional: a store without it is settled one event at a time with {@link settle}.
   * @returns the ids settled; an id missing from it had lost its claim (its lease ran out and another holder took it)
   */
  settleAll?(holder: string, settlements: readonly EventSettlementOf[]): Promise<string[]>;
  /** The events matching `filter`, oldest first. */
  list(filter?: EventFilter): Promise<StoredEvent[]>;
  /**
   * The newest event of each of `credentials`, read from its app's events (the subject index, newest first): what
   * `credhook list` and `inspect` show beside each credential of a page, in one store read — one statement on
   * PostgreSQL, where a read per credential cost a page of 100 about 100 ms in round trips. Optional: a store without
   * it is read one credential at a time ({@link newestEventsOf} does either).
   * @returns each credential's newest event by its id; a credential without events is absent
   */
  newestEvents?(credentials: readonly EventOwner[]): Promise<Map<string, StoredEvent>>;
  /**
   * How many events are in each state. The SQL stores keep these counts as they write (triggers in each write's
   * transaction) and read them in O(1), never counting the events.
   */
  counts(): Promise<Record<EventStatus, number>>;
  /**
   * Deletes delivered and dead events older than `before` (ISO 8601): `events.retentionDays`. Pending ones are kept whatever their age.
   * @param limit at most this many in this call (absent: all of them): `credhook serve` prunes in batches of
   *   {@link PRUNE_BATCH_SIZE} and calls again while a batch comes back full, so that one statement stays short on a
   *   store whose driver is synchronous (SQLite), whatever the backlog. (A store written before `limit` existed deletes
   *   all of them at once; the loop then ends after one more call.)
   * @returns how many were deleted
   */
  prune(before: string, limit?: number): Promise<number>;
  /**
   * Settles every pending event that no live claim holds as delivered at `now` (ISO 8601), its attempts unchanged,
   * in one write: what `credhook serve` does with no sink configured, where events are kept for `credhook audit`
   * only — one statement a pass instead of a claim and a settle per event.
   * @param limit at most this many in this call (absent: all of them), which ones first unspecified: the delivery
   *   loop passes `events.batchSize` and follows a full batch with another pass (a backlog of 27,000 events — one
   *   `credhook expire` at a million credentials writes 22,000 — settled by one SQLite statement held the event loop
   *   for 341 ms; in batches of 200, 48 ms at most). (A store
   *   written before `limit` existed settles all of them at once; the loop then ends after one more pass.)
   * @returns how many were settled
   */
  settleUnsent(now: string, limit?: number): Promise<number>;
  /**
   * Makes dead events (of the app `app` names — its app key, slug or name — when given) pending again, due at
   * `now` (ISO 8601), with their attempts reset and the sinks that accepted them kept (they are not sent again):
   * `credhook audit --redeliver`, once the sink is fixed. Such an event goes out after its app's later events.
   * @returns how many were made pending
   */
  requeueDead(now: string, app?: string): Promise<number>;
}

/**
 * The SQL that makes the `events` table (the outbox) both SQL stores keep (SQLite from its schema
 * version 5, PostgreSQL from its migration 0003): one row per event, the CloudEvent as JSON in
 * `event`, beside the columns the claim, the audit filters and pruning need. Times are ISO 8601 text
 * (they sort as times). Frozen like `credentialsTableSql` (store.ts): a later change is a new migration.
 * @param seqType the `seq` column's type and key: `INTEGER PRIMARY KEY AUTOINCREMENT` on SQLite, `BIGSERIAL PRIMARY KEY` on PostgreSQL
 * @param jsonType the `event` column's type: `TEXT` on SQLite, `JSONB` on PostgreSQL
 * @returns the `CREATE TABLE` statement and its indexes, without trailing semicolons
 */
export function eventsTableSql(
  seqType: "INTEGER PRIMARY KEY AUTOINCREMENT" | "BIGSERIAL PRIMARY KEY",
  jsonType: "TEXT" | "JSONB",
): string[] {
  return [
    `CREATE TABLE events (
    seq ${seqType},
    id TEXT NOT NULL UNIQUE,
    subject TEXT NOT NULL,
    app_slug TEXT,
    app_name TEXT,
    type TEXT NOT NULL,
    time TEXT NOT NULL,
    event ${jsonType} NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending','delivered','dead')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    sinks_done TEXT NOT NULL DEFAULT '[]',
    last_error TEXT,
    settled_at TEXT,
    holder TEXT,
    lease_until TEXT
  )`,
    "CREATE INDEX events_pending ON events (status, subject, seq)",
    "CREATE INDEX events_subject ON events (subject, seq)",
    "CREATE INDEX events_time ON events (time)",
  ];
}

/**
 * The outbox's indexes since schema version 6 (SQLite) / migration 0004 (PostgreSQL), replacing version 5's
 * `events_pending (status, subject, seq)` and `events_subject (subject, seq)`: pending events are few (a
 * delivered or dead one leaves the index), so a claim reads a small partial index, and every write pays one
 * small index entry instead of two full ones. Dead events get their own small index (`credhook audit --status
 * dead`, the dead-events metric). Measured on SQLite: a create, update and revoke with their three events,
 * 64 at a time, about 10 % less CPU.
 */
export const EVENTS_PARTIAL_INDEXES_SQL: readonly string[] = [
  "DROP INDEX events_subject",
  "DROP INDEX events_pending",
  "CREATE INDEX events_pending ON events (subject, seq) WHERE status = 'pending'",
  "CREATE INDEX events_dead ON events (seq) WHERE status = 'dead'",
];

/**
 * The outbox's indexes for reads by app since SQLite schema version 8 / PostgreSQL migration 0006 (`EventFilter.app`:
 * `credhook audit --app`, `credhook inspect` and `list`, `requeueDead` of an app): an app's events by its key (the
 * event's subject), its slug or its name, each newest first from its own index, instead of a scan of every event.
 * Version 6 had dropped `events_subject` for the writes' sake; measured on SQLite, the three cost about 8 µs of CPU
 * per event written (one small entry each; 20–25 µs an event before).
 */
export const EVENTS_APP_INDEXES_SQL: readonly string[] = [
  "CREATE INDEX events_subject ON events (subject, seq)",
  "CREATE INDEX events_app_slug ON events (app_slug, seq) WHERE app_slug IS NOT NULL",
  "CREATE INDEX events_app_name ON events (app_name, seq) WHERE app_name IS NOT NULL",
];

/** Every {@link EventStatus}, in the order of the outbox's counts. */
export const EVENT_STATUSES: readonly EventStatus[] = ["pending", "delivered", "dead"];

/**
 * `status` as an {@link EventStatus}: what the SQL stores check before they write a state into a statement's text
 * (so that the planner sees a partial index's condition).
 * @throws ValidationError a string that is not an event state
 */
export function eventStatusOf(status: string): EventStatus {
  if (!(EVENT_STATUSES as readonly string[]).includes(status))
    throw new ValidationError([`an event's status is one of ${EVENT_STATUSES.join(", ")} (got '${status}')`]);
  return status as EventStatus;
}

/** The columns of one event row as both SQL stores insert it, in the order of {@link EVENT_INSERT_COLUMNS}. */
export function eventRow(
  event: CredentialEvent,
): [string, string, string | null, string | null, string, string, string, string] {
  return [
    event.id,
    event.subject,
    event.data.app?.appSlug ?? null,
    event.data.app?.appName ?? null,
    event.type,
    event.time,
    JSON.stringify(event),
    event.time,
  ];
}

/** The columns {@link eventRow} fills, for an `INSERT INTO events (…)`. */
export const EVENT_INSERT_COLUMNS = "id, subject, app_slug, app_name, type, time, event, next_attempt_at";

/** The columns of an {@link EventRowRead}, for a `SELECT` (or `RETURNING`) of events in both SQL stores. */
export const EVENT_READ_COLUMNS = "seq, event, status, attempts, next_attempt_at, sinks_done, last_error, settled_at";

/** An `events` row as both SQL stores read it back (`event` parsed by the driver on PostgreSQL, text on SQLite). */
export interface EventRowRead {
  seq: number | string;
  event: string | CredentialEvent;
  status: EventStatus;
  attempts: number;
  next_attempt_at: string;
  sinks_done: string;
  last_error: string | null;
  settled_at: string | null;
}

/** A read `events` row as a {@link StoredEvent}. */
export function storedEventOf(row: EventRowRead): StoredEvent {
  return {
    seq: Number(row.seq),
    event: typeof row.event === "string" ? (JSON.parse(row.event) as CredentialEvent) : row.event,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    sinksDone: JSON.parse(row.sinks_done) as string[],
    ...(row.last_error !== null ? { lastError: row.last_error } : {}),
    ...(row.settled_at !== null ? { settledAt: row.settled_at } : {}),
  };
}

/**
 * The newest event of each of `credentials` in `outbox`: {@link EventOutbox.newestEvents} when the store has it, else
 * a {@link EventOutbox.list} per credential (`app`, `credentialId`, `limit: 1`), one after the other.
 * @returns each credential's newest event by its id; a credential without events is absent
 */
export async function newestEventsOf(
  outbox: EventOutbox,
  credentials: readonly EventOwner[],
): Promise<Map<string, StoredEvent>> {
  if (outbox.newestEvents) return outbox.newestEvents(credentials);
  const newest = new Map<string, StoredEvent>();
  for (const { credentialId, appKey } of credentials) {
    const last = (await outbox.list({ app: appKey, credentialId, limit: 1 })).at(-1);
    if (last) newest.set(credentialId, last);
  }
  return newest;
}
