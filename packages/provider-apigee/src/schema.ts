/**
 * JSON Schema (draft 2020-12) of the `apigee` provider's options (the `options:` block
 * of a `gateways:` entry with `provider: apigee`): the one source of their type, their
 * defaults and their documentation.
 */

import type { OptionsOf, ResolvedOptionsOf } from "@credhook/core/provider";
import { restClientOptions } from "@credhook/core/provider-kit";

const product = { type: "string", minLength: 1 } as const;

/** The options schema core validates `gateways.<name>.options` with. */
export const optionsSchema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "credhook apigee provider options",
  type: "object",
  additionalProperties: false,
  required: ["organization"],
  properties: {
    organization: {
      type: "string",
      minLength: 1,
      description: "Apigee organisation (for Apigee X, the Google Cloud project id).",
    },
    endpoint: {
      type: "string",
      pattern: "^https?://[^\\s/]+/?$",
      default: "https://apigee.googleapis.com",
      description:
        "Base URL of the management API. Default `https://apigee.googleapis.com`; a Private Service Connect endpoint or (`http://`) a local fake.",
    },
    credentials: {
      description:
        "How the provider authenticates to Google, through google-auth-library. `application-default` (default): Application Default Credentials (`GOOGLE_APPLICATION_CREDENTIALS`, `gcloud auth application-default login`, or the attached service account; https://cloud.google.com/docs/authentication/application-default-credentials). `key-file`: a service-account JSON key file at `path`. `static-token`: a fixed Bearer token for local fakes only (Google rejects it).",
      default: { type: "application-default" },
      oneOf: [
        {
          type: "object",
          required: ["type"],
          additionalProperties: false,
          properties: { type: { const: "application-default" } },
        },
        {
          type: "object",
          required: ["type", "path"],
          additionalProperties: false,
          properties: {
            type: { const: "key-file" },
            path: { type: "string", minLength: 1, description: "Path of the service account's JSON key file." },
          },
        },
        {
          type: "object",
          required: ["type"],
          additionalProperties: false,
          properties: {
            type: { const: "static-token" },
            token: { type: "string", minLength: 1, writeOnly: true, description: "The Bearer token. Default `fake`." },
          },
        },
      ],
    },
    productMap: {
      type: "object",
      additionalProperties: product,
      default: {},
      description:
        "Portal usage plan id → Apigee API product name. Unmapped ids are used as they are. Default `{}` (identity).",
    },
    apiMap: {
      type: "object",
      additionalProperties: product,
      default: {},
      description:
        "Portal API id → the API product an API with no usage plan grants. Unmapped ids are used as they are. Default `{}` (identity).",
    },
    appNamePrefix: {
      type: "string",
      pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$",
      default: "credhook-",
      description:
        "Prefix of the developer app names the provider creates (`<prefix><gateway>-<credential id>`). Default `credhook-`.",
    },
    tokenUrl: {
      type: "string",
      pattern: "^https://",
      description:
        "CLIENT_CREDENTIALS: the URL of the proxy running Apigee's OAuthV2 policy (GenerateAccessToken, client_credentials grant) — returned to the portal as customCredentials.tokenUrl.",
    },
    ...restClientOptions({
      call: "management call",
      timeoutMs: 15000,
      rateLimit: {
        requests: 600,
        windowMs: 60000,
        description:
          "Client-side limit of management calls: at most `requests` per sliding `windowMs` (plus 50 ms of jitter margin), retries included. Apigee enforces a per-project quota on the management API and answers 429 RESOURCE_EXHAUSTED (https://cloud.google.com/apigee/docs/api-platform/reference/limits); the default (600 per 60 s) stays well below it. 0 requests: no limit.",
      },
    }),
  },
} as const;

/** Options of the `apigee` provider as written in YAML (`gateways.<name>.options`). */
export type ApigeeProviderOptions = OptionsOf<typeof optionsSchema>;

/** {@link ApigeeProviderOptions} with every schema default applied: what the provider is built from. */
export type ApigeeProviderOptionsWithDefaults = ResolvedOptionsOf<typeof optionsSchema>;
