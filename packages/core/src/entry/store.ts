/**
 * `@credhook/core/store`: the credential-store interface (records intent before the cloud
 * calls), the credentials table's DDL both SQL stores create, the app key records are found
 * by, fencing of a store's writes by its lease, and what store packages share (`KeyedLock`,
 * the in-process `StoreLocks`; `AvailabilityLog`), and the events outbox beside the records. Named exports only
 * (packages/core/README.md, "Public surface").
 */
export type {
  AppRecords,
  CredentialCounts,
  CredentialListQuery,
  CredentialPage,
  CredentialStore,
  StoreContext,
  StoreFactory,
  StoreLocks,
  UnsettledListQuery,
} from "../store.js";
export { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PAGE_SCAN_ROWS } from "../store.js";
/** The paged reads' shared pieces: page size, cursors, the filters' meaning, a page cut from the rows a query examined. */
export type { ExaminedRow, PagePosition, PageWalk } from "../store-pages.js";
export {
  comparePositions,
  eventCountsOf,
  examinedMaxOf,
  matchesListQuery,
  pageOfExamined,
  pageStartOf,
  recordCountsOf,
  STORE_COUNT_COLUMNS,
  recordsById,
  STORE_COUNT_FIRST_COUNTS,
  walkPages,
} from "../store-pages.js";
/** The record a store keeps (what core writes before and after the cloud calls). */
export type {
  AbandonedInfo,
  CredentialRecord,
  CredentialStatus,
  DualHomedInfo,
  ExpiryInfo,
  GatewayApiWithGateway,
  GatewayBinding,
  PendingOperation,
  UnsettledInfo,
} from "../credential-record.js";
export { CREDENTIAL_STATUSES } from "../credential-record.js";
export { CREDENTIALS_INDEXES_SQL, credentialsTableSql } from "../store.js";
export { appKeyOf } from "../orchestration/api-sets.js";
export type { Fence } from "../fence.js";
export { assertFenceHeld, currentFence, runFenced } from "../fence.js";
export { AvailabilityLog } from "../availability.js";
/** The events outbox a store keeps beside its records (written in the same transaction), and the SQL both SQL stores share for it. */
export type {
  CredentialEvent,
  EventFilter,
  EventOutbox,
  EventOwner,
  EventRowRead,
  EventSettlement,
  EventSettlementOf,
  EventStatus,
  StoredEvent,
} from "../events.js";
export {
  EVENT_INSERT_COLUMNS,
  EVENT_READ_COLUMNS,
  EVENTS_APP_INDEXES_SQL,
  EVENTS_PARTIAL_INDEXES_SQL,
  EVENT_STATUSES,
  eventRow,
  eventStatusOf,
  eventsTableSql,
  storedEventOf,
} from "../events.js";
export { KeyedLock } from "../keyed-lock.js";
/** Types the interface refers to, re-exported so that a store needs no other entry point for them. */
export type { CredentialType } from "../contract.js";
export type { Logger } from "../logger.js";
export type { JsonValue, ProviderStateStore, RateSlots, StatePage, StatePageQuery } from "../provider.js";
/** What every store's `ProviderStateStore.listPage` shares: a page's key range, and the page its rows make. */
export type { StatePageBounds } from "../state-pages.js";
export { statePageBounds, statePageOf } from "../state-pages.js";
