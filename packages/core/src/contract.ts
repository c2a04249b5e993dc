/**
 * TypeScript shapes of the credential webhook contract
 * (`shared/spec/credential-webhook-contract.md`; the normative schemas are in
 * `openapi/credential-webhook.openapi.yaml`). Fields the portal adds later are
 * tolerated and carried through untouched.
 */
import { STATUS_CODES } from "node:http";

/** The two credential types of the contract. */
export type CredentialType = "API_KEY" | "CLIENT_CREDENTIALS";

/** Every credential type, in contract order. */
export const CREDENTIAL_TYPES: readonly CredentialType[] = ["API_KEY", "CLIENT_CREDENTIALS"];

/** What an update did to an API or usage plan of the app. */
export type Action = "NONE" | "ADDED" | "REMOVED";

/** Optional free-form extras; the contract's example carries string values. */
export type CustomCredentials = Record<string, unknown>;

/** A usage plan reference in a create request. */
export interface UsagePlanRef {
  /** Usage plan identifier (AWS: a 6-character usage plan id). */
  id: string;
}

/** An API of the app in a create request. */
export interface ApiRef {
  /** API identifier (AWS: a 10-character REST API id). */
  id: string;
  /** Usage plans of that API; absent or empty when the API has none. */
  usagePlans?: UsagePlanRef[];
}

/** Body of `POST /v1/createCredentials`. */
export interface CreateCredentialsRequest {
  appName: string;
  developer: string;
  apis: ApiRef[];
  /** Not in the contract shape; the portal sends it and credhook uses it as the app's identity. */
  appSlug?: string;
  customCredentials?: CustomCredentials;
  [extra: string]: unknown;
}

/** 200 body of `POST /v1/createCredentials`. */
export interface CreateCredentialsResponse {
  credentialType: CredentialType;
  clientId?: string;
  clientSecret?: string;
  apiKeyId?: string;
  apiKey?: string;
  customCredentials?: Record<string, string>;
}

/** A usage plan of an API in an update request. */
export interface UsagePlanChange {
  id: string;
  action: Action;
}

/** An API of the app in an update request. */
export interface ApiChange {
  id: string;
  action: Action;
  usagePlans?: UsagePlanChange[];
}

/** Body of `POST /v1/updateCredentials`. */
export interface UpdateCredentialsRequest {
  /** `<ISO 8601 timestamp>Z[GMT]`, e.g. `2023-06-27T21:23:21.523Z[GMT]`. */
  updatedAt?: string;
  appName?: string;
  developer?: string;
  credentialType: CredentialType;
  clientId?: string;
  apiKeyId?: string;
  apis: ApiChange[];
  appSlug?: string;
  customCredentials?: CustomCredentials;
  [extra: string]: unknown;
}

/** Body of `POST /v1/revokeCredentials`. */
export interface RevokeCredentialsRequest {
  appName?: string;
  developer?: string;
  credentialType: CredentialType;
  clientId?: string;
  clientSecret?: string;
  apiKeyId?: string;
  apiKey?: string;
  appSlug?: string;
  customCredentials?: CustomCredentials;
  [extra: string]: unknown;
}

/** Body of every 4xx/5xx answer. */
export interface ErrorResponse {
  /** ISO 8601 date-time of the answer. */
  timestamp: string;
  /** HTTP status code, repeated. */
  status: number;
  /** HTTP reason phrase of `status` (e.g. `Bad Request`). */
  error: string;
  /** One readable, secret-free line per problem. */
  messages: string[];
  /** Request path, e.g. `/v1/createCredentials`. */
  path: string;
}

/**
 * Builds an {@link ErrorResponse}: `error` is the HTTP reason phrase of `status`
 * (node:http `STATUS_CODES`), `path` the request path without its query string.
 */
export function errorResponse(status: number, messages: string[], path: string): ErrorResponse {
  return { timestamp: new Date().toISOString(), status, error: STATUS_CODES[status] ?? "Error", messages, path };
}
