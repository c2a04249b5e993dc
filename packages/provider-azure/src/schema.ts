/**
 * JSON Schema (draft 2020-12) of the `azure` provider's options; see
 * {@link AzureProviderOptions} in `types.ts` for the meaning of each.
 */

const nonEmpty = { type: "string", minLength: 1 } as const;

/** The options schema core validates `gateways.<name>.options` with. */
export const optionsSchema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "credhook azure provider options",
  type: "object",
  additionalProperties: false,
  required: ["subscriptionId", "resourceGroup", "serviceName"],
  properties: {
    subscriptionId: { type: "string", pattern: "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description: "Azure subscription id (UUID)" },
    resourceGroup: { type: "string", minLength: 1, maxLength: 90, description: "resource group of the API Management service" },
    serviceName: { type: "string", minLength: 1, maxLength: 50, pattern: "^[a-zA-Z](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$", description: "API Management service name" },
    endpoint: { type: "string", pattern: "^https?://[^\\s/]+(/.*)?$", default: "https://management.azure.com", description: "ARM base URL" },
    credential: {
      description: "how to authenticate to ARM (static-token: tests and local fakes only)",
      default: { type: "default" },
      oneOf: [
        {
          type: "object",
          additionalProperties: false,
          required: ["type"],
          properties: { type: { const: "default" }, managedIdentityClientId: nonEmpty, tenantId: nonEmpty },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["type", "tenantId", "clientId", "clientSecret"],
          properties: { type: { const: "client-secret" }, tenantId: nonEmpty, clientId: nonEmpty, clientSecret: nonEmpty, authorityHost: { type: "string", pattern: "^https://" } },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["type"],
          properties: { type: { const: "managed-identity" }, clientId: nonEmpty },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["type", "token"],
          properties: { type: { const: "static-token" }, token: nonEmpty },
        },
      ],
    },
    timeoutMs: { type: "integer", minimum: 100, maximum: 600000, default: 30000, description: "time limit of one ARM call (ms), retries included" },
    maxRetries: { type: "integer", minimum: 0, maximum: 10, default: 3, description: "SDK retries of 429/5xx/network failures" },
    maxRetryAfterS: { type: "number", minimum: 0, maximum: 600, default: 10, description: "longest Retry-After (s) waited inside one request" },
    productMap: { type: "object", additionalProperties: { type: "string", minLength: 1, maxLength: 256 }, default: {}, description: "portal usage plan id → APIM product id" },
    apiMap: { type: "object", additionalProperties: { type: "string", minLength: 1, maxLength: 256, pattern: "^[^*#&+:<>?]+$" }, default: {}, description: "portal API id → APIM API id" },
    ownerMode: { enum: ["none", "developer-user"], default: "none", description: "who owns the subscriptions" },
    revokeMode: { enum: ["delete", "disable"], default: "delete", description: "delete the subscriptions, or set them cancelled" },
    subscriptionIdPrefix: { type: "string", pattern: "^[A-Za-z0-9_.-]{1,40}$", default: "credhook-", description: "prefix of every subscription id" },
    rateLimit: {
      type: "object",
      additionalProperties: false,
      default: {},
      description: "client-side ARM token buckets (per second / burst); 0 turns one off",
      properties: {
        writesPerSecond: { type: "number", minimum: 0, default: 10 },
        writeBurst: { type: "integer", minimum: 1, default: 200 },
        readsPerSecond: { type: "number", minimum: 0, default: 25 },
        readBurst: { type: "integer", minimum: 1, default: 250 },
      },
    },
    healthCacheMs: { type: "integer", minimum: 0, maximum: 3600000, default: 30000, description: "how long a health() answer is reused (ms)" },
  },
} as const;
