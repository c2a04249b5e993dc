/**
 * The credential store interface: where core records which native resource each
 * gateway holds for a credential — before the cloud calls (intent, status
 * `pending`) and after them — so that a crash in between is recoverable
 * (`credhook reconcile`), never an orphaned live key.
 *
 * A store never receives a secret: only ids, the app's identity, the API set and
 * each provider's secret-free resources. Implementations: `@credhook/store-sqlite`
 * (embedded default); later `store-postgres`.
 */
import type { CredentialType } from "./contract.js";
import type { AppIdentity, GatewayApi, ProviderResources, ProviderStateStore } from "./provider.js";

/**
 * Lifecycle of a credential record:
 * - `pending`: intent recorded, cloud calls under way (or interrupted by a crash);
 * - `active`: every gateway holds it;
 * - `revoking`: revoke started and not finished on every gateway.
 * A fully revoked credential's record is deleted.
 */
export type CredentialStatus = "pending" | "active" | "revoking";

/** What one gateway holds for a credential. */
export interface GatewayBinding {
  /** Gateway name (key under `gateways:`). */
  gateway: string;
  /** Native id on that gateway (API key id, client id, subscription id …). */
  nativeId: string;
  /** Provider's secret-free resources for later update/revoke. */
  resources: ProviderResources;
}

/** The operation a `pending` record was in when it was last written. */
export interface PendingOperation {
  op: "create" | "update";
  /** ISO 8601 time the operation started. */
  startedAt: string;
  /** Gateways the operation meant to create the credential on. */
  createOn: string[];
  /** Gateways the operation meant to remove it from. */
  removeFrom: string[];
  /** The API set before the operation (for rolling an interrupted update back). */
  previousApis: GatewayApiWithGateway[];
  /** The API set the operation was moving to. */
  desiredApis?: GatewayApiWithGateway[];
}

/** An API of the app and the gateway it is routed to. */
export interface GatewayApiWithGateway extends GatewayApi {
  gateway: string;
}

/** One credential as the store keeps it. */
export interface CredentialRecord {
  /** credhook's id (UUID v4). */
  id: string;
  credentialType: CredentialType;
  /** Identity of the app: `slug:<appSlug>`, or `app:<developer>/<appName>` without a slug. */
  appKey: string;
  app: AppIdentity;
  /** The id returned to the portal (apiKeyId / clientId): the first gateway's native id. Empty until known. */
  publicId: string;
  status: CredentialStatus;
  /** The app's full API set, each with its gateway. */
  apis: GatewayApiWithGateway[];
  /** What each gateway holds. */
  bindings: GatewayBinding[];
  /** Set while status is `pending`. */
  pending?: PendingOperation;
  /** Non-secret extras returned to the portal at create (token endpoint, scopes), kept for replayed creates. */
  customCredentials?: Record<string, string>;
  /** ISO 8601 creation time. */
  createdAt: string;
  /** ISO 8601 time of the last write. */
  updatedAt: string;
}

/** The credential store. All methods may throw the driver's errors wrapped as core errors. */
export interface CredentialStore {
  /** Creates the schema / runs migrations. Idempotent. */
  init(): Promise<void>;
  /**
   * Inserts a new record.
   * @throws Conflict a record with the same id, or a live record with the same appKey + credentialType, exists
   */
  insert(record: CredentialRecord): Promise<void>;
  /** Replaces an existing record (matched by id); sets nothing itself. @throws NotFound no such id */
  save(record: CredentialRecord): Promise<void>;
  /** The record with this id, or undefined. */
  get(id: string): Promise<CredentialRecord | undefined>;
  /** The record whose publicId (apiKeyId/clientId) and type match, or undefined. */
  findByPublicId(credentialType: CredentialType, publicId: string): Promise<CredentialRecord | undefined>;
  /** The record of this app and type, or undefined. */
  findByAppKey(appKey: string, credentialType: CredentialType): Promise<CredentialRecord | undefined>;
  /** Deletes a record; true when it existed. */
  delete(id: string): Promise<boolean>;
  /** Records with status `pending` or `revoking` last written before `before` (ISO 8601), oldest first. */
  listUnfinished(before: string): Promise<CredentialRecord[]>;
  /** Every record (for drift reports). */
  list(): Promise<CredentialRecord[]>;
  /** Persistent key–value state for one gateway's provider. */
  stateFor(gateway: string): ProviderStateStore;
  /** @throws Error when the store cannot be read */
  health(): Promise<void>;
  /** Closes the connection; further calls fail. */
  close(): Promise<void>;
}
