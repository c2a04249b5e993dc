/**
 * `@credhook/core/provider`: the interface a provider implements (its rules are the doc
 * comments of `provider.ts`) and `defineProvider()`, which builds a provider's factory from
 * its options' JSON Schema. Named exports only (packages/core/README.md, "Public surface").
 */
export type {
  AppIdentity,
  CredentialSearch,
  GatewayApi,
  JsonValue,
  OwnedResource,
  Provider,
  ProviderCapabilities,
  ProviderContext,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderFactory,
  ProviderResources,
  ProviderStateStore,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RateSlots,
  RevokeOutcome,
  RotatedSecret,
  StateChange,
} from "../provider.js";
export { writeState } from "../provider.js";
export type {
  DefinedProviderFactory,
  DirectCreate,
  OptionsOf,
  OptionsSchema,
  ProviderDefinition,
  ResolvedOptions,
  ResolvedOptionsOf,
} from "../provider-kit/define-provider.js";
export { applyOptionDefaults, defineProvider, resolveOptions } from "../provider-kit/define-provider.js";
/** Types the interface refers to, re-exported so that a provider needs no other entry point for them. */
export type { CredentialType } from "../contract.js";
/** Every credential type of the contract, in its order (what a provider may declare in `capabilities.credentialTypes`). */
export { CREDENTIAL_TYPES } from "../contract.js";
export type { Logger } from "../logger.js";
