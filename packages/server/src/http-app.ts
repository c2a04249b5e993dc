/**
 * The express 5 application, built by `createApp` as a list of steps, each handed the part of the
 * configuration it needs and each served by one module, visited once: the logger and the request log line
 * (logging.ts), the store, the gateways' providers and the orchestrator (runtime.ts), the portal users
 * (passwords.ts) and their Basic auth (auth.ts), the secret-scanning alert endpoint (secret-scanning.ts), the
 * embedded gateway (`@credhook/gateway`), `/readyz` (probes.ts), then the routes over those parts (routes.ts),
 * which build nothing from the configuration themselves. Each step that opens something pushes its closer onto
 * one stack, which one failure path unwinds (and `close()` later).
 */
import type { Logger as PinoLogger } from "pino";
import type { CredhookConfig, Logger, Orchestrator } from "@credhook/core";
import type { CredentialStore } from "@credhook/core/store";
import { type RunningEmbeddedGateway, startEmbeddedGateway } from "@credhook/gateway";
import type { Express } from "express";
import { portalAuth } from "./auth.js";
import { createLogger, requestLogger } from "./logging.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { type GeneratedPassword, resolveUsers } from "./passwords.js";
import { createReadiness, readyz } from "./probes.js";
import { ENDPOINTS, routes, type ServerLimits } from "./routes.js";
import { createRuntime } from "./runtime.js";
import { checkScanningPath, scanningEndpoint } from "./secret-scanning.js";

export type { ServerLimits } from "./routes.js";

/** Options of {@link createApp} / {@link startServer}. */
export interface AppOptions {
  /** Logger; default: pino at `server.logLevel` on stdout. */
  logger?: PinoLogger;
  /** Store to use instead of the one the config names (tests, embedding). */
  store?: CredentialStore;
  /**
   * Wait (with backoff) for a database that cannot be reached at start instead of failing at once,
   * unless the store is configured to fail fast; `startServer` sets it, since it listens and reports not ready meanwhile.
   * @default false
   */
  waitForStore?: boolean;
  /**
   * Called once for each password generated for a user with an empty password, once its two files are
   * written (see docs/configuration.md, "The password"). Default: one `warn` log line with the password
   * file's path (never the password), and the password itself on stderr only where stderr is a terminal.
   */
  announcePassword?: (generated: GeneratedPassword) => void;
  /** How long `/readyz` trusts a gateway health check, ms. @default 15000 */
  readinessTtlMs?: number;
  /**
   * The clock, ms since the epoch, of what credhook waits for: the orchestrator's records and settle windows
   * (`reconcile.settleS`, `OrchestratorOptions.now` in @credhook/core) and `/readyz`'s cached gateway checks
   * ({@link readinessTtlMs}). Tests move it instead of waiting a window out. Not the circuit breakers' half-open
   * delay, which cockatiel measures on `Date.now()` (a test fakes `Date`). @default Date.now
   */
  now?: () => number;
  /** Limits the config file does not set; defaults in {@link ServerLimits}. */
  limits?: ServerLimits;
}

/** A built application, not yet listening. */
export interface CredhookApp {
  app: Express;
  orchestrator: Orchestrator;
  store: CredentialStore;
  logger: PinoLogger;
  /** The embedded gateway, started when `embeddedGateway:` is configured (not yet listening on its own port). */
  embeddedGateway?: RunningEmbeddedGateway;
  /** True once shutdown began: new requests are answered 503. */
  draining: boolean;
  /** Closes the embedded gateway, the providers and the store, the last opened first (call after the HTTP server stopped); idempotent. */
  close(): Promise<void>;
  /** The app's metrics (the edge counts its own refusals there). */
  metrics: Metrics;
}

/**
 * Builds the application: opens the store, loads every gateway's provider, resolves the portal users
 * (generating a password where needed, its files written), starts the embedded gateway when configured,
 * and mounts the routes.
 * @throws ConfigError when a provider fails to load or validate, the store cannot be opened, or a block does not fit
 * @throws Error when a generated password's files cannot be written
 */
export async function createApp(config: CredhookConfig, options: AppOptions = {}): Promise<CredhookApp> {
  const { app, settleUsers } = await prepareApp(config, options);
  try {
    settleUsers();
  } catch (err) {
    await app.close();
    throw err;
  }
  return app;
}

/** Closes what the stack holds, the last opened first; the stack is empty afterwards. */
async function unwind(closers: Array<() => Promise<void>>): Promise<void> {
  for (const close of closers.splice(0).reverse()) await close();
}

/**
 * {@link createApp} with the portal users' generated passwords made but not written: `settleUsers()`
 * writes them and says what the operator should know (`PortalUsers.settle` in passwords.ts).
 * `startServer` calls it once every port is bound, so that a start that fails leaves no password behind.
 */
export async function prepareApp(
  config: CredhookConfig,
  options: AppOptions = {},
): Promise<{ app: CredhookApp; settleUsers: () => void }> {
  const logger = options.logger ?? createLogger(config.server.logLevel);
  const requestLog = requestLogger(logger);
  const metrics = createMetrics();
  const closers: Array<() => Promise<void>> = [];
  try {
    const runtime = await createRuntime(config, {
      logger,
      onGatewayCall: metrics.observeGatewayCall,
      store: options.store,
      waitForStore: options.waitForStore,
      now: options.now,
    });
    closers.push(() => runtime.close());
    metrics.watchStore(runtime.store);
    const { orchestrator, store, gateways } = runtime;
    const users = await resolveUsers(config.server.auth.users, config.dataDir);
    const auth = portalAuth(users.users, config.server.auth, options.limits);
    const configFile = (config as { configFile?: string }).configFile;
    const alerts = { orchestrator, store, logger, observe: metrics.observeSecretScanning };
    const scanning = scanningEndpoint(config.secretScanning?.github, configFile, alerts, Object.keys(ENDPOINTS));
    const gateway = config.embeddedGateway
      ? await startEmbeddedGateway(config.embeddedGateway, {
          gateways,
          store: config.store,
          sharedStore: store.shared ?? false,
          stateFor: (namespace) => store.stateFor(namespace),
          dataDir: config.dataDir,
          logger: logger as unknown as Logger,
          observe: metrics.observeGateway,
        })
      : undefined;
    if (gateway) closers.push(() => gateway.close(config.server.shutdownTimeoutMs));
    checkScanningPath(scanning, gateway?.mount?.path);
    const isDraining = () => built.draining;
    const readiness = createReadiness({
      store,
      gateways,
      openCircuits: () => orchestrator.openCircuits(),
      isDraining,
      logger,
      ...(options.readinessTtlMs !== undefined ? { gatewayCheckTtlMs: options.readinessTtlMs } : {}),
      ...(options.now ? { now: options.now } : {}),
    });
    const parts = {
      orchestrator,
      metrics,
      requestLog,
      auth,
      readyz: readyz(readiness),
      scanning,
      gateway: gateway?.mount,
    };
    const app = routes(parts, { server: config.server, isDraining });
    let closing: Promise<void> | undefined;
    const built: CredhookApp = {
      app,
      orchestrator,
      store,
      logger,
      metrics,
      embeddedGateway: gateway,
      draining: false,
      close: () => (closing ??= unwind(closers)),
    };
    return { app: built, settleUsers: () => users.settle(logger as unknown as Logger, options.announcePassword) };
  } catch (err) {
    await unwind(closers);
    throw err;
  }
}
