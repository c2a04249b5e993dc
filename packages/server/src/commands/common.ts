/**
 * What several `credhook` commands take the same way: `--config`, the config it names, the store or the whole
 * runtime opened for one command and closed after it, and a port.
 */
import type { Logger } from "@credhook/core";
import type { CredentialStore } from "@credhook/core/store";
import { destination, type Logger as PinoLogger } from "pino";
import { type LoadedConfig, loadConfigFile } from "../config.js";
import { createLogger } from "../logging.js";
import { type CredhookRuntime, createRuntime, openStore } from "../runtime.js";

/** The `-c, --config <file>` option of every command that reads the config (commander's flags and description). */
export const CONFIG_OPTION = [
  "-c, --config <file>",
  "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)",
] as const;

/**
 * Loads `--config FILE`, `$CREDHOOK_CONFIG` or `./webhook.config.yaml`, else the embedded default.
 * @throws ConfigError naming each problem (config.ts)
 */
export function loadConfig(file: string | undefined): Promise<LoadedConfig> {
  return loadConfigFile(file, { embeddedDefault: true });
}

/** The logger of a command other than `serve`: warnings and errors only, on stderr (stdout is the command's output). */
export function commandLogger(): PinoLogger {
  return createLogger("warn", destination(2));
}

/**
 * Runs `fn` on the runtime (store, gateways, orchestrator) of the config `--config` names, opened for it and closed
 * after it, whether it returned or threw.
 * @returns what `fn` returned
 * @throws what loading the config, opening the runtime or `fn` threw
 */
export async function withRuntime<T>(
  configFile: string | undefined,
  fn: (runtime: CredhookRuntime, config: LoadedConfig) => Promise<T>,
): Promise<T> {
  const config = await loadConfig(configFile);
  const runtime = await createRuntime(config, { logger: commandLogger() });
  try {
    return await fn(runtime, config);
  } finally {
    await runtime.close();
  }
}

/**
 * Runs `fn` on the store of the config `--config` names (no gateway loaded), opened for it and closed after it.
 * @returns what `fn` returned
 * @throws what loading the config, opening the store or `fn` threw
 */
export async function withStore<T>(
  configFile: string | undefined,
  fn: (store: CredentialStore, config: LoadedConfig) => Promise<T>,
): Promise<T> {
  const config = await loadConfig(configFile);
  const store = await openStore(config, commandLogger() as unknown as Logger);
  try {
    return await fn(store, config);
  } finally {
    await store.close();
  }
}

/**
 * A TCP port given on the command line (`--port`) or in `$PORT`: an integer from 0 (a free one) to 65535.
 * @param from where it came from, for the message: `--port`, `PORT`
 * @throws Error naming the range, the value and where it came from
 */
export function parsePort(raw: string, from: string): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535)
    throw new Error(`the port must be an integer from 0 to 65535 (got '${raw}' from ${from})`);
  return port;
}
