/** @credhook/server: the HTTP server, config loading and CLI of credhook. The Lambda handler is `@credhook/server/lambda`. */
export { createApp, createRuntime, startServer, openStore, importProviderModule, SHUTDOWN_MARGIN_MS } from "./app.js";
export type { AppOptions, CredhookApp, CredhookRuntime, RunningServer, ServerLimits } from "./app.js";
export { EDGE_DEFAULTS } from "./edge.js";
export {
  loadConfigFile,
  interpolate,
  maskSecrets,
  embeddedConfigText,
  CONFIG_SEARCH_PLACES,
  CONFIG_SCHEMA_FILE,
  EMBEDDED_CONFIG_FILE,
  MAX_SECRET_FILE_BYTES,
} from "./config.js";
export type { LoadedConfig, LoadConfigOptions, InterpolateOptions } from "./config.js";
export { hashPassword, verifyPassword } from "./passwords.js";
export { VERSION } from "./version.js";
export { createLogger, REDACT_PATHS } from "./logging.js";
export { errorBody } from "./http-errors.js";
export { createReadiness } from "./probes.js";
export type { Readiness, ReadinessOptions, ReadinessResult } from "./probes.js";
export {
  startTracing,
  TRACING_SHUTDOWN_MS,
  tracingRequested,
  traceProvider,
  traceGateways,
  traceRequests,
  cloudRequestId,
  cloudRequestIdIn,
  CLOUD_REQUEST_ID_HEADERS,
  TRACER_NAME,
} from "./tracing.js";
export type { GatewayCallObserver, Tracing, TracingLogger, TracingRequest, StartTracingOptions } from "./tracing.js";
