/**
 * The credential record: what core keeps per credential — whom it belongs to, its APIs and
 * gateways, what each gateway holds, and the marks of operations under way (a pending create or
 * update, an abandoned create, unsettled writes, a disable, an expiry) — and the id it is kept
 * under. Stores keep it (`store.ts`); events describe its changes (`events.ts`).
 *
 * A record never holds a secret: only ids, the app's identity, the API set and each provider's
 * secret-free resources.
 */
import { v7 as uuidv7 } from "uuid";
import type { CredentialType } from "./contract.js";
import type { AppIdentity, GatewayApi, ProviderResources } from "./provider.js";
import { pooledRandomBytes } from "./secrets.js";

/**
 * Lifecycle of a credential record (docs/multi-cloud.md, "The life of a credential record"):
 * - `pending`: intent recorded, cloud calls under way (or interrupted by a crash);
 * - `active`: every gateway holds it;
 * - `revoking`: revoke started and not finished on every gateway;
 * - `abandoned`: a create failed and the portal never received the credential,
 *   but a cloud write may have landed (outcome unknown) or its cleanup failed:
 *   the record keeps every hint to find what exists (bindings, the credential
 *   id that marks it, the gateways to search) until cleanup has found nothing
 *   left for {@link AbandonedInfo.settleUntil}. Never returned to the portal,
 *   never matched by an app's next create (which gets a new credential id).
 * A fully revoked credential's record is deleted.
 */
export type CredentialStatus = "pending" | "active" | "revoking" | "abandoned";

/** Every {@link CredentialStatus}, in the order of the lifecycle (and of the stores' counts). */
export const CREDENTIAL_STATUSES: readonly CredentialStatus[] = ["pending", "active", "revoking", "abandoned"];

/**
 * A new credential record id: a UUID version 7 (RFC 9562, section 5.7: 48 bits of Unix
 * time in ms, then 74 random bits; the `uuid` package), so ids sort by creation time. The
 * stores' primary-key index then grows at one end: the records of one commit share its last
 * page instead of each dirtying a page of its own (with the embedded provider's time-ordered
 * key ids, about 40 % fewer WAL frames per create on SQLite, and shorter commits and
 * checkpoints; measured). Records written before keep their version 4 ids.
 */
export function newRecordId(): string {
  // The random bits from core's buffered CSPRNG bytes: the package's own source makes one getrandom call per id (2–3 µs, 10× a v4 id's).
  return uuidv7({ random: pooledRandomBytes(16) });
}

/** Why and since when a record is `abandoned`, and where to search for what it may own. */
export interface AbandonedInfo {
  /** ISO 8601 time the create was given up. */
  at: string;
  /** Secret-free reason, for logs and `credhook reconcile`'s report. */
  reason: string;
  /** Gateways where a write of this credential may have landed unseen: searched by the credential's mark until settled. */
  uncertain: string[];
  /**
   * ISO 8601 time until which a search that finds nothing does not yet prove
   * that nothing exists (a cloud may still complete a write the client gave up
   * on). The record is deleted at the first clean search after this time.
   */
  settleUntil: string;
  /** Cleanup attempts so far. */
  attempts: number;
  /** ISO 8601 time of the last cleanup attempt. */
  lastAttemptAt?: string;
  /** The last cleanup error per gateway, secret-free. */
  lastErrors?: string[];
}

/**
 * Gateways of a live credential where a failed update (or its rollback, or an
 * update a crash interrupted) may still change something after credhook gave
 * up on the call: a cloud may complete a write the client gave up on
 * (docs/cloud-facts.md). Once `settleUntil` has passed, a pass brings each such
 * gateway back to the record — re-applying the record's API set where the
 * credential is bound, revoking whatever carries its mark where it is not —
 * and the field goes.
 */
export interface UnsettledInfo {
  /** Each gateway with the API set the uncertain write asked for (what may have landed there). */
  gateways: Array<{ gateway: string; attempted: GatewayApi[] }>;
  /** ISO 8601 time after which the convergence pass runs (before it, a late write may still land). */
  settleUntil: string;
  /** Convergence attempts so far. */
  attempts: number;
  /** The last attempt's errors per gateway, secret-free. */
  lastErrors?: string[];
}

/** What one gateway holds for a credential. */
export interface GatewayBinding {
  /** Gateway name (key under `gateways:`). */
  gateway: string;
  /** Native id on that gateway (API key id, client id, subscription id …). */
  nativeId: string;
  /** Provider's secret-free resources for later update/revoke. */
  resources: ProviderResources;
  /**
   * The credential id the resource's ownership mark carries, when it differs
   * from the record's id: `""` when the record was rebuilt from the request's
   * ids after the store lost it (the provider then checks only the gateway's
   * mark). Absent: the record's id.
   */
  markId?: string;
  /**
   * The fingerprint of each usage plan's definition this binding was made or last updated with, by plan id
   * (`planFingerprint` in drift.ts: a hash of what the gateway's config says the plan is, e.g. a Kong plan's
   * limits). A plan whose definition the gateway's config does not hold (an AWS usage plan, defined in AWS) has
   * none. Absent (a record written before credhook kept them): the plans' drift is unknown, never reported as drift.
   */
  planFingerprints?: Record<string, string>;
  /**
   * Set while this gateway still grants APIs that `credhook apply` moved to another gateway (docs/gateway-migration.md,
   * "dual-homed"): the same key value works on both gateways, so that traffic can be switched at the operator's pace.
   * A portal update keeps the binding (its dual-homed APIs follow the app's API set: one the portal removes is removed
   * here too), a revoke removes it as every other binding, drift does not count the credential as `moved` again, and
   * `credhook apply --prune` removes these APIs from this gateway (the binding itself when nothing else is left on it).
   */
  dualHomed?: DualHomedInfo;
}

/** What a dual-homed binding still grants ({@link GatewayBinding.dualHomed}). */
export interface DualHomedInfo {
  /** The ids of the app's APIs this gateway still grants although the record's API set puts them on another gateway. */
  apiIds: string[];
  /** ISO 8601 time the first of them was moved away (kept while any is left). */
  since: string;
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
  /**
   * The dual-homed API ids per gateway the operation gives the bindings ({@link GatewayBinding.dualHomed}): with
   * {@link desiredApis}, what each gateway was to grant. Absent: none.
   */
  dualHomed?: Record<string, string[]>;
  /**
   * The operation only takes dual-homed grants away (`credhook apply --prune`): an interruption is finished (the
   * grants removed, the marks cleared), not rolled back — a gateway's removal cannot be undone.
   */
  rollForward?: true;
}

/** An API of the app and the gateway it is routed to. */
export interface GatewayApiWithGateway extends GatewayApi {
  gateway: string;
}

/** Why and since when a credential is turned off ({@link CredentialRecord.disabled}). */
export interface DisabledInfo {
  /** ISO 8601 time of the decision (written before any gateway is called). */
  at: string;
  /** Why, in words, secret-free (`leaked`, an alert's source, `expired`). */
  reason?: string;
  /** The gateways that confirmed it is off; fewer than the bindings while a disable is unfinished (a retry completes it). */
  gateways: string[];
}

/**
 * A credential's expiry (docs/expiry.md), as the expiry pass last decided it from the config
 * (`gateways.<name>.expiry`), and the marks of what the pass did: each event is written once.
 */
export interface ExpiryInfo {
  /** ISO 8601 time it expires: its creation time + the deciding policy's `maxAgeDays`. */
  expiresAt: string;
  /** ISO 8601 time `credential.expiring` is due (`expiresAt` − `warnDays`; equal to `expiresAt`: no warning). */
  warnAt: string;
  /** What happens at the expiry: `notify`, `disable` or `revoke`. */
  action: "notify" | "disable" | "revoke";
  /** The YAML path of the deciding policy (`gateways.aws-us.expiry`, `gateways.aws-us.expiry.plans.gold`). */
  policy: string;
  /** ISO 8601 time `credential.expiring` was written. */
  warnedAt?: string;
  /** ISO 8601 time `credential.expired` was written; from then on the mark no longer follows the config. */
  expiredAt?: string;
  /** ISO 8601 time the action completed (a `notify` at once); absent after `expiredAt`: the next pass retries it. */
  actedAt?: string;
}

/** One credential as the store keeps it. */
export interface CredentialRecord {
  /** credhook's id (UUID v4). */
  id: string;
  credentialType: CredentialType;
  /** Identity of the app, as `appKeyOf` encodes it: `slug:<developer>/<appSlug>`, or `app:<developer>/<appName>` without a slug. */
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
  /** Set while status is `abandoned`. */
  abandoned?: AbandonedInfo;
  /** Set while a failed or interrupted update's writes may still land on some gateways (status `active`). */
  unsettled?: UnsettledInfo;
  /**
   * The fingerprint of the credential's secret (`secretFingerprint` in events.ts: a truncated SHA-256, one-way),
   * when credhook saw the value (a create, a rotation); never the value. Events carry it.
   */
  keyFingerprint?: string;
  /**
   * Set while an operator, a secret-scanning alert or expiry has turned the credential off on its gateways
   * (`credhook disable`; the record and every gateway's resource are kept, calls with it are refused).
   * The portal's update is refused (409) until `credhook enable`; its revoke works as always.
   */
  disabled?: DisabledInfo;
  /** ISO 8601 time the key was first reported leaked: its `credential.leaked` event is written once. */
  leakedAt?: string;
  /** Its expiry and what the expiry pass did (docs/expiry.md); absent while no expiry policy applies to it. */
  expiry?: ExpiryInfo;
  /** Non-secret extras returned to the portal at create (token endpoint, scopes), kept for replayed creates. */
  customCredentials?: Record<string, string>;
  /** ISO 8601 creation time. */
  createdAt: string;
  /** ISO 8601 time of the last write. */
  updatedAt: string;
}
