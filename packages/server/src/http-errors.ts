/**
 * Every 4xx/5xx answer as the contract's ErrorResponse:
 * `{ timestamp, status, error, messages, path }` — never HTML, never a stack
 * trace, never a secret.
 */
import type { IncomingMessage } from "node:http";
import type { NextFunction, Request, Response } from "express";
import { CredhookError, ErrorCodes, isCredhookError, retryAfterOf } from "@credhook/core/errors";
import { errorResponse, type ErrorResponse } from "@credhook/core";

/** Builds an ErrorResponse body. `path` is the request path without the query string. */
export function errorBody(status: number, messages: string[], path: string): ErrorResponse {
  return errorResponse(status, messages, path);
}

/**
 * True while the request has a body that has not fully arrived: an answer to it
 * must close the connection, or Node would read the rest of the body (of any
 * size) to reuse the connection.
 */
export function bodyPending(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return (req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0")) && !req.complete;
}

/** Sends an ErrorResponse with `status`, plus `headers`; closes the connection after it when the request's body is still pending ({@link bodyPending}). */
export function sendError(
  res: Response,
  req: Request,
  status: number,
  messages: string[],
  headers: Record<string, string> = {},
): void {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (bodyPending(req)) res.setHeader("Connection", "close");
  sendJson(res, status, errorBody(status, messages, req.originalUrl.split("?")[0] ?? req.path));
}

/**
 * Answers `status` with `body` as JSON (`application/json; charset=utf-8`, with its
 * Content-Length; Node drops the body of a HEAD answer): what express's `res.json`
 * sends, without re-parsing the Content-Type header it has just set to add the charset.
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(text));
  res.end(text);
}

/**
 * A request the HTTP layer refuses (malformed HTTP, a body over the limit or
 * undecodable, a request timeout): answered with `status` and the connection
 * closed. `reason` is the stable code logged and counted (`credhook_errors_total`).
 */
export class EdgeError extends CredhookError {
  /**
   * @param status 400, 408, 413, 415, 417 or 431
   * @param reason stable UPPER_SNAKE code, e.g. `REQUEST_TIMEOUT`, `BODY_TOO_LARGE`, `MALFORMED_HTTP`
   * @param message what was wrong and where, safe to return (never quotes the body)
   */
  constructor(
    status: number,
    readonly reason: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(status, ErrorCodes.VALIDATION_FAILED, message, options);
  }
}

/** Codes whose failures the store or the circuit breaker log once per state change: no warning per request. */
const QUIET_CODES = new Set<string>([ErrorCodes.STORE_UNAVAILABLE, ErrorCodes.LOCK_LOST, ErrorCodes.CIRCUIT_OPEN]);

/** Express error handler: maps typed errors to their status, everything else to 500. Logs without stack or secret. */
export function errorHandler(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  const typed = isCredhookError(err) ? err : undefined;
  if (res.headersSent) {
    res.end();
    return;
  }
  if (!typed) {
    const e = err as Error;
    req.log?.error({ requestId: req.id, err: { type: e?.name, message: e?.message } }, "unexpected error");
    sendError(res, req, 500, [`internal error; see the server log for request ${String(req.id)}`]);
    return;
  }
  res.locals.errorCode = typed instanceof EdgeError ? typed.reason : typed.code;
  if (typed.gateway) res.locals.gateways ??= [typed.gateway];
  const headers: Record<string, string> = {};
  const retry = retryAfterOf(typed);
  if (retry !== undefined && (typed.status === 429 || typed.status === 503)) headers["Retry-After"] = String(retry);
  if (typed instanceof EdgeError) headers.Connection = "close";
  // A store outage (a lost lock session included) or an open circuit breaker is logged once per state change by the
  // store or the breaker, not per request (the request line remains).
  if (typed.status >= 500 && !QUIET_CODES.has(typed.code)) {
    const cause = typed.cause as { name?: string; message?: string } | undefined;
    req.log?.warn(
      {
        requestId: req.id,
        err: { code: typed.code, message: typed.message, gateway: typed.gateway, cause: cause?.name },
      },
      "request failed",
    );
  }
  sendError(res, req, typed.status, typed.messages, headers);
}
