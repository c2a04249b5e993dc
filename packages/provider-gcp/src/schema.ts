/**
 * JSON Schema (draft 2020-12) of the options of a `provider: gcp` gateway (the YAML
 * block `gateways.<name>.options`): the one source of their type
 * ({@link import("./types.js").GcpProviderOptions}, derived with `FromSchema`), their
 * defaults (core's `defineProvider` applies them) and their documentation (each
 * `description`, which editors show from the generated webhook.config.schema.json). Every
 * duration is in milliseconds unless its name ends in `S` (seconds). Unknown options
 * are refused (a typo must not silently fall back to a default).
 */
import { KEY_ID_PREFIX_PATTERN } from "./mapping.js";

/** An integer option of at least 1 with its default and description. */
const positiveInt = <const D extends number, const T extends string>(def: D, description: T) =>
  ({ type: "integer", minimum: 1, default: def, description }) as const;

/** The options schema core validates `gateways.<name>.options` with. */
export const optionsSchema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "credhook provider-gcp options",
  type: "object",
  required: ["projectId"],
  additionalProperties: false,
  properties: {
    projectId: { type: "string", minLength: 1, description: "Google Cloud project id (or number) that owns the keys." },
    endpoint: {
      type: "string",
      minLength: 1,
      description:
        "The API Keys endpoint: `host`, `host:port`, or a URL `https://host[:port]` / `http://host:port` (plain HTTP only for emulators and fakes). Overrides the default `https://apikeys.googleapis.com:443`, for Private Service Connect endpoints (`apikeys-myendpoint.p.googleapis.com`) or a local fake. The provider always uses the client library's REST transport (HTTP/1.1 + JSON).",
    },
    credentials: {
      description:
        "How the provider authenticates to Google. `application-default` (default): Application Default Credentials, i.e. the `GOOGLE_APPLICATION_CREDENTIALS` file, `gcloud auth application-default login`, or the attached service account on GCE/GKE/Cloud Run (https://cloud.google.com/docs/authentication/application-default-credentials). `key-file`: a service-account JSON key file at `path`. `static-token`: a fixed Bearer token (default `emulator`) that never refreshes, for local emulators and fakes only (`credhook demo`, tests); Google rejects it.",
      default: { type: "application-default" },
      oneOf: [
        {
          type: "object",
          required: ["type"],
          additionalProperties: false,
          properties: { type: { const: "application-default" } },
          description: "Application Default Credentials.",
        },
        {
          type: "object",
          required: ["type", "path"],
          additionalProperties: false,
          properties: {
            type: { const: "key-file" },
            path: { type: "string", minLength: 1, description: "Path of the service account's JSON key file." },
          },
          description: "A service-account JSON key file.",
        },
        {
          type: "object",
          required: ["type"],
          additionalProperties: false,
          properties: {
            type: { const: "static-token" },
            token: {
              type: "string",
              minLength: 1,
              writeOnly: true,
              description: "The Bearer token. Default `emulator`.",
            },
          },
          description: "A fixed Bearer token: local emulators and fakes only.",
        },
      ],
    },
    services: {
      type: "object",
      additionalProperties: { type: "string", minLength: 1 },
      description:
        "Portal API id → Google service name the key is restricted to (an API Gateway managed service such as `my-api-abc123.apigateway.my-project.cloud.goog`, or a Cloud Endpoints service). Checked before `serviceTemplate`.",
    },
    serviceTemplate: {
      type: "string",
      pattern: "\\{apiId\\}",
      description:
        "Service name for API ids not in `services`: `{apiId}` is replaced by the API id, e.g. `{apiId}.apigateway.my-project.cloud.goog`. Without it, an API id missing from `services` is an unknown reference (422).",
    },
    usagePlans: {
      type: "object",
      additionalProperties: { type: "array", items: { type: "string", minLength: 1 }, uniqueItems: true },
      description:
        "Usage plan id → the methods a key in that plan may call on the API's service (`apiTargets[].methods`, e.g. `[GetOrder, List*]`); `[]` means every method. When this map is given, a usage plan missing from it is an unknown reference (422). When it is absent, plans do not restrict methods and are only recorded in the key's annotations.",
    },
    keyIdPrefix: {
      type: "string",
      pattern: KEY_ID_PREFIX_PATTERN.source,
      default: "credhook-",
      description:
        "Prefix of every keyId (`<prefix><26 base32 characters of sha256(credentialId)>`): a lowercase letter, then up to 30 of `[a-z0-9-]`. Default `credhook-`.",
    },
    operationTimeoutMs: positiveInt(
      60_000,
      "Longest wait (ms) for one long-running operation (create/update/delete/undelete). Default 60000.",
    ),
    pollInitialDelayMs: positiveInt(
      500,
      "First delay (ms) between operation polls; grows ×1.5 up to 5000 ms. Default 500.",
    ),
    requestTimeoutMs: positiveInt(15_000, "Time-out (ms) of one HTTP call to the API. Default 15000."),
    rateLimit: {
      type: "object",
      additionalProperties: false,
      default: {},
      description:
        "Client-side rate limiting, sized below the API Keys quotas (https://cloud.google.com/api-keys/docs/quotas). The quotas are per project: every gateway of one process on the same endpoint and project (with the same limits) shares one read bucket and one write bucket.",
      properties: {
        writesPerMinute: positiveInt(
          100,
          "Sustained write calls (create/update/delete/undelete) per minute. With `writeBurst` it keeps any 60-second window at or below the project's quota of 120 writes per minute. Default 100.",
        ),
        writeBurst: positiveInt(20, "Write calls that may start at once after an idle period. Default 20."),
        readsPerMinute: positiveInt(
          200,
          "Sustained read calls (get/getKeyString/list and operation polls) per minute; Google's quota is 240 per minute. Default 200.",
        ),
        readBurst: positiveInt(40, "Read calls that may start at once after an idle period. Default 40."),
        maxQueueWaitMs: {
          type: "integer",
          minimum: 0,
          default: 10_000,
          description:
            "Longest a call may wait for the limiter (ms). A call that would wait longer fails at once with Throttled (503 + Retry-After) instead of holding the portal's synchronous request. Default 10000.",
        },
      },
    },
    retry: {
      type: "object",
      additionalProperties: false,
      default: {},
      description:
        "Retries. A 429 (RESOURCE_EXHAUSTED) is retried after Google's RetryInfo delay when it sends one, else after an exponential back-off with jitter; transient failures (5xx, connection errors, request time-outs) up to `maxAttempts`. Every wait of one provider operation (a create: createKey, its operation polls, getKeyString) comes out of one `budgetMs`; a retry whose wait does not fit is not made and the failure is answered (a 429: 503 + Retry-After). Google's retry guidance: https://cloud.google.com/apis/design/errors#retrying_errors",
      properties: {
        maxAttempts: positiveInt(
          3,
          "Attempts in all for a transient failure (5xx, no answer), the first included; 1 disables those retries. Default 3.",
        ),
        initialDelayMs: positiveInt(
          200,
          "First back-off delay after a transient failure (ms); doubles each attempt, with jitter. Default 200.",
        ),
        maxDelayMs: positiveInt(2000, "Longest back-off delay after a transient failure (ms). Default 2000."),
        throttleInitialDelayMs: positiveInt(
          1000,
          "First back-off delay after a 429 that carries no retry hint (ms); doubles with jitter, at most 5000 ms. Default 1000.",
        ),
        budgetMs: {
          type: "integer",
          minimum: 0,
          default: 10_000,
          description:
            "Total back-off (ms) one provider operation (create/update/revoke) may spend on retries of 429s and transient failures; 0 disables retries. Default 10000.",
        },
      },
    },
    healthCacheMs: {
      type: "integer",
      minimum: 0,
      default: 30_000,
      description:
        "How long (ms) a successful health() answer is reused; failures are reused for 5000 ms at most. Default 30000.",
    },
  },
} as const;
