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
import { defineProvider, type DirectCreate } from "@credhook/core/provider";
import { ApigeeProvider } from "./provider.js";
import { type ApigeeProviderOptions, type ApigeeProviderOptionsWithDefaults, optionsSchema } from "./schema.js";

/** The `apigee` provider factory (`provider: apigee` in `gateways:`): API keys and client credentials alike. */
const apigeeProviderFactory = defineProvider({
  type: "apigee",
  optionsSchema,
  credentialTypes: ["API_KEY", "CLIENT_CREDENTIALS"],
  create: (options, context) => new ApigeeProvider(options, context),
});

export default apigeeProviderFactory;

/** The factory's `create` for a caller that builds a provider without core's loading (tests): synchronous, an {@link ApigeeProvider}. */
export const createApigeeProvider = apigeeProviderFactory.create as DirectCreate<ApigeeProviderOptions, ApigeeProvider>;

/** @deprecated The options type derived from the schema, {@link ApigeeProviderOptionsWithDefaults}: use it. */
export type ResolvedApigeeOptions = ApigeeProviderOptionsWithDefaults;
export type { ApigeeProviderOptions, ApigeeProviderOptionsWithDefaults } from "./schema.js";
export { ApigeeProvider } from "./provider.js";
export { optionsSchema } from "./schema.js";
