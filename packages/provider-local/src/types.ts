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
