/**
 * Structured logs (pino): one line per request with request id, method, route,
 * status, duration (ms), gateway(s) and user; the Authorization header and every
 * secret-bearing field redacted. Bodies are never logged.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RequestHandler } from "express";
import {
  destination as pinoDestination,
  pino,
  symbols,
  type DestinationStream,
  type Logger as PinoLogger,
  type LoggerOptions,
} from "pino";
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
  return {
    type: e.name,
    ...(e.code !== undefined ? { code: e.code } : {}),
    ...(e.status !== undefined ? { status: e.status } : {}),
    message: e.message,
  };
}

/** The request being handled: its id, and its own completion-line logger (whose lines carry the id already). */
interface RequestScope {
  id: string;
  own: unknown;
}

/** Which request the running code serves (set by {@link requestLogger} for the rest of the middleware chain). */
const requestScope = new AsyncLocalStorage<RequestScope>();

/**
 * The fields every log line gets: the trace and span ids inside a traced request, and
 * `requestId` for a line written while a request is handled by a logger other than the
 * request's own (the orchestrator's, a provider's, the store's), so that every line of
 * a request carries its id.
 */
function lineFields(
  _line: object,
  _level: number,
  logger: unknown,
): { requestId?: string; traceId?: string; spanId?: string } {
  const ids = traceIds();
  const scope = requestScope.getStore();
  if (!scope || logger === scope.own) return ids;
  return { requestId: scope.id, ...ids };
}

/**
 * Creates the process logger: one JSON object per line, its level as a string (`"level":"info"`).
 * `destination` defaults to stdout (fd 1), written
 * asynchronously: a line is handed to the operating system at once when no
 * write is in flight, and lines that come while one is are written together
 * with the next (one write for many under load, none of them held back when
 * idle). What is still buffered is written synchronously when the process exits
 * (pino's exit handler, also on `process.exit`; call {@link settleLogs} first); only a
 * hard kill can lose it, and a reader that stopped reading loses what it did not take.
 * Lines written inside a traced request carry its `traceId` and `spanId`; lines
 * written while a request is handled carry its `requestId`, whichever logger (or
 * child) writes them.
 */
/**
 * Set once the process exits: from then on a write to a log destination that answers EAGAIN
 * (a pipe whose reader stopped reading) is given up instead of retried — sonic-boom would
 * otherwise retry it every 100 ms for ever in pino's exit handler. Registered before any
 * destination, so before pino's own exit handler.
 */
let exiting = false;
process.once("exit", () => {
  exiting = true;
});

/**
 * Waits until the logger's destination has no write in flight, at most `maxMs` ms, so that
 * `process.exit` right after finds nothing to flush. Needed because sonic-boom's synchronous
 * flush at exit (pino's exit handler) retries a write that failed with EPIPE every 100 ms for
 * ever (sonic-boom 4.2: only EAGAIN/EBUSY are meant to be retried, any other error sleeps and
 * retries too), so a server whose stdout reader went away (a log shipper or parent that died)
 * never ended. Once the in-flight write has failed, pino turns the destination into a no-op
 * (its EPIPE handler) and the exit is immediate. A destination that is not sonic-boom's
 * returns at once.
 */
export async function settleLogs(logger: PinoLogger, maxMs = 250): Promise<void> {
  const stream = (logger as unknown as Record<symbol, unknown>)[symbols.streamSym] as
    | {
        _writing?: boolean;
        once?(event: string, fn: () => void): void;
        removeListener?(event: string, fn: () => void): void;
      }
    | undefined;
  if (!stream?._writing || typeof stream.once !== "function") return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stream.removeListener?.("drain", done);
      stream.removeListener?.("error", done);
      resolve();
    };
    const timer = setTimeout(done, maxMs);
    stream.once!("drain", done);
    stream.once!("error", done);
  });
}

export function createLogger(level: LoggerOptions["level"] = "info", destination?: DestinationStream): PinoLogger {
  const options: LoggerOptions = {
    level,
    base: { service: "credhook" },
    mixin: lineFields,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
    // "level":"info", not pino's number 30: what log pipelines and people read without a table.
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: safeError },
  };
  return pino(options, destination ?? pinoDestination({ dest: 1, sync: false, retryEAGAIN: () => !exiting }));
}

/**
 * Writes a message meant for the operator — a start-up failure (never a secret: a generated password goes to a file) — on
 * stderr: as the plain `text` when stdout is a terminal (someone is reading), else as one JSON
 * line shaped like the logger's (`level`, `time`, `service`, `msg`, and `fields`), so that a log
 * pipeline reading a container's or a service's output gets JSON on every line.
 * @param stream where to write; default stderr
 */
export function operatorMessage(
  level: "fatal" | "error" | "warn",
  msg: string,
  fields: Record<string, unknown>,
  text: string,
  stream: NodeJS.WritableStream = process.stderr,
): void {
  if (process.stdout.isTTY) stream.write(text.endsWith("\n") ? text : `${text}\n`);
  else
    stream.write(`${JSON.stringify({ level, time: new Date().toISOString(), service: "credhook", msg, ...fields })}\n`);
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

/** Adds route, status, gateways, credential id, an update's created/removed gateways, error code and user (from `res.locals`) to the completion line. */
function withOutcome(req: IncomingMessage, res: ServerResponse, val: Record<string, unknown>): Record<string, unknown> {
  const locals = (res as unknown as { locals?: Record<string, unknown> }).locals;
  val.route = (req.url ?? "").split("?")[0];
  val.status = res.statusCode;
  if (locals) {
    if (locals.gateways) val.gateways = locals.gateways;
    if (locals.credentialId) val.credentialId = locals.credentialId;
    if (locals.created) val.created = locals.created;
    if (locals.removed) val.removed = locals.removed;
    if (locals.errorCode) val.errorCode = locals.errorCode;
    if (locals.user) val.user = locals.user;
  }
  return val;
}

declare module "node:http" {
  interface IncomingMessage {
    /** The request id ({@link requestLogger}): the caller's sane `X-Request-Id`, else a UUID. */
    id?: string;
    /** The process logger ({@link requestLogger}); a line about the request carries `requestId: req.id` itself. */
    log?: PinoLogger;
  }
}

/** The level of a request's completion line: error for 5xx, warn for 4xx, debug for the probes, else info. */
function levelOf(path: string, status: number): "error" | "warn" | "info" | "debug" {
  return PROBES.has(path) ? "debug" : status >= 500 ? "error" : status >= 400 ? "warn" : "info";
}

/**
 * The per-request log middleware: one line per request when its response has
 * been sent ("request completed"; "request aborted" at warn when the client went
 * away first) with `requestId`, `req: { method, path }`, `res: { status }`,
 * `durationMs`, `route`, `status`, and from `res.locals` the gateways,
 * credential id, an update's `created`/`removed` gateways, error code and user. Honors a sane incoming `X-Request-Id`,
 * else a UUID; echoes it in the response and sets `req.id`, and `req.log` (the
 * process logger: no child logger per request). The line is built from these fields only — never a header
 * or a body — so it skips the logger's redaction, which costs more than the rest
 * of the line; every other line (`req.log`, the orchestrator's) is redacted as before.
 * The rest of the middleware chain runs in the request's scope (AsyncLocalStorage):
 * every line written while the request is handled, by any logger, carries its
 * `requestId`. A level the logger does not write costs nothing but the check.
 */
export function requestLogger(logger: PinoLogger): RequestHandler {
  const lines = logger.child({}, { redact: { paths: [] } });
  return (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const start = performance.now();
    const id = requestIdFor(req.headers["x-request-id"]);
    res.setHeader("X-Request-Id", id);
    req.id = id;
    req.log = logger;
    const done = (aborted: boolean) => {
      const path = (req.url ?? "").split("?")[0]!;
      const level = aborted ? "warn" : levelOf(path, res.statusCode);
      if (!lines.isLevelEnabled(level)) return;
      const val = {
        requestId: id,
        req: { method: req.method, path },
        res: { status: res.statusCode },
        durationMs: Math.round(performance.now() - start),
      };
      lines[level](withOutcome(req, res, val), aborted ? "request aborted" : "request completed");
    };
    // One line: at 'finish' (the answer was handed to the connection), or at 'close' when that comes
    // first — aborted only if credhook had not finished its answer (a Lambda adapter's response, or a
    // connection credhook closes itself, may close before it reports 'finish').
    let logged = false;
    const once = (aborted: boolean) => {
      if (logged) return;
      logged = true;
      done(aborted);
    };
    res.once("finish", () => once(false));
    res.once("close", () => once(!res.writableEnded));
    // The rest of the chain runs in the request's scope: every line it writes, by any logger, carries the id.
    requestScope.run({ id, own: lines }, next);
  };
}
