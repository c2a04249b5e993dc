/**
 * The express 5 application: the four contract endpoints behind Basic auth,
 * contract validation, and ErrorResponse for every failure; plus
 * {@link startServer}, which listens and drains in-flight requests on close.
 */
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import type { Server } from "node:http";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { Logger as PinoLogger } from "pino";
import {
  compileContractValidator,
  ConfigError,
  createRouter,
  loadGateways,
  Orchestrator,
  Throttled,
  type CredentialStore,
  type CredhookConfig,
  type Logger,
  type OperationOutcome,
} from "@credhook/core";
import { SqliteCredentialStore } from "@credhook/store-sqlite";
import { basicAuth, failedLoginLimit } from "./auth.js";
import { errorHandler, sendError } from "./http-errors.js";
import { createMetrics } from "./metrics.js";
import { createLogger, requestLogger } from "./logging.js";
import { resolveUsers } from "./passwords.js";

/** Options of {@link createApp} / {@link startServer}. */
export interface AppOptions {
  /** Logger; default: pino at `server.logLevel` on stdout. */
  logger?: PinoLogger;
  /** Store to use instead of the one the config names (tests, embedding). */
  store?: CredentialStore;
  /**
   * Called once when a password was generated for a user with an empty
   * password. Default: prints it to stderr (not to the log).
   */
  announcePassword?: (username: string, password: string, file: string) => void;
}

/** A built application, not yet listening. */
export interface CredhookApp {
  app: Express;
  orchestrator: Orchestrator;
  store: CredentialStore;
  logger: PinoLogger;
  /** True once shutdown began: new requests are answered 503. */
  draining: boolean;
  /** Closes providers and the store (call after the HTTP server stopped). */
  close(): Promise<void>;
}

const ENDPOINTS: Record<string, string[]> = {
  "/v1/createCredentials": ["POST"],
  "/v1/updateCredentials": ["POST"],
  "/v1/revokeCredentials": ["POST"],
  "/v1/health": ["GET", "HEAD"],
  "/metrics": ["GET"],
};

/** Opens the store the config names. */
export async function openStore(config: CredhookConfig): Promise<CredentialStore> {
  if ("sqlite" in config.store) {
    const store = new SqliteCredentialStore({ path: config.store.sqlite });
    await store.init();
    return store;
  }
  throw new ConfigError(["store.postgres: the PostgreSQL store is not available in this version; use store: { sqlite: <path> }"]);
}

/** Imports a provider package: from the server's own dependencies first, then from the working directory (third-party providers). */
export async function importProviderModule(specifier: string): Promise<unknown> {
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
  /** Closes the providers, then the store when this runtime opened it. */
  close(): Promise<void>;
}

/**
 * Opens the store (unless given) and loads every gateway's provider.
 * @throws ConfigError when a provider fails to load or validate, or the store cannot be opened
 */
export async function createRuntime(config: CredhookConfig, options: { logger?: PinoLogger; store?: CredentialStore } = {}): Promise<CredhookRuntime> {
  const logger = (options.logger ?? createLogger(config.server.logLevel)) as unknown as Logger;
  const store = options.store ?? (await openStore(config));
  try {
    const gateways = await loadGateways(config, { importModule: importProviderModule, logger, stateFor: (g) => store.stateFor(g) });
    const orchestrator = new Orchestrator({ gateways, router: createRouter(config.routes), store, logger });
    return {
      store,
      orchestrator,
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

/**
 * Builds the application: opens the store, loads every gateway's provider,
 * resolves the portal users (generating a password where needed), and mounts
 * the routes.
 * @throws ConfigError when a provider fails to load or validate, or the store cannot be opened
 */
export async function createApp(config: CredhookConfig, options: AppOptions = {}): Promise<CredhookApp> {
  const logger = options.logger ?? createLogger(config.server.logLevel);
  const runtime = await createRuntime(config, { logger, ...(options.store ? { store: options.store } : {}) });
  const { store, orchestrator } = runtime;
  let users;
  try {
    users = await resolveUsers(
      config.server.auth.users,
      config.dataDir,
      options.announcePassword ??
        ((username, password, file) => {
          process.stderr.write(
            `\ncredhook: no password is set for portal user '${username}', so one was generated.\n` +
              `  It is shown only now; only its scrypt hash is kept, in ${file}.\n` +
              `  Basic credentials: ${username}:${password}\n` +
              `  To choose your own, set CREDHOOK_PASSWORD (and delete that file).\n\n`,
          );
        }),
    );
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const validator = compileContractValidator();
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.server.trustProxy);
  app.set("etag", false);
  const built: CredhookApp = {
    app,
    orchestrator,
    store,
    logger,
    draining: false,
    close: () => runtime.close(),
  };

  const metrics = createMetrics();
  app.use(requestLogger(logger));
  app.use(metrics.observe);
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!built.draining) return next();
    res.setHeader("Connection", "close");
    const e = new Throttled("credhook is shutting down; retry on another instance or shortly", 5);
    sendError(res, req, 503, e.messages, { "Retry-After": String(e.retryAfterS) });
  });
  // Unknown path / wrong method are answered before auth: they reveal nothing.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const allowed = ENDPOINTS[req.path];
    if (!allowed) return sendError(res, req, 404, [`no endpoint at ${req.path}; the endpoints are ${Object.keys(ENDPOINTS).filter((p) => p.startsWith("/v1/")).join(", ")}`]);
    if (!allowed.includes(req.method)) {
      return sendError(res, req, 405, [`${req.method} is not allowed on ${req.path}; use ${allowed.filter((m) => m !== "HEAD").join(", ")}`], {
        Allow: allowed.join(", "),
      });
    }
    next();
  });
  app.use(failedLoginLimit(config.server.auth.maxFailures, config.server.auth.failureWindowS));
  app.use(basicAuth({ users, realm: config.server.auth.realm }));
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method !== "POST") return next();
    if (!req.is("application/json")) {
      return sendError(res, req, 415, [`body must be application/json (got ${req.headers["content-type"] ? `'${String(req.headers["content-type"]).slice(0, 60)}'` : "no Content-Type"})`]);
    }
    next();
  });
  app.use(express.json({ limit: config.server.bodyLimitBytes, strict: false, type: "application/json" }));

  /** Notes what an operation touched, for the request log line and the metrics. */
  const noteOutcome = (res: Response, out: OperationOutcome) => {
    res.locals.gateways = out.gateways;
    res.locals.credentialId = out.credentialId;
  };
  app.post("/v1/createCredentials", async (req: Request, res: Response) => {
    const out = await orchestrator.create(validator.createRequest(req.body));
    noteOutcome(res, out);
    res.setHeader("Cache-Control", "no-store");
    res.status(200).json(out.response);
  });
  app.post("/v1/updateCredentials", async (req: Request, res: Response) => {
    noteOutcome(res, await orchestrator.update(validator.updateRequest(req.body)));
    res.status(204).end();
  });
  app.post("/v1/revokeCredentials", async (req: Request, res: Response) => {
    noteOutcome(res, await orchestrator.revoke(validator.revokeRequest(req.body)));
    res.status(204).end();
  });
  app.get("/v1/health", async (_req: Request, res: Response) => {
    await orchestrator.health();
    res.status(204).end();
  });
  app.get("/metrics", async (_req: Request, res: Response) => {
    res.setHeader("Content-Type", metrics.registry.contentType);
    res.send(await metrics.registry.metrics());
  });
  app.use(errorHandler);
  return built;
}

/** A listening server. */
export interface RunningServer {
  /** `http://127.0.0.1:PORT` (or the configured host). */
  url: string;
  port: number;
  server: Server;
  credhook: CredhookApp;
  /**
   * Graceful shutdown: stops accepting connections, answers new requests on
   * open connections 503, waits up to `server.shutdownTimeoutMs` for in-flight
   * requests, then closes providers and the store.
   */
  close(): Promise<void>;
}

/**
 * Builds the app and listens on `options.port` (default `config.server.port`; 0 picks a free port).
 * @throws ConfigError | Error (EADDRINUSE …)
 */
export async function startServer(config: CredhookConfig, options: AppOptions & { port?: number; host?: string } = {}): Promise<RunningServer> {
  const credhook = await createApp(config, options);
  const host = options.host ?? config.server.host;
  const server = credhook.app.listen(options.port ?? config.server.port, host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  }).catch(async (err) => {
    await credhook.close();
    throw err;
  });
  server.keepAliveTimeout = 5_000;
  const port = (server.address() as AddressInfo).port;
  const shownHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    server,
    credhook,
    close() {
      closing ??= (async () => {
        credhook.draining = true;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Keep-alive connections become idle as their last response ends: close them as they do.
        server.closeIdleConnections();
        const sweeper = setInterval(() => server.closeIdleConnections(), 50);
        const timer = setTimeout(() => server.closeAllConnections(), config.server.shutdownTimeoutMs);
        await closed;
        clearInterval(sweeper);
        clearTimeout(timer);
        await credhook.close();
      })();
      return closing;
    },
  };
}
