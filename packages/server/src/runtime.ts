/**
 * The core runtime without HTTP: the store the config names, every gateway's provider (loaded
 * through core's registry) and the orchestrator — for `credhook serve`, `reconcile`, `adopt`,
 * Lambda and embedding.
 */
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { pathToFileURL } from "node:url";
import type { Logger as PinoLogger } from "pino";
import {
  createRouter,
  type CredhookConfig,
  type Gateway,
  generateApiKeyValue,
  loadGateways,
  loadStore,
  type Logger,
  Orchestrator,
  resolveExpiryPolicies,
  silentLogger,
} from "@credhook/core";
import type { CredentialStore } from "@credhook/core/store";
import { bundledModules } from "./modules.js";
import { type GatewayCallObserver, traceGateways } from "./tracing.js";

/**
 * Opens the store the config names.
 * @param waitAtStart a serving process: a database away at start may be waited for (see `StoreContext.waitAtStart`)
 */
export async function openStore(
  config: CredhookConfig,
  logger: Logger = silentLogger,
  waitAtStart = false,
): Promise<CredentialStore> {
  // Relative store paths mean the config file's directory; for the embedded default (a file inside the package), the working directory.
  const loaded = config as { configFile?: string; embeddedDefault?: boolean };
  const baseDir = loaded.configFile && !loaded.embeddedDefault ? dirname(loaded.configFile) : process.cwd();
  return loadStore(config, {
    importModule: importProviderModule,
    logger,
    baseDir,
    ...(waitAtStart ? { waitAtStart } : {}),
  });
}

/** Imports a provider package: from a bundle's own modules, then the server's own dependencies, then the working directory (third-party providers). */
export async function importProviderModule(specifier: string): Promise<unknown> {
  const bundled = bundledModules.get(specifier);
  if (bundled) return bundled();
  try {
    return await import(specifier);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") throw err;
    let resolved: string;
    try {
      resolved = createRequire(`${process.cwd()}/package.json`).resolve(specifier);
    } catch {
      throw err;
    }
    return import(pathToFileURL(resolved).href);
  }
}

/** The core runtime without HTTP: store, gateways and orchestrator (for `serve`, `reconcile`, embedding). */
export interface CredhookRuntime {
  store: CredentialStore;
  orchestrator: Orchestrator;
  /** Every configured gateway, by name (providers unwrapped; the orchestrator calls them through a tracing wrapper). */
  gateways: Map<string, Gateway>;
  /** Closes the providers, then the store when this runtime opened it. */
  close(): Promise<void>;
}

/**
 * Opens the store (unless given) and loads every gateway's provider.
 * @throws ConfigError when a provider fails to load or validate, or the store cannot be opened
 */
export async function createRuntime(
  config: CredhookConfig,
  options: {
    /** Where the runtime logs (`createLogger` in logging.ts makes one as `serve` does, at `server.logLevel`). */
    logger: PinoLogger;
    store?: CredentialStore;
    onGatewayCall?: GatewayCallObserver;
    waitForStore?: boolean;
    /** The orchestrator's clock (`AppOptions.now` in http-app.ts). @default Date.now */
    now?: () => number;
  },
): Promise<CredhookRuntime> {
  const logger = options.logger as unknown as Logger;
  const store = options.store ?? (await openStore(config, logger, options.waitForStore));
  try {
    const gateways = await loadGateways(config, {
      importModule: importProviderModule,
      logger,
      stateFor: (g) => store.stateFor(g),
      ...(store.rateSlots ? { rateSlots: store.rateSlots } : {}),
    });
    const circuitBreakers = Object.fromEntries(
      Object.entries(config.gateways).map(([name, g]) => [
        name,
        {
          threshold: g.circuitBreaker?.threshold ?? 5,
          halfOpenAfterMs: (g.circuitBreaker?.halfOpenAfterS ?? 5) * 1000,
        },
      ]),
    );
    const orchestrator = new Orchestrator({
      gateways: traceGateways(gateways, options.onGatewayCall),
      router: createRouter(config.routes),
      store,
      logger,
      abandonSettleMs: (config.reconcile?.settleS ?? 300) * 1000,
      ...(config.keys?.prefix ? { generateApiKey: () => generateApiKeyValue(config.keys.prefix) } : {}),
      circuitBreakers,
      // validateConfig has reported the policies' problems: a config built in code without it gets what resolves.
      expiry: resolveExpiryPolicies(config.gateways).policies,
      ...(options.now ? { now: options.now } : {}),
    });
    return {
      store,
      orchestrator,
      gateways,
      async close() {
        await orchestrator.close();
        if (!options.store) await store.close();
      },
    };
  } catch (err) {
    if (!options.store) await store.close();
    throw err;
  }
}
