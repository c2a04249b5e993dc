/**
 * The provider interface: what a gateway package (AWS, Azure, Google, the
 * embedded provider, a third party's) implements so that core can issue, change
 * and withdraw one app's credential on it.
 *
 * A provider package default-exports a {@link ProviderFactory}. Core validates
 * the gateway's `options` from YAML against {@link ProviderFactory.optionsSchema},
 * then calls {@link ProviderFactory.create} once per gateway at start-up.
 *
 * Providers throw only core's typed errors (`errors.ts`): NotFound, Conflict,
 * InvalidReference, PolicyViolation (a request the gateway's configuration cannot
 * serve, before any write), Throttled, UpstreamError, UpstreamUnavailable,
 * UpstreamTimeout — never a raw SDK error. They never log or return a secret
 * except in the fields meant for it ({@link ProviderCredential.apiKey},
 * {@link ProviderCredential.clientSecret}).
 *
 * ## Never an orphan, never someone else's resource (docs/architecture.md)
 *
 * - **Ownership before any write.** Everything a provider creates carries its
 *   mark: the gateway's name and credhook's credential id (AWS tags, Azure the
 *   gateway's subscription-id prefix, Google annotations, a name suffix where a
 *   cloud has no tags). `update`, `revoke` and `rotateSecret` read the mark
 *   before they write and never touch a resource without this gateway's mark
 *   (nor, when the ref names a credential id, another credential's mark):
 *   `revoke` answers `"not-owned"`, `update` throws NotFound. Foreign resources
 *   come under credhook only through {@link Provider.adopt} (`credhook adopt`).
 * - **Providers never clean up alone.** When `create` or `update` fails after a
 *   cloud write was accepted, the provider does not delete what it made: it
 *   throws the typed error with {@link CredhookErrorOptions.partial} (what exists
 *   now) and, when a write may have landed unseen (timeout, no answer, 5xx),
 *   `outcomeUnknown: true`. Core records it and compensates — one place owns
 *   rollback, retried by the request, the next request and `credhook reconcile`.
 * - **Never less access than before on failure.** When a credential moves
 *   (usage-plan swap, product change), add before remove.
 */
import type { CredentialType } from "./contract.js";
import type { Logger } from "./logger.js";

/** JSON value a provider may keep in the store. Never a secret. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Provider-private record of the native resources it holds for one credential (ids, ETags, plan ids). Never a secret. */
export type ProviderResources = { [key: string]: JsonValue };

/** Who the credential belongs to; used for names, tags and descriptions. */
export interface AppIdentity {
  /** Portal app name (may change on update: a rename). */
  appName: string;
  /** Developer who owns the app (an e-mail address in the portal). */
  developer: string;
  /** Portal app slug (e.g. `590d83b5c05f`) when the portal sends one. */
  appSlug?: string;
}

/** One API of the app on this gateway, with the usage plans it is in. */
export interface GatewayApi {
  /** API id as the portal sends it. */
  id: string;
  /** Usage plan ids of that API (possibly empty). */
  usagePlans: string[];
}

/** What a provider can do. */
export interface ProviderCapabilities {
  /** Credential types this provider issues. */
  credentialTypes: CredentialType[];
  /**
   * True when the gateway accepts a caller-chosen API key value (AWS, Azure,
   * local). False when it generates its own (Google): core then uses this
   * gateway's key value for the app's other gateways.
   * @default false
   */
  importsApiKeyValue: boolean;
  /**
   * True when {@link Provider.readSecret} can return a live secret (AWS GetApiKey
   * includeValue, Azure listSecrets, Google getKeyString, Cognito DescribeUserPoolClient).
   * False when only a hash is kept (local): a replayed create then rotates the secret.
   * @default false
   */
  readsBackSecret: boolean;
  /**
   * Regular expression (source, anchored) an imported API key value must match,
   * when the gateway restricts values. AWS API Gateway: `^[A-Za-z0-9]{20,128}$`.
   * Absent: any value core generates is accepted.
   */
  apiKeyValuePattern?: string;
  /**
   * For gateways that generate their own values (`importsApiKeyValue: false`):
   * every character a generated value may contain, and its length. Core checks
   * it against the other gateways' {@link apiKeyValuePattern} before creating
   * anything, so an app whose key could not be imported everywhere is a 422 up
   * front. Google: `AIza` + 35 of `[A-Za-z0-9_-]`.
   */
  generatedApiKeyFormat?: { characters: string; length: number };
  /**
   * The credential types {@link Provider.setEnabled} can turn off and on again (AWS API Gateway: API keys'
   * `enabled` flag; Azure API Management: a subscription's `suspended` state; the embedded gateway: both
   * types). Absent or empty: none (Google Cloud API Keys and Cognito app clients have no such switch).
   * @default []
   */
  disables?: CredentialType[];
  /**
   * False when no write of this provider can land after its call returned or
   * the process died — its state is credhook's own store (the embedded
   * provider). Core then needs no settle window before it trusts a search
   * that finds nothing. Every cloud: true (clouds do not cancel work when the
   * client gives up).
   * @default true
   */
  writesLandLate?: boolean;
  /**
   * The steady rate, per second, at which this provider's client-side limits let a credential's writes through
   * (create, revoke: its narrowest write quota, e.g. AWS's CreateApiKey 5/s), for `credhook apply --dry-run`'s
   * estimate of how long a migration takes. Absent: no declared limit (the estimate says so).
   */
  writesPerSecond?: number;
}

/** Input of {@link Provider.create}. */
export interface ProviderCreateInput {
  /**
   * credhook's stable id of the credential (a UUID). Providers derive
   * deterministic native names from it (Azure subscription id, Google keyId), so
   * that a retried create finds what a failed one left.
   */
  credentialId: string;
  credentialType: CredentialType;
  app: AppIdentity;
  /** This gateway's slice of the app's APIs. */
  apis: GatewayApi[];
  /**
   * The API key value to import (API_KEY only, when {@link ProviderCapabilities.importsApiKeyValue}).
   * Absent: the provider generates one (or the cloud does).
   */
  apiKeyValue?: string;
  /**
   * True when core generated {@link apiKeyValue} for this create (`generateApiKeyValue`: 238
   * random bits, never issued before), rather than reading it from another gateway: a provider that
   * checks imported values against its other keys may skip that check.
   */
  apiKeyValueGenerated?: boolean;
  /** The request's customCredentials, passed through. */
  customCredentials?: Record<string, unknown>;
}

/** What a provider returns from {@link Provider.create}. */
export interface ProviderCredential {
  /**
   * Native id of the credential on this gateway: the API key id (API_KEY) or the
   * client id (CLIENT_CREDENTIALS). Core returns the first gateway's one to the portal.
   */
  nativeId: string;
  /** API key value (API_KEY). Returned to the portal once; never stored by core. */
  apiKey?: string;
  /** Client secret (CLIENT_CREDENTIALS). Returned to the portal once; never stored by core. */
  clientSecret?: string;
  /** What the provider needs later to update/revoke; stored by core. No secret. */
  resources: ProviderResources;
  /** Extra values for the response (token endpoint URL, scopes …). String values only. */
  customCredentials?: Record<string, string>;
}

/** The record of a credential on one gateway, as core hands it back to the provider. */
export interface ProviderCredentialRef {
  credentialId: string;
  credentialType: CredentialType;
  /** Native id returned by create (or the request's apiKeyId/clientId when the store lost it). */
  nativeId: string;
  /** Resources returned by the last create/update; `{}` when adopted from the request's ids alone. */
  resources: ProviderResources;
  app: AppIdentity;
}

/** An update to an API usage-plan set, already resolved by core. */
export interface ProviderUpdateInput extends ProviderCredentialRef {
  /** The app's APIs on this gateway before the update. */
  previous: GatewayApi[];
  /** The app's APIs on this gateway after the update (ADDED/REMOVED applied, NONE kept). */
  desired: GatewayApi[];
  /** API ids and plans the request marked ADDED/REMOVED/NONE for this gateway, as sent. */
  changes: Array<{
    id: string;
    action: "NONE" | "ADDED" | "REMOVED";
    usagePlans: Array<{ id: string; action: "NONE" | "ADDED" | "REMOVED" }>;
  }>;
  /** The app's name before this update, when it changed (a rename). */
  previousAppName?: string;
  customCredentials?: Record<string, unknown>;
}

/** What {@link Provider.update} returns. */
export interface ProviderUpdateResult {
  /** New resources to store (replaces the old record). */
  resources: ProviderResources;
  /**
   * The credential id found in the resource's mark, when the input's
   * `credentialId` was empty (the store lost the record and core found the
   * credential by the request's id). Core then keeps that id, so the record
   * and the mark agree again.
   */
  credentialId?: string;
}

/** Result of {@link Provider.rotateSecret}. */
export interface RotatedSecret {
  apiKey?: string;
  clientSecret?: string;
  resources: ProviderResources;
}

/**
 * What {@link Provider.revoke} found: `revoked` (deleted or disabled now),
 * `gone` (nothing there: already revoked, or never created), `not-owned` (a
 * resource exists under that id but carries no mark of this gateway, or another
 * credential's: left untouched). A provider returning nothing means `revoked`.
 */
export type RevokeOutcome = "revoked" | "gone" | "not-owned";

/** Who to look for with {@link Provider.findByCredential}. */
export interface CredentialSearch {
  /** credhook's credential id whose mark to look for. */
  credentialId: string;
  credentialType: CredentialType;
  /** The app, for providers whose names derive from it (AWS key names are a prefix query). */
  app: AppIdentity;
  /** The APIs the credential was (meant to be) on at this gateway, for providers whose ids derive from them (Azure: one subscription per product). */
  apis: GatewayApi[];
}

/** A cloud resource tagged as credhook's, for drift reports. */
export interface OwnedResource {
  /** The native id {@link Provider.revoke} takes to remove this resource (with `resources: {}`). */
  nativeId: string;
  /** credhook credential id found in the resource's tags/annotations, if any. */
  credentialId?: string;
  description: string;
}

/** A gateway provider instance (one per `gateways:` entry). */
export interface Provider {
  /** Capabilities; constant for the provider's life. */
  readonly capabilities: ProviderCapabilities;
  /**
   * Creates the credential on this gateway, marked with the gateway's name and
   * `input.credentialId` (see "Ownership" above).
   *
   * A failure after a cloud write was accepted leaves the resource in place and
   * reports it: the thrown error carries `partial` ({nativeId, resources} of
   * what exists) and `outcomeUnknown: true` when a write may still land. Core
   * then revokes it. A provider never deletes what a failing create made.
   * @throws InvalidReference an unknown usage plan/product (with `partial` when the resource already exists)
   * @throws Conflict the key value exists already (a value clash on import)
   * @throws Throttled | UpstreamError | UpstreamUnavailable | UpstreamTimeout cloud failures
   */
  create(input: ProviderCreateInput): Promise<ProviderCredential>;
  /**
   * Applies a change of the app's API/usage-plan set (and a rename) to this gateway.
   * Re-checks plans marked NONE and repairs drift where the cloud allows.
   * Adds before it removes (attach the new usage plan/product, then detach the
   * old), so that a failure half-way leaves at least the access the credential
   * had before; core undoes the rest with an inverse update.
   * A resource without this gateway's mark is NotFound (never updated). With an
   * empty `credentialId` (the store lost the record) the gateway's mark suffices.
   * @throws NotFound the native credential does not exist, or is not this gateway's
   * @throws InvalidReference an ADDED usage plan/product is unknown
   * @throws Conflict the operator suspended the credential on this gateway and the update would create an active resource with its key
   */
  update(input: ProviderUpdateInput): Promise<ProviderUpdateResult>;
  /**
   * Revokes (deletes, or disables where configured) after checking the mark:
   * only a resource carrying this gateway's mark — and, when `ref.credentialId`
   * is not empty, that credential's mark — is revoked. Idempotent: a credential
   * already gone is `"gone"`, never NotFound; a resource that is not this
   * gateway's is `"not-owned"` and left untouched.
   */
  revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome | void>;
  /**
   * Turns the credential off (`enabled: false`: calls with it are refused, the resource stays) or on again,
   * after checking the mark as {@link revoke} does. Reversible, unlike a revoke: `credhook disable` and
   * `credhook enable`, a secret-scanning alert and expiry call it (docs/leak-response.md). Only for the
   * credential types in {@link ProviderCapabilities.disables}; without it core refuses a disable that
   * reaches this gateway before changing anything anywhere.
   * @returns `revoked` when the state changed (the word is {@link RevokeOutcome}'s), `gone` when the resource
   * no longer exists, `not-owned` when it is not this gateway's or this credential's (left untouched)
   * @throws Throttled | UpstreamError | UpstreamTimeout, typed as for revoke
   */
  setEnabled?(ref: ProviderCredentialRef, enabled: boolean): Promise<RevokeOutcome>;
  /**
   * Finds every resource on this gateway that carries this gateway's mark and
   * `search.credentialId`'s — by the deterministic ids, tags or names derived
   * from it, without listing the whole account where the cloud allows. Core
   * calls it when a create's outcome is unknown (a write that may land after
   * the client gave up) and revokes what it returns. A search that lists reads
   * every page: a resource beyond the first one is still found.
   * Without it, core falls back to {@link listOwned} filtered by credential id.
   */
  findByCredential?(search: CredentialSearch): Promise<OwnedResource[]>;
  /**
   * Brings an existing resource made outside credhook (by hand, by another
   * webhook) under this gateway explicitly: puts credhook's mark on it (tags,
   * annotations, or a record in the provider's state where the cloud has no
   * marks) and returns what to store. Only `credhook adopt` calls it — never a
   * portal request.
   * @throws NotFound no resource with `ref.nativeId`
   * @throws Conflict the resource carries another gateway's or credential's mark
   */
  adopt?(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult>;
  /**
   * Reads the live secret back (replayed creates, multi-gateway key reuse).
   * Only when {@link ProviderCapabilities.readsBackSecret}.
   * @throws NotFound the native credential does not exist
   */
  readSecret?(ref: ProviderCredentialRef): Promise<{ apiKey?: string; clientSecret?: string }>;
  /**
   * Replaces the secret with a new one (replayed creates where it cannot be read back).
   * `apiKeyValue` is the value to import, when core chose one.
   */
  rotateSecret?(ref: ProviderCredentialRef, apiKeyValue?: string): Promise<RotatedSecret>;
  /**
   * Lists the cloud resources tagged as credhook's (for `credhook reconcile`'s drift report),
   * every page of the cloud's list.
   */
  listOwned?(): Promise<OwnedResource[]>;
  /**
   * The same resources as {@link listOwned}, a page at a time (each page read when the one before has been
   * consumed), for a gateway that may hold more than fit in memory at once: `credhook reconcile` then holds one page
   * (and what it reports) instead of the whole listing. Optional and additive: core uses it when present, else
   * {@link listOwned}; a provider that has it keeps `listOwned` too (`credhook adopt`). The embedded provider pages
   * its state ({@link ProviderStateStore.listPage}); a cloud provider may yield its API's pages.
   * @throws as {@link listOwned}, from the page whose read failed (pages yielded before it stand)
   */
  listOwnedPages?(): AsyncIterable<OwnedResource[]>;
  /**
   * Cheap availability check; may cache its answer briefly.
   * @throws UpstreamUnavailable the gateway cannot be reached or refused the probe
   */
  health(): Promise<void>;
  /**
   * The definition of usage plan `planId` as this gateway's options give it (a Kong plan's limits, the Azure or
   * Apigee product a plan maps to, the methods a Google plan allows), for drift: core keeps a fingerprint of it on
   * each binding at create and update, and `credhook check-config`, `serve` and `apply` report a credential whose
   * plan's definition has changed since (docs/gateway-migration.md). Undefined: the plan is defined outside
   * credhook's config (an AWS usage plan lives in AWS), or unknown to this gateway. Without the method: no plan of
   * this gateway is ever reported changed. Pure, no I/O.
   */
  planDefinition?(planId: string): JsonValue | undefined;
  /** Releases timers, sockets and clients. */
  close?(): Promise<void>;
}

/** A namespaced key–value store core hands to providers that must persist state of their own (the embedded provider). */
export interface ProviderStateStore {
  /** Value stored under `key`, or undefined. */
  get(key: string): Promise<JsonValue | undefined>;
  /** Stores `value` under `key` (replaces). */
  put(key: string, value: JsonValue): Promise<void>;
  /** Removes `key`; returns true when it existed. */
  delete(key: string): Promise<boolean>;
  /** Every entry whose key starts with `prefix`, in key order (UTF-8 byte order). */
  list(prefix: string): Promise<Array<{ key: string; value: JsonValue }>>;
  /**
   * One page of {@link list}: the entries whose key starts with `prefix` and comes after `query.after` (UTF-8 byte
   * order), at most `query.limit` of them, and `next` (the page's last key) when more may follow — pass it as the
   * next page's `after`. A page costs its own size whatever the namespace holds: credhook's stores read it as one
   * range of their state table's primary key (gateway, key). Optional for a store written by a third party: walk
   * pages with `statePages` (`@credhook/core/provider`), which reads such a store's whole {@link list} as one page.
   * @param query.limit entries in a page, an integer from 1 to 1,000 (`PAGE_LIMIT_MAX`)
   * @throws ValidationError a limit out of that range
   */
  listPage?(prefix: string, query: StatePageQuery): Promise<StatePage>;
  /**
   * Applies `changes` atomically: every put and delete, or (on an error) none. Each key at most once.
   * Optional for a store written by a third party: {@link writeState} then applies them one by one.
   * credhook's stores: one transaction (SQLite: a savepoint in the group commit; PostgreSQL: one statement).
   */
  write?(changes: StateChange[]): Promise<void>;
}

/** Where a page of {@link ProviderStateStore.listPage} starts and how many entries it holds. */
export interface StatePageQuery {
  /** The key the page starts after (the `next` of the page before); absent: from the prefix's first key. */
  after?: string;
  /** Most entries in the page, an integer from 1 to 1,000. */
  limit: number;
}

/** A page of {@link ProviderStateStore.listPage}. */
export interface StatePage {
  /** The page's entries, in key order (UTF-8 byte order). */
  entries: Array<{ key: string; value: JsonValue }>;
  /** The last entry's key when more entries may follow (the next page's `after`); absent on the last page. */
  next?: string;
}

/** One change of {@link ProviderStateStore.write}: `value` stored under `key` (replacing), or `key` removed. */
export type StateChange = { key: string; value: JsonValue } | { key: string; delete: true };

/**
 * Applies `changes` to `state`: at once through {@link ProviderStateStore.write} when the store has it,
 * else one by one in their order (not atomic: a provider that needs all-or-nothing must stay safe
 * with any prefix applied).
 * @throws whatever the store throws (with `write`, nothing was applied)
 */
export async function writeState(state: ProviderStateStore, changes: StateChange[]): Promise<void> {
  if (state.write) return state.write(changes);
  for (const c of changes) {
    if ("delete" in c) await state.delete(c.key);
    else await state.put(c.key, c.value);
  }
}

/**
 * Call slots shared by every instance on the store, for the clouds' quotas,
 * which are per account — not per instance (docs/cloud-facts.md): a store that
 * several instances share offers them (`CredentialStore.rateSlots`), and core
 * hands them to each provider ({@link ProviderContext.rateSlots}). Each call of a
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

/** What core passes to {@link ProviderFactory.create}. */
export interface ProviderContext {
  /** The gateway's name (its key under `gateways:`), for messages and tags. */
  gateway: string;
  /** YAML path of the gateway's options, e.g. `gateways.aws-us.options`, for error messages. */
  configPath: string;
  /** The credential type this gateway issues (from YAML). */
  credentialType: CredentialType;
  /** Structured logger bound to the gateway. Never log secrets. */
  logger: Logger;
  /** Persistent key–value state, namespaced to this gateway. */
  state: ProviderStateStore;
  /**
   * Call slots shared by every credhook instance on the store (PostgreSQL),
   * for quotas that are per cloud account: a provider reserves a slot before
   * each attempt of a limited call (SDK retries included) and waits for it.
   * Absent with a single-instance store: in-process limiters see every call.
   */
  rateSlots?: RateSlots;
}

/** What a provider package default-exports. */
export interface ProviderFactory<Options = Record<string, unknown>> {
  /** Short type name (`aws`, `azure`, `gcp`, `local`, or the third party's). */
  readonly type: string;
  /** JSON Schema (draft 2020-12) of the gateway's `options` block; ajv validates the YAML with it. */
  readonly optionsSchema: Record<string, unknown>;
  /**
   * Builds the provider for one gateway. Options are already schema-valid.
   * @throws ConfigError options that are valid in shape but not usable (name the option)
   */
  create(options: Options, context: ProviderContext): Provider | Promise<Provider>;
}
