/**
 * Types of a `provider: local` gateway: its options, derived from their one source, the
 * JSON Schema in `schema.ts` (each option's documentation is its `description` there),
 * and what the embedded provider keeps per credential.
 */
import type { CredentialType, GatewayApi, OptionsOf } from "@credhook/core/provider";
import type { optionsSchema } from "./schema.js";

/** Options of a `provider: local` gateway (`gateways.<name>.options`) as written in YAML; see `schema.ts`. */
export type LocalProviderOptions = OptionsOf<typeof optionsSchema>;

/** A usage plan of a `provider: local` gateway with its limits (an object entry of `usagePlans`; see `schema.ts`). */
export type UsagePlanDefinition = Exclude<NonNullable<LocalProviderOptions["usagePlans"]>[number], string>;

/**
 * Limits of a usage plan (`rate`, `quota`), enforced per credential by the embedded
 * gateway's key check and token endpoint (429 + `Retry-After` beyond them). Every
 * field is optional; a plan without limits admits every request.
 */
export type UsagePlanLimits = Omit<UsagePlanDefinition, "id">;

/** What the embedded provider keeps per credential (in the store's provider state, key `cred:<nativeId>`). No plaintext secret. */
export interface LocalCredentialState {
  credentialType: CredentialType;
  credentialId: string;
  /** SHA-256 hex digest of the secret (API key value or client secret); empty once the credential is disabled. */
  secretHash: string;
  /** False once revoked under `revokeMode: disable` (for good: its digest is dropped too). */
  enabled: boolean;
  /** True while turned off by `setEnabled` (`credhook disable`): refused by every check, its digest kept to turn it on again. */
  suspended?: boolean;
  apis: GatewayApi[];
  appName: string;
  developer: string;
  createdAt: string;
  updatedAt: string;
}

/** A change the provider made to one credential, for caches of it (the embedded gateway's). */
export interface LocalCredentialChange {
  /** Gateway name (key under `gateways:`). */
  gateway: string;
  /** Native id (`lk…` API key id / `lc…` client id) of the credential that changed. */
  nativeId: string;
  /** SHA-256 hex digests of the secrets whose lookups the change affects (old and new on a rotation). */
  secretHashes: string[];
}

/** A credential as the embedded gateway sees it: its state, native id and gateway. */
export interface LocalCredentialView extends LocalCredentialState {
  nativeId: string;
  gateway: string;
}

/**
 * What the embedded gateway (`@credhook/gateway`) reads of one `provider: local` gateway, and the one
 * thing it tells it (its token URL): the credentials found by key digest or native id, their changes
 * (in this process through {@link onChange}, across processes through {@link changeStamp}) and the
 * usage plans' limits. {@link localCredentialReader} gives it for a provider.
 */
export interface LocalCredentialReader {
  /** The gateway's name (key under `gateways:`). */
  readonly gatewayName: string;
  /** The credential type the gateway issues (from YAML). */
  readonly credentialType: CredentialType;
  /**
   * The API key whose SHA-256 hex digest is `secretHash` (one point read of the `key:` index, one of the
   * credential), or undefined when no credential of this gateway has that key; a disabled one has `enabled: false`.
   * @throws whatever the credential store throws when it cannot be read
   */
  findByKeyDigest(secretHash: string): Promise<LocalCredentialView | undefined>;
  /** The credential with native id `nativeId` (an API key id or client id), or undefined. @throws as {@link findByKeyDigest} */
  findByNativeId(nativeId: string): Promise<LocalCredentialView | undefined>;
  /** The store's change stamp of this gateway (a fresh UUID after every change), or undefined before the first change. */
  changeStamp(): Promise<string | undefined>;
  /** Calls `listener` after every change this provider makes in this process. @returns a function that removes it */
  onChange(listener: (change: LocalCredentialChange) => void): () => void;
  /**
   * Adds the `key:` index entry of every API key and the credential-id entry of every credential that lacks one,
   * once per store (the first complete pass, a page of credentials at a time, marks the indexes it built complete;
   * later calls are a point read each). `pass` chooses the indexes: the embedded gateway builds the key index before
   * it serves (a key check needs it) and the credential-id index in the background (a search by credential id reads
   * every credential until then, so nothing is missed meanwhile). A pass stopped by `pass.signal` marks nothing.
   * @returns how many credentials got an entry
   */
  ensureKeyIndex(pass?: KeyIndexPass): Promise<number>;
  /** The limits of usage plan `planId`, or undefined when it has none. */
  planLimits(planId: string): UsagePlanLimits | undefined;
  /** Every usage plan of this gateway that has limits. */
  limitedPlans(): ReadonlyMap<string, UsagePlanLimits>;
  /** Sets the URL returned as a client's `customCredentials.tokenUrl` when the `tokenUrl` option is not set. */
  useTokenUrl(url: string): void;
}

/** Which indexes {@link LocalCredentialReader.ensureKeyIndex} builds. */
export interface KeyIndexPass {
  /** The `key:` entry of every API key (what a key check reads). @default true */
  keys?: boolean;
  /** The `cid:` entry of every credential (what `findByCredential` reads). @default true */
  credentialIds?: boolean;
  /** Stops the pass between two pages (a server shutting down). */
  signal?: AbortSignal;
}
