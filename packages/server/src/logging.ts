/**
 * Structured logs (pino): one line per request with request id, method, route,
 * status, duration (ms), gateway(s) and user; the Authorization header and every
 * secret-bearing field redacted. Bodies are never logged.
 */
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

/**
 * Creates the process logger. `destination` defaults to stdout (fd 1). Lines
 * written inside a traced request carry its `traceId` and `spanId`.
 */
export function createLogger(level: LoggerOptions["level"] = "info", destination?: DestinationStream): PinoLogger {
  const options: LoggerOptions = {
    level,
    base: { service: "credhook" },
    mixin: traceIds,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: safeError },
  };
  return destination ? pino(options, destination) : pino(options);
}

const PROBES = new Set(["/livez", "/readyz"]);

/** Accepted incoming request ids: UUIDs, and ids such as API Gateway's (`JKJaXmPLvHcESHA=`); anything else is replaced. */
const REQUEST_ID = /^[A-Za-z0-9._:=+/-]{1,128}$/;

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

/** The per-request log middleware. Honors a sane incoming `X-Request-Id`, else a UUID; echoes it in the response. */
export function requestLogger(logger: PinoLogger): HttpLogger {
  return pinoHttp({
    logger,
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const incoming = req.headers["x-request-id"];
      const id = typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : randomUUID();
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
}
