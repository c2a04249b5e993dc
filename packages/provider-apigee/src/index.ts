/**
 * @credhook/provider-apigee: API keys and client credentials as Apigee X developer
 * apps, through the `apigee.googleapis.com` v1 management API with Application
 * Default Credentials (google-auth-library).
 *
 * ```yaml
 * gateways:
 *   apigee:
 *     provider: apigee
 *     credentialType: API_KEY
 *     options: { organization: my-project, productMap: { gold: orders-gold } }
 * ```
 */
import {
  applyOptionDefaults,
  defineProvider,
  type OptionsOf,
  type ProviderContext,
  type ResolvedOptionsOf,
} from "@credhook/core/provider";
import { SlidingWindowLimiter } from "@credhook/core/provider-kit";
import { ApigeeClient } from "./client.js";
import { ApigeeProvider } from "./provider.js";
import { optionsSchema } from "./schema.js";

/** Options of the `apigee` provider as written in YAML (`gateways.<name>.options`); see `schema.ts`. */
export type ApigeeProviderOptions = OptionsOf<typeof optionsSchema>;

/** {@link ApigeeProviderOptions} with every schema default applied. */
export type ApigeeProviderOptionsWithDefaults = ResolvedOptionsOf<typeof optionsSchema>;

/** What {@link createApigeeProvider} needs of core's {@link ProviderContext}. */
type ApigeeContext = Pick<ProviderContext, "gateway" | "configPath" | "credentialType" | "logger">;

/** Builds the provider of one gateway from options as written (the schema's defaults are applied here). */
export function createApigeeProvider(options: ApigeeProviderOptions, context: ApigeeContext): ApigeeProvider {
  return buildApigeeProvider(applyOptionDefaults(optionsSchema, options), context);
}

/** {@link createApigeeProvider} once the schema's defaults are applied. */
function buildApigeeProvider(options: ApigeeProviderOptionsWithDefaults, context: ApigeeContext): ApigeeProvider {
  const { requests, windowMs } = options.rateLimit;
  const limiter = requests > 0 ? new SlidingWindowLimiter(requests, windowMs + 50, "Apigee management API") : undefined;
  const api = new ApigeeClient({
    endpoint: options.endpoint,
    organization: options.organization,
    credentials: options.credentials,
    timeoutMs: options.timeoutMs,
    maxRetries: options.maxRetries,
    maxRetryAfterS: options.maxRetryAfterS,
    gateway: context.gateway,
    ...(limiter ? { limiter } : {}),
  });
  return new ApigeeProvider(
    api,
    {
      productMap: options.productMap,
      apiMap: options.apiMap,
      appNamePrefix: options.appNamePrefix,
      healthCacheMs: options.healthCacheMs,
      ...(options.tokenUrl ? { tokenUrl: options.tokenUrl } : {}),
    },
    context.gateway,
    context.credentialType,
    context.logger,
    async () => {
      await limiter?.stop();
    },
  );
}

/** The `apigee` provider factory (`provider: apigee` in `gateways:`). */
const apigeeProviderFactory = defineProvider({ type: "apigee", optionsSchema, create: buildApigeeProvider });

export default apigeeProviderFactory;
export { ApigeeProvider } from "./provider.js";
export type { ResolvedApigeeOptions } from "./provider.js";
export { optionsSchema } from "./schema.js";
