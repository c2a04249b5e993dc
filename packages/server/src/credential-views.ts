/**
 * Credentials as an operator reads them (docs/leak-response.md): each found credential as a view — its gateways,
 * native ids, plans, age, last change, state and expiry (docs/expiry.md), never a secret — and the text of
 * `credhook inspect`, `list`, `revoke`, `disable` and `enable`. Finding the credentials and acting on them is core's
 * (`findCredentials`, `Orchestrator.actOnCredentials`); the commands (commands/*.ts) are thin wrappers over both.
 */
import type { CredentialRecord, CredentialStatus, CredentialStore } from "@credhook/core/store";
import {
  ACTION_DONE,
  type CredentialAction,
  type CredentialActionResult,
  type CredentialPageRequest,
  type CredentialQuery,
  type CredentialType,
  credentialExpiry,
  EXPIRY_STATES,
  type ExpiryPolicies,
  expiryState,
  findCredentialPage,
  findCredentials,
  newestEventsOf,
  type StoredEvent,
} from "@credhook/core";

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
 * The views of `records` at `nowMs`, each with its newest event — read for all of them at once
 * (`newestEventsOf`: one store read, from the outbox's subject index) —, only those in the expiry state `query.state`
 * names when it names one.
 */
async function viewsOf(
  store: CredentialStore,
  records: readonly CredentialRecord[],
  query: CredentialQuery,
  nowMs: number,
  policies: ExpiryPolicies | undefined,
): Promise<CredentialView[]> {
  const newest = store.outbox
    ? await newestEventsOf(
        store.outbox,
        records.map((rec) => ({ credentialId: rec.id, appKey: rec.appKey })),
      )
    : new Map<string, StoredEvent>();
  const views = records.map((rec) => {
    const last = newest.get(rec.id);
    return credentialView(rec, nowMs, last ? { type: last.event.type, time: last.event.time } : undefined, policies);
  });
  const expiryFilter = (EXPIRY_STATES as readonly string[]).includes(query.state ?? "") ? query.state : undefined;
  return expiryFilter ? views.filter((v) => v.expiry?.state === expiryFilter) : views;
}

/**
 * `credhook inspect`: the credentials matching `query` (an app's, a fingerprint's: a few) as views, each with its
 * newest event from the store's outbox (when it keeps events). `query.state` `expiring` or `expired` keeps the
 * credentials in that expiry state at `nowMs`.
 * @param nowMs the time ages and expiry states are counted to, ms since the epoch
 * @param policies the config's expiry policies (`resolveExpiryPolicies`); absent: what the records' marks say
 */
export async function inspectCredentials(
  store: CredentialStore,
  query: CredentialQuery,
  nowMs: number,
  policies?: ExpiryPolicies,
): Promise<CredentialView[]> {
  return viewsOf(store, await findCredentials(store, query), query, nowMs, policies);
}

/**
 * `credhook list`: one page of the credentials matching `query` as views (see {@link inspectCredentials}), read from
 * the store's paged walk (`findCredentialPage`): the command prints a page before it reads the next, so its memory
 * and each store read stay one page whatever the store holds.
 * @param page where the page starts (`after`: a page's `next`) and the most records it reads (`limit`, 1–1000)
 * @returns the page's views and the cursor of the next page (absent at the end)
 */
export async function inspectCredentialPage(
  store: CredentialStore,
  query: CredentialQuery,
  nowMs: number,
  policies: ExpiryPolicies | undefined,
  page: CredentialPageRequest,
): Promise<{ views: CredentialView[]; next?: string }> {
  const found = await findCredentialPage(store, query, page);
  const views = await viewsOf(store, found.records, query, nowMs, policies);
  return found.next !== undefined ? { views, next: found.next } : { views };
}

/** An age in seconds in words: `42s`, `17m`, `5h`, `12d`. */
export function formatAge(ageS: number): string {
  if (ageS < 60) return `${ageS}s`;
  if (ageS < 3600) return `${Math.floor(ageS / 60)}m`;
  if (ageS < 86_400) return `${Math.floor(ageS / 3600)}h`;
  return `${Math.floor(ageS / 86_400)}d`;
}

/** `credhook list`'s lines: one per credential (see {@link formatCredentialLines}); `no credentials` for none. */
export function formatCredentialList(views: CredentialView[]): string[] {
  return views.length === 0 ? ["no credentials"] : formatCredentialLines(views);
}

/** A line per credential — id, type, app, state, age, gateways:native ids, fingerprint —, as `credhook list` prints each page. */
export function formatCredentialLines(views: CredentialView[]): string[] {
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

/**
 * `credhook revoke`, `disable` and `enable`'s text: how many were acted on (and were so already), then a line per
 * credential — its outcome and gateways, `already …` for one that was so, the error of one that failed.
 */
export function formatActionResults(action: CredentialAction, results: CredentialActionResult[]): string[] {
  if (results.length === 0) return ["no credential matches, and the audit trail holds no revoke of one that did"];
  const already = new Map<string, number>();
  for (const r of results) if (r.already) already.set(r.outcome, (already.get(r.outcome) ?? 0) + 1);
  const done = results.filter((r) => r.outcome === ACTION_DONE[action] && !r.already).length;
  const note = [...already].map(([outcome, n]) => `${n} already ${outcome}`).join(", ");
  return [
    `${ACTION_DONE[action]} ${done} of ${results.length}${note ? ` (${note})` : ""}`,
    ...results.map((r) => {
      const state = r.already
        ? `already ${r.outcome}${r.since ? ` (since ${r.since})` : ""}${r.gateways.length > 0 ? `; told again: ${r.gateways.join(", ")}` : ""}`
        : `${r.outcome}${r.gateways.length > 0 ? ` on ${r.gateways.join(", ")}` : ""}`;
      return `  - ${r.credentialId} (${r.appKey}): ${state}${r.error ? `: ${r.error}` : ""}`;
    }),
  ];
}
