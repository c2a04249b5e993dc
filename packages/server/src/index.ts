/** @credhook/server: the HTTP server, config loading and CLI of credhook. */
export { createApp, createRuntime, startServer, openStore, importProviderModule } from "./app.js";
export type { AppOptions, CredhookApp, CredhookRuntime, RunningServer } from "./app.js";
export { loadConfigFile, interpolate, maskSecrets, CONFIG_SEARCH_PLACES } from "./config.js";
export type { LoadedConfig, LoadConfigOptions } from "./config.js";
export { hashPassword, verifyPassword } from "./passwords.js";
export { createLogger, REDACT_PATHS } from "./logging.js";
export { errorBody } from "./http-errors.js";
