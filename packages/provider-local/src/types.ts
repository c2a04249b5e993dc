import type { CredentialType, GatewayApi } from "@credhook/core";

/** Options of a `provider: local` gateway (`gateways.<name>.options`). */
export interface LocalProviderOptions {
  /**
   * Usage plan ids this gateway knows. When set, a request naming any other plan
   * is answered 422 (InvalidReference). @default unset: every plan id is accepted
   */
  usagePlans?: string[];
  /** API ids this gateway knows. When set, any other id is answered 422. @default unset: every id is accepted */
  apis?: string[];
  /** `delete` removes the credential on revoke; `disable` keeps it, disabled. @default "delete" */
  revokeMode?: "delete" | "disable";
  /** Length of generated secrets, characters of base62 (≈ 5.95 bits each). @default 40 */
  secretLength?: number;
  /** Token endpoint URL returned in customCredentials.tokenUrl of CLIENT_CREDENTIALS credentials, when you run one. */
  tokenUrl?: string;
}

/** What the embedded provider keeps per credential (in the store's provider state). No plaintext secret. */
export interface LocalCredentialState {
  credentialType: CredentialType;
  credentialId: string;
  /** SHA-256 hex digest of the secret (API key value or client secret). */
  secretHash: string;
  enabled: boolean;
  apis: GatewayApi[];
  appName: string;
  developer: string;
  createdAt: string;
  updatedAt: string;
}
