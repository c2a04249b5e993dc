/**
 * The webhook's routes over the parts `createApp` built (http-app.ts): the embedded gateway's endpoints (under
 * `embeddedGateway.pathPrefix`) and the secret-scanning alert endpoint (`secretScanning.github`, authenticated by
 * GitHub's signature) mounted outside Basic auth; every request's span, log line, metrics and edge checks; the
 * probes; then the shutdown gate, unknown paths and methods, Basic auth and the JSON body before the four contract
 * endpoints and `/metrics`; ErrorResponse for every failure.
 */
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import type { Logger as PinoLogger } from "pino";
import {
  compileContractValidator,
  type Gateway,
  type OperationOutcome,
  type Orchestrator,
  type ServerConfig,
} from "@credhook/core";
import { ShuttingDown } from "@credhook/core/errors";
import type { CredentialStore } from "@credhook/core/store";
import type { RunningEmbeddedGateway } from "@credhook/gateway";
import { basicAuth } from "./auth.js";
import { jsonBody } from "./body.js";
import { chain } from "./chain.js";
import { edgeChecks } from "./edge.js";
import { errorHandler, sendError, sendJson } from "./http-errors.js";
import { requestLogger } from "./logging.js";
import type { Metrics } from "./metrics.js";
import type { PortalUsers } from "./passwords.js";
import { createReadiness, livez, readyz } from "./probes.js";
import type { SecretScanningEndpoint } from "./secret-scanning.js";
import { traceRequests } from "./tracing.js";

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

/** credhook's own endpoints on the webhook's port and the methods each answers. */
export const ENDPOINTS: Record<string, string[]> = {
  "/v1/createCredentials": ["POST"],
  "/v1/updateCredentials": ["POST"],
  "/v1/revokeCredentials": ["POST"],
  "/v1/health": ["GET", "HEAD"],
  "/metrics": ["GET"],
  "/livez": ["GET", "HEAD"],
  "/readyz": ["GET", "HEAD"],
};

/** What {@link routes} routes requests to: the parts {@link prepareApp} built. */
export interface RouteParts {
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
export interface RouteSettings {
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
export function routes(parts: RouteParts, settings: RouteSettings): Express {
  const { metrics, scanning } = parts;
  const { server } = settings;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", server.trustProxy);
  app.set("etag", false);
  // The embedded gateway's endpoints on this port (under pathPrefix): outside the webhook's Basic auth, request log and routing.
  if (parts.gateway) mountGateway(app, parts.gateway);
  // Every request: its span, its log line, its metrics and the edge's checks — one router layer (see chain.ts).
  app.use(chain(traceRequests(), requestLogger(parts.logger), metrics.observe, edgeChecks(server.bodyLimitBytes)));
  // Probes: unauthenticated, answered before the shutdown gate (/readyz reports draining itself).
  mountProbes(app, parts, settings);
  const gate = gates(parts, settings);
  if (scanning) {
    // GitHub's secret-scanning alerts: outside the Basic auth, authenticated by the signature over the body's bytes.
    metrics.knowRoute(scanning.path);
    app.post(scanning.path, chain(gate.draining, jsonBody(server.bodyLimitBytes, { raw: true }), scanning.handler));
  }
  // Past the probes, in this order, as one router layer: the shutdown gate, unknown paths, auth, the body.
  app.use(chain(gate.draining, gate.knownEndpoint, gate.auth, gate.jsonOnly, jsonBody(server.bodyLimitBytes)));
  mountContract(app, parts);
  app.use(errorHandler);
  return app;
}

/** `/livez` and `/readyz` (the store, the gateways' cached checks, open circuits, draining). */
function mountProbes(app: Express, parts: RouteParts, settings: RouteSettings): void {
  const readiness = createReadiness({
    store: parts.store,
    gateways: parts.gateways,
    openCircuits: () => parts.orchestrator.openCircuits(),
    isDraining: settings.isDraining,
    logger: parts.logger,
    ...(settings.readinessTtlMs !== undefined ? { gatewayCheckTtlMs: settings.readinessTtlMs } : {}),
    ...(settings.now ? { now: settings.now } : {}),
  });
  app.get("/livez", livez);
  app.get("/readyz", readyz(readiness));
}

/**
 * The layers a request passes before its endpoint: the shutdown gate (503 while draining), unknown paths and methods
 * (404, 405: answered before auth, they reveal nothing), Basic auth, and JSON bodies only (415).
 */
function gates(
  parts: RouteParts,
  settings: RouteSettings,
): Record<"draining" | "knownEndpoint" | "auth" | "jsonOnly", RequestHandler> {
  const { server, isDraining } = settings;
  const limits = settings.limits ?? {};
  const draining = (req: Request, res: Response, next: NextFunction) => {
    if (!isDraining()) return next();
    res.setHeader("Connection", "close");
    const e = new ShuttingDown("credhook is shutting down; retry on another instance or shortly", 5);
    sendError(res, req, 503, e.messages, { "Retry-After": String(e.retryAfterS) });
  };
  const endpoints = parts.scanning ? { ...ENDPOINTS, [parts.scanning.path]: ["POST"] } : ENDPOINTS;
  const knownEndpoint = (req: Request, res: Response, next: NextFunction) => {
    const allowed = endpoints[req.path];
    if (!allowed)
      return sendError(res, req, 404, [
        `no endpoint at ${req.path}; the endpoints are ${Object.keys(ENDPOINTS)
          .filter((p) => p.startsWith("/v1/"))
          .join(", ")}`,
      ]);
    if (!allowed.includes(req.method)) {
      const use = allowed.filter((m) => m !== "HEAD").join(", ");
      return sendError(res, req, 405, [`${req.method} is not allowed on ${req.path}; use ${use}`], {
        Allow: allowed.join(", "),
      });
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
  return { draining, knownEndpoint, auth, jsonOnly };
}

/** The contract's four endpoints (bodies validated against the OpenAPI document) and `/metrics`. */
function mountContract(app: Express, parts: RouteParts): void {
  const { orchestrator, metrics } = parts;
  const validator = compileContractValidator();
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
}
