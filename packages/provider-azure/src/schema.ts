/**
 * JSON Schema (draft 2020-12) of the `azure` provider's options (the `options:` block
 * of a `gateways:` entry with `provider: azure`): the one source of their type
 * ({@link import("./types.js").AzureProviderOptions}, derived with `FromSchema`), their
 * defaults (core's `defineProvider` applies them) and their documentation (each
 * `description`, which editors show from the generated webhook.config.schema.json).
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
    subscriptionId: {
      type: "string",
      pattern: "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
      description: "Azure subscription id (a UUID) holding the API Management service.",
    },
    resourceGroup: {
      type: "string",
      minLength: 1,
      maxLength: 90,
      description: "Resource group of the API Management service (1–90 characters).",
    },
    serviceName: {
      type: "string",
      minLength: 1,
      maxLength: 50,
      pattern: "^[a-zA-Z](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$",
      description:
        "API Management service name (1–50 characters: a letter, then letters, digits and hyphens, not ending in a hyphen).",
    },
    endpoint: {
      type: "string",
      pattern: "^https?://[^\\s/]+(/.*)?$",
      default: "https://management.azure.com",
      description:
        "ARM base URL. Sovereign clouds use theirs (`https://management.chinacloudapi.cn`, `https://management.usgovcloudapi.net`); an `http://` URL (local fake or emulator) is reached over plain HTTP with no TLS. Default `https://management.azure.com`.",
    },
    credential: {
      description:
        "How the provider authenticates to Azure Resource Manager. `default`: DefaultAzureCredential (environment variables, workload identity, managed identity, Azure CLI …), the production default (https://learn.microsoft.com/javascript/api/@azure/identity/defaultazurecredential). `client-secret`: a service principal's tenant id, client id and secret (write the secret as `${AZURE_CLIENT_SECRET}`, never literally). `managed-identity`: the host's managed identity; `clientId` picks a user-assigned one. `static-token`: a fixed bearer token, for tests and local fakes only (a real ARM token expires within about an hour and is never refreshed). Default `{ type: default }`.",
      default: { type: "default" },
      oneOf: [
        {
          type: "object",
          additionalProperties: false,
          required: ["type"],
          description: "DefaultAzureCredential (environment, workload identity, managed identity, Azure CLI …).",
          properties: {
            type: { const: "default" },
            managedIdentityClientId: {
              ...nonEmpty,
              description: "Client id of the user-assigned managed identity to use.",
            },
            tenantId: { ...nonEmpty, description: "Tenant (directory) id to authenticate in." },
          },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["type", "tenantId", "clientId", "clientSecret"],
          description: "A service principal's tenant id, client id and secret.",
          properties: {
            type: { const: "client-secret" },
            tenantId: { ...nonEmpty, description: "Tenant (directory) id of the service principal." },
            clientId: { ...nonEmpty, description: "Application (client) id of the service principal." },
            clientSecret: {
              ...nonEmpty,
              writeOnly: true,
              description: "The service principal's secret: write `${AZURE_CLIENT_SECRET}`, never the value.",
            },
            authorityHost: {
              type: "string",
              pattern: "^https://",
              description:
                "Microsoft Entra authority host of a sovereign cloud, e.g. `https://login.chinacloudapi.cn`.",
            },
          },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["type"],
          description: "The host's managed identity.",
          properties: {
            type: { const: "managed-identity" },
            clientId: {
              ...nonEmpty,
              description: "Client id of a user-assigned identity; absent: the system-assigned one.",
            },
          },
        },
        {
          type: "object",
          additionalProperties: false,
          required: ["type", "token"],
          description: "A fixed bearer token: tests and local fakes only (never refreshed).",
          properties: {
            type: { const: "static-token" },
            token: { ...nonEmpty, writeOnly: true, description: "The bearer token." },
          },
        },
      ],
    },
    timeoutMs: {
      type: "integer",
      minimum: 100,
      maximum: 600000,
      default: 30000,
      description:
        "Time limit of one ARM call in milliseconds, the SDK's retries and Retry-After waits included; exceeded: 504 (UpstreamTimeout). Default 30000.",
    },
    maxRetries: {
      type: "integer",
      minimum: 0,
      maximum: 10,
      default: 3,
      description:
        "Retries of a throttled (429) or failed (5xx, network) ARM call, by the SDK's retry policy. Default 3.",
    },
    maxRetryAfterS: {
      type: "number",
      minimum: 0,
      maximum: 600,
      default: 10,
      description:
        "Longest `Retry-After` (seconds) the provider waits for inside one request. A longer one answers 503 with that `Retry-After` at once, so the portal's synchronous call is not held. Default 10.",
    },
    productMap: {
      type: "object",
      additionalProperties: { type: "string", minLength: 1, maxLength: 256 },
      default: {},
      description:
        "Portal usage plan id → APIM product id. Unmapped ids are used as they are. Default `{}` (identity).",
    },
    apiMap: {
      type: "object",
      additionalProperties: { type: "string", minLength: 1, maxLength: 256, pattern: "^[^*#&+:<>?]+$" },
      default: {},
      description:
        "Portal API id → APIM API id, for APIs with no usage plan (API-scoped subscriptions). Unmapped ids are used as they are. Default `{}` (identity).",
    },
    ownerMode: {
      enum: ["none", "developer-user"],
      default: "none",
      description:
        "Who owns the subscriptions the provider creates. `none`: no owner (the administrator's). `developer-user`: each is owned by the APIM user with the developer's e-mail, found or created (the developer must then be an e-mail address). Default `none`.",
    },
    revokeMode: {
      enum: ["delete", "disable"],
      default: "delete",
      description:
        "What revoke does: `delete` deletes the subscriptions; `disable` sets their state to `cancelled`. Default `delete`.",
    },
    subscriptionIdPrefix: {
      type: "string",
      pattern: "^[A-Za-z0-9_.-]{1,40}$",
      default: "credhook-",
      description:
        "Prefix of every subscription id the provider creates (its native credential id is `<prefix><credentialId>`); 1–40 characters from `[A-Za-z0-9_.-]`. Default `credhook-`.",
    },
    rateLimit: {
      type: "object",
      additionalProperties: false,
      default: {},
      description:
        "Client-side token buckets mirroring ARM's per-principal throttling (https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling), so a burst queues in credhook instead of drawing 429s; a queue longer than `maxRetryAfterS` answers 503 with the estimated wait as Retry-After. A rate of 0 turns that bucket off. Gateways sharing endpoint, subscription and credential share the buckets.",
      properties: {
        writesPerSecond: {
          type: "number",
          minimum: 0,
          default: 10,
          description: "Writes per second (bucket refill); 0 turns the write bucket off. Default 10.",
        },
        writeBurst: {
          type: "integer",
          minimum: 1,
          default: 200,
          description: "Write burst (bucket size). Default 200.",
        },
        readsPerSecond: {
          type: "number",
          minimum: 0,
          default: 25,
          description: "Reads per second (bucket refill); 0 turns the read bucket off. Default 25.",
        },
        readBurst: { type: "integer", minimum: 1, default: 250, description: "Read burst (bucket size). Default 250." },
      },
    },
    healthCacheMs: {
      type: "integer",
      minimum: 0,
      maximum: 3600000,
      default: 30000,
      description: "How long a health() answer is reused, in milliseconds (a failure: at most 5000). Default 30000.",
    },
  },
} as const;
