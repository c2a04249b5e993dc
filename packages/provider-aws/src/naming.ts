/**
 * Deterministic, traceable names, descriptions and tags of the AWS resources
 * credhook creates, within AWS's character sets and lengths.
 */
import { createHash } from "node:crypto";
import type { AppIdentity } from "@credhook/core/provider";

/** API key name limit (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-api-usage-plans.html: "The name cannot exceed 1024 characters"). */
const KEY_NAME_MAX = 1024;
/** Cognito ClientName: 1–128 characters of `[\w\s+=,.@-]` (https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_CreateUserPoolClient.html). */
const CLIENT_NAME_MAX = 128;
/** API Gateway tag values: ≤ 256 characters (https://docs.aws.amazon.com/apigateway/latest/api/API_CreateApiKey.html). */
const TAG_VALUE_MAX = 256;

/** Tag keys credhook puts on every API key. */
export const TAGS = {
  credentialId: "credhook:credential-id",
  developer: "credhook:developer",
  app: "credhook:app",
  appSlug: "credhook:app-slug",
  gateway: "credhook:gateway",
} as const;

/** `<prefix>/<developer>/<appSlug|appName>`, cut to 1,024 characters. */
export function apiKeyName(prefix: string, app: AppIdentity): string {
  return `${prefix}/${app.developer}/${app.appSlug ?? app.appName}`.slice(0, KEY_NAME_MAX);
}

/** Human-readable description of a credential, ≤ 1,024 characters. */
export function describeCredential(app: AppIdentity, gateway: string, credentialId: string): string {
  return `credhook credential ${credentialId || "(adopted)"} of app "${app.appName}" by ${app.developer} (gateway ${gateway})`.slice(
    0,
    1024,
  );
}

/** A tag value within API Gateway's character set and length; other characters become `_`. */
export function tagValue(v: string): string {
  return v.replace(/[^\p{L}\p{N}\s_.:/=+\-@]/gu, "_").slice(0, TAG_VALUE_MAX);
}

/** The tags of an API key: credential id, developer, app name, app slug, gateway. */
export function apiKeyTags(app: AppIdentity, gateway: string, credentialId: string): Record<string, string> {
  return {
    ...(credentialId ? { [TAGS.credentialId]: credentialId } : {}),
    [TAGS.developer]: tagValue(app.developer),
    [TAGS.app]: tagValue(app.appName),
    ...(app.appSlug ? { [TAGS.appSlug]: tagValue(app.appSlug) } : {}),
    [TAGS.gateway]: tagValue(gateway),
  };
}

/**
 * True when an API key's tags carry this gateway's mark and — unless
 * `credentialId` is empty (a record the store lost) — the credential's:
 * `credhook:gateway` = the gateway and `credhook:credential-id` = the id.
 */
export function ownsApiKey(tags: Record<string, string> | undefined, gateway: string, credentialId: string): boolean {
  if (tags?.[TAGS.gateway] !== tagValue(gateway)) return false;
  return credentialId === "" || tags[TAGS.credentialId] === credentialId;
}

/** Cognito ClientName characters (https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_CreateUserPoolClient.html#CognitoUserPools-CreateUserPoolClient-request-ClientName). */
const CLIENT_NAME_CHARS = /[^\w\s+=,.@-]/g;
/** The mark at the end of a client name: `@ch.<8 hex of the gateway>.<credential id>`. */
const CLIENT_MARK_RE = /@ch\.([0-9a-f]{8})\.([\w-]{1,64})$/;

/** 8 hex characters of SHA-256 of the gateway's name: the gateway part of a Cognito client's mark. */
export function gatewayMark(gateway: string): string {
  return createHash("sha256").update(gateway, "utf8").digest("hex").slice(0, 8);
}

/** The credential id as it appears in a mark: itself when it fits `[\w-]{1,64}` (credhook's UUIDs do), else `h` + 40 hex of its SHA-256. */
function markedId(credentialId: string): string {
  return /^[\w-]{1,64}$/.test(credentialId)
    ? credentialId
    : `h${createHash("sha256").update(credentialId, "utf8").digest("hex").slice(0, 40)}`;
}

/**
 * The ownership mark of a Cognito app client (Cognito has no tags on app
 * clients): the suffix `@ch.<gateway hash>.<credential id>` of its ClientName,
 * e.g. `credhook-dev@example.com-590d83b5c05f@ch.3f9a0c1e.6f1c…` (≤ 77 characters).
 */
export function clientMark(gateway: string, credentialId: string): string {
  return `@ch.${gatewayMark(gateway)}.${markedId(credentialId)}`;
}

/** The mark a client name ends with, or undefined. `credentialId` is the id as marked (see {@link clientMark}). */
export function parseClientMark(
  name: string,
): { gatewayHash: string; credentialId: string; readable: string } | undefined {
  const m = CLIENT_MARK_RE.exec(name);
  return m ? { gatewayHash: m[1]!, credentialId: m[2]!, readable: name.slice(0, m.index) } : undefined;
}

/**
 * `readable` + the mark of (gateway, credential id), within Cognito's 128
 * characters: the readable part is sanitised and cut, never the mark.
 */
export function markedClientName(readable: string, gateway: string, credentialId: string): string {
  const mark = clientMark(gateway, credentialId);
  const head = readable.replace(CLIENT_NAME_CHARS, "_").slice(0, CLIENT_NAME_MAX - mark.length);
  return `${head}${mark}`;
}

/** `<prefix>-<developer>-<appSlug|appName>` + the mark of (gateway, credential id), sanitised to Cognito's ClientName characters, ≤ 128. */
export function clientName(prefix: string, app: AppIdentity, gateway: string, credentialId: string): string {
  return markedClientName(`${prefix}-${app.developer}-${app.appSlug ?? app.appName}`, gateway, credentialId);
}

/** True when a client name carries this gateway's mark and — unless `credentialId` is empty — the credential's. */
export function ownsClient(name: string | undefined, gateway: string, credentialId: string): boolean {
  const mark = parseClientMark(name ?? "");
  if (!mark || mark.gatewayHash !== gatewayMark(gateway)) return false;
  return credentialId === "" || mark.credentialId === markedId(credentialId);
}
