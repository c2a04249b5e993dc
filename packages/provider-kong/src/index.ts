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
import {
  applyOptionDefaults,
  defineProvider,
  type OptionsOf,
  type ProviderContext,
  type ResolvedOptionsOf,
} from "@credhook/core/provider";
import { ConfigError } from "@credhook/core/errors";
import { SlidingWindowLimiter } from "@credhook/core/provider-kit";
import { KongAdmin } from "./admin.js";
import { conflictingPlanPairs, planProblems } from "./limits.js";
import { KongProvider } from "./provider.js";
import { optionsSchema } from "./schema.js";

/** Options of the `kong` provider as written in YAML (`gateways.<name>.options`); see `schema.ts`. */
export type KongProviderOptions = OptionsOf<typeof optionsSchema>;

/** {@link KongProviderOptions} with every schema default applied. */
export type KongProviderOptionsWithDefaults = ResolvedOptionsOf<typeof optionsSchema>;

/** How many conflicting pairs of plans the start-up warning lists (the rest are counted). */
const MAX_CONFLICTS_LOGGED = 20;

/** What {@link createKongProvider} needs of core's {@link ProviderContext}. */
type KongContext = Pick<ProviderContext, "gateway" | "configPath" | "credentialType" | "logger">;

/**
 * Builds the provider of one gateway from options as written (the schema's defaults are applied here).
 * Logs a warning naming the pairs of plans one app cannot have together ({@link conflictingPlanPairs}):
 * a request with both answers 422.
 * @throws ConfigError the gateway issues CLIENT_CREDENTIALS (Kong's key-auth holds API keys), or a plan
 *   of `plans` has limits Kong's rate-limiting plugin refuses (a longer window's limit lower than a
 *   shorter one's, {@link planProblems}) — each problem names its YAML path
 */
export function createKongProvider(options: KongProviderOptions, context: KongContext): KongProvider {
  return buildKongProvider(applyOptionDefaults(optionsSchema, options), context);
}

/** {@link createKongProvider} once the schema's defaults are applied. */
function buildKongProvider(options: KongProviderOptionsWithDefaults, context: KongContext): KongProvider {
  const problems = planProblems(options.plans, `${context.configPath}.plans`);
  if (context.credentialType !== "API_KEY")
    problems.unshift(
      `${context.configPath}: the Kong provider issues API_KEY credentials (key-auth) only, not ${context.credentialType}`,
    );
  if (problems.length > 0) throw new ConfigError(problems.map((m) => `[provider-kong] ${m}`));
  const conflicts = conflictingPlanPairs(options.plans);
  if (conflicts.length > 0)
    context.logger.warn(
      {
        at: `${context.configPath}.plans`,
        conflicts: conflicts.slice(0, MAX_CONFLICTS_LOGGED).map(([a, b, why]) => `'${a}' + '${b}': ${why}`),
        ...(conflicts.length > MAX_CONFLICTS_LOGGED ? { more: conflicts.length - MAX_CONFLICTS_LOGGED } : {}),
      },
      `pairs of Kong plans that one app cannot have together: merged (each window the largest limit), Kong's rate-limiting plugin refuses them; a request giving an app both answers 422`,
    );
  const { requests, windowMs } = options.rateLimit;
  const limiter = requests > 0 ? new SlidingWindowLimiter(requests, windowMs + 50, "Kong Admin API") : undefined;
  const admin = new KongAdmin({
    adminUrl: options.adminUrl,
    auth: options.auth,
    timeoutMs: options.timeoutMs,
    maxRetries: options.maxRetries,
    maxRetryAfterS: options.maxRetryAfterS,
    gateway: context.gateway,
    ...(limiter ? { limiter } : {}),
  });
  return new KongProvider(
    admin,
    {
      apiMap: options.apiMap,
      plans: options.plans,
      policy: options.policy,
      usernamePrefix: options.usernamePrefix,
      healthCacheMs: options.healthCacheMs,
    },
    context.gateway,
    context.logger,
    async () => {
      await limiter?.stop();
    },
  );
}

/** The `kong` provider factory (`provider: kong` in `gateways:`). */
const kongProviderFactory = defineProvider({ type: "kong", optionsSchema, create: buildKongProvider });

export default kongProviderFactory;
export { KongProvider } from "./provider.js";
export type { ResolvedKongOptions } from "./provider.js";
export { optionsSchema } from "./schema.js";
