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
  StatePage,
  StatePageQuery,
} from "../provider.js";
export { writeState } from "../provider.js";
/** A provider's walk of its state a page at a time (`ProviderStateStore.listPage`, or `list` on a store without it). */
export { STATE_PAGE_LIMIT, statePages } from "../state-pages.js";
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
