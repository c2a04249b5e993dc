/**
 * `@credhook/provider-aws`: credhook's AWS gateway provider.
 *
 * - `credentialType: API_KEY`: API keys on Amazon API Gateway (REST v1),
 *   attached to the usage plans of the app's APIs.
 * - `credentialType: CLIENT_CREDENTIALS`: Amazon Cognito user-pool app clients
 *   with a secret, only the client_credentials grant, and one scope per API.
 *
 * ```yaml
 * gateways:
 *   aws-us: { provider: aws, credentialType: API_KEY, options: { region: us-east-1 } }
 * ```
 *
 * The default export is the {@link ProviderFactory} core loads for `provider: aws`.
 */
import { defineProvider } from "@credhook/core/provider";
import { AwsProvider } from "./provider.js";
import { optionsSchema } from "./schema.js";

export type {
  AwsProviderOptions,
  AwsProviderOptionsWithDefaults,
  RateLimitOptions,
  ApiKeyResources,
  ClientResources,
} from "./types.js";
export { AwsProvider } from "./provider.js";
export { optionsSchema } from "./schema.js";

/**
 * The factory of `provider: aws` gateways: options typed from, and defaulted by,
 * `schema.ts`. Builds the provider of one gateway; its credential type is the
 * gateway's `credentialType`. @throws ConfigError CLIENT_CREDENTIALS without userPoolId/resourceServer
 */
const awsProviderFactory = defineProvider({
  type: "aws",
  optionsSchema,
  // Cognito app clients need the user pool and the resource server whose scopes they get
  problems: (o, context) =>
    context.credentialType !== "CLIENT_CREDENTIALS"
      ? []
      : (["userPoolId", "resourceServer"] as const)
          .filter((k) => !o[k])
          .map((k) => `${context.configPath}.${k} is required when credentialType is CLIENT_CREDENTIALS`),
  create: (options, context) => new AwsProvider(options, context),
});

export default awsProviderFactory;
