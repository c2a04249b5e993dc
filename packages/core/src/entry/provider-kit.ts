/**
 * `@credhook/core/provider-kit`: what every provider shares, one implementation each —
 * `Retry-After` parsing, client-side rate limiters, cached health probes, secret redaction,
 * errors that name their gateway, settling many calls at once, one JSON call over `fetch` and a
 * REST gateway's client (paging, the options every REST provider has), credhook's ownership mark
 * and the provider of one marked resource per credential (`MarkedResourceProvider`),
 * API-key values and secret hashes, a pool of resources shared by gateways, a lock per key
 * and an in-memory provider state store. Named exports only (packages/core/README.md,
 * "Public surface").
 */
export { parseRetryAfter, retryAfterFromHeaders } from "../provider-kit/retry-after.js";
export type { RateLimiter, SharedSlots } from "../provider-kit/rate-limit.js";
export { RateLimitQueueFull, SlidingWindowLimiter, TokenBucketLimiter } from "../provider-kit/rate-limit.js";
export type { HealthCacheOptions } from "../provider-kit/health-cache.js";
export { CachedHealthProbe } from "../provider-kit/health-cache.js";
export { containsSecret, redactSecrets } from "../provider-kit/redact.js";
export type { MessageErrorClass } from "../provider-kit/gateway-errors.js";
export { gatewayError, GatewayErrors, gatewayMessage, unavailableFrom } from "../provider-kit/gateway-errors.js";
export { rejectionsOf, settleAll } from "../provider-kit/settle.js";
export type {
  HttpFailureContext,
  HttpJsonRequest,
  HttpJsonResponse,
  JsonApiSettings,
  ListPaging,
} from "../provider-kit/http-json.js";
export { HttpCallFailed, httpJson, HttpTransportError, JsonApiClient } from "../provider-kit/http-json.js";
export type { RestClientDefaults, RestClientOptions } from "../provider-kit/rest-options.js";
export { restClientOptions, restClientSettings } from "../provider-kit/rest-options.js";
export type { LimitSources, LimitsRefusal, PlanRule, WindowLimits } from "../provider-kit/option-plans.js";
export {
  definedPlansOf,
  mergeLimits,
  planLimitsOf,
  refusedPairs,
  windowPlansOption,
} from "../provider-kit/option-plans.js";
export type { Marker, MarkAttribute, MarkNames } from "../provider-kit/ownership.js";
export { attributeMarker, keyValueMarker, ownsMark, tagMarker, tagValue } from "../provider-kit/ownership.js";
export type {
  MarkedResourceSettings,
  ResourceDescription,
  ResourceRef,
} from "../provider-kit/marked-provider.js";
export { CREDENTIAL_ID_PATTERN, MarkedResourceProvider } from "../provider-kit/marked-provider.js";
export type { RestGatewaySettings } from "../provider-kit/rest-provider.js";
export { holds, RestGatewayProvider } from "../provider-kit/rest-provider.js";
export { generateApiKeyValue, hashSecret, randomBase62, verifySecretHash } from "../secrets.js";
export { SharedResourcePool } from "../shared-pool.js";
export { KeyedLock } from "../keyed-lock.js";
export { memoryStateStore } from "../memory-state.js";
