/**
 * The JSON request body, read with raw-body and never past the limit: a body
 * that grows over `limitBytes` (chunked, or compressed) is refused with 413 the
 * moment it does, and the connection is closed instead of reading the rest.
 * (express.json reads the whole remaining request before reporting an error,
 * so a 100 GB chunked body was read to its end.) `Content-Encoding` gzip,
 * deflate and br are decompressed up to the same limit.
 */
import { AsyncResource } from "node:async_hooks";
import { promisify } from "node:util";
import { brotliDecompress, gunzip, inflate } from "node:zlib";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import getRawBody from "raw-body";
import { CredhookError, ErrorCodes } from "@credhook/core/errors";
import { continueIfAwaited, refusalOf } from "./edge.js";
import { EdgeError } from "./http-errors.js";

type Decoder = (buf: Buffer, options: { maxOutputLength: number }) => Promise<Buffer>;

/** Supported `Content-Encoding`s (RFC 9110, section 8.4.1) and their decoders. */
const DECODERS: Record<string, Decoder> = {
  gzip: promisify(gunzip) as Decoder,
  "x-gzip": promisify(gunzip) as Decoder,
  deflate: promisify(inflate) as Decoder,
  br: promisify(brotliDecompress) as Decoder,
};

const printable = (v: string, max: number) => v.replace(/[^\x20-\x7e]/g, "").slice(0, max);

/** The body's bytes as read (decompressed), kept on the request by a {@link jsonBody} with `raw`. */
const kRawBody = Symbol("credhook.rawBody");

/**
 * The bytes of the request's body as {@link jsonBody} read them (after `Content-Encoding`, before any parsing):
 * what a signature over the body is checked against. Only where the `jsonBody` that read it was made with `raw`;
 * undefined otherwise and for a request without a body.
 */
export function rawBodyOf(req: Request): Buffer | undefined {
  return (req as Request & { [kRawBody]?: Buffer })[kRawBody];
}

/**
 * A JSON body's value: `buf` as UTF-8 JSON text, a leading byte order mark ignored (as RFC 8259 §8.1 allows,
 * https://www.rfc-editor.org/rfc/rfc8259#section-8.1: some portal stacks write one); an empty body is `{}`.
 * @throws CredhookError (400) `body is not valid JSON` — never JSON.parse's message, which quotes the body (it may
 * hold a secret)
 */
export function parseJsonBody(buf: Buffer): unknown {
  const text = buf.toString("utf8").replace(/^\uFEFF/, "");
  try {
    return text.length === 0 ? {} : (JSON.parse(text) as unknown);
  } catch {
    throw new CredhookError(400, ErrorCodes.VALIDATION_FAILED, "body is not valid JSON");
  }
}

/** A raw-body failure as the answer to send. */
function readError(req: Request, err: { type?: string }, limitBytes: number): CredhookError {
  const refusal = refusalOf(req);
  if (refusal) return refusal;
  if (err instanceof CredhookError) return err;
  switch (err.type) {
    case "entity.too.large":
      return new EdgeError(413, "BODY_TOO_LARGE", `body is larger than the limit of ${limitBytes} bytes`);
    case "request.size.invalid":
      return new EdgeError(400, "BODY_INCOMPLETE", "the body's length does not match its Content-Length");
    default:
      return new EdgeError(400, "BODY_INCOMPLETE", "the request body was incomplete", { cause: err });
  }
}

/**
 * Middleware: parses a POST's `application/json` body (UTF-8, a leading byte order mark
 * ignored; gzip, deflate or br allowed) of at most `limitBytes` — on the wire and once decompressed — into
 * `req.body`. An empty body is `{}`; a request without a body leaves it undefined.
 * The body of another method (which has no meaning here) is read up to the same
 * limit and ignored.
 * Errors passed to `next`: 413 over the limit, 415 another charset or encoding,
 * 400 not JSON, undecodable or cut short; 408/400 when the edge refused the
 * request while it was being received.
 * @param options `raw`: keep the body's bytes for {@link rawBodyOf} and leave `req.body` unset — the handler parses
 * them ({@link parseJsonBody}) once it has checked a signature over them
 */
export function jsonBody(limitBytes: number, options: { raw?: boolean } = {}): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.headers["transfer-encoding"] === undefined && req.headers["content-length"] === undefined) return next();
    const refusal = refusalOf(req);
    if (refusal) return next(refusal);
    if (req.method !== "POST") {
      continueIfAwaited(req, res);
      getRawBody(
        req,
        { limit: limitBytes, length: req.headers["content-length"] },
        AsyncResource.bind((err) => next(err ? readError(req, err, limitBytes) : undefined)),
      );
      return;
    }
    const coding = printable(String(req.headers["content-encoding"] ?? "identity"), 40)
      .trim()
      .toLowerCase();
    const decode = DECODERS[coding];
    if (coding !== "identity" && !decode) {
      return next(
        new EdgeError(
          415,
          "ENCODING_UNSUPPORTED",
          `Content-Encoding '${coding}' is not supported; send the body as is, or with gzip, deflate or br`,
        ),
      );
    }
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i
      .exec(String(req.headers["content-type"] ?? ""))?.[1]
      ?.toLowerCase();
    if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
      return next(
        new EdgeError(
          415,
          "CHARSET_UNSUPPORTED",
          "body must be JSON encoded as UTF-8 (Content-Type: application/json)",
        ),
      );
    }
    continueIfAwaited(req, res);
    // The body arrives in the socket's async context: the rest of the request runs in the request's (its id on log lines, its trace).
    const parse = (buf: Buffer) => {
      if (options.raw) {
        (req as Request & { [kRawBody]?: Buffer })[kRawBody] = buf;
        return next();
      }
      try {
        req.body = parseJsonBody(buf);
      } catch (err) {
        return next(err);
      }
      next();
    };
    getRawBody(
      req,
      { limit: limitBytes, length: coding === "identity" ? req.headers["content-length"] : null },
      AsyncResource.bind((err: (Error & { type?: string }) | null, wire: Buffer) => {
        if (err) return next(readError(req, err, limitBytes));
        if (!decode) return parse(wire);
        decode(wire, { maxOutputLength: limitBytes }).then(parse, (zerr: { code?: string }) => {
          if (zerr.code === "ERR_BUFFER_TOO_LARGE") {
            return next(
              new EdgeError(
                413,
                "BODY_TOO_LARGE",
                `body is larger than the limit of ${limitBytes} bytes once decompressed (Content-Encoding: ${coding})`,
              ),
            );
          }
          next(
            new CredhookError(
              400,
              ErrorCodes.VALIDATION_FAILED,
              `body is not valid ${coding} data (Content-Encoding: ${coding})`,
            ),
          );
        });
      }),
    );
  };
}
