/**
 * Every 4xx/5xx answer as the contract's ErrorResponse:
 * `{ timestamp, status, error, messages, path }` — never HTML, never a stack
 * trace, never a secret.
 */
import { STATUS_CODES } from "node:http";
import type { NextFunction, Request, Response } from "express";
import { CredhookError, isCredhookError, retryAfterOf, type ErrorResponse } from "@credhook/core";

/** Builds an ErrorResponse body. `path` is the request path without the query string. */
export function errorBody(status: number, messages: string[], path: string): ErrorResponse {
  return { timestamp: new Date().toISOString(), status, error: STATUS_CODES[status] ?? "Error", messages, path };
}

/** Sends an ErrorResponse with `status`, plus `headers`. */
export function sendError(res: Response, req: Request, status: number, messages: string[], headers: Record<string, string> = {}): void {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.status(status).json(errorBody(status, messages, req.originalUrl.split("?")[0] ?? req.path));
}

/** body-parser's error types and what credhook answers for each. */
function parserError(err: { type?: string; limit?: number; status?: number }): CredhookError | undefined {
  switch (err.type) {
    case "entity.parse.failed":
      // JSON.parse's message quotes the body; the body may hold a secret, so it is not echoed.
      return new CredhookError(400, "VALIDATION_FAILED", "body is not valid JSON");
    case "entity.too.large":
      return new CredhookError(413, "VALIDATION_FAILED", `body is larger than the limit of ${err.limit} bytes`);
    case "encoding.unsupported":
    case "charset.unsupported":
      return new CredhookError(415, "VALIDATION_FAILED", "body must be JSON encoded as UTF-8 (Content-Type: application/json)");
    case "request.aborted":
    case "request.size.invalid":
    case "stream.encoding.set":
      return new CredhookError(400, "VALIDATION_FAILED", "the request body was incomplete");
    default:
      return undefined;
  }
}

/** Express error handler: maps typed errors to their status, everything else to 500. Logs without stack or secret. */
export function errorHandler(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  const typed = isCredhookError(err) ? err : parserError(err as { type?: string });
  if (res.headersSent) {
    res.end();
    return;
  }
  if (!typed) {
    const e = err as Error;
    req.log?.error({ err: { type: e?.name, message: e?.message } }, "unexpected error");
    sendError(res, req, 500, [`internal error; see the server log for request ${String(req.id)}`]);
    return;
  }
  res.locals.errorCode = typed.code;
  if (typed.gateway) res.locals.gateways ??= [typed.gateway];
  const headers: Record<string, string> = {};
  const retry = retryAfterOf(typed);
  if (retry !== undefined && (typed.status === 429 || typed.status === 503)) headers["Retry-After"] = String(retry);
  if (typed.status >= 500) {
    const cause = typed.cause as { name?: string; message?: string } | undefined;
    req.log?.warn({ err: { code: typed.code, message: typed.message, gateway: typed.gateway, cause: cause?.name } }, "request failed");
  }
  sendError(res, req, typed.status, typed.messages, headers);
}
