/**
 * `@credhook/provider-gcp`: API keys on Google Cloud API Keys (v2), restricted
 * to the services of the app's APIs. Default export: the provider factory
 * (`provider: gcp` in `webhook.config.yaml`).
 *
 * ```yaml
 * gateways:
 *   gcp:
 *     provider: gcp
 *     credentialType: API_KEY
 *     options:
 *       projectId: my-project
 *       serviceTemplate: "{apiId}.apigateway.my-project.cloud.goog"
 * ```
 */
import { access } from "node:fs/promises";
import { ConfigError, type ProviderContext, type ProviderFactory } from "@credhook/core";
import { createApiKeysClient, parseEndpoint } from "./client.js";
import { KEY_ID_PREFIX_PATTERN } from "./mapping.js";
import { GcpApiKeysProvider, type ResolvedGcpOptions } from "./provider.js";
import type { GcpCredentialsOption, GcpProviderOptions } from "./types.js";

export type { GcpCredentialsOption, GcpProviderOptions, GcpRateLimitOptions, GcpRetryOptions } from "./types.js";
export { GcpApiKeysProvider } from "./provider.js";
export type { ResolvedGcpOptions } from "./provider.js";
export { parseEndpoint, DEFAULT_API_HOST, DEFAULT_STATIC_TOKEN } from "./client.js";
export type { ParsedEndpoint } from "./client.js";
export { acquireProjectLimiters, sharedLimiterCount } from "./limits.js";
export type { QuotaRates } from "./limits.js";
export { ANNOTATIONS, keyIdFor, apiTargetsFor, displayNameFor, NO_ACCESS_METHOD } from "./mapping.js";
export type { ApiTarget } from "./mapping.js";

const positiveInt = (def: number, description: string) => ({ type: "integer", minimum: 1, default: def, description });

/** JSON Schema (draft 2020-12) of the `options` block of a `provider: gcp` gateway. Unknown options are refused (typos). */
export const optionsSchema: Record<string, unknown> = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  required: ["projectId"],
  additionalProperties: false,
  properties: {
    projectId: { type: "string", minLength: 1, description: "Google Cloud project id (or number) that owns the keys" },
    endpoint: {
      type: "string",
      minLength: 1,
      description: "API Keys endpoint: host, host:port or http(s)://host[:port] (http only for local emulators). Default https://apikeys.googleapis.com",
    },
    credentials: {
      description: "How to authenticate; default Application Default Credentials",
      oneOf: [
        { type: "object", required: ["type"], additionalProperties: false, properties: { type: { const: "application-default" } } },
        {
          type: "object",
          required: ["type", "path"],
          additionalProperties: false,
          properties: { type: { const: "key-file" }, path: { type: "string", minLength: 1 } },
        },
        {
          type: "object",
          required: ["type"],
          additionalProperties: false,
          properties: { type: { const: "static-token" }, token: { type: "string", minLength: 1 } },
          description: "a fixed Bearer token: local emulators and fakes only",
        },
      ],
    },
    services: {
      type: "object",
      additionalProperties: { type: "string", minLength: 1 },
      description: "portal API id -> Google service name (e.g. my-api-abc.apigateway.my-project.cloud.goog)",
    },
    serviceTemplate: {
      type: "string",
      pattern: "\\{apiId\\}",
      description: "service name for API ids not in services; {apiId} is replaced by the API id",
    },
    usagePlans: {
      type: "object",
      additionalProperties: { type: "array", items: { type: "string", minLength: 1 }, uniqueItems: true },
      description: "usage plan id -> methods a key in the plan may call ([] = every method); when set, unlisted plans are unknown (422)",
    },
    keyIdPrefix: { type: "string", pattern: KEY_ID_PREFIX_PATTERN.source, default: "credhook-", description: "prefix of every keyId" },
    operationTimeoutMs: positiveInt(60_000, "longest wait for one long-running operation (ms)"),
    pollInitialDelayMs: positiveInt(500, "first delay between operation polls (ms), then x1.5 up to 5000 ms"),
    requestTimeoutMs: positiveInt(15_000, "time-out of one HTTP call (ms)"),
    rateLimit: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        writesPerMinute: positiveInt(100, "sustained writes per minute (Google quota: 120)"),
        writeBurst: positiveInt(20, "writes that may start at once"),
        readsPerMinute: positiveInt(200, "sustained reads per minute (Google quota: 240)"),
        readBurst: positiveInt(40, "reads that may start at once"),
        maxQueueWaitMs: { type: "integer", minimum: 0, default: 10_000, description: "longest wait for the limiter before 503 (ms)" },
      },
    },
    retry: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        maxAttempts: positiveInt(3, "attempts in all for a transient failure: 5xx, no answer (1 = no retry)"),
        initialDelayMs: positiveInt(200, "first back-off delay after a transient failure (ms)"),
        maxDelayMs: positiveInt(2000, "longest back-off delay after a transient failure (ms)"),
        throttleInitialDelayMs: positiveInt(1000, "first back-off delay after a 429 without a retry hint (ms); doubles with jitter, at most 5000 ms"),
        budgetMs: { type: "integer", minimum: 0, default: 10_000, description: "total back-off one create/update/revoke may spend on retries of 429s and transient failures (ms)" },
      },
    },
    healthCacheMs: { type: "integer", minimum: 0, default: 30_000, description: "how long a successful health answer is reused (ms)" },
  },
};

/**
 * Applies defaults (the schema's, again, for callers that skip ajv) and checks
 * what the schema cannot. `endpointKey` is left empty (the factory sets it from
 * the parsed endpoint). @throws ConfigError naming the option
 */
export function resolveOptions(options: GcpProviderOptions, configPath: string): ResolvedGcpOptions {
  const problems: string[] = [];
  if (typeof options.projectId !== "string" || options.projectId.length === 0) problems.push(`${configPath}.projectId: required`);
  const prefix = options.keyIdPrefix ?? "credhook-";
  if (!KEY_ID_PREFIX_PATTERN.test(prefix)) problems.push(`${configPath}.keyIdPrefix: must match ${KEY_ID_PREFIX_PATTERN.source}`);
  if (options.serviceTemplate !== undefined && !options.serviceTemplate.includes("{apiId}")) {
    problems.push(`${configPath}.serviceTemplate: must contain {apiId}`);
  }
  const rl = options.rateLimit ?? {};
  const resolved: ResolvedGcpOptions = {
    projectId: options.projectId,
    services: options.services,
    serviceTemplate: options.serviceTemplate,
    usagePlans: options.usagePlans,
    keyIdPrefix: prefix,
    operationTimeoutMs: options.operationTimeoutMs ?? 60_000,
    pollInitialDelayMs: options.pollInitialDelayMs ?? 500,
    requestTimeoutMs: options.requestTimeoutMs ?? 15_000,
    writesPerMinute: rl.writesPerMinute ?? 100,
    writeBurst: rl.writeBurst ?? 20,
    readsPerMinute: rl.readsPerMinute ?? 200,
    readBurst: rl.readBurst ?? 40,
    maxQueueWaitMs: rl.maxQueueWaitMs ?? 10_000,
    maxAttempts: options.retry?.maxAttempts ?? 3,
    retryInitialDelayMs: options.retry?.initialDelayMs ?? 200,
    retryMaxDelayMs: options.retry?.maxDelayMs ?? 2000,
    throttleInitialDelayMs: options.retry?.throttleInitialDelayMs ?? 1000,
    retryBudgetMs: options.retry?.budgetMs ?? 10_000,
    healthCacheMs: options.healthCacheMs ?? 30_000,
    endpointKey: "",
  };
  if (!options.services && !options.serviceTemplate) {
    problems.push(`${configPath}: set services (API id -> Google service name) or serviceTemplate, else no API can be mapped`);
  }
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `[provider-gcp] ${p}`));
  return resolved;
}

/**
 * Creates the provider of one gateway.
 * @throws ConfigError an unusable option (endpoint, keyIdPrefix, a missing key file, CLIENT_CREDENTIALS), naming its YAML path
 */
async function create(options: GcpProviderOptions, context: ProviderContext): Promise<GcpApiKeysProvider> {
  const at = context.configPath;
  if (context.credentialType !== "API_KEY") {
    throw new ConfigError([`[provider-gcp] ${at.replace(/\.options$/, "")}.credentialType: Google Cloud API Keys issue API_KEY credentials only`]);
  }
  const resolved = resolveOptions(options, at);
  const endpoint = parseEndpoint(options.endpoint, `[provider-gcp] ${at}.endpoint`);
  resolved.endpointKey = `${endpoint.host}:${endpoint.port}`;
  const credentials: GcpCredentialsOption = options.credentials ?? { type: "application-default" };
  if (credentials.type === "key-file") {
    try {
      await access(credentials.path);
    } catch {
      throw new ConfigError([`[provider-gcp] ${at}.credentials.path: cannot read the key file '${credentials.path}'`]);
    }
  }
  if (credentials.type === "static-token") {
    context.logger.warn({ endpoint: `${endpoint.protocol}://${endpoint.host}:${endpoint.port}` }, "gcp provider uses a static token: for local emulators only");
  }
  const client = createApiKeysClient(endpoint, credentials, resolved.projectId);
  return new GcpApiKeysProvider(client, resolved, context);
}

/** The `gcp` provider factory (default export). */
const factory: ProviderFactory<GcpProviderOptions> = {
  type: "gcp",
  optionsSchema,
  create,
};

export default factory;
