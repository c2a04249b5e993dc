/**
 * TypeScript shapes of the credential webhook contract
 * (`docs/contract.md` at the repository root). Their one source is the OpenAPI
 * document `openapi/credential-webhook.openapi.yaml` (the schemas requests are
 * validated with): `openapi.generated.ts` is generated from it (`pnpm schema`) and
 * every type here is an alias of one of its `components["schemas"]`, documented
 * field by field by the document's `description`s. Fields the portal adds later are
 * tolerated and carried through untouched (the request schemas' `additionalProperties: true`).
 *
 * No alias needs adapting: where the generator's output was awkward the document now says
 * what it always meant, so the generated type is the right one. `CustomCredentials` and
 * the request bodies say `additionalProperties: true` (JSON Schema's default, so
 * validation is unchanged): without it an empty object schema generates
 * `Record<string, never>` and a request body no index signature for unknown fields. The
 * nested API and usage-plan shapes are named schemas (`ApiRef`, `UsagePlanRef`,
 * `ApiChange`, `UsagePlanChange`) rather than inline ones, so that they have names here.
 */
import { STATUS_CODES } from "node:http";
import type { components } from "./openapi.generated.js";

/** The contract's named schemas, as generated. */
type Schemas = components["schemas"];

/** The two credential types of the contract. */
export type CredentialType = Schemas["CredentialType"];

/** Every credential type, in contract order. */
export const CREDENTIAL_TYPES: readonly CredentialType[] = ["API_KEY", "CLIENT_CREDENTIALS"];

/** What an update did to an API or usage plan of the app. */
export type Action = Schemas["Action"];

/** Optional free-form extras; the contract's example carries string values. */
export type CustomCredentials = Schemas["CustomCredentials"];

/** A usage plan reference in a create request. */
export type UsagePlanRef = Schemas["UsagePlanRef"];

/** An API of the app in a create request. */
export type ApiRef = Schemas["ApiRef"];

/** Body of `POST /v1/createCredentials`. */
export type CreateCredentialsRequest = Schemas["CreateCredentialsRequest"];

/**
 * 200 body of `POST /v1/createCredentials`. The document's `oneOf` by `credentialType`
 * generates an intersection with a union (`credentialType` narrowed to one value per
 * branch); its required fields per branch are checked by the schema, not by this type.
 */
export type CreateCredentialsResponse = Schemas["CreateCredentialsResponse"];

/** A usage plan of an API in an update request. */
export type UsagePlanChange = Schemas["UsagePlanChange"];

/** An API of the app in an update request. */
export type ApiChange = Schemas["ApiChange"];

/** Body of `POST /v1/updateCredentials`. */
export type UpdateCredentialsRequest = Schemas["UpdateCredentialsRequest"];

/** Body of `POST /v1/revokeCredentials`. */
export type RevokeCredentialsRequest = Schemas["RevokeCredentialsRequest"];

/** Body of every 4xx/5xx answer. */
export type ErrorResponse = Schemas["ErrorResponse"];

/**
 * Builds an {@link ErrorResponse}: `error` is the HTTP reason phrase of `status`
 * (node:http `STATUS_CODES`), `path` the request path without its query string.
 */
export function errorResponse(status: number, messages: string[], path: string): ErrorResponse {
  return { timestamp: new Date().toISOString(), status, error: STATUS_CODES[status] ?? "Error", messages, path };
}
