/**
 * Where a credential lives, and killing it everywhere when it leaks (docs/leak-response.md):
 * - `credhook inspect <app> | --fingerprint F [--json]`: each matching credential's gateways, native ids,
 *   plans, age, last change and state, and its expiry (docs/expiry.md), read from the store;
 * - `credhook list [--app A] [--gateway G] [--developer D] [--state S] [--type T] [--json]`: the store's
 *   credentials, filtered;
 * - `credhook revoke --fingerprint F | --app A [--reason leaked|TEXT] [--json]`: revokes the credential on every
 *   gateway at once through the orchestrator (as the portal's revoke does); `--reason leaked` also writes a
 *   `credential.leaked` event with the record's move to `revoking`;
 * - `credhook disable` / `credhook enable` (same options): turns the credential off on every gateway, keeping its
 *   record and resources, or on again.
 * The functions answer from a store (and an orchestrator): the commands (commands/inspect.ts, list.ts, revoke.ts,
 * disable.ts, enable.ts) are thin wrappers.
 */
import type { CredentialRecord, CredentialStatus, CredentialStore } from "@credhook/core/store";
import {
  type CredentialType,
  credentialExpiry,
  type ExpiryPolicies,
  expiryState,
  type Orchestrator,
  revokeRequestFor,
} from "@credhook/core";
import { type ErrorCode, isCredhookError, retryAfterOf } from "@credhook/core/errors";

/** The record states `credhook list --state` takes (a record's `status`). */
export const CREDENTIAL_STATES: readonly CredentialStatus[] = ["pending", "active", "revoking", "abandoned"];

/** The expiry states `credhook list --state` also takes (docs/expiry.md): past the warning time, past the expiry. */
export const EXPIRY_STATES = ["expiring", "expired"] as const;

/** Which credentials a command means; every given field must match. */
export interface CredentialQuery {
  /** The app: its app key (`slug:<developer>/<slug>`, `app:<developer>/<name>`), its slug or its name. */
  app?: string;
  /** The key's fingerprint, `sha256:` and 32 hex digits (`secretFingerprint`); the bare hex digits are accepted too. */
  fingerprint?: string;
  /** Only credentials bound on this gateway (a name under `gateways:`). */
  gateway?: string;
  /** Only this developer's apps (the portal's `developer`, compared as given). */
  developer?: string;
  /** Only records in this state, or (`expiring`, `expired`: {@link inspectCredentials} only) credentials in this expiry state. */
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

/**
 * The store's records matching `query`, oldest first. With a fingerprint, the store's index finds them
 * (`CredentialStore.findByFingerprint`); otherwise every record is read (`CredentialStore.list`): an
 * operator's command, not a request path.
 * @throws Error an invalid fingerprint or state
 */
export async function findCredentials(store: CredentialStore, query: CredentialQuery): Promise<CredentialRecord[]> {
  const fingerprint = query.fingerprint === undefined ? undefined : normalizeFingerprint(query.fingerprint);
  const byStatus = CREDENTIAL_STATES.includes(query.state as CredentialStatus);
  if (query.state !== undefined && !byStatus && !(EXPIRY_STATES as readonly string[]).includes(query.state))
    throw new Error(
      `--state must be one of ${[...CREDENTIAL_STATES, ...EXPIRY_STATES].join(", ")} (got '${query.state}')`,
    );
  const candidates =
    fingerprint !== undefined && store.findByFingerprint
      ? await store.findByFingerprint(fingerprint)
      : await store.list();
  return candidates
    .filter(
      (r) =>
        (query.app === undefined || isApp(r, query.app)) &&
        (fingerprint === undefined || r.keyFingerprint === fingerprint) &&
        (query.gateway === undefined ||
          r.bindings.some((b) => b.gateway === query.gateway) ||
          r.apis.some((a) => a.gateway === query.gateway)) &&
        (query.developer === undefined || r.app.developer === query.developer) &&
        (query.state === undefined || !byStatus || r.status === query.state) &&
        (query.type === undefined || r.credentialType === query.type) &&
        (query.credentialId === undefined || r.id === query.credentialId),
    )
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** One credential as `inspect` and `list` show it: never a secret, the key only as its fingerprint. */
export interface CredentialView {
  credentialId: string;
  credentialType: CredentialType;
  /** The id the portal holds (apiKeyId / clientId); empty while unknown. */
  publicId: string;
  appKey: string;
  app: CredentialRecord["app"];
  /** The record's state: `pending`, `active`, `revoking`, `abandoned`. */
  state: CredentialStatus;
  /** The key's fingerprint (`sha256:…`), when credhook saw the value. */
  keyFingerprint?: string;
  /** Each gateway the credential is on: its native id, and the APIs and usage plans it has there. */
  gateways: Array<{ gateway: string; nativeId: string; apis: string[]; plans: string[] }>;
  /** ISO 8601 creation time. */
  createdAt: string;
  /** Seconds since creation. */
  ageS: number;
  /** ISO 8601 time of the record's last write. */
  updatedAt: string;
  /** The credential's newest event in the store's audit trail (type and ISO 8601 time), when the store keeps events. */
  lastEvent?: { type: string; time: string };
  /** Why a record is not simply live: an abandoned create's reason, a failed update's gateways still settling. */
  note?: string;
  /** Set while the credential is turned off (`credhook disable`): since when, why, and the gateways that confirmed it. */
  disabled?: CredentialRecord["disabled"];
  /** When the key was first reported leaked (ISO 8601). */
  leakedAt?: string;
  /**
   * Its expiry (docs/expiry.md), when a policy applies: when it expires and is warned of (ISO 8601), the action and
   * the deciding policy's YAML path, its state at the view's time, and what the expiry pass did (`warnedAt`,
   * `expiredAt`, `actedAt`).
   */
  expiry?: {
    expiresAt: string;
    warnAt: string;
    action: "notify" | "disable" | "revoke";
    policy: string;
    state: "valid" | "expiring" | "expired";
    warnedAt?: string;
    expiredAt?: string;
    actedAt?: string;
  };
}

/**
 * `rec`'s expiry as a view shows it: the record's mark once it expired (kept as decided), else the policies'
 * decision when given (the config's, so a credential the expiry pass has not yet seen shows it too), else the mark.
 */
function expiryView(rec: CredentialRecord, nowMs: number, policies?: ExpiryPolicies): CredentialView["expiry"] {
  const mark = rec.expiry;
  const decided = policies && !mark?.expiredAt ? credentialExpiry(rec, policies) : undefined;
  const base = decided
    ? {
        expiresAt: decided.expiresAt,
        warnAt: decided.warnAt,
        action: decided.policy.action,
        policy: decided.policy.path,
      }
    : policies && !mark?.expiredAt
      ? undefined
      : mark && { expiresAt: mark.expiresAt, warnAt: mark.warnAt, action: mark.action, policy: mark.policy };
  if (!base) return undefined;
  return {
    ...base,
    state: expiryState(base, new Date(nowMs).toISOString())!,
    ...(mark?.warnedAt ? { warnedAt: mark.warnedAt } : {}),
    ...(mark?.expiredAt ? { expiredAt: mark.expiredAt } : {}),
    ...(mark?.actedAt ? { actedAt: mark.actedAt } : {}),
  };
}

/**
 * `rec` as a {@link CredentialView} at `nowMs` (ms since the epoch).
 * @param policies the config's expiry policies (`resolveExpiryPolicies`); absent: the expiry the record's mark says
 */
export function credentialView(
  rec: CredentialRecord,
  nowMs: number,
  lastEvent?: CredentialView["lastEvent"],
  policies?: ExpiryPolicies,
): CredentialView {
  const expiry = expiryView(rec, nowMs, policies);
  const on = (gateway: string) => rec.apis.filter((a) => a.gateway === gateway);
  const note = rec.abandoned
    ? `abandoned: ${rec.abandoned.reason}`
    : rec.unsettled
      ? `a failed update may still land on ${rec.unsettled.gateways.map((g) => g.gateway).join(", ")}`
      : undefined;
  return {
    credentialId: rec.id,
    credentialType: rec.credentialType,
    publicId: rec.publicId,
    appKey: rec.appKey,
    app: { ...rec.app },
    state: rec.status,
    ...(rec.keyFingerprint ? { keyFingerprint: rec.keyFingerprint } : {}),
    gateways: rec.bindings.map((b) => ({
      gateway: b.gateway,
      nativeId: b.nativeId,
      apis: on(b.gateway).map((a) => a.id),
      plans: [...new Set(on(b.gateway).flatMap((a) => a.usagePlans))],
    })),
    createdAt: rec.createdAt,
    ageS: Math.max(0, Math.floor((nowMs - Date.parse(rec.createdAt)) / 1000)),
    updatedAt: rec.updatedAt,
    ...(lastEvent ? { lastEvent } : {}),
    ...(note ? { note } : {}),
    ...(rec.disabled ? { disabled: { ...rec.disabled, gateways: [...rec.disabled.gateways] } } : {}),
    ...(rec.leakedAt ? { leakedAt: rec.leakedAt } : {}),
    ...(expiry ? { expiry } : {}),
  };
}

/**
 * `credhook inspect` and `credhook list`: the credentials matching `query` as views, each with its newest event
 * from the store's outbox (when it keeps events). `query.state` `expiring` or `expired` keeps the credentials in that
 * expiry state at `nowMs`.
 * @param nowMs the time ages and expiry states are counted to, ms since the epoch
 * @param policies the config's expiry policies (`resolveExpiryPolicies`); absent: what the records' marks say
 */
export async function inspectCredentials(
  store: CredentialStore,
  query: CredentialQuery,
  nowMs: number,
  policies?: ExpiryPolicies,
): Promise<CredentialView[]> {
  const records = await findCredentials(store, query);
  const views: CredentialView[] = [];
  for (const rec of records) {
    const events = store.outbox ? await store.outbox.list({ app: rec.appKey }) : [];
    const last = events.filter((e) => e.event.data.credentialId === rec.id).at(-1);
    views.push(
      credentialView(rec, nowMs, last ? { type: last.event.type, time: last.event.time } : undefined, policies),
    );
  }
  const expiryFilter = (EXPIRY_STATES as readonly string[]).includes(query.state ?? "") ? query.state : undefined;
  return expiryFilter ? views.filter((v) => v.expiry?.state === expiryFilter) : views;
}

/** An age in seconds in words: `42s`, `17m`, `5h`, `12d`. */
export function formatAge(ageS: number): string {
  if (ageS < 60) return `${ageS}s`;
  if (ageS < 3600) return `${Math.floor(ageS / 60)}m`;
  if (ageS < 86_400) return `${Math.floor(ageS / 3600)}h`;
  return `${Math.floor(ageS / 86_400)}d`;
}

/** `credhook list`'s lines: one per credential — id, type, app, state, age, gateways:native ids, fingerprint. */
export function formatCredentialList(views: CredentialView[]): string[] {
  if (views.length === 0) return ["no credentials"];
  return views.map((v) =>
    [
      v.credentialId,
      v.credentialType,
      v.appKey,
      [
        v.state,
        ...(v.disabled ? ["disabled"] : []),
        ...(v.expiry && v.expiry.state !== "valid" ? [v.expiry.state] : []),
      ].join("+"),
      `age ${formatAge(v.ageS)}`,
      v.gateways.map((g) => `${g.gateway}:${g.nativeId}`).join(",") || "-",
      v.keyFingerprint ?? "-",
    ].join("  "),
  );
}

/** `credhook inspect`'s lines: a block per credential — where it lives, with its plans, age, last change and state. */
export function formatCredentialDetails(views: CredentialView[]): string[] {
  if (views.length === 0) return ["no credentials"];
  return views.flatMap((v) => [
    `credential ${v.credentialId} (${v.credentialType})`,
    `  app: ${v.app.appName}${v.app.appSlug ? ` (slug ${v.app.appSlug})` : ""} of ${v.app.developer}  [${v.appKey}]`,
    `  state: ${v.state}${v.note ? ` (${v.note})` : ""}${v.disabled ? `, disabled since ${v.disabled.at}${v.disabled.reason ? ` (${v.disabled.reason})` : ""}${v.disabled.gateways.length < v.gateways.length ? `, confirmed on ${v.disabled.gateways.join(", ") || "no gateway yet"}` : ""}` : ""}`,
    ...(v.leakedAt ? [`  reported leaked: ${v.leakedAt}`] : []),
    ...(v.expiry
      ? [
          `  expires: ${v.expiry.expiresAt} (${v.expiry.state === "valid" ? `warning from ${v.expiry.warnAt}` : v.expiry.state}; then ${v.expiry.action}, by ${v.expiry.policy})`,
        ]
      : []),
    `  public id: ${v.publicId || "-"}`,
    `  key fingerprint: ${v.keyFingerprint ?? "-"}`,
    `  created: ${v.createdAt} (age ${formatAge(v.ageS)})`,
    `  last change: ${v.updatedAt}${v.lastEvent ? ` (${v.lastEvent.type} at ${v.lastEvent.time})` : ""}`,
    `  gateways:${v.gateways.length === 0 ? " none" : ""}`,
    ...v.gateways.map(
      (g) => `    - ${g.gateway}: ${g.nativeId}  apis ${g.apis.join(", ") || "-"}  plans ${g.plans.join(", ") || "-"}`,
    ),
  ]);
}

/** What `credhook revoke`, `disable` and `enable` do to each matching credential. */
export type CredentialAction = "revoke" | "disable" | "enable";

/** What `credhook revoke`, `disable` or `enable` did to one credential. */
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
const DONE: Record<CredentialAction, CredentialActionResult["outcome"]> = {
  revoke: "revoked",
  disable: "disabled",
  enable: "enabled",
};

/**
 * `credhook revoke`, `disable` and `enable`: acts on each credential matching `query` (by `--fingerprint`, or
 * `--app`) through the orchestrator, on every gateway at once, one credential after another. `revoke` goes the
 * portal's way (the record is deleted once every gateway let go); `disable` turns the credential off everywhere and
 * keeps its record (`Orchestrator.disable`); `enable` turns it on again.
 * @param how `leaked`: a `credential.leaked` event goes with the record's first change (once per credential);
 * `reason`: carried by the events
 * @throws Error when `query` names neither a fingerprint nor an app, or `--app` matches records of several apps
 */
export async function actOnCredentials(
  action: CredentialAction,
  orchestrator: Pick<Orchestrator, "revoke" | "disable" | "enable">,
  store: CredentialStore,
  query: Pick<CredentialQuery, "app" | "fingerprint" | "credentialId">,
  how: { leaked?: boolean; reason?: string } = {},
): Promise<CredentialActionResult[]> {
  if (query.app === undefined && query.fingerprint === undefined)
    throw new Error("say which credential: --fingerprint F or --app A");
  const records = await findCredentials(store, query);
  const apps = [...new Set(records.map((r) => r.appKey))];
  if (query.fingerprint === undefined && apps.length > 1)
    throw new Error(`'${query.app}' matches several apps (${apps.join(", ")}): give the app key`);
  const options = { ...(how.leaked ? { leaked: true } : {}), ...(how.reason ? { reason: how.reason } : {}) };
  const results: CredentialActionResult[] = [];
  for (const rec of records) {
    const base = { credentialId: rec.id, appKey: rec.appKey, publicId: rec.publicId };
    if (rec.status === "abandoned" || !rec.publicId) {
      const error =
        rec.status === "abandoned"
          ? "an abandoned create: never given to the portal, its clean-up is under way"
          : "no public id yet (a create in flight)";
      results.push({ ...base, outcome: "skipped", gateways: [], error });
      continue;
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
    try {
      let outcome;
      if (action === "revoke") {
        outcome = await orchestrator.revoke(revokeRequestFor(rec), options);
      } else if (action === "disable") outcome = await orchestrator.disable(rec.id, options);
      else outcome = await orchestrator.enable(rec.id, how.reason ? { reason: how.reason } : {});
      results.push({ ...base, outcome: DONE[action], gateways: outcome.gateways, ...already });
    } catch (err) {
      const retryAfterS = retryAfterOf(err);
      results.push({
        ...base,
        outcome: "failed",
        gateways: [],
        error: (err as Error).message,
        ...(isCredhookError(err) ? { status: err.status, code: err.code } : {}),
        ...(retryAfterS !== undefined ? { retryAfterS } : {}),
      });
    }
  }
  return results;
}

/** {@link actOnCredentials} with `revoke`: `credhook revoke`. */
export function revokeCredentials(
  orchestrator: Pick<Orchestrator, "revoke" | "disable" | "enable">,
  store: CredentialStore,
  query: Pick<CredentialQuery, "app" | "fingerprint">,
  how: { leaked?: boolean; reason?: string } = {},
): Promise<CredentialActionResult[]> {
  return actOnCredentials("revoke", orchestrator, store, query, how);
}

/**
 * The credentials matching `query` that the audit trail says were revoked (their `credential.revoked` events: a
 * revoked credential's record is gone), newest event per credential, as `action`'s results: for `revoke` and `disable`
 * done already (`outcome` `revoked`, `already`), for `enable` failed (a revoked key cannot come back). What
 * `credhook revoke`, `disable` and `enable` answer when no record matches, so that each can run again.
 * Reads the store's outbox by the key's fingerprint or the app (at most its newest 1000 events); none without an outbox.
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

/**
 * `credhook revoke`, `disable` and `enable`'s text: how many were acted on (and were so already), then a line per
 * credential — its outcome and gateways, `already …` for one that was so, the error of one that failed.
 */
export function formatActionResults(action: CredentialAction, results: CredentialActionResult[]): string[] {
  if (results.length === 0) return ["no credential matches, and the audit trail holds no revoke of one that did"];
  const already = new Map<string, number>();
  for (const r of results) if (r.already) already.set(r.outcome, (already.get(r.outcome) ?? 0) + 1);
  const done = results.filter((r) => r.outcome === DONE[action] && !r.already).length;
  const note = [...already].map(([outcome, n]) => `${n} already ${outcome}`).join(", ");
  return [
    `${DONE[action]} ${done} of ${results.length}${note ? ` (${note})` : ""}`,
    ...results.map((r) => {
      const state = r.already
        ? `already ${r.outcome}${r.since ? ` (since ${r.since})` : ""}${r.gateways.length > 0 ? `; told again: ${r.gateways.join(", ")}` : ""}`
        : `${r.outcome}${r.gateways.length > 0 ? ` on ${r.gateways.join(", ")}` : ""}`;
      return `  - ${r.credentialId} (${r.appKey}): ${state}${r.error ? `: ${r.error}` : ""}`;
    }),
  ];
}
