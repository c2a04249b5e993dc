/**
 * Portal ids → APIM subscription scopes, and the deterministic names of the
 * subscriptions and users the provider creates.
 *
 * APIM limits (https://learn.microsoft.com/rest/api/apimanagement/subscription/create-or-update):
 * sid ≤ 256 characters, none of `*#&+:<>?`; displayName 1–100 characters;
 * user id ≤ 80 characters (https://learn.microsoft.com/rest/api/apimanagement/user/create-or-update).
 */
import { createHash } from "node:crypto";
import type { AppIdentity, GatewayApi } from "@credhook/core/provider";

/** One subscription scope the app needs: a product (from a usage plan) or an API (an API with no usage plan). */
export interface Scope {
  kind: "product" | "api";
  /** APIM product or API id (after `productMap` / `apiMap`). */
  id: string;
  /** `/products/{id}` or `/apis/{id}`, as sent in `properties.scope`. */
  path: string;
  /** Where it comes from, for messages: `usage plan gold of API orders` / `API orders`. */
  origin: string;
}

/** Case-insensitive key of a scope path (APIM ids are case-insensitive). */
export function scopeKey(path: string): string {
  return path.toLowerCase();
}

/**
 * The scopes of an app's APIs on this gateway, in request order, without
 * duplicates: each usage plan is a product; an API with no usage plan is an
 * API-scoped subscription.
 */
export function scopesOf(
  apis: GatewayApi[],
  productMap: Record<string, string>,
  apiMap: Record<string, string>,
): Scope[] {
  const out = new Map<string, Scope>();
  for (const api of apis) {
    if (api.usagePlans.length === 0) {
      const id = apiMap[api.id] ?? api.id;
      const path = `/apis/${id}`;
      if (!out.has(scopeKey(path))) out.set(scopeKey(path), { kind: "api", id, path, origin: `API ${api.id}` });
      continue;
    }
    for (const plan of api.usagePlans) {
      const id = productMap[plan] ?? plan;
      const path = `/products/${id}`;
      if (!out.has(scopeKey(path)))
        out.set(scopeKey(path), { kind: "product", id, path, origin: `usage plan ${plan} of API ${api.id}` });
    }
  }
  return [...out.values()];
}

/** Short scope (`/products/x`, `/apis/x`, `/apis`) of a scope as ARM returns it (a full resource id). */
export function shortScope(scope: string | undefined): string {
  if (!scope) return "";
  const m = /\/(products|apis)\/([^/]+)$/i.exec(scope);
  if (m) return `/${m[1]!.toLowerCase()}/${m[2]}`;
  return /\/apis$/i.test(scope) ? "/apis" : scope;
}

const SAFE_ID = /^[A-Za-z0-9._-]+$/;

function hash(value: string, length: number): string {
  return createHash("sha256").update(value, "utf8").digest("hex").slice(0, length);
}

/** The native credential id: `<prefix><credentialId>`; every subscription id of the credential starts with it and `-`. */
export function nativeIdOf(prefix: string, credentialId: string): string {
  return `${prefix}${credentialId}`;
}

/**
 * Subscription id of one scope of a credential: `<nativeId>-p-<productId>` /
 * `<nativeId>-a-<apiId>` when the id is short and plain, else a 16-hex hash
 * of the (lower-cased) scope in its place. Deterministic, ≤ 256 characters,
 * allowed characters only.
 */
export function subscriptionIdOf(nativeId: string, scope: Scope): string {
  const tag = scope.kind === "product" ? "p" : "a";
  const plain = `${nativeId}-${tag}-${scope.id.toLowerCase()}`;
  if (SAFE_ID.test(scope.id) && plain.length <= 256) return plain;
  return `${nativeId}-${tag}-h${hash(scopeKey(scope.path), 16)}`;
}

// ------------------------------------------------------------------ ownership marks
//
// APIM subscriptions carry no tags; their id is the one property nobody can
// change after creation (displayName, scope, state and owner are editable in the
// portal). So the mark is the id itself, matched in full: a credential's native
// id is exactly `<prefix><credential id (a UUID)>` and each of its subscription
// ids exactly `<native id>-p-<product>` / `-a-<api>` (see subscriptionIdOf).
// A `startsWith(prefix)` test would let a gateway with prefix `credhook-` claim
// the subscriptions of a gateway with prefix `credhook-eu-` on the same service
// (issue 9, case 5); the full-format match cannot, whatever the two prefixes.

/** A credential id as core makes them (a UUID), the variable part of every mark. */
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
/** The scope part of a subscription id after the native id: `-p-<product>` / `-a-<api>` as subscriptionIdOf makes it. */
const SCOPE_TAIL = "-[pa]-[a-z0-9._-]+";
const UUID_ONLY = new RegExp(`^${UUID}$`, "i");

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** True when `id` is a credential id as core makes them (a UUID). */
export function isCredentialId(id: string): boolean {
  return UUID_ONLY.test(id);
}

/** The credential id a native id names when it is exactly `<prefix><UUID>` (case-insensitive), else undefined. */
export function credentialIdOfNativeId(prefix: string, nativeId: string): string | undefined {
  const m = new RegExp(`^${escapeRegExp(prefix)}(${UUID})$`, "i").exec(nativeId);
  return m ? m[1]!.toLowerCase() : undefined;
}

/** True when `sid` is exactly one of the subscription ids of the credential whose native id is `nativeId`. */
export function isSubscriptionOf(nativeId: string, sid: string): boolean {
  return new RegExp(`^${escapeRegExp(nativeId)}${SCOPE_TAIL}$`, "i").test(sid);
}

/** The credential a subscription id belongs to when it is exactly `<prefix><UUID>-p|a-<scope>`, else undefined. */
export function parseSubscriptionId(
  prefix: string,
  sid: string,
): { credentialId: string; nativeId: string } | undefined {
  const m = new RegExp(`^${escapeRegExp(prefix)}(${UUID})${SCOPE_TAIL}$`, "i").exec(sid);
  if (!m) return undefined;
  const credentialId = m[1]!.toLowerCase();
  return { credentialId, nativeId: sid.slice(0, prefix.length + credentialId.length) };
}

/**
 * The prefix of an id shaped like ANY credhook gateway's mark — a native id
 * `<prefix><UUID>` or a subscription id `<prefix><UUID>-p|a-<scope>` — else
 * undefined. Used to refuse adopting another credhook gateway's subscription.
 */
export function markPrefixOf(id: string): string | undefined {
  const m = new RegExp(`^(.+?)${UUID}(?:${SCOPE_TAIL})?$`, "i").exec(id);
  return m?.[1];
}

/** Readable subscription name, `App name (developer)`, cut to APIM's 100 characters. */
export function displayNameOf(app: AppIdentity): string {
  const dev = app.developer.length > 60 ? `${app.developer.slice(0, 59)}…` : app.developer;
  const room = 100 - dev.length - 3;
  const name = app.appName.length > room ? `${app.appName.slice(0, room - 1)}…` : app.appName;
  const out = `${name} (${dev})`;
  return out.trim().length === 0 ? "credhook app" : out;
}

/** Deterministic APIM user id of a developer e-mail: `credhook-<32 hex>` (≤ 80 characters). */
export function userIdOf(email: string): string {
  return `credhook-${hash(email.trim().toLowerCase(), 32)}`;
}

/** OData string literal body: single quotes doubled. */
export function odataString(value: string): string {
  return value.replace(/'/g, "''");
}
