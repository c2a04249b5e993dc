/**
 * The webhook's routes over the parts `createApp` built (http-app.ts): the embedded gateway's endpoints (under
 * `embeddedGateway.pathPrefix`) and the secret-scanning alert endpoint (`secretScanning.github`, authenticated by
 * GitHub's signature) mounted outside Basic auth; every request's span, log line, metrics and edge checks; the
 * probes; then the shutdown gate, unknown paths and methods, Basic auth and the JSON body before the four contract
 * endpoints and `/metrics`; ErrorResponse for every failure.
 */
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from "express";
import { compileContractValidator, type OperationOutcome, type Orchestrator, type ServerConfig } from "@credhook/core";
import { ShuttingDown } from "@credhook/core/errors";
import type { RunningEmbeddedGateway } from "@credhook/gateway";
import type { AuthLimits } from "./auth.js";
import { jsonBody } from "./body.js";
import { edgeChecks } from "./edge.js";
import { errorHandler, sendError, sendJson } from "./http-errors.js";
import type { Metrics } from "./metrics.js";
import { livez } from "./probes.js";
import type { SecretScanningEndpoint } from "./secret-scanning.js";
import { traceRequests } from "./tracing.js";

/**
 * Limits of the HTTP edge and of authentication (see docs/configuration.md, "The HTTP edge"), for
 * embedding: each one given here overrides the config file's (`server.*`, `server.auth.*`),
 * whose values (and defaults) are used otherwise. Not validated: the config schema is.
 */
export interface ServerLimits extends AuthLimits {
  /** Time to receive a request's headers, ms; then 408. @default server.headersTimeoutMs (10000) */
  headersTimeoutMs?: number;
  /** Time to receive a whole request (headers and body), ms; then 408. @default server.requestTimeoutMs (10000) */
  requestTimeoutMs?: number;
  /** Largest request line + headers, bytes; beyond → 431. @default server.maxHeaderBytes (16384) */
  maxHeaderBytes?: number;
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

/**
 * What {@link routes} routes requests to: the parts {@link prepareApp} built, each from its own module — the
 * orchestrator (runtime.ts), the request log line (logging.ts), Basic auth (auth.ts), `/readyz` (probes.ts), the
 * secret-scanning alert endpoint and the embedded gateway's handler.
 */
export interface RouteParts {
  orchestrator: Orchestrator;
  metrics: Metrics;
  /** Each request's log line and request id (`requestLogger`, logging.ts). */
  requestLog: RequestHandler;
  /** The portal's Basic auth (`portalAuth`, auth.ts). */
  auth: RequestHandler;
  /** `GET /readyz` over the readiness check (`readyz`, probes.ts). */
  readyz: RequestHandler;
  /** The alert endpoint, when `secretScanning.github` is configured. */
  scanning?: SecretScanningEndpoint;
  /** The embedded gateway's handler on this port, when it serves under `pathPrefix`. */
  gateway?: RunningEmbeddedGateway["mount"];
}

/** How {@link routes} answers: the `server:` block, the shutdown gate. */
export interface RouteSettings {
  /** The config's `server:` block (body limit, trust proxy). */
  server: ServerConfig;
  /** True once shutdown began: requests are answered 503. */
  isDraining: () => boolean;
}

/**
 * Several express middlewares run as one router layer: each handler of a webhook request passes through express's
 * router once per mounted layer (a path match, a `next` closure, parameter processing), which costs more than most of
 * credhook's own middlewares do (measured with `pnpm bench`: docs/benchmark.md). A handler calls `next()` to pass on,
 * `next(err)` to skip to the error handlers (as do a thrown error and a rejected promise, express 5's rule), or answers
 * and calls nothing; after the last handler the outer `next()` runs. `next("route")` and `next("router")` are passed on
 * as they are.
 */
export function chain(...handlers: RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null) return next(err);
      const handler = handlers[i++];
      if (!handler) return next();
      try {
        const ret = handler(req, res, step) as unknown;
        if (ret instanceof Promise)
          ret.catch((e: unknown) => next(e ?? new Error("a middleware's promise was rejected without a reason")));
      } catch (e) {
        next(e);
      }
    };
    step();
  };
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
  // Every request: its span, its log line, its metrics and the edge's checks — one router layer (see chain).
  app.use(chain(traceRequests(), parts.requestLog, metrics.observe, edgeChecks(server.bodyLimitBytes)));
  // Probes: unauthenticated, answered before the shutdown gate (/readyz reports draining itself).
  app.get("/livez", livez);
  app.get("/readyz", parts.readyz);
  const gate = gates(parts.scanning, settings.isDraining);
  if (scanning) {
    // GitHub's secret-scanning alerts: outside the Basic auth, authenticated by the signature over the body's bytes.
    metrics.knowRoute(scanning.path);
    app.post(scanning.path, chain(gate.draining, jsonBody(server.bodyLimitBytes, { raw: true }), scanning.handler));
  }
  // Past the probes, in this order, as one router layer: the shutdown gate, unknown paths, auth, the body.
  app.use(chain(gate.draining, gate.knownEndpoint, parts.auth, gate.jsonOnly, jsonBody(server.bodyLimitBytes)));
  mountContract(app, parts);
  app.use(errorHandler);
  return app;
}

/**
 * The layers a request passes before Basic auth and its endpoint: the shutdown gate (503 while draining), unknown
 * paths and methods (404, 405: answered before auth, they reveal nothing), and JSON bodies only (415).
 */
function gates(
  scanning: SecretScanningEndpoint | undefined,
  isDraining: () => boolean,
): Record<"draining" | "knownEndpoint" | "jsonOnly", RequestHandler> {
  const draining = (req: Request, res: Response, next: NextFunction) => {
    if (!isDraining()) return next();
    res.setHeader("Connection", "close");
    const e = new ShuttingDown("credhook is shutting down; retry on another instance or shortly", 5);
    sendError(res, req, 503, e.messages, { "Retry-After": String(e.retryAfterS) });
  };
  const endpoints = scanning ? { ...ENDPOINTS, [scanning.path]: ["POST"] } : ENDPOINTS;
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
  return { draining, knownEndpoint, jsonOnly };
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
