/**
 * `@credhook/gateway`: credhook's embedded gateway — the enforcement point for what the
 * `provider: local` gateways issue (key checks for NGINX `auth_request` and Envoy `ext_authz`,
 * the OAuth 2.0 client-credentials token endpoint, JWKS, introspection and metadata, usage-plan
 * limits), turned on by the `embeddedGateway:` block of `webhook.config.yaml`. The server parses
 * the block ({@link parseEmbeddedGatewayConfig}), checks it ({@link embeddedGatewayProblems},
 * {@link embeddedGatewayWarnings}) and starts it ({@link startEmbeddedGateway}); it reads the
 * credentials through provider-local's `localCredentialReader`. Named exports only (see the README).
 */
export { describeEmbeddedGateway, embeddedGatewayProblems, embeddedGatewayWarnings } from "./checks.js";
export type { EmbeddedGatewaySetting } from "./checks.js";
export { checkEmbeddedGatewayConfig, embeddedGatewaySchema, parseEmbeddedGatewayConfig } from "./config.js";
export type {
  ApiPathRule,
  EmbeddedGatewayConfig,
  KeyCheckConfig,
  LimitsConfig,
  OAuthConfig,
  SigningAlg,
  SigningConfig,
} from "./config.js";
export { CredentialDirectory } from "./directory.js";
export type { CredentialGrant, DirectoryOptions } from "./directory.js";
export { EMBEDDED_GATEWAY_STATE, EmbeddedGateway } from "./gateway.js";
export type { EmbeddedGatewayOptions, GatewayEndpoint } from "./gateway.js";
export { KEY_CHECK_PATH, KeyCheck, normalisePath } from "./key-check.js";
export type { CheckStatus, KeyCheckOptions } from "./key-check.js";
export { PlanLimiter } from "./limits.js";
export type { LimitRefusal, SharedLimitsBackend } from "./limits.js";
export { OAUTH_PATHS, OAuthServer } from "./oauth.js";
export type { OAuthServerOptions, VerifiedToken } from "./oauth.js";
export {
  EncryptedStoreKeyStorage,
  FileKeyStorage,
  GENERATED_KEK_FILE,
  publicJwk,
  SigningKeys,
} from "./signing-keys.js";
export type { KekOrigin, SigningKeyRecord, SigningKeyStorage, SigningKeysOptions } from "./signing-keys.js";
export { startEmbeddedGateway } from "./start.js";
export type { EmbeddedGatewayContext, RunningEmbeddedGateway } from "./start.js";
