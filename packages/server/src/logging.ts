/**
 * Structured logs (pino): one line per request with request id, method, route,
 * status, duration (ms), gateway(s) and user; the Authorization header and every
 * secret-bearing field redacted. Bodies are never logged.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { pino, type DestinationStream, type Logger as PinoLogger, type LoggerOptions } from "pino";
import { pinoHttp, type HttpLogger } from "pino-http";
import { traceIds } from "./tracing.js";

/** Paths redacted from every log line, wherever a secret could appear. */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  "headers.authorization",
  "*.password",
  "*.passwordHash",
  "*.apiKey",
  "*.clientSecret",
  "*.secret",
  "*.apiKeyValue",
];

/** Serialises an error for a log line: type, code and message — never a stack trace. */
export function safeError(err: unknown): Record<string, unknown> {
  if (err === null || typeof err !== "object") return { message: String(err) };
  const e = err as { name?: string; code?: unknown; message?: string; status?: number };
  return { type: e.name, ...(e.code !== undefined ? { code: e.code } : {}), ...(e.status !== undefined ? { status: e.status } : {}), message: e.message };
}

/** The request being handled: its id, and the two loggers pino-http made for it (they carry the id already). */
interface RequestScope {
  id: string;
  reqLog: unknown;
  resLog: unknown;
}

/** Which request the running code serves (set by {@link requestLogger} for the rest of the middleware chain). */
const requestScope = new AsyncLocalStorage<RequestScope>();

/**
 * The fields every log line gets: the trace and span ids inside a traced request, and
 * `requestId` for a line written while a request is handled by a logger other than the
 * request's own (the orchestrator's, a provider's, the store's), so that every line of
 * a request carries its id.
 */
function lineFields(_line: object, _level: number, logger: unknown): { requestId?: string; traceId?: string; spanId?: string } {
  const ids = traceIds();
  const scope = requestScope.getStore();
  if (!scope || logger === scope.reqLog || logger === scope.resLog) return ids;
  return { requestId: scope.id, ...ids };
}

/**
 * Creates the process logger. `destination` defaults to stdout (fd 1). Lines
 * written inside a traced request carry its `traceId` and `spanId`; lines
 * written while a request is handled carry its `requestId`, whichever logger
 * (or child) writes them.
 */
export function createLogger(level: LoggerOptions["level"] = "info", destination?: DestinationStream): PinoLogger {
  const options: LoggerOptions = {
    level,
    base: { service: "credhook" },
    mixin: lineFields,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: safeError },
  };
  return destination ? pino(options, destination) : pino(options);
}

const PROBES = new Set(["/livez", "/readyz"]);

/**
 * Accepted incoming request ids: 1 to 128 characters of `A-Z a-z 0-9 . _ : = + / -`
 * (UUIDs, and ids such as API Gateway's `JKJaXmPLvHcESHA=`); anything else
 * (longer, empty, spaces, quotes, control characters) is replaced by a new UUID.
 */
export const REQUEST_ID = /^[A-Za-z0-9._:=+/-]{1,128}$/;

/** The request id to use for an incoming `X-Request-Id` value: the value when it is {@link REQUEST_ID sane}, else a new UUID. */
export function requestIdFor(incoming: string | string[] | undefined): string {
  return typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Adds route, status, gateways, credential id, error code and user (from `res.locals`) to the completion line. */
function withOutcome(req: IncomingMessage, res: ServerResponse, val: Record<string, unknown>): Record<string, unknown> {
  const locals = (res as unknown as { locals?: Record<string, unknown> }).locals ?? {};
  return {
    ...val,
    route: req.url?.split("?")[0],
    status: res.statusCode,
    ...(locals.gateways ? { gateways: locals.gateways } : {}),
    ...(locals.credentialId ? { credentialId: locals.credentialId } : {}),
    ...(locals.errorCode ? { errorCode: locals.errorCode } : {}),
    ...(locals.user ? { user: locals.user } : {}),
  };
}

/**
 * The per-request log middleware. The request id is a sane incoming `X-Request-Id`
 * ({@link requestIdFor}), else a new UUID; it is sent back in `X-Request-Id` on every
 * answer, is `requestId` on the request's completion line and on every line written
 * while the request is handled (by any logger), and is named in a 500's message.
 */
export function requestLogger(logger: PinoLogger): HttpLogger {
  const http = pinoHttp({
    logger,
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const id = requestIdFor(req.headers["x-request-id"]);
      res.setHeader("X-Request-Id", id);
      return id;
    },
    quietReqLogger: true,
    // Probes (every few seconds, from a load balancer) only at debug level: /readyz logs its changes of state itself.
    customLogLevel: (req, res, err) =>
      err ? "error" : PROBES.has(req.url?.split("?")[0] ?? "") ? "debug" : res.statusCode >= 500 ? "error" : res.statusCode >= 400 ? "warn" : "info",
    customSuccessMessage: () => "request completed",
    customErrorMessage: () => "request failed",
    customAttributeKeys: { responseTime: "durationMs", reqId: "requestId" },
    serializers: {
      req: (req: { method?: string; url?: string }) => ({ method: req.method, path: req.url?.split("?")[0] }),
      res: (res: { statusCode?: number }) => ({ status: res.statusCode }),
      err: safeError,
    },
    customSuccessObject: (req, res, val: Record<string, unknown>) => withOutcome(req, res, val),
    customErrorObject: (req, res, _err, val: Record<string, unknown>) => withOutcome(req, res, val),
  });
  const middleware = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) =>
    http(req, res, () => requestScope.run({ id: String(req.id), reqLog: req.log, resLog: res.log }, () => next?.()));
  return Object.assign(middleware, { logger: http.logger }) as HttpLogger;
}
