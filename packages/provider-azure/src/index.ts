/**
 * @credhook/provider-azure: API keys as Azure API Management subscriptions,
 * through the official `@azure/arm-apimanagement` client and `@azure/identity`.
 *
 * ```yaml
 * gateways:
 *   azure-eu:
 *     provider: azure
 *     credentialType: API_KEY
 *     options: { subscriptionId: "…", resourceGroup: rg-apis, serviceName: contoso-apim }
 * ```
 */
import { createHash } from "node:crypto";
import { defineProvider, type ProviderContext } from "@credhook/core/provider";
import { buildArmClient, buildCredential } from "./client.js";
import { AzureApimProvider } from "./provider.js";
import { Adoptions, claimPrefix, otherGatewayOwning, serviceKeyOf } from "./ownership.js";
import { acquireBuckets } from "./rate-limit.js";
import { optionsSchema } from "./schema.js";
import type { AzureProviderOptions, AzureProviderOptionsWithDefaults } from "./types.js";

/**
 * Builds the provider of one gateway from its options as core hands them over: schema-valid
 * (the ids' and the endpoint's patterns, every number's bounds are the schema's), with every
 * default applied, and checked by the factory for what a JSON Schema cannot check (the gateway's
 * credential type, an endpoint that parses as a URL). `context.state` keeps its adoption records
 * (`credhook adopt`); core passes the store's persistent one.
 * @throws ConfigError another gateway of this process uses the same `subscriptionIdPrefix` on the same service
 */
function buildAzureProvider(options: AzureProviderOptionsWithDefaults, context: ProviderContext): AzureApimProvider {
  const endpoint = options.endpoint;
  const { maxRetryAfterS, subscriptionIdPrefix: prefix } = options;
  const serviceKey = serviceKeyOf(endpoint, options.subscriptionId, options.resourceGroup, options.serviceName);
  const releasePrefix = claimPrefix(serviceKey, context.gateway, prefix, context.configPath);
  // ARM throttles per subscription and principal: gateways with the same endpoint, subscription and credential share buckets.
  const principal = createHash("sha256").update(JSON.stringify(options.credential)).digest("hex");
  const armKey = `${endpoint}|${options.subscriptionId.toLowerCase()}|${principal}`;
  const { buckets, release } = acquireBuckets(armKey, options.rateLimit);
  const client = buildArmClient({
    subscriptionId: options.subscriptionId,
    endpoint,
    credential: buildCredential(options.credential),
    maxRetries: options.maxRetries,
    maxRetryAfterS,
    perRetryPolicies: [
      buckets.policy(maxRetryAfterS, context.rateSlots ? { slots: context.rateSlots, key: armKey } : undefined),
    ],
  });
  return new AzureApimProvider(
    client,
    options,
    context.gateway,
    context.logger,
    {
      adoptions: new Adoptions(context.state),
      otherGatewayOwning: (id) => otherGatewayOwning(serviceKey, context.gateway, id),
    },
    async () => {
      releasePrefix();
      await release();
    },
  );
}

/**
 * The `azure` provider factory (`provider: azure` in `gateways:`): options typed from, and defaulted by,
 * `schema.ts`. Azure API Management issues API keys (subscriptions) only; the endpoint must parse as a
 * URL (the schema's pattern checks only its scheme and host's shape).
 */
const azureProviderFactory = defineProvider({
  type: "azure",
  optionsSchema,
  credentialTypes: ["API_KEY"],
  problems: (o, context) =>
    URL.canParse(o.endpoint) ? [] : [`${context.configPath}.endpoint: '${o.endpoint}' is not a URL`],
  create: buildAzureProvider,
});

export default azureProviderFactory;

/**
 * The factory's `create` (schema defaults applied to a copy of `options`, then the provider
 * built), typed as what it is for Azure: synchronous, returning an {@link AzureApimProvider}.
 * For tests and callers that build a provider without core's loading (which also validates
 * the options against the schema: a caller here passes valid options).
 * @throws ConfigError as the factory's `create`
 */
export const createAzureProvider = azureProviderFactory.create as (
  options: AzureProviderOptions,
  context: ProviderContext,
) => AzureApimProvider;
export { AzureApimProvider } from "./provider.js";
export type { OwnershipContext } from "./provider.js";
export type {
  AzureProviderOptions,
  AzureProviderOptionsWithDefaults,
  AzureCredentialOption,
  OwnerMode,
  RevokeMode,
} from "./types.js";
export { optionsSchema } from "./schema.js";
/** True when an APIM subscription id is one of the subscriptions (`<nativeId>-p-<product>`, `<nativeId>-a-<api>`) of the credential whose native id is given. */
export { isSubscriptionOf } from "./naming.js";
