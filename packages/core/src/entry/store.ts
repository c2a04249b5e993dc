/**
 * `@credhook/core/store`: the credential-store interface (records intent before the cloud
 * calls), the credentials table's DDL both SQL stores create, the app key records are found
 * by, fencing of a store's writes by its lease, and what store packages share (`KeyedLock`,
 * the in-process `StoreLocks`; `AvailabilityLog`), and the events outbox beside the records. Named exports only
 * (packages/core/README.md, "Public surface").
 */
export type { AppRecords, CredentialStore, StoreContext, StoreFactory, StoreLocks } from "../store.js";
/** The record a store keeps (what core writes before and after the cloud calls). */
export type {
  AbandonedInfo,
  CredentialRecord,
  CredentialStatus,
  ExpiryInfo,
  GatewayApiWithGateway,
  GatewayBinding,
  PendingOperation,
  UnsettledInfo,
} from "../credential-record.js";
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
  EventRowRead,
  EventSettlement,
  EventStatus,
  StoredEvent,
} from "../events.js";
export {
  EVENT_INSERT_COLUMNS,
  EVENTS_PARTIAL_INDEXES_SQL,
  eventRow,
  eventsTableSql,
  storedEventOf,
} from "../events.js";
export { KeyedLock } from "../keyed-lock.js";
/** Types the interface refers to, re-exported so that a store needs no other entry point for them. */
export type { CredentialType } from "../contract.js";
export type { Logger } from "../logger.js";
export type { JsonValue, ProviderStateStore, RateSlots } from "../provider.js";
