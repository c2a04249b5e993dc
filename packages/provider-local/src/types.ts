import type { CredentialType, GatewayApi } from "@credhook/core";

/**
 * Limits of a usage plan, enforced per credential by the embedded gateway's key
 * check and token endpoint (429 + `Retry-After` beyond them). Every field is
 * optional; a plan without limits admits every request.
 */
export interface UsagePlanLimits {
  /**
   * Request rate, in fixed windows that start at a credential's first request
   * (rate-limiter-flexible): `perSecond` requests per 1 s window, `perMinute`
   * per 60 s window. Both may be set; both apply.
   */
  rate?: { perSecond?: number; perMinute?: number };
  /**
   * Request quota per calendar period in UTC: `perDay` resets at 00:00 UTC,
   * `perMonth` at 00:00 UTC on the 1st. Both may be set; both apply.
   */
  quota?: { perDay?: number; perMonth?: number };
}

/** A usage plan of a `provider: local` gateway: its id, and optionally its limits. */
export interface UsagePlanDefinition extends UsagePlanLimits {
  /** Usage plan id, as the portal sends it. */
  id: string;
}

/** Options of a `provider: local` gateway (`gateways.<name>.options`). */
export interface LocalProviderOptions {
  /**
   * Usage plans this gateway knows: plan ids, or `{ id, rate, quota }` objects
   * whose limits the embedded gateway enforces. When set, a request naming any
   * other plan is answered 422 (InvalidReference). @default unset: every plan id is accepted, none limited
   */
  usagePlans?: Array<string | UsagePlanDefinition>;
  /** API ids this gateway knows. When set, any other id is answered 422. @default unset: every id is accepted */
  apis?: string[];
  /** `delete` removes the credential on revoke; `disable` keeps it, disabled. @default "delete" */
  revokeMode?: "delete" | "disable";
  /** Length of generated secrets, characters of base62 (≈ 5.95 bits each). @default 40 */
  secretLength?: number;
  /**
   * Token endpoint URL returned in customCredentials.tokenUrl of CLIENT_CREDENTIALS
   * credentials. @default the embedded gateway's token endpoint when `embeddedGateway:` is configured, else none
   */
  tokenUrl?: string;
}

/** What the embedded provider keeps per credential (in the store's provider state, key `cred:<nativeId>`). No plaintext secret. */
export interface LocalCredentialState {
  credentialType: CredentialType;
  credentialId: string;
  /** SHA-256 hex digest of the secret (API key value or client secret); empty once the credential is disabled. */
  secretHash: string;
  enabled: boolean;
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
