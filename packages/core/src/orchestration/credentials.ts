/**
 * Finding credentials by what an operator knows of them (an app, a leaked key's fingerprint, a gateway, a developer,
 * a state) and acting on every one found, on every gateway at once: revoke, disable, enable. What `credhook inspect`,
 * `list`, `revoke`, `disable`, `enable` and a secret-scanning alert share (docs/leak-response.md); the orchestrator's
 * {@link Orchestrator.findCredentials} and {@link Orchestrator.actOnCredentials} are the entry points.
 */
import type { RevokeCredentialsRequest } from "../contract.js";
import type { CredentialType } from "../contract.js";
import type { CredentialRecord, CredentialStatus } from "../credential-record.js";
import { type ErrorCode, isCredhookError, retryAfterOf } from "../errors.js";
import { type CredentialStore, PAGE_LIMIT_MAX } from "../store.js";
import { walkPages } from "../store-pages.js";
import { revokeRequestFor } from "./revoke.js";
import type { DisableOptions, OperationOutcome, RevokeOptions } from "./types.js";

/** The record states a query's `state` takes (a record's `status`). */
export const CREDENTIAL_STATES: readonly CredentialStatus[] = ["pending", "active", "revoking", "abandoned"];

/** The expiry states a query's `state` also takes (docs/expiry.md): past the warning time, past the expiry. */
export const EXPIRY_STATES = ["expiring", "expired"] as const;

/** Which credentials an operator means; every given field must match. */
export interface CredentialQuery {
  /** The app: its app key (`slug:<developer>/<slug>`, `app:<developer>/<name>`), its slug or its name. */
  app?: string;
  /** The key's fingerprint, `sha256:` and 32 hex digits (`secretFingerprint`); the bare hex digits are accepted too. */
  fingerprint?: string;
  /** Only credentials bound on this gateway (a name under `gateways:`). */
  gateway?: string;
  /** Only this developer's apps (the portal's `developer`, compared as given). */
  developer?: string;
  /**
   * Only records in this state; `expiring` and `expired` are not a record's state but its expiry's, which the caller
   * decides from the config's policies (findCredentials lets every record through for them).
   */
  state?: CredentialStatus | (typeof EXPIRY_STATES)[number];
  /** Only this credential type. */
  type?: CredentialType;
  /** Only the credential with this id (credhook's, the record's). */
  credentialId?: string;
}

/**
 * A fingerprint as the records keep it: `sha256:` and lowercase hex.
 * @throws Error when it is not `sha256:` (optional) and 32 hex digits
 */
export function normalizeFingerprint(fingerprint: string): string {
  const hex = fingerprint.trim().replace(/^sha256:/i, "");
  if (!/^[0-9a-fA-F]{32}$/.test(hex))
    throw new Error(
      `a key fingerprint is 'sha256:' and 32 hex digits, as events and \`credhook inspect\` show it (got '${fingerprint}')`,
    );
  return `sha256:${hex.toLowerCase()}`;
}

/** Whether `rec` is the app `app` names (its app key, its slug or its name). */
function isApp(rec: CredentialRecord, app: string): boolean {
  return rec.appKey === app || rec.app.appSlug === app || rec.app.appName === app;
}

/** One page of {@link findCredentialPage}: the matching records, and where the next page starts. */
export interface CredentialQueryPage {
  /** The page's records that match every field of the query, oldest first; fewer than asked (even none) does not mean the end. */
  records: CredentialRecord[];
  /** The cursor of the next page (its `after`); absent when the walk is complete. Opaque: pass it back as it came. */
  next?: string;
}

/** Where a page of {@link findCredentialPage} starts and how large it is. */
export interface CredentialPageRequest {
  /** A page's `next`, to continue after it; absent: from the oldest record. */
  after?: string;
  /** The most records the store reads for the page, 1 to {@link PAGE_LIMIT_MAX}. @default {@link PAGE_LIMIT_MAX} */
  limit?: number;
}

/**
 * A query's `state` checked: whether it is a record's state (else an expiry state, or none).
 * @throws Error a state that is neither
 */
function isRecordState(state: CredentialQuery["state"]): boolean {
  const byStatus = CREDENTIAL_STATES.includes(state as CredentialStatus);
  if (state !== undefined && !byStatus && !(EXPIRY_STATES as readonly string[]).includes(state))
    throw new Error(`--state must be one of ${[...CREDENTIAL_STATES, ...EXPIRY_STATES].join(", ")} (got '${state}')`);
  return byStatus;
}

/**
 * Whether `r` matches every field of `query` (the fingerprint normalised; `byStatus`: the query's state is a record's
 * state, {@link isRecordState}; an expiry state lets every record through).
 */
function matchesQuery(
  r: CredentialRecord,
  query: CredentialQuery,
  fingerprint: string | undefined,
  byStatus: boolean,
): boolean {
  return (
    (query.app === undefined || isApp(r, query.app)) &&
    (fingerprint === undefined || r.keyFingerprint === fingerprint) &&
    (query.gateway === undefined ||
      r.bindings.some((b) => b.gateway === query.gateway) ||
      r.apis.some((a) => a.gateway === query.gateway)) &&
    (query.developer === undefined || r.app.developer === query.developer) &&
    (!byStatus || r.status === query.state) &&
    (query.type === undefined || r.credentialType === query.type) &&
    (query.credentialId === undefined || r.id === query.credentialId)
  );
}

/**
 * One page of the store's records matching `query`, oldest first: `credhook list` walks them a page at a time, so
 * that neither the command nor the store holds more than a page. With a fingerprint, the store's index finds its few
 * records (`CredentialStore.findByFingerprint`) in one page, without a `next`; otherwise one page of the store's
 * paged walk (`CredentialStore.listPage`) with the app, state, developer and gateway handed to the store, so that an
 * app's credentials are read by its index and a state's from its own.
 * @throws Error an invalid fingerprint or state; ValidationError a `limit` out of range or an `after` no page returned
 */
export async function findCredentialPage(
  store: CredentialStore,
  query: CredentialQuery,
  page: CredentialPageRequest = {},
): Promise<CredentialQueryPage> {
  const fingerprint = query.fingerprint === undefined ? undefined : normalizeFingerprint(query.fingerprint);
  const byStatus = isRecordState(query.state);
  if (fingerprint !== undefined && store.findByFingerprint)
    return {
      records: (await store.findByFingerprint(fingerprint)).filter((r) =>
        matchesQuery(r, query, fingerprint, byStatus),
      ),
    };
  const read = await store.listPage({
    ...(query.app !== undefined ? { app: query.app } : {}),
    ...(byStatus ? { status: query.state as CredentialStatus } : {}),
    ...(query.developer !== undefined ? { developer: query.developer } : {}),
    ...(query.gateway !== undefined ? { gateway: query.gateway } : {}),
    limit: page.limit ?? PAGE_LIMIT_MAX,
    ...(page.after !== undefined ? { after: page.after } : {}),
  });
  return {
    records: read.records.filter((r) => matchesQuery(r, query, fingerprint, byStatus)),
    ...(read.next !== undefined ? { next: read.next } : {}),
  };
}

/**
 * The store's records matching `query`, oldest first, all at once: {@link findCredentialPage}'s pages read to the
 * end (an app's or a fingerprint's few records; `credhook list` walks the pages itself).
 * @throws Error an invalid fingerprint or state
 */
export async function findCredentials(store: CredentialStore, query: CredentialQuery): Promise<CredentialRecord[]> {
  const found: CredentialRecord[] = [];
  for await (const r of walkPages((after) => findCredentialPage(store, query, after !== undefined ? { after } : {})))
    found.push(r);
  return found.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** What an operator does to each credential a query finds. */
export type CredentialAction = "revoke" | "disable" | "enable";

/** What {@link actOnCredentials} did to one credential. */
export interface CredentialActionResult {
  credentialId: string;
  appKey: string;
  publicId: string;
  /**
   * `revoked`, `disabled`, `enabled` on every gateway; `failed` (what failed stays recorded: a retry or reconcile
   * finishes it); `skipped` (nothing to act on: an abandoned create, whose clean-up is under way, or no public id yet).
   */
  outcome: "revoked" | "disabled" | "enabled" | "failed" | "skipped";
  /** The gateways it was acted on. */
  gateways: string[];
  /** Why it failed or was skipped, secret-free. */
  error?: string;
  /** A failure's HTTP status and code, when it was one of credhook's typed errors (a 502 from a cloud, a 422 …). */
  status?: number;
  code?: ErrorCode;
  /** Seconds after which a retry makes sense, when the typed error says (a throttled or unavailable gateway). */
  retryAfterS?: number;
  /**
   * Set when the credential was in that state before: revoked before (its record is gone: `outcome` `revoked`, also for
   * a disable), disabled on every gateway before (the gateways were told again), or not disabled (an enable).
   */
  already?: true;
  /** Since when it has been so (ISO 8601), when known: the revoke's event time, the disable's mark. */
  since?: string;
}

/** The outcome each action ends in when it worked. */
export const ACTION_DONE: Readonly<Record<CredentialAction, CredentialActionResult["outcome"]>> = {
  revoke: "revoked",
  disable: "disabled",
  enable: "enabled",
};

/** How an action is carried out on one credential: the orchestrator's own operations (each under the app's lock). */
export interface CredentialOperations {
  revoke(req: RevokeCredentialsRequest, options?: RevokeOptions): Promise<OperationOutcome>;
  disable(credentialId: string, options?: DisableOptions): Promise<OperationOutcome>;
  enable(credentialId: string, options?: Pick<DisableOptions, "reason">): Promise<OperationOutcome>;
}

/** How an operator acts: `leaked` writes a `credential.leaked` event with the record's first change (once per credential); `reason` is carried by the events. */
export interface ActionOptions {
  leaked?: boolean;
  reason?: string;
}

/**
 * Acts on each credential matching `query` (by fingerprint, or app), on every gateway at once, one credential after
 * another: `revoke` goes the portal's way (the record is deleted once every gateway let go); `disable` turns it off
 * everywhere and keeps its record; `enable` turns it on again. Idempotent: when no record matches, the audit trail
 * answers ({@link revokedBefore}): a credential revoked before is `revoked`, `already` (a failure for `enable`).
 * @param ops the orchestrator's revoke / disable / enable
 * @throws Error when `query` names neither a fingerprint nor an app, or `app` matches records of several apps
 */
export async function actOnCredentials(
  action: CredentialAction,
  ops: CredentialOperations,
  store: CredentialStore,
  query: Pick<CredentialQuery, "app" | "fingerprint" | "credentialId">,
  how: ActionOptions = {},
): Promise<CredentialActionResult[]> {
  if (query.app === undefined && query.fingerprint === undefined)
    throw new Error("say which credential: --fingerprint F or --app A");
  const records = await findCredentials(store, query);
  const apps = [...new Set(records.map((r) => r.appKey))];
  if (query.fingerprint === undefined && apps.length > 1)
    throw new Error(`'${query.app}' matches several apps (${apps.join(", ")}): give the app key`);
  if (records.length === 0) return query.credentialId === undefined ? revokedBefore(action, store, query) : [];
  const results: CredentialActionResult[] = [];
  for (const rec of records) results.push(await actOnOne(action, ops, rec, how));
  return results;
}

/** {@link actOnCredentials} for one record. */
async function actOnOne(
  action: CredentialAction,
  ops: CredentialOperations,
  rec: CredentialRecord,
  how: ActionOptions,
): Promise<CredentialActionResult> {
  const base = { credentialId: rec.id, appKey: rec.appKey, publicId: rec.publicId };
  if (rec.status === "abandoned" || !rec.publicId) {
    const error =
      rec.status === "abandoned"
        ? "an abandoned create: never given to the portal, its clean-up is under way"
        : "no public id yet (a create in flight)";
    return { ...base, outcome: "skipped", gateways: [], error };
  }
  // Read before acting: a disable of a credential every gateway confirmed off, an enable of one not disabled.
  const already =
    action === "disable"
      ? rec.disabled && rec.disabled.gateways.length === rec.bindings.length
        ? { already: true as const, since: rec.disabled.at }
        : {}
      : action === "enable" && !rec.disabled
        ? { already: true as const }
        : {};
  const options = { ...(how.leaked ? { leaked: true } : {}), ...(how.reason ? { reason: how.reason } : {}) };
  try {
    const outcome =
      action === "revoke"
        ? await ops.revoke(revokeRequestFor(rec), options)
        : action === "disable"
          ? await ops.disable(rec.id, options)
          : await ops.enable(rec.id, how.reason ? { reason: how.reason } : {});
    return { ...base, outcome: ACTION_DONE[action], gateways: outcome.gateways, ...already };
  } catch (err) {
    const retryAfterS = retryAfterOf(err);
    return {
      ...base,
      outcome: "failed",
      gateways: [],
      error: (err as Error).message,
      ...(isCredhookError(err) ? { status: err.status, code: err.code } : {}),
      ...(retryAfterS !== undefined ? { retryAfterS } : {}),
    };
  }
}

/**
 * The credentials matching `query` that the audit trail says were revoked (their `credential.revoked` events: a
 * revoked credential's record is gone), newest event per credential, as `action`'s results: for `revoke` and `disable`
 * done already (`outcome` `revoked`, `already`), for `enable` failed (a revoked key cannot come back). What
 * {@link actOnCredentials} answers when no record matches, so that each command can run again.
 * Reads the store's outbox by the key's fingerprint or the app (at most its newest 1000 events); none without an outbox.
 * @throws Error an invalid fingerprint
 */
export async function revokedBefore(
  action: CredentialAction,
  store: CredentialStore,
  query: Pick<CredentialQuery, "app" | "fingerprint">,
): Promise<CredentialActionResult[]> {
  if (!store.outbox || (query.app === undefined && query.fingerprint === undefined)) return [];
  const fingerprint = query.fingerprint === undefined ? undefined : normalizeFingerprint(query.fingerprint);
  const events = await store.outbox.list(fingerprint !== undefined ? { fingerprint } : { app: query.app! });
  const revoked = new Map<string, CredentialActionResult>();
  const app = query.app;
  for (const { event } of events) {
    const d = event.data;
    if (event.type !== "credential.revoked" || d.credentialId === undefined) continue;
    if (fingerprint !== undefined && d.keyFingerprint !== fingerprint) continue;
    if (app !== undefined && event.subject !== app && d.app?.appSlug !== app && d.app?.appName !== app) continue;
    revoked.set(d.credentialId, {
      credentialId: d.credentialId,
      appKey: event.subject,
      publicId: d.publicId ?? "",
      gateways: [],
      since: event.time,
      ...(action === "enable"
        ? { outcome: "failed", error: `revoked at ${event.time}: a revoked credential cannot be enabled` }
        : { outcome: "revoked", already: true }),
    });
  }
  return [...revoked.values()];
}
