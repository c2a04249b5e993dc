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
import { applyOptionDefaults, defineProvider, type ProviderContext } from "@credhook/core/provider";
import { ConfigError } from "@credhook/core/errors";
import { createApiKeysClient, parseEndpoint } from "./client.js";
import { KEY_ID_PREFIX_PATTERN } from "./mapping.js";
import { GcpApiKeysProvider, type ResolvedGcpOptions } from "./provider.js";
import { optionsSchema } from "./schema.js";
import type { GcpProviderOptions, GcpProviderOptionsWithDefaults } from "./types.js";

export type {
  GcpCredentialsOption,
  GcpProviderOptions,
  GcpProviderOptionsWithDefaults,
  GcpRateLimitOptions,
  GcpRetryOptions,
} from "./types.js";
export { GcpApiKeysProvider } from "./provider.js";
export type { ResolvedGcpOptions } from "./provider.js";

export { optionsSchema } from "./schema.js";

/**
 * Applies the schema's defaults (for callers that skip core's loading, which applies
 * them too) and checks what the schema cannot. `endpointKey` is left empty (the
 * factory sets it from the parsed endpoint). @throws ConfigError naming the option
 */
export function resolveOptions(given: GcpProviderOptions, configPath: string): ResolvedGcpOptions {
  const options = applyOptionDefaults(optionsSchema, given);
  const problems: string[] = [];
  if (typeof options.projectId !== "string" || options.projectId.length === 0)
    problems.push(`${configPath}.projectId: required`);
  const prefix = options.keyIdPrefix;
  if (!KEY_ID_PREFIX_PATTERN.test(prefix))
    problems.push(`${configPath}.keyIdPrefix: must match ${KEY_ID_PREFIX_PATTERN.source}`);
  if (options.serviceTemplate !== undefined && !options.serviceTemplate.includes("{apiId}")) {
    problems.push(`${configPath}.serviceTemplate: must contain {apiId}`);
  }
  const { rateLimit: rl, retry } = options;
  const resolved: ResolvedGcpOptions = {
    projectId: options.projectId,
    services: options.services,
    serviceTemplate: options.serviceTemplate,
    usagePlans: options.usagePlans,
    keyIdPrefix: prefix,
    operationTimeoutMs: options.operationTimeoutMs,
    pollInitialDelayMs: options.pollInitialDelayMs,
    requestTimeoutMs: options.requestTimeoutMs,
    writesPerMinute: rl.writesPerMinute,
    writeBurst: rl.writeBurst,
    readsPerMinute: rl.readsPerMinute,
    readBurst: rl.readBurst,
    maxQueueWaitMs: rl.maxQueueWaitMs,
    maxAttempts: retry.maxAttempts,
    retryInitialDelayMs: retry.initialDelayMs,
    retryMaxDelayMs: retry.maxDelayMs,
    throttleInitialDelayMs: retry.throttleInitialDelayMs,
    retryBudgetMs: retry.budgetMs,
    healthCacheMs: options.healthCacheMs,
    endpointKey: "",
  };
  if (!options.services && !options.serviceTemplate) {
    problems.push(
      `${configPath}: set services (API id -> Google service name) or serviceTemplate, else no API can be mapped`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `[provider-gcp] ${p}`));
  return resolved;
}

/**
 * Creates the provider of one gateway.
 * @throws ConfigError an unusable option (endpoint, keyIdPrefix, a missing key file, CLIENT_CREDENTIALS), naming its YAML path
 */
async function create(options: GcpProviderOptionsWithDefaults, context: ProviderContext): Promise<GcpApiKeysProvider> {
  const at = context.configPath;
  if (context.credentialType !== "API_KEY") {
    throw new ConfigError([
      `[provider-gcp] ${at.replace(/\.options$/, "")}.credentialType: Google Cloud API Keys issue API_KEY credentials only`,
    ]);
  }
  const resolved = resolveOptions(options, at);
  const endpoint = parseEndpoint(options.endpoint, `[provider-gcp] ${at}.endpoint`);
  resolved.endpointKey = `${endpoint.host}:${endpoint.port}`;
  const { credentials } = options;
  if (credentials.type === "key-file") {
    try {
      await access(credentials.path);
    } catch {
      throw new ConfigError([`[provider-gcp] ${at}.credentials.path: cannot read the key file '${credentials.path}'`]);
    }
  }
  if (credentials.type === "static-token") {
    context.logger.warn(
      { endpoint: `${endpoint.protocol}://${endpoint.host}:${endpoint.port}` },
      "gcp provider uses a static token: for local emulators only",
    );
  }
  const client = createApiKeysClient(endpoint, credentials, resolved.projectId);
  return new GcpApiKeysProvider(client, resolved, context);
}

/** The `gcp` provider factory (default export): options typed from, and defaulted by, `schema.ts`. */
const factory = defineProvider({ type: "gcp", optionsSchema, create });

export default factory;
