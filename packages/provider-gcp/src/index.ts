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
import { defineProvider, type ProviderContext } from "@credhook/core/provider";
import { ConfigError } from "@credhook/core/errors";
import { createApiKeysClient, parseEndpoint } from "./client.js";
import { GcpApiKeysProvider } from "./provider.js";
import { optionsSchema } from "./schema.js";
import type { GcpProviderOptionsWithDefaults } from "./types.js";

export type {
  GcpCredentialsOption,
  GcpProviderOptions,
  GcpProviderOptionsWithDefaults,
  GcpRateLimitOptions,
  GcpRetryOptions,
} from "./types.js";
export { GcpApiKeysProvider } from "./provider.js";

export { optionsSchema } from "./schema.js";

/**
 * Creates the provider of one gateway from its options as core hands them over: schema-valid
 * (`projectId`, the `keyIdPrefix` and `serviceTemplate` patterns, every number's bounds are the
 * schema's) and with every default applied. What remains here is what a JSON Schema cannot check:
 * the gateway's credential type (not part of the options), the endpoint's parts, that a key file
 * exists, and that the block maps an API at all (`services` or `serviceTemplate`: a cross-option
 * rule, kept here so that its message names the two options rather than ajv's `anyOf` failure).
 * @throws ConfigError an unusable option (endpoint, a missing key file, no API mapping, CLIENT_CREDENTIALS), naming its YAML path
 */
async function create(options: GcpProviderOptionsWithDefaults, context: ProviderContext): Promise<GcpApiKeysProvider> {
  const at = context.configPath;
  if (context.credentialType !== "API_KEY") {
    throw new ConfigError([
      `[provider-gcp] ${at.replace(/\.options$/, "")}.credentialType: Google Cloud API Keys issue API_KEY credentials only`,
    ]);
  }
  if (!options.services && !options.serviceTemplate) {
    throw new ConfigError([
      `[provider-gcp] ${at}: set services (API id -> Google service name) or serviceTemplate, else no API can be mapped`,
    ]);
  }
  const endpoint = parseEndpoint(options.endpoint, `[provider-gcp] ${at}.endpoint`);
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
  const client = createApiKeysClient(endpoint, credentials, options.projectId);
  return new GcpApiKeysProvider(client, options, `${endpoint.host}:${endpoint.port}`, context);
}

/** The `gcp` provider factory (default export): options typed from, and defaulted by, `schema.ts`. */
const factory = defineProvider({ type: "gcp", optionsSchema, create });

export default factory;
