/**
 * Deterministic, traceable names, descriptions and tags of the AWS resources
 * credhook creates, within AWS's character sets and lengths.
 */
import type { AppIdentity } from "@credhook/core";

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
  return `credhook credential ${credentialId || "(adopted)"} of app "${app.appName}" by ${app.developer} (gateway ${gateway})`.slice(0, 1024);
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

/** `<prefix>-<developer>-<appSlug|appName>`, sanitised to Cognito's ClientName characters and cut to 128. */
export function clientName(prefix: string, app: AppIdentity): string {
  const raw = `${prefix}-${app.developer}-${app.appSlug ?? app.appName}`;
  return raw.replace(/[^\w\s+=,.@-]/g, "_").slice(0, CLIENT_NAME_MAX);
}
