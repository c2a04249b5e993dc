/**
 * `@credhook/core`: what a host (the server, the CLI, the Lambda bundle) builds on — the
 * contract's types and validators, the config's schema, the provider and store registry,
 * routing, the orchestrator and the logger interface. Named exports only; every name here is
 * in the table of packages/core/README.md ("Public surface"), and
 * `packages/server/test/exports.test.ts` fails when the runtime names change unnoticed.
 *
 * The other entry points: `@credhook/core/errors` (typed errors), `/provider` (the provider
 * interface and `defineProvider`), `/provider-kit` (helpers for provider authors), `/store`
 * (the credential-store interface and what store packages share). Anything else in `src/`
 * is internal to core.
 */
export type {
  Action,
  ApiChange,
  ApiRef,
  CreateCredentialsRequest,
  CreateCredentialsResponse,
  CredentialType,
  CustomCredentials,
  ErrorResponse,
  RevokeCredentialsRequest,
  UpdateCredentialsRequest,
  UsagePlanChange,
  UsagePlanRef,
} from "./contract.js";
export { errorResponse } from "./contract.js";
export type {
  AuthUser,
  CredhookConfig,
  EventSinkConfig,
  EventsConfig,
  ExpiryConfig,
  GatewayConfig,
  ReconcileConfig,
  SecretScanningConfig,
  SecretScanningPublicKey,
  ServerConfig,
  StoreConfig,
} from "./config.js";
export type { ConfigErrorContext } from "./config.js";
export { configProblems, configSchema, formatConfigErrors, validateConfig } from "./config.js";
export { closestName } from "./suggest.js";
export type { CompileOptions, ContractValidator } from "./validation.js";
export {
  addPrecompiledValidators,
  compileContractValidator,
  compileSchema,
  createAjv,
  formatAjvErrors,
  openApiDocument,
  precompiledKey,
} from "./validation.js";
export type { Gateway, LoadGatewaysOptions, LoadStoreOptions } from "./registry.js";
export { BUILTIN_PROVIDERS, BUILTIN_STORES, loadGateways, loadStore, packageProblems } from "./registry.js";
export { MASKED_OPTION, maskSecretOptions } from "./provider-kit/secret-options.js";
export { drainHttpServer } from "./drain.js";
export type { RouteRule, Router } from "./routing.js";
export { createRouter } from "./routing.js";
/** How the stored credentials differ from the config (docs/gateway-migration.md). */
export type { ApiMove, CredentialDrift, DriftKind, DriftSummary, DriftTopology } from "./drift.js";
export {
  credentialDrift,
  describeDriftCounts,
  DRIFT_KINDS,
  driftTopology,
  strandedProblems,
  summarizeDrift,
} from "./drift.js";
export type { Logger } from "./logger.js";
export { silentLogger } from "./logger.js";
export { Orchestrator } from "./orchestrator.js";
export { revokeRequestFor } from "./orchestration/revoke.js";
/** Finding credentials by what an operator knows of them, and acting on each found (docs/leak-response.md). */
export type {
  ActionOptions,
  CredentialAction,
  CredentialActionResult,
  CredentialOperations,
  CredentialPageRequest,
  CredentialQuery,
  CredentialQueryPage,
} from "./orchestration/credentials.js";
export {
  ACTION_DONE,
  actOnCredentials,
  CREDENTIAL_STATES,
  EXPIRY_STATES,
  findCredentialPage,
  findCredentials,
  normalizeFingerprint,
} from "./orchestration/credentials.js";
export type { ApplyEntry, ApplyOperation, ApplyPlan, GatewayEstimate } from "./orchestration/apply.js";
export type {
  ApplyResult,
  ApplyRunOptions,
  RunApplyOptions,
  RunApplySummary,
} from "./orchestration/move.js";
export type { CircuitBreakerOptions } from "./orchestration/circuits.js";
export type { LeakOptions, LeakOutcome } from "./orchestration/leak.js";
/** Credential expiry (docs/expiry.md): the config's policies resolved, one credential's expiry decided. */
export type {
  CredentialExpiry,
  ExpiryAction,
  ExpiryPolicies,
  ExpiryPolicy,
  GatewayExpiryConfig,
  GatewayExpiryPolicies,
  PlanExpiryConfig,
} from "./expiry-policy.js";
export { credentialExpiry, EXPIRY_ACTIONS, expiryState, resolveExpiryPolicies } from "./expiry-policy.js";
export type { ExpiryPassResult } from "./orchestration/expiry.js";
export type {
  AbandonedCleanup,
  AdoptionRequest,
  AdoptionResult,
  CreateOutcome,
  DisableOptions,
  OperationOutcome,
  OrchestratorOptions,
  ReconcileEntry,
  ReconcileLoopResult,
  ReconcileOptions,
  ReconcileReport,
  RevokeOptions,
  SweepResult,
} from "./orchestration/types.js";
/** Credential events (the transactional outbox's content): their types, how one is built, a secret's fingerprint. */
export type {
  CredentialEvent,
  CredentialEventData,
  CredentialEventExtra,
  CredentialEventType,
  EventFilter,
  EventGateway,
  EventOwner,
  EventSettlement,
  EventSettlementOf,
  EventStatus,
  StoredEvent,
} from "./events.js";
export {
  CREDENTIAL_EVENT_SOURCE,
  CREDENTIAL_EVENT_TYPES,
  credentialEvent,
  driftEvent,
  newestEventsOf,
  PRUNE_BATCH_SIZE,
  secretFingerprint,
} from "./events.js";
/** The API key format credhook generates (prefix, base62 body, CRC32 checksum), for scanners and leak response (docs/leak-response.md). */
export {
  API_KEY_BODY_LENGTH,
  API_KEY_CHECKSUM_LENGTH,
  API_KEY_PREFIX_PATTERN,
  apiKeyScanPattern,
  DEFAULT_API_KEY_PREFIX,
  generateApiKeyValue,
  isCredhookKey,
} from "./secrets.js";
