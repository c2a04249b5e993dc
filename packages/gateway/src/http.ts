/**
 * HTTP helpers of the embedded gateway (plain node:http: the key check is on
 * the request path of every API call behind the proxy, so no framework sits in
 * front of it). Every 4xx/5xx body is credhook's ErrorResponse; OAuth errors
 * carry RFC 6749 §5.2's `error` code and `error_description` in the same body.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorResponse } from "@credhook/core";

/** Sends `body` as JSON with `status` and `headers`. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * JSON text in printable ASCII only (every other character as a `\uXXXX`
 * escape, which JSON allows anywhere in a string), so that it is also a valid
 * HTTP header value.
 */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Sends an ErrorResponse `{ timestamp, status, error, messages, path }`. */
export function sendProblem(
  res: ServerResponse,
  status: number,
  path: string,
  messages: string[],
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, errorResponse(status, messages, path), headers);
}

/**
 * Sends an OAuth 2.0 error (RFC 6749 §5.2): `error` is the OAuth error code
 * (`invalid_client`, …) and `error_description` says what was wrong; the body
 * also has ErrorResponse's `timestamp`, `status`, `messages` and `path`.
 * `Cache-Control: no-store` as §5.1 asks of token responses.
 */
export function sendOAuthError(
  res: ServerResponse,
  status: number,
  path: string,
  error: string,
  description: string,
  headers: Record<string, string> = {},
): void {
  const base = errorResponse(status, [description], path);
  sendJson(
    res,
    status,
    { ...base, error, error_description: description },
    { "cache-control": "no-store", pragma: "no-cache", ...headers },
  );
}

/** A request body that could not be read as a form, and what to answer. */
export class FormError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads an `application/x-www-form-urlencoded` body (RFC 6749 §3.2: the token
 * endpoint's encoding; RFC 7662 §2.1 the same).
 * @param limitBytes largest accepted body, bytes
 * @returns the parameters; a parameter sent more than once is a FormError (RFC 6749 §3.2)
 * @throws FormError 413 for a larger body, 400 for another content type or a repeated parameter
 */
export async function readForm(req: IncomingMessage, limitBytes: number): Promise<Map<string, string>> {
  const type = String(req.headers["content-type"] ?? "")
    .split(";")[0]!
    .trim()
    .toLowerCase();
  if (type !== "application/x-www-form-urlencoded") {
    throw new FormError(
      400,
      `the body must be application/x-www-form-urlencoded (got ${type ? `'${type.slice(0, 60)}'` : "no Content-Type"})`,
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw new FormError(413, `the body is larger than the limit of ${limitBytes} bytes`);
    chunks.push(chunk);
  }
  const out = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(Buffer.concat(chunks).toString("utf8"))) {
    if (out.has(k)) throw new FormError(400, `parameter '${k}' is sent more than once`);
    // RFC 6749 §3.1/§3.2: a parameter sent without a value is treated as omitted.
    if (v !== "") out.set(k, v);
  }
  return out;
}

const PRINTABLE = /^[\x20-\x7e]*$/;

/** A value safe in an HTTP header: as is when printable ASCII, else percent-encoded UTF-8 (RFC 3986). */
export function headerValue(value: string): string {
  return PRINTABLE.test(value) ? value : encodeURIComponent(value);
}

/** Splits a request target into its path and its query string (without `?`). */
export function splitTarget(target: string): { path: string; query: string } {
  const q = target.indexOf("?");
  return q < 0 ? { path: target, query: "" } : { path: target.slice(0, q), query: target.slice(q + 1) };
}
