/**
 * The express 5 application, built by `createApp` as a list of steps, each handed the part of the
 * configuration it needs: the store, the gateways' providers and the orchestrator (runtime.ts), the
 * portal users (passwords.ts), the secret-scanning alert endpoint (secret-scanning.ts), the embedded
 * gateway (`@credhook/gateway`), then the routes over them ({@link routes}). Each step that opens
 * something pushes its closer onto one stack, which one failure path unwinds (and `close()` later).
 *
 * The routes: the four contract endpoints behind Basic auth, contract validation, the probes and
 * `/metrics`, and ErrorResponse for every failure; the embedded gateway's endpoints (under
 * `embeddedGateway.pathPrefix`) mounted outside its auth, and so is the secret-scanning alert
 * endpoint (`secretScanning.github`), authenticated by GitHub's signature.
 */
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import type { Logger as PinoLogger } from "pino";
import {
  compileContractValidator,
  type CredhookConfig,
  type Gateway,
  type Logger,
  type OperationOutcome,
  type Orchestrator,
  type ServerConfig,
} from "@credhook/core";
import { ConfigError, ShuttingDown } from "@credhook/core/errors";
import type { CredentialStore } from "@credhook/core/store";
import { type RunningEmbeddedGateway, startEmbeddedGateway } from "@credhook/gateway";
import { basicAuth } from "./auth.js";
import { jsonBody } from "./body.js";
import { chain } from "./chain.js";
import { edgeChecks } from "./edge.js";
import { errorHandler, sendError, sendJson } from "./http-errors.js";
import { createLogger, requestLogger } from "./logging.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { type GeneratedPassword, type PortalUsers, resolveUsers } from "./passwords.js";
import { createReadiness, livez, readyz } from "./probes.js";
import { createRuntime } from "./runtime.js";
import {
  type GithubAlertDeps,
  type GithubSecretScanningConfig,
  githubAlertHandler,
  githubKeysOf,
} from "./secret-scanning.js";
import { traceRequests } from "./tracing.js";

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
  /** The embedded gateway, started when `embeddedGateway:` is configured (not yet listening on its own port). */
  embeddedGateway?: RunningEmbeddedGateway;
  /** True once shutdown began: new requests are answered 503. */
  draining: boolean;
  /** Closes the embedded gateway, the providers and the store, the last opened first (call after the HTTP server stopped); idempotent. */
  close(): Promise<void>;
  /** The app's metrics (the edge counts its own refusals there). */
  metrics: Metrics;
}

/** credhook's own endpoints on the webhook's port and the methods each answers. */
const ENDPOINTS: Record<string, string[]> = {
  "/v1/createCredentials": ["POST"],
  "/v1/updateCredentials": ["POST"],
  "/v1/revokeCredentials": ["POST"],
  "/v1/health": ["GET", "HEAD"],
  "/metrics": ["GET"],
  "/livez": ["GET", "HEAD"],
  "/readyz": ["GET", "HEAD"],
};

/** The secret-scanning alert endpoint (`secretScanning.github`): its path and its handler (`githubAlertHandler`). */
interface SecretScanningEndpoint {
  path: string;
  /** Answers `POST path` after a `jsonBody` with `raw` (it checks GitHub's signature over the body's bytes). */
  handler: RequestHandler;
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
 * The alert endpoint of `secretScanning.github`: its path and its handler (GitHub's keys loaded), undefined when
 * the block is absent.
 * @param configFile the config file's path, whose folder a relative key `file` is read from
 * @param deps what the handler acts through (the orchestrator, the store, the logger, the metrics' callback)
 * @throws ConfigError its path is one of credhook's own endpoints, or a key cannot be used
 */
function scanningEndpoint(
  github: GithubSecretScanningConfig | undefined,
  configFile: string | undefined,
  deps: Omit<GithubAlertDeps, "config" | "keys">,
): SecretScanningEndpoint | undefined {
  if (!github) return undefined;
  if (ENDPOINTS[github.path])
    throw new ConfigError([`secretScanning.github.path ${github.path} is one of credhook's own endpoints`]);
  const keys = githubKeysOf(github, configFile)!;
  return { path: github.path, handler: githubAlertHandler({ config: github, keys, ...deps }) };
}

/** @throws ConfigError the alert endpoint's path is under the embedded gateway's (`pathPrefix`), which would answer it */
function checkScanningPath(scanning: SecretScanningEndpoint | undefined, gateway: RunningEmbeddedGateway | undefined) {
  const path = scanning?.path;
  const under = gateway?.mount?.path;
  if (path && under && (path === under || path.startsWith(`${under}/`)))
    throw new ConfigError([`secretScanning.github.path ${path} is under ${under}, where the embedded gateway answers`]);
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
    const configFile = (config as { configFile?: string }).configFile;
    const alerts = { orchestrator, store, logger, observe: metrics.observeSecretScanning };
    const scanning = scanningEndpoint(config.secretScanning?.github, configFile, alerts);
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
    checkScanningPath(scanning, gateway);
    const { limits, readinessTtlMs, now } = options;
    const app = routes(
      { orchestrator, store, gateways, logger, metrics, users: users.users, scanning, gateway: gateway?.mount },
      { server: config.server, limits, readinessTtlMs, now, isDraining: () => built.draining },
    );
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

/** What {@link routes} routes requests to: the parts {@link prepareApp} built. */
interface RouteParts {
  orchestrator: Orchestrator;
  store: CredentialStore;
  /** The gateways, providers unwrapped: a readiness probe makes no span and no breaker trial. */
  gateways: ReadonlyMap<string, Gateway>;
  logger: PinoLogger;
  metrics: Metrics;
  /** The portal users (`resolveUsers` in passwords.ts). */
  users: PortalUsers["users"];
  /** The alert endpoint, when `secretScanning.github` is configured. */
  scanning?: SecretScanningEndpoint;
  /** The embedded gateway's handler on this port, when it serves under `pathPrefix`. */
  gateway?: RunningEmbeddedGateway["mount"];
}

/** How {@link routes} answers: the `server:` block, the limits that override it, the probes' settings, the shutdown gate. */
interface RouteSettings {
  /** The config's `server:` block (body limit, trust proxy, auth). */
  server: ServerConfig;
  /** Limits that override the `server:` block's; undefined: the block's. */
  limits?: ServerLimits;
  /** How long `/readyz` trusts a gateway health check, ms. @default 15000 (probes.ts) */
  readinessTtlMs?: number;
  /** The clock of `/readyz`'s cached gateway checks, epoch ms. @default Date.now */
  now?: () => number;
  /** True once shutdown began: requests are answered 503. */
  isDraining: () => boolean;
}

/**
 * Mounts the embedded gateway's handler under its path and its aliases (GET and HEAD) — before the
 * webhook's own layers, so outside its Basic auth, request log and routing.
 */
function mountGateway(app: Express, mount: NonNullable<RunningEmbeddedGateway["mount"]>): void {
  app.use(mount.path, mount.handler);
  for (const [from, to] of Object.entries(mount.aliases)) {
    app.get(from, (req: Request, res: Response) => {
      req.url = to;
      mount.handler(req, res);
    });
  }
}

/** The express application over `parts`, answering as `settings` say (not listening). */
function routes(parts: RouteParts, settings: RouteSettings): Express {
  const { orchestrator, store, logger, metrics, scanning } = parts;
  const { server, isDraining } = settings;
  const limits = settings.limits ?? {};
  const validator = compileContractValidator();
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", server.trustProxy);
  app.set("etag", false);
  // The embedded gateway's endpoints on this port (under pathPrefix): outside the webhook's Basic auth, request log and routing.
  if (parts.gateway) mountGateway(app, parts.gateway);
  // Every request: its span, its log line, its metrics and the edge's checks — one router layer (see chain.ts).
  app.use(chain(traceRequests(), requestLogger(logger), metrics.observe, edgeChecks(server.bodyLimitBytes)));
  // Probes: unauthenticated, answered before the shutdown gate (/readyz reports draining itself).
  const readiness = createReadiness({
    store,
    gateways: parts.gateways,
    openCircuits: () => orchestrator.openCircuits(),
    isDraining,
    logger,
    ...(settings.readinessTtlMs !== undefined ? { gatewayCheckTtlMs: settings.readinessTtlMs } : {}),
    ...(settings.now ? { now: settings.now } : {}),
  });
  app.get("/livez", livez);
  app.get("/readyz", readyz(readiness));
  const drainingGate = (req: Request, res: Response, next: NextFunction) => {
    if (!isDraining()) return next();
    res.setHeader("Connection", "close");
    const e = new ShuttingDown("credhook is shutting down; retry on another instance or shortly", 5);
    sendError(res, req, 503, e.messages, { "Retry-After": String(e.retryAfterS) });
  };
  const endpoints = scanning ? { ...ENDPOINTS, [scanning.path]: ["POST"] } : ENDPOINTS;
  // Unknown path / wrong method are answered before auth: they reveal nothing.
  const knownEndpoint = (req: Request, res: Response, next: NextFunction) => {
    const allowed = endpoints[req.path];
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
    users: parts.users,
    realm: server.auth.realm,
    maxFailures: server.auth.maxFailures,
    failureWindowS: server.auth.failureWindowS,
    maxGlobalFailures: limits.maxGlobalFailures ?? server.auth.maxGlobalFailures,
    maxConcurrentChecks: limits.maxConcurrentPasswordChecks ?? server.auth.maxConcurrentPasswordChecks,
    rememberMs: limits.rememberLoginMs ?? server.auth.rememberLoginMs,
    maxRemembered: server.auth.maxRememberedLogins,
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
  if (scanning) {
    // GitHub's secret-scanning alerts: outside the Basic auth, authenticated by the signature over the body's bytes.
    metrics.knowRoute(scanning.path);
    app.post(scanning.path, chain(drainingGate, jsonBody(server.bodyLimitBytes, { raw: true }), scanning.handler));
  }
  // Past the probes, in this order, as one router layer: the shutdown gate, unknown paths, auth, the body.
  app.use(chain(drainingGate, knownEndpoint, auth, jsonOnly, jsonBody(server.bodyLimitBytes)));

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
  return app;
}
