/**
 * Options of the `azure` provider (the `options:` block of a `gateways:` entry
 * with `provider: azure`). The JSON Schema in `schema.ts` validates the same shape.
 */
import type { ArmRateLimit } from "./rate-limit.js";

/**
 * How the provider authenticates to Azure Resource Manager.
 * - `default`: `DefaultAzureCredential` (environment variables, workload identity,
 *   managed identity, Azure CLI …) — the production default.
 *   https://learn.microsoft.com/javascript/api/@azure/identity/defaultazurecredential
 * - `client-secret`: a service principal's tenant id, client id and secret
 *   (put the secret in YAML as `${AZURE_CLIENT_SECRET}`, never literally).
 * - `managed-identity`: the host's managed identity; `clientId` picks a
 *   user-assigned one.
 * - `static-token`: a fixed bearer token. **For tests and local fakes only**
 *   (a real ARM token expires within about an hour and is never refreshed).
 */
export type AzureCredentialOption =
  | { type: "default"; managedIdentityClientId?: string; tenantId?: string }
  | { type: "client-secret"; tenantId: string; clientId: string; clientSecret: string; authorityHost?: string }
  | { type: "managed-identity"; clientId?: string }
  | { type: "static-token"; token: string };

/** What `revoke` does to the credential's subscriptions. */
export type RevokeMode = "delete" | "disable";

/** Who owns the subscriptions the provider creates. */
export type OwnerMode = "none" | "developer-user";

/** Options of the `azure` provider. */
export interface AzureProviderOptions {
  /** Azure subscription id (a UUID) holding the API Management service. */
  subscriptionId: string;
  /** Resource group of the API Management service (1–90 characters). */
  resourceGroup: string;
  /** API Management service name (1–50 characters, `^[a-zA-Z](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$`). */
  serviceName: string;
  /**
   * ARM base URL. Sovereign clouds use theirs (`https://management.chinacloudapi.cn`,
   * `https://management.usgovcloudapi.net`); an `http://` URL (local fake or
   * emulator) is reached over plain HTTP with no TLS.
   * @default "https://management.azure.com"
   */
  endpoint?: string;
  /** How to authenticate. @default { type: "default" } */
  credential?: AzureCredentialOption;
  /**
   * Time limit of one ARM call in milliseconds, the SDK's retries and
   * Retry-After waits included; exceeded → 504 (UpstreamTimeout).
   * @default 30000
   */
  timeoutMs?: number;
  /** Retries of a throttled (429) or failed (5xx, network) ARM call, by the SDK's retry policy. @default 3 */
  maxRetries?: number;
  /**
   * Longest `Retry-After` (seconds) the provider waits for inside one request.
   * A longer one answers 503 with that `Retry-After` at once, so the portal's
   * synchronous call is not held.
   * @default 10
   */
  maxRetryAfterS?: number;
  /** Portal usage plan id → APIM product id. Unmapped ids are used as they are. @default {} (identity) */
  productMap?: Record<string, string>;
  /** Portal API id → APIM API id, for APIs with no usage plan (API-scoped subscriptions). Unmapped ids are used as they are. @default {} (identity) */
  apiMap?: Record<string, string>;
  /**
   * `none`: subscriptions have no owner (the administrator's).
   * `developer-user`: each is owned by the APIM user with the developer's
   * e-mail, found or created (then the developer must be an e-mail address).
   * @default "none"
   */
  ownerMode?: OwnerMode;
  /** `delete` deletes the subscriptions; `disable` sets their state to `cancelled`. @default "delete" */
  revokeMode?: RevokeMode;
  /**
   * Prefix of every subscription id the provider creates (its native credential
   * id is `<prefix><credentialId>`); 1–40 characters from `[A-Za-z0-9_.-]`.
   * @default "credhook-"
   */
  subscriptionIdPrefix?: string;
  /**
   * Client-side token buckets mirroring ARM's per-principal throttling, so a burst
   * queues in credhook instead of drawing 429s; a queue longer than
   * `maxRetryAfterS` answers 503 with the estimated wait as Retry-After. A rate of
   * 0 turns that bucket off. Gateways sharing endpoint, subscription and
   * credential share the buckets.
   * https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling
   * @default { writesPerSecond: 10, writeBurst: 200, readsPerSecond: 25, readBurst: 250 }
   */
  rateLimit?: Partial<ArmRateLimit>;
  /** How long a health() answer is reused, in milliseconds (failures: at most 5000). @default 30000 */
  healthCacheMs?: number;
}
