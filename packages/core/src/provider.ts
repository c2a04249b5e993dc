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
 * InvalidReference, Throttled, UpstreamError, UpstreamUnavailable,
 * UpstreamTimeout — never a raw SDK error. They never log or return a secret
 * except in the fields meant for it ({@link ProviderCredential.apiKey},
 * {@link ProviderCredential.clientSecret}).
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
  changes: Array<{ id: string; action: "NONE" | "ADDED" | "REMOVED"; usagePlans: Array<{ id: string; action: "NONE" | "ADDED" | "REMOVED" }> }>;
  /** The app's name before this update, when it changed (a rename). */
  previousAppName?: string;
  customCredentials?: Record<string, unknown>;
}

/** What {@link Provider.update} returns. */
export interface ProviderUpdateResult {
  /** New resources to store (replaces the old record). */
  resources: ProviderResources;
}

/** Result of {@link Provider.rotateSecret}. */
export interface RotatedSecret {
  apiKey?: string;
  clientSecret?: string;
  resources: ProviderResources;
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
   * Creates the credential on this gateway.
   * @throws InvalidReference an unknown usage plan/product; nothing created is left behind
   * @throws Conflict the key value exists already (a value clash on import)
   * @throws Throttled | UpstreamError | UpstreamUnavailable | UpstreamTimeout cloud failures
   */
  create(input: ProviderCreateInput): Promise<ProviderCredential>;
  /**
   * Applies a change of the app's API/usage-plan set (and a rename) to this gateway.
   * Re-checks plans marked NONE and repairs drift where the cloud allows.
   * @throws NotFound the native credential does not exist
   * @throws InvalidReference an ADDED usage plan/product is unknown
   */
  update(input: ProviderUpdateInput): Promise<ProviderUpdateResult>;
  /**
   * Revokes (deletes, or disables where configured). Idempotent: a credential
   * already gone is success, never NotFound.
   */
  revoke(ref: ProviderCredentialRef): Promise<void>;
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
   * Lists the cloud resources tagged as credhook's (for `credhook reconcile`'s drift report).
   */
  listOwned?(): Promise<OwnedResource[]>;
  /**
   * Cheap availability check; may cache its answer briefly.
   * @throws UpstreamUnavailable the gateway cannot be reached or refused the probe
   */
  health(): Promise<void>;
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
  /** Every entry whose key starts with `prefix`. */
  list(prefix: string): Promise<Array<{ key: string; value: JsonValue }>>;
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
