/**
 * @credhook/provider-kong: API keys as Kong Gateway consumers (key-auth credential,
 * ACL groups, a rate-limiting plugin), through the Admin API of a self-hosted Kong
 * (OSS or Enterprise with RBAC) or a Konnect control plane.
 *
 * ```yaml
 * gateways:
 *   kong:
 *     provider: kong
 *     credentialType: API_KEY
 *     options: { adminUrl: "http://kong-admin:8001", plans: { gold: { minute: 600 } } }
 * ```
 */
import { defineProvider, type DirectCreate } from "@credhook/core/provider";
import { refusedPairs } from "@credhook/core/provider-kit";
import { KONG_PLAN_RULE, planProblems } from "./limits.js";
import { KongProvider } from "./provider.js";
import { type KongProviderOptions, type KongProviderOptionsWithDefaults, optionsSchema } from "./schema.js";

/** How many conflicting pairs of plans the start-up warning lists (the rest are counted). */
const MAX_CONFLICTS_LOGGED = 20;

/**
 * The `kong` provider factory (`provider: kong` in `gateways:`). It refuses, naming each YAML path, a
 * gateway issuing CLIENT_CREDENTIALS (Kong's key-auth holds API keys) and a plan of `plans` with limits
 * Kong's rate-limiting plugin refuses (a longer window's limit lower than a shorter one's, `planProblems`),
 * and warns of the pairs of plans one app cannot have together (`refusedPairs`): a request with
 * both answers 422.
 */
const kongProviderFactory = defineProvider({
  type: "kong",
  optionsSchema,
  credentialTypes: ["API_KEY"],
  problems: (options, context) => planProblems(options.plans, `${context.configPath}.plans`),
  create(options, context) {
    const conflicts = refusedPairs(options.plans, KONG_PLAN_RULE);
    if (conflicts.length > 0)
      context.logger.warn(
        {
          at: `${context.configPath}.plans`,
          conflicts: conflicts.slice(0, MAX_CONFLICTS_LOGGED).map(([a, b, why]) => `'${a}' + '${b}': ${why}`),
          ...(conflicts.length > MAX_CONFLICTS_LOGGED ? { more: conflicts.length - MAX_CONFLICTS_LOGGED } : {}),
        },
        `pairs of Kong plans that one app cannot have together: merged (each window the largest limit), Kong's rate-limiting plugin refuses them; a request giving an app both answers 422`,
      );
    return new KongProvider(options, context);
  },
});

export default kongProviderFactory;

/** The factory's `create` for a caller that builds a provider without core's loading (tests): synchronous, a {@link KongProvider}. */
export const createKongProvider = kongProviderFactory.create as DirectCreate<KongProviderOptions, KongProvider>;

/** @deprecated The options type derived from the schema, {@link KongProviderOptionsWithDefaults}: use it. */
export type ResolvedKongOptions = KongProviderOptionsWithDefaults;
export type { KongProviderOptions, KongProviderOptionsWithDefaults } from "./schema.js";
export { KongProvider } from "./provider.js";
export { optionsSchema } from "./schema.js";
