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
import { applyOptionDefaults, defineProvider, type ProviderContext } from "@credhook/core/provider";
import { ConfigError } from "@credhook/core/errors";
import { buildArmClient, buildCredential } from "./client.js";
import { AzureApimProvider } from "./provider.js";
import { Adoptions, claimPrefix, otherGatewayOwning, serviceKeyOf } from "./ownership.js";
import { acquireBuckets } from "./rate-limit.js";
import { optionsSchema } from "./schema.js";
import type { AzureProviderOptions, AzureProviderOptionsWithDefaults } from "./types.js";

/** What {@link createAzureProvider} needs of core's {@link ProviderContext}. */
type AzureContext = Pick<
  ProviderContext,
  "gateway" | "configPath" | "credentialType" | "logger" | "state" | "rateSlots"
>;

/**
 * Builds the provider of one gateway from options as written (the schema's defaults
 * are applied here). `context.state` keeps its adoption records (`credhook adopt`);
 * core passes the store's persistent one.
 * @throws ConfigError the gateway issues CLIENT_CREDENTIALS, the endpoint is not an http(s) URL,
 *   or another gateway of this process uses the same `subscriptionIdPrefix` on the same service
 */
export function createAzureProvider(options: AzureProviderOptions, context: AzureContext): AzureApimProvider {
  return buildAzureProvider(applyOptionDefaults(optionsSchema, options), context);
}

/** {@link createAzureProvider} once the schema's defaults are applied. */
function buildAzureProvider(options: AzureProviderOptionsWithDefaults, context: AzureContext): AzureApimProvider {
  if (context.credentialType !== "API_KEY") {
    throw new ConfigError([
      `[provider-azure] ${context.configPath}: Azure API Management issues API_KEY credentials only, not ${context.credentialType}`,
    ]);
  }
  const endpoint = options.endpoint;
  let parsed: URL;
  try {
    parsed = new URL(endpoint);
  } catch (cause) {
    throw new ConfigError([`[provider-azure] ${context.configPath}.endpoint: '${endpoint}' is not a URL`], { cause });
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new ConfigError([`[provider-azure] ${context.configPath}.endpoint must be an http(s) URL`]);
  }
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
    {
      resourceGroup: options.resourceGroup,
      serviceName: options.serviceName,
      timeoutMs: options.timeoutMs,
      productMap: options.productMap,
      apiMap: options.apiMap,
      ownerMode: options.ownerMode,
      revokeMode: options.revokeMode,
      subscriptionIdPrefix: prefix,
      healthCacheMs: options.healthCacheMs,
    },
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

/** The `azure` provider factory (`provider: azure` in `gateways:`): options typed from, and defaulted by, `schema.ts`. */
const azureProviderFactory = defineProvider({ type: "azure", optionsSchema, create: buildAzureProvider });

export default azureProviderFactory;
export { AzureApimProvider } from "./provider.js";
export type { ResolvedAzureOptions, OwnershipContext } from "./provider.js";
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
