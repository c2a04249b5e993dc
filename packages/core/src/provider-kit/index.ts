/**
 * What every provider shares: Retry-After parsing, client-side rate limiters,
 * cached health probes, secret redaction, secret options (`writeOnly`) masked, errors that name their gateway, and
 * settling many calls at once, one JSON call over `fetch` (`httpJson`), and `defineProvider()` (options typed from their
 * JSON Schema). Exported from `@credhook/core`.
 */
export * from "./retry-after.js";
export * from "./rate-limit.js";
export * from "./health-cache.js";
export * from "./redact.js";
export * from "./secret-options.js";
export * from "./gateway-errors.js";
export * from "./settle.js";
export * from "./define-provider.js";
export * from "./http-json.js";
