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
 * schema's), with every default applied, and checked by the factory's `credentialTypes` and
 * `problems`. What remains here needs more than the options' values: the endpoint's parts and
 * that a key file exists.
 * @throws ConfigError an unusable endpoint or a missing key file, naming its YAML path
 */
async function create(options: GcpProviderOptionsWithDefaults, context: ProviderContext): Promise<GcpApiKeysProvider> {
  const at = context.configPath;
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

/**
 * The `gcp` provider factory (default export): options typed from, and defaulted by, `schema.ts`.
 * Google Cloud API Keys are API keys only; a block must map an API at all (`services` or
 * `serviceTemplate`: a rule across two options, checked here so that its message names the two
 * options rather than ajv's `anyOf` failure).
 */
const factory = defineProvider({
  type: "gcp",
  optionsSchema,
  credentialTypes: ["API_KEY"],
  problems: (o, context) =>
    o.services || o.serviceTemplate
      ? []
      : [
          `${context.configPath}: set services (API id -> Google service name) or serviceTemplate, else no API can be mapped`,
        ],
  create,
});

export default factory;
