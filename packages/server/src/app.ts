/**
 * The express 5 application: the four contract endpoints behind Basic auth,
 * contract validation, and ErrorResponse for every failure; plus
 * {@link startServer}, which listens and drains in-flight requests on close.
 */
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { dirname } from "node:path";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { Logger as PinoLogger } from "pino";
import {
  compileContractValidator,
  type Gateway,
  createRouter,
  loadGateways,
  loadStore,
  Orchestrator,
  silentLogger,
  type CredhookConfig,
  type Logger,
  type OperationOutcome,
} from "@credhook/core";
import { ConfigError, isStoreFailure, ShuttingDown } from "@credhook/core/errors";
import type { CredentialStore } from "@credhook/core/store";
import type pg from "pg";
import { LocalProvider } from "@credhook/provider-local";
import {
  EMBEDDED_GATEWAY_STATE,
  EmbeddedGateway,
  OAUTH_PATHS,
  parseEmbeddedGatewayConfig,
  type SharedLimitsBackend,
} from "@credhook/provider-local/gateway";
import { basicAuth } from "./auth.js";
import { jsonBody } from "./body.js";
import { chain } from "./chain.js";
import { embeddedGatewayProblems } from "./check-config.js";
import { createEdgeServer, edgeChecks } from "./edge.js";
import { errorBody, errorHandler, sendError, sendJson } from "./http-errors.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { createLogger, requestLogger } from "./logging.js";
import { announceGeneratedPassword, resolveUsers } from "./passwords.js";
import { createReadiness, livez, readyz } from "./probes.js";
import { type GatewayCallObserver, traceGateways, traceRequests } from "./tracing.js";
import { bundledModules } from "./modules.js";

/**
 * `credhook serve` on SIGTERM/SIGINT: time allowed after `server.shutdownTimeoutMs`
 * for the providers and the store to close; then the process exits (code 1) whatever is still pending, ms.
 */
export const SHUTDOWN_MARGIN_MS = 2000;

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
   * Called once when a password was generated for a user with an empty
   * password. Default: prints it to stderr (not to the log).
   */
  announcePassword?: (username: string, password: string, file: string) => void;
  /** How long `/readyz` trusts a gateway health check, ms. @default 15000 */
  readinessTtlMs?: number;
  /** Limits the config file does not set; defaults in {@link ServerLimits}. */
  limits?: ServerLimits;
}

/**
 * Limits of the HTTP edge and of authentication (see docs/configuration.md, "The HTTP edge"), for
 * embedding: each one given here overrides the config file's (`server.*`, `server.auth.*`),
 * whose values (and defaults) are used otherwise. Not validated: the config schema is.
 */
export interface ServerLimits {
  /** Time to receive a request's headers, ms; then 408. @default server.headersTimeoutMs (10000) */
  headersTimeoutMs?: number;
  /** Time to receive a whole request (headers and body), ms; then 408. @default server.requestTimeoutMs (10000) */
  requestTimeoutMs?: number;
  /** Largest request line + headers, bytes; beyond → 431. @default server.maxHeaderBytes (16384) */
  maxHeaderBytes?: number;
  /** Failed logins across all client addresses per `server.auth.failureWindowS`; then 429 for every credential not remembered. @default server.auth.maxGlobalFailures (10 × server.auth.maxFailures) */
  maxGlobalFailures?: number;
  /** Password-hash (scrypt) checks at once; more → 503 with Retry-After: 1. @default server.auth.maxConcurrentPasswordChecks (1) */
  maxConcurrentPasswordChecks?: number;
  /** How long a verified login is remembered after its last use, ms. @default server.auth.rememberLoginMs (300000) */
  rememberLoginMs?: number;
}

/** A built application, not yet listening. */
export interface CredhookApp {
  app: Express;
  orchestrator: Orchestrator;
  store: CredentialStore;
  logger: PinoLogger;
  /** The embedded gateway, when `embeddedGateway:` is configured (not yet listening on its own port). */
  embeddedGateway: EmbeddedGateway | undefined;
  /** True once shutdown began: new requests are answered 503. */
  draining: boolean;
  /** Closes providers and the store (call after the HTTP server stopped). */
  close(): Promise<void>;
  /** The app's metrics (the edge counts its own refusals there). */
  metrics: Metrics;
}

const ENDPOINTS: Record<string, string[]> = {
  "/v1/createCredentials": ["POST"],
  "/v1/updateCredentials": ["POST"],
  "/v1/revokeCredentials": ["POST"],
  "/v1/health": ["GET", "HEAD"],
  "/metrics": ["GET"],
  "/livez": ["GET", "HEAD"],
  "/readyz": ["GET", "HEAD"],
};

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
    logger?: PinoLogger;
    store?: CredentialStore;
    onGatewayCall?: GatewayCallObserver;
    waitForStore?: boolean;
  } = {},
): Promise<CredhookRuntime> {
  const logger = (options.logger ?? createLogger(config.server.logLevel)) as unknown as Logger;
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
      circuitBreakers,
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

/**
 * Builds the application: opens the store, loads every gateway's provider,
 * resolves the portal users (generating a password where needed), and mounts
 * the routes.
 * @throws ConfigError when a provider fails to load or validate, or the store cannot be opened
 */
export async function createApp(config: CredhookConfig, options: AppOptions = {}): Promise<CredhookApp> {
  const logger = options.logger ?? createLogger(config.server.logLevel);
  const metrics = createMetrics();
  const runtime = await createRuntime(config, {
    logger,
    onGatewayCall: metrics.observeGatewayCall,
    ...(options.store ? { store: options.store } : {}),
    ...(options.waitForStore ? { waitForStore: true } : {}),
  });
  const { store, orchestrator } = runtime;
  metrics.watchStore(store);
  let users;
  try {
    users = await resolveUsers(
      config.server.auth.users,
      config.dataDir,
      options.announcePassword ?? announceGeneratedPassword,
    );
  } catch (err) {
    await runtime.close();
    throw err;
  }
  let created: Awaited<ReturnType<typeof createEmbeddedGateway>>;
  try {
    created = await createEmbeddedGateway(config, runtime, logger, metrics.observeGateway);
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const embedded = created?.gateway;
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
    embeddedGateway: embedded,
    draining: false,
    async close() {
      await embedded?.close(config.server.shutdownTimeoutMs);
      await created?.release();
      await runtime.close();
    },
    metrics,
  };
  const limits = options.limits ?? {};

  const prefix = embedded && (config.embeddedGateway as { pathPrefix?: string }).pathPrefix;
  if (embedded && prefix) {
    // The embedded gateway's endpoints: outside the webhook's Basic auth, request log and routing.
    app.use(prefix, embedded.handler);
    // RFC 8414 §3.1: for an issuer with a path, metadata lives at /.well-known/oauth-authorization-server<path>.
    app.get(`${OAUTH_PATHS.metadata}${prefix}`, (req: Request, res: Response) => {
      req.url = OAUTH_PATHS.metadata;
      embedded.handler(req, res);
    });
  }
  // Every request: its span, its log line, its metrics and the edge's checks — one router layer (see chain.ts).
  app.use(chain(traceRequests(), requestLogger(logger), metrics.observe, edgeChecks(config.server.bodyLimitBytes)));
  // Probes: unauthenticated, answered before the shutdown gate (/readyz reports draining itself).
  const readiness = createReadiness({
    store,
    gateways: runtime.gateways, // unwrapped: a probe makes no span and no breaker trial
    openCircuits: () => orchestrator.openCircuits(),
    isDraining: () => built.draining,
    logger,
    ...(options.readinessTtlMs !== undefined ? { gatewayCheckTtlMs: options.readinessTtlMs } : {}),
  });
  app.get("/livez", livez);
  app.get("/readyz", readyz(readiness));
  const drainingGate = (req: Request, res: Response, next: NextFunction) => {
    if (!built.draining) return next();
    res.setHeader("Connection", "close");
    const e = new ShuttingDown("credhook is shutting down; retry on another instance or shortly", 5);
    sendError(res, req, 503, e.messages, { "Retry-After": String(e.retryAfterS) });
  };
  // Unknown path / wrong method are answered before auth: they reveal nothing.
  const knownEndpoint = (req: Request, res: Response, next: NextFunction) => {
    const allowed = ENDPOINTS[req.path];
    if (!allowed)
      return sendError(res, req, 404, [
        `no endpoint at ${req.path}; the endpoints are ${Object.keys(ENDPOINTS)
          .filter((p) => p.startsWith("/v1/"))
          .join(", ")}`,
      ]);
    if (!allowed.includes(req.method)) {
      return sendError(
        res,
        req,
        405,
        [`${req.method} is not allowed on ${req.path}; use ${allowed.filter((m) => m !== "HEAD").join(", ")}`],
        {
          Allow: allowed.join(", "),
        },
      );
    }
    next();
  };
  const auth = basicAuth({
    users,
    realm: config.server.auth.realm,
    maxFailures: config.server.auth.maxFailures,
    failureWindowS: config.server.auth.failureWindowS,
    maxGlobalFailures: limits.maxGlobalFailures ?? config.server.auth.maxGlobalFailures,
    maxConcurrentChecks: limits.maxConcurrentPasswordChecks ?? config.server.auth.maxConcurrentPasswordChecks,
    rememberMs: limits.rememberLoginMs ?? config.server.auth.rememberLoginMs,
    maxRemembered: config.server.auth.maxRememberedLogins,
  });
  const jsonOnly = (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== "POST") return next();
    // The portal's usual header, on a request with a body, is checked as a string; anything else goes
    // through type-is's parser (req.is, which is null without a body: refused alike).
    const plainJson =
      req.headers["content-type"] === "application/json" &&
      (req.headers["transfer-encoding"] !== undefined || !Number.isNaN(Number(req.headers["content-length"])));
    if (!plainJson && !req.is("application/json")) {
      return sendError(res, req, 415, [
        `body must be application/json (got ${req.headers["content-type"] ? `'${String(req.headers["content-type"]).slice(0, 60)}'` : "no Content-Type"})`,
      ]);
    }
    next();
  };
  // Past the probes, in this order, as one router layer: the shutdown gate, unknown paths, auth, the body.
  app.use(chain(drainingGate, knownEndpoint, auth, jsonOnly, jsonBody(config.server.bodyLimitBytes)));

  /** Notes what an operation touched, for the request log line and the metrics. */
  const noteOutcome = (res: Response, out: OperationOutcome) => {
    res.locals.gateways = out.gateways;
    res.locals.credentialId = out.credentialId;
    if (out.created) res.locals.created = out.created;
    if (out.removed) res.locals.removed = out.removed;
    for (const gateway of out.unowned ?? []) metrics.unownedRevokes.inc({ gateway });
  };
  app.post("/v1/createCredentials", async (req: Request, res: Response) => {
    const out = await orchestrator.create(validator.createRequest(req.body));
    noteOutcome(res, out);
    res.setHeader("Cache-Control", "no-store");
    sendJson(res, 200, out.response);
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

/**
 * Builds the embedded gateway when `embeddedGateway:` is configured, over every
 * `provider: local` gateway; with usage-plan counters on the PostgreSQL store
 * (`limits.counters: store`, the default there), a small pool of its own.
 * @returns the gateway and a function that releases what it holds besides (the pool)
 * @throws ConfigError when no gateway uses provider local, or counters on a store that is not PostgreSQL
 */
async function createEmbeddedGateway(
  config: CredhookConfig,
  runtime: CredhookRuntime,
  logger: PinoLogger,
  observe: (endpoint: string, status: number) => void,
): Promise<{ gateway: EmbeddedGateway; release: () => Promise<void> } | undefined> {
  if (!config.embeddedGateway) return undefined;
  const gwConfig = parseEmbeddedGatewayConfig(config.embeddedGateway);
  // The same checks as `credhook check-config`.
  const problems = embeddedGatewayProblems(config, runtime.gateways, runtime.store.shared);
  if (problems.length > 0) throw new ConfigError(problems);
  const providers = [...runtime.gateways.values()]
    .map((g) => g.provider)
    .filter((p): p is LocalProvider => p instanceof LocalProvider);
  let pool: pg.Pool | undefined;
  let sharedLimits: SharedLimitsBackend | undefined;
  const counters = gwConfig.limits.counters ?? (runtime.store.shared ? "store" : "memory");
  if (counters === "store") {
    const pgConfig = (config.store as { postgres: string | { url: string; schema?: string } }).postgres;
    const { url, schema } = typeof pgConfig === "string" ? { url: pgConfig, schema: undefined } : pgConfig;
    // pg only for this PostgreSQL mode: the embedded default (SQLite) never loads it.
    const { default: pgModule } = await import("pg");
    pool = new pgModule.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 2_000 });
    pool.on("error", (err) =>
      logger.warn(
        { err: err.message },
        "embedded gateway: PostgreSQL connection of the usage-plan counters lost; the pool reconnects",
      ),
    );
    sharedLimits = { storeClient: pool, schemaName: schema ?? "credhook" };
  }
  try {
    const gateway = await EmbeddedGateway.create({
      config: gwConfig,
      providers,
      state: runtime.store.stateFor(EMBEDDED_GATEWAY_STATE),
      dataDir: config.dataDir,
      logger: logger.child({ component: "embedded-gateway" }) as unknown as Logger,
      ...(sharedLimits ? { sharedLimits } : {}),
      observe,
    });
    return { gateway, release: async () => void (await pool?.end()) };
  } catch (err) {
    await pool?.end();
    throw err;
  }
}

/**
 * The clean-up `credhook serve` runs in the background, one pass at a time on
 * an unref'd timer: the reconcile loop every `reconcile.intervalS` (default 5 s
 * on a shared store, off on SQLite), which finishes dead instances' interrupted
 * operations and sweeps abandoned creates; or, with the loop off, only the
 * abandoned-create sweep every `reconcile.abandonedIntervalS` (default 30 s).
 * @returns a function that stops the timer and waits for a pass in progress
 */
function startBackgroundReconcile(credhook: CredhookApp, config: CredhookConfig): () => Promise<void> {
  const loopS = config.reconcile?.intervalS ?? (credhook.store.shared ? 5 : 0);
  const sweepS = loopS > 0 ? 0 : (config.reconcile?.abandonedIntervalS ?? 30);
  const intervalMs = (loopS || sweepS) * 1000;
  if (intervalMs <= 0) return async () => undefined;
  const pass = async () => {
    if (loopS > 0) {
      const r = await credhook.orchestrator.reconcileLoopPass();
      if (r.finished.length > 0 || r.swept.swept > 0 || r.swept.settled > 0) {
        credhook.logger.info(
          {
            finished: r.finished.length,
            inFlight: r.inFlight,
            swept: r.swept.swept,
            revoked: r.swept.revoked,
            deleted: r.swept.deleted,
            settled: r.swept.settled,
          },
          "reconcile loop pass",
        );
      }
    } else {
      const r = await credhook.orchestrator.sweepAbandoned();
      if (r.swept > 0 || r.settled > 0)
        credhook.logger.info(
          { swept: r.swept, revoked: r.revoked, deleted: r.deleted, settled: r.settled },
          "abandoned creates swept",
        );
    }
  };
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= pass()
      // A store outage is logged by the store, once per state change: not again every pass.
      .catch((err: unknown) =>
        (isStoreFailure(err) ? credhook.logger.debug : credhook.logger.error).call(
          credhook.logger,
          { err: String(err) },
          "background reconcile pass failed",
        ),
      )
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

/**
 * What the server answers while it starts (the store is still being opened): `/livez` 204, `/readyz` 503
 * "not ready", anything else 503 + Retry-After saying so — each an ErrorResponse.
 */
function starting(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  req.resume();
  res.setHeader("Cache-Control", "no-store");
  if (path === "/livez") {
    res.statusCode = 204;
    res.end();
    return;
  }
  res.setHeader("Retry-After", "5");
  res.setHeader("Connection", "close");
  sendJson(
    res as unknown as Response,
    503,
    errorBody(
      503,
      [
        path === "/readyz"
          ? "not ready"
          : "credhook is starting: the credential store is not reachable yet; try again shortly",
      ],
      path,
    ),
  );
}

/** A listening server. */
export interface RunningServer {
  /** `http://127.0.0.1:PORT` (or the configured host). */
  url: string;
  /** Base URL of the embedded gateway's endpoints on this machine (own port, or the webhook's URL + pathPrefix), when configured. */
  gatewayUrl?: string;
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
export async function startServer(
  config: CredhookConfig,
  options: AppOptions & { port?: number; host?: string } = {},
): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.server.logLevel);
  // Listening comes first: while the store is still being waited for (a database that is away at start), /livez
  // answers 204, /readyz 503 and every other request 503 + Retry-After; then the app takes over.
  let credhook: CredhookApp | undefined;
  let handler: (req: IncomingMessage, res: ServerResponse) => void = starting;
  const host = options.host ?? config.server.host;
  const limits = options.limits ?? {};
  const server = createEdgeServer((req, res) => handler(req, res), {
    limits: {
      bodyLimitBytes: config.server.bodyLimitBytes,
      headersTimeoutMs: limits.headersTimeoutMs ?? config.server.headersTimeoutMs,
      requestTimeoutMs: limits.requestTimeoutMs ?? config.server.requestTimeoutMs,
      maxHeaderBytes: limits.maxHeaderBytes ?? config.server.maxHeaderBytes,
    },
    logger,
    onRefused: (status, reason) => credhook?.metrics.refused(status, reason),
  });
  server.listen(options.port ?? config.server.port, host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  try {
    credhook = await createApp(config, { ...options, logger, waitForStore: true });
    try {
      await credhook.store.claimServer?.(); // one server per SQLite file
    } catch (err) {
      await credhook.close();
      throw err;
    }
  } catch (err) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    throw err;
  }
  handler = credhook.app;
  server.keepAliveTimeout = config.server.keepAliveTimeoutMs;
  const port = (server.address() as AddressInfo).port;
  const stopSweep = startBackgroundReconcile(credhook, config);
  const shownHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const url = `http://${shownHost}:${port}`;
  let gatewayUrl: string | undefined;
  const embedded = credhook.embeddedGateway;
  if (embedded) {
    const gw = config.embeddedGateway as { pathPrefix?: string; publicUrl?: string };
    try {
      if (gw.pathPrefix) {
        gatewayUrl = url + gw.pathPrefix;
        if (!gw.publicUrl) embedded.setPublicUrl(`http://localhost:${port}${gw.pathPrefix}`);
      } else {
        gatewayUrl = await embedded.listen();
      }
      if (!gw.publicUrl && credhook.store.shared) {
        credhook.logger.warn(
          { issuer: embedded.publicUrl },
          "embeddedGateway.publicUrl is not set: each instance on this shared store has its own OAuth issuer, so a token from one is not valid on another; set it to the address clients use",
        );
      }
    } catch (err) {
      server.close();
      await credhook.close();
      throw err;
    }
  }
  let closing: Promise<void> | undefined;
  return {
    url,
    ...(gatewayUrl ? { gatewayUrl } : {}),
    port,
    server,
    credhook,
    close() {
      closing ??= (async () => {
        credhook.draining = true;
        await stopSweep();
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
