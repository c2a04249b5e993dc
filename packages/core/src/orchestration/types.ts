/**
 * The shapes the orchestrator takes and returns (its options, each
 * operation's outcome, reconcile's report, adoption), shared by the
 * per-operation modules and re-exported from `@credhook/core`.
 */
import type { CircuitBreakerOptions } from "./circuits.js";
import type { ExpiryPolicies } from "../expiry-policy.js";
import type { CreateCredentialsRequest, CreateCredentialsResponse, CredentialType } from "../contract.js";
import type { Logger } from "../logger.js";
import type { OwnedResource } from "../provider.js";
import type { Gateway } from "../registry.js";
import type { Router } from "../routing.js";
import type { CredentialStore } from "../store.js";

/** Options of {@link Orchestrator}. */
export interface OrchestratorOptions {
  /** Gateways by name, from {@link loadGateways}. */
  gateways: Map<string, Gateway>;
  router: Router;
  store: CredentialStore;
  logger?: Logger;
  /** API key value generator. @default generateApiKeyValue with its default prefix (`credhook`, 40 random base62 characters, a 6-character checksum) */
  generateApiKey?: () => string;
  /**
   * How long after a create was given up a search that finds nothing still
   * does not prove that nothing exists — a cloud may complete a write the
   * client gave up on (docs/cloud-facts.md, "No cloud cancels work when the client
   * gives up"). An `abandoned` record is kept at least this long, ms.
   * @default 300000 (5 minutes: well beyond every provider's call timeout and the SDKs' retries)
   */
  abandonSettleMs?: number;
  /**
   * The clock credhook reads for record times and settle windows, ms since the epoch.
   * Injectable so that tests move time past a settle window instead of sleeping through it.
   * @default Date.now
   */
  now?: () => number;
  /**
   * Attempts of each compensating call (a revoke, a search) within the
   * request, with exponential backoff from 200 ms up to 2 s, before the rest
   * is left to the sweep, the next request and `credhook reconcile`.
   * @default 3
   */
  compensationAttempts?: number;
  /** Each gateway's circuit breaker, by gateway name (see `orchestration/circuits.ts`); a gateway not named gets the defaults. */
  circuitBreakers?: Record<string, CircuitBreakerOptions>;
  /**
   * The expiry policies by gateway name (`resolveExpiryPolicies` of the config's `gateways.<name>.expiry`,
   * docs/expiry.md), for {@link Orchestrator.expiryPass}. @default none: credentials do not expire
   */
  expiry?: ExpiryPolicies;
}

/** Why an operator revokes a credential (`credhook revoke`): the portal's revoke gives none. */
export interface RevokeOptions {
  /**
   * The key leaked (`credhook revoke --reason leaked`): a `credential.leaked` event is written with the record's
   * move to `revoking`, in the same transaction, before any gateway is called. @default false
   */
  leaked?: boolean;
  /** Why, in words, secret-free: carried by the `credential.leaked` and `credential.revoked` events. */
  reason?: string;
}

/** Why an operator, an alert or expiry disables (or enables) a credential ({@link Orchestrator.disable}). */
export interface DisableOptions {
  /**
   * The key leaked: a `credential.leaked` event is written with the record's `disabled` mark, in the same
   * transaction, before any gateway is called — once per credential, however often the leak is reported. @default false
   */
  leaked?: boolean;
  /** Why, in words, secret-free: kept on the record's mark and carried by the events. */
  reason?: string;
}

/** What an operation did, for the request log (never a secret). */
export interface OperationOutcome {
  /** Gateways the operation touched, in order. */
  gateways: string[];
  /** credhook's credential id, when known. */
  credentialId?: string;
  /** An update's gateways the credential was newly created on (its APIs moved there). */
  created?: string[];
  /** An update's gateways the credential was removed from (no API of it left there). */
  removed?: string[];
  /** Gateways that refused to revoke a resource under the request's id because it is not theirs (no credhook mark): left live, counted and logged at warn. */
  unowned?: string[];
}

/** Options of {@link Orchestrator.reconcile}. */
export interface ReconcileOptions {
  /** Report only; change nothing. @default false */
  dryRun?: boolean;
  /** Only records last written longer ago than this, ms. @default 60000 */
  olderThanMs?: number;
}

/** What reconcile did (or would do) with one unfinished credential. */
export interface ReconcileEntry {
  credentialId: string;
  appKey: string;
  /** The interrupted operation (`create` also for an abandoned create's cleanup). */
  op: "create" | "update" | "revoke";
  /** What was done, in words. */
  action: string;
  gateways: string[];
  /** Per-gateway failures; the record stays for the next run. */
  errors: string[];
}

/** Result of {@link Orchestrator.reconcile}. */
export interface ReconcileReport {
  dryRun: boolean;
  unfinished: ReconcileEntry[];
  /** Abandoned creates cleaned up (or, with dryRun, to clean up): their records are kept until a search after the settle window finds nothing. */
  abandoned: ReconcileEntry[];
  /** Live credentials whose failed or interrupted update may have left late writes, brought back to the record (or, with dryRun, to bring back) once their settle window ended. */
  unsettled: ReconcileEntry[];
  /** Unfinished records skipped because they were written within `olderThanMs` (possibly a live request's); `--older-than 0` includes them. */
  skippedRecent: number;
  /** Resources marked as credhook's that belonged to an abandoned create, or to a live credential on a gateway it is not bound to: revoked (listed here) or, with dryRun, to revoke. */
  garbage: Array<OwnedResource & { gateway: string }>;
  /** Resources tagged as credhook's that no credential record owns (drift); never deleted automatically. */
  orphans: Array<OwnedResource & { gateway: string }>;
  /** Gateways whose provider cannot list its resources (or failed to). */
  unlistable: string[];
}

/**
 * One existing credential to bring under credhook (`credhook adopt`): the
 * portal app it belongs to, in the shape of a create request, plus the id the
 * portal holds (apiKeyId or clientId).
 */
export interface AdoptionRequest {
  credentialType: CredentialType;
  /** The API key id the portal holds (API_KEY). */
  apiKeyId?: string;
  /** The client id the portal holds (CLIENT_CREDENTIALS). */
  clientId?: string;
  appName: string;
  developer: string;
  appSlug?: string;
  /** The app's APIs (with usage plans); they must all route to one gateway issuing `credentialType`. */
  apis: CreateCredentialsRequest["apis"];
}

/** What {@link Orchestrator.adopt} did (or would do) with one {@link AdoptionRequest}. */
export interface AdoptionResult {
  /** The apiKeyId / clientId. */
  publicId: string;
  /** `adopted`, `would adopt` (dry run), or `skipped` with a reason. */
  action: "adopted" | "would adopt" | "skipped";
  gateway?: string;
  /** The new credential id (adopted). */
  credentialId?: string;
  /** Why it was skipped. */
  reason?: string;
  /** Skipped because credhook holds this credential already (an adoption run again): nothing to do. */
  already?: true;
}

/** Result of {@link Orchestrator.create}. */
export interface CreateOutcome extends OperationOutcome {
  response: CreateCredentialsResponse;
  /** True when an existing live credential was returned (replayed create). */
  replayed: boolean;
}

/** What one cleanup pass over an abandoned create did (internal to core). */
export interface AbandonedCleanup {
  /** Every resource revoked in this pass: the record's bindings and what the searches found. */
  revoked: Array<OwnedResource & { gateway: string }>;
  /** Of those, the ones only a search found (not in the record): reported as garbage by reconcile. */
  found: Array<OwnedResource & { gateway: string }>;
  /** The record is gone (settled, or deleted meanwhile by another pass). */
  deleted: boolean;
  /** Per-gateway failures, secret-free; the record stays for the next pass. */
  errors: string[];
}

/** What one pass of {@link Orchestrator.reconcileLoopPass} did. */
export interface ReconcileLoopResult {
  /** False when another instance's runner held the turn. */
  ran: boolean;
  /** Interrupted operations finished (their instance is gone). */
  finished: ReconcileEntry[];
  /** Interrupted operations left alone because a live instance holds their app. */
  inFlight: number;
  /** The sweep of the same pass (see {@link SweepResult}). */
  swept: SweepResult;
}

/** What one sweep did: abandoned creates cleaned up, unsettled updates brought back to their records. */
export interface SweepResult {
  /** Abandoned creates given a cleanup pass. */
  swept: number;
  /** Of those, records gone (settled). */
  deleted: number;
  /** Resources revoked, by both kinds of pass. */
  revoked: number;
  /** Live credentials whose unsettled gateways were all brought back to the record. */
  settled: number;
}
