/**
 * The express 5 application: the four contract endpoints behind Basic auth, contract
 * validation, the probes and `/metrics`, and ErrorResponse for every failure; the extensions'
 * endpoints (the embedded gateway under `pathPrefix`) mounted outside its auth, and so is the
 * secret-scanning alert endpoint (`secretScanning.github`), authenticated by GitHub's signature.
 */
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { Logger as PinoLogger } from "pino";
import {
  compileContractValidator,
  type CredhookConfig,
  type Logger,
  type OperationOutcome,
  type Orchestrator,
  type RunningExtension,
} from "@credhook/core";
import { ConfigError, ShuttingDown } from "@credhook/core/errors";
import type { CredentialStore } from "@credhook/core/store";
import { basicAuth } from "./auth.js";
import { jsonBody } from "./body.js";
import { chain } from "./chain.js";
import { edgeChecks } from "./edge.js";
import { closeExtensions, mountExtensions, startExtensions } from "./extensions.js";
import { errorHandler, sendError, sendJson } from "./http-errors.js";
import { createLogger, requestLogger } from "./logging.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { type GeneratedPassword, type PortalUsers, resolveUsers } from "./passwords.js";
import { createReadiness, livez, readyz } from "./probes.js";
import { createRuntime } from "./runtime.js";
import { githubAlertHandler, githubKeysOf } from "./secret-scanning.js";
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
  /**
   * What provider packages contribute besides credentials, started, by config key: the embedded
   * gateway under `embeddedGateway` when that block is configured (not yet listening on its own port).
   */
  extensions: ReadonlyMap<string, RunningExtension>;
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
 * Builds the application: opens the store, loads every gateway's provider,
 * resolves the portal users (generating a password where needed, its files written), and mounts
 * the routes.
 * @throws ConfigError when a provider fails to load or validate, or the store cannot be opened
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
  const runtime = await createRuntime(config, {
    logger,
    onGatewayCall: metrics.observeGatewayCall,
    ...(options.store ? { store: options.store } : {}),
    ...(options.waitForStore ? { waitForStore: true } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  const { store, orchestrator } = runtime;
  metrics.watchStore(store);
  let portalUsers: PortalUsers;
  try {
    portalUsers = await resolveUsers(config.server.auth.users, config.dataDir);
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const scanning = config.secretScanning?.github;
  let scanningKeys: ReturnType<typeof githubKeysOf>;
  try {
    if (scanning) {
      if (ENDPOINTS[scanning.path])
        throw new ConfigError([`secretScanning.github.path ${scanning.path} is one of credhook's own endpoints`]);
      scanningKeys = githubKeysOf(config);
    }
  } catch (err) {
    await runtime.close();
    throw err;
  }
  let extensions: Map<string, RunningExtension>;
  try {
    extensions = await startExtensions(config, runtime, logger, metrics.observeGateway);
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const shadowing = scanning
    ? [...extensions.values()].find(
        ({ mount }) => mount && (scanning.path === mount.path || scanning.path.startsWith(`${mount.path}/`)),
      )?.mount
    : undefined;
  if (scanning && shadowing) {
    await closeExtensions(extensions, config.server.shutdownTimeoutMs);
    await runtime.close();
    throw new ConfigError([
      `secretScanning.github.path ${scanning.path} is under ${shadowing.path}, where an extension (the embedded gateway) answers`,
    ]);
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
    extensions,
    draining: false,
    async close() {
      await closeExtensions(extensions, config.server.shutdownTimeoutMs);
      await runtime.close();
    },
    metrics,
  };
  const limits = options.limits ?? {};

  // The extensions' endpoints on this port (the embedded gateway's under pathPrefix): outside the webhook's Basic auth, request log and routing.
  mountExtensions(app, extensions);
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
    ...(options.now ? { now: options.now } : {}),
  });
  app.get("/livez", livez);
  app.get("/readyz", readyz(readiness));
  const drainingGate = (req: Request, res: Response, next: NextFunction) => {
    if (!built.draining) return next();
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
    users: portalUsers.users,
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
  if (scanning && scanningKeys) {
    // GitHub's secret-scanning alerts: outside the Basic auth, authenticated by the signature over the body's bytes.
    metrics.knowRoute(scanning.path);
    app.post(
      scanning.path,
      chain(
        drainingGate,
        jsonBody(config.server.bodyLimitBytes, { raw: true }),
        githubAlertHandler({
          config: scanning,
          keys: scanningKeys,
          orchestrator,
          store,
          logger,
          observe: metrics.observeSecretScanning,
        }),
      ),
    );
  }
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
  return { app: built, settleUsers: () => portalUsers.settle(logger as unknown as Logger, options.announcePassword) };
}
