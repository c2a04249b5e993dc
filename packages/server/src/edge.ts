/**
 * The HTTP edge: the Node HTTP server under express, set so that every answer
 * is an ErrorResponse (or a contract success) and no client can hold the
 * server with a large, slow or malformed request.
 *
 * - Headers must arrive within `headersTimeoutMs` and the whole request within
 *   `requestTimeoutMs` (Node's `headersTimeout` / `requestTimeout`, checked
 *   every ≤ 1 s): else 408 and the connection is closed.
 * - Node's own refusals — malformed HTTP (`clientError`: no request line, bare
 *   LF, `Content-Length` with `Transfer-Encoding` or twice, a bad chunk…),
 *   headers over `maxHeaderBytes` (431), an `Expect` other than 100-continue
 *   (`checkExpectation`, 417), a missing `Host`, a `CONNECT` (501) — are
 *   answered with an ErrorResponse and the connection closed. A request still being received
 *   when its connection fails is answered by the app with that error; answers
 *   to requests already received are written first, then the refusal.
 * - `Expect: 100-continue` is honoured only when the body is actually read
 *   (after authentication and the size check): an unauthenticated or oversized
 *   request never receives `100 Continue`.
 * Node's behaviour: https://nodejs.org/docs/latest-v20.x/api/http.html#event-clienterror
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Logger as PinoLogger } from "pino";
import { EdgeError, errorBody } from "./http-errors.js";
import { requestIdFor } from "./logging.js";

/** Limits of the HTTP edge. */
export interface EdgeLimits {
  /** Largest request body, bytes (`server.bodyLimitBytes`). */
  bodyLimitBytes: number;
  /** Time to receive a request's headers, ms. @default 10000 */
  headersTimeoutMs?: number;
  /** Time to receive a whole request, headers and body, ms (≥ headersTimeoutMs). @default 10000 */
  requestTimeoutMs?: number;
  /** Largest request head (request line and headers), bytes; beyond → 431. @default 16384 (Node's default) */
  maxHeaderBytes?: number;
}

/** Defaults of {@link EdgeLimits}. */
export const EDGE_DEFAULTS = { headersTimeoutMs: 10_000, requestTimeoutMs: 10_000, maxHeaderBytes: 16_384 } as const;

/** Why a request was refused before or while express handled it. */
const kRefusal = Symbol("credhook.refusal");
/** Set on a request whose client waits for `100 Continue` before sending its body. */
const kAwaitsContinue = Symbol("credhook.awaitsContinue");

type EdgeRequest = IncomingMessage & { [kRefusal]?: EdgeError; [kAwaitsContinue]?: boolean };

/** The refusal the edge attached to a request, if any (a failure of its connection while it was being received, or an unmet `Expect`). */
export function refusalOf(req: IncomingMessage): EdgeError | undefined {
  return (req as EdgeRequest)[kRefusal];
}

/** Sends `100 Continue` when the client waits for it: call right before reading the body. */
export function continueIfAwaited(req: IncomingMessage, res: ServerResponse): void {
  const r = req as EdgeRequest;
  if (r[kAwaitsContinue] && !res.headersSent) {
    r[kAwaitsContinue] = false;
    res.writeContinue();
  }
}

/** What a Node `clientError` means for the client: the status, a stable reason and a message. */
function refusalFor(err: NodeJS.ErrnoException & { reason?: string }, limits: Required<EdgeLimits>): EdgeError {
  switch (err.code) {
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new EdgeError(
        408,
        "REQUEST_TIMEOUT",
        `the request did not arrive in time: headers are allowed ${limits.headersTimeoutMs} ms, the whole request ${limits.requestTimeoutMs} ms`,
      );
    case "HPE_HEADER_OVERFLOW":
      return new EdgeError(
        431,
        "HEADERS_TOO_LARGE",
        `the request line and headers are larger than the limit of ${limits.maxHeaderBytes} bytes`,
      );
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new EdgeError(413, "BODY_TOO_LARGE", "the body's chunk extensions are too large");
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return new EdgeError(
        400,
        "MALFORMED_HTTP",
        "Content-Length must be sent once, and never together with Transfer-Encoding (RFC 9112, section 6.3)",
      );
    default: {
      const reason = typeof err.reason === "string" ? err.reason.replace(/[^\x20-\x7e]/g, "").slice(0, 120) : "";
      return new EdgeError(
        400,
        "MALFORMED_HTTP",
        `the request is not valid HTTP/1.1${err.code ? ` (${err.code}${reason ? `: ${reason}` : ""})` : ""}`,
      );
    }
  }
}

/** The request path named by the request line at the start of `packet`, or "" (for an ErrorResponse written outside express). */
function pathIn(packet: unknown): string {
  if (!Buffer.isBuffer(packet)) return "";
  const m = /^[A-Z]{1,16} (\/[\x21-\x7e]{0,200})/.exec(packet.toString("latin1", 0, 240));
  return m ? m[1]!.split("?")[0]! : "";
}

/** An ErrorResponse written straight to a socket (no request object exists for it), with its request id, closing the connection. */
function rawErrorResponse(refusal: EdgeError, path: string, requestId: string): Buffer {
  const body = JSON.stringify(errorBody(refusal.status, refusal.messages, path));
  const head = [
    `HTTP/1.1 ${refusal.status} ${errorBody(refusal.status, [], "").error}`,
    "Content-Type: application/json; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Cache-Control: no-store",
    "Connection: close",
    `X-Request-Id: ${requestId}`,
    `Date: ${new Date().toUTCString()}`,
  ];
  return Buffer.from(`${head.join("\r\n")}\r\n\r\n${body}`, "utf8");
}

/** Per-connection state: answers not yet written, and the refusal once the connection failed. */
interface ConnectionState {
  inFlight: Set<ServerResponse>;
  refusal?: EdgeError;
  /** Node's error code of the refusal. */
  code?: string;
  path?: string;
  flushed?: boolean;
}

/** Options of {@link createEdgeServer}. */
export interface EdgeServerOptions {
  limits: EdgeLimits;
  logger: PinoLogger;
  /** Called for each refusal written outside express (for metrics). */
  onRefused?: (status: number, reason: string) => void;
}

/**
 * Creates the HTTP server for `handler` (the express app) with the edge's
 * timeouts, header limit and refusal handling (see the module comment).
 */
export function createEdgeServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  options: EdgeServerOptions,
): Server {
  const limits: Required<EdgeLimits> = { ...EDGE_DEFAULTS, ...options.limits };
  const { logger } = options;
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: Math.max(limits.requestTimeoutMs, limits.headersTimeoutMs),
      // Timeouts are checked on this period: a fraction of the shortest one, at most 1 s.
      connectionsCheckingInterval: Math.max(
        25,
        Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
      ),
      maxHeaderSize: limits.maxHeaderBytes,
      // A missing Host is refused by the app, as an ErrorResponse (Node's own answer has no body).
      requireHostHeader: false,
    },
    handler,
  );
  const connections = new WeakMap<Socket, ConnectionState>();
  const stateOf = (socket: Socket) => {
    let s = connections.get(socket);
    if (!s) connections.set(socket, (s = { inFlight: new Set() }));
    return s;
  };

  /**
   * Logs `refusal` (with `fields` and a new request id, the one its answer carries), writes it
   * straight to the socket and closes it (giving the client a moment to read it).
   */
  const refuseRaw = (socket: Socket, refusal: EdgeError, path: string, fields: Record<string, unknown>) => {
    const requestId = requestIdFor(undefined);
    logger.warn(
      { requestId, status: refusal.status, reason: refusal.reason, ...fields, remoteAddress: socket.remoteAddress },
      "request refused by the HTTP layer",
    );
    options.onRefused?.(refusal.status, refusal.reason);
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(rawErrorResponse(refusal, path, requestId));
    setTimeout(() => socket.destroy(), 1000).unref();
  };

  /** Once every answer in flight is written, writes the connection's refusal and closes it. */
  const flush = (socket: Socket, state: ConnectionState) => {
    if (!state.refusal || state.flushed || state.inFlight.size > 0) return;
    state.flushed = true;
    refuseRaw(socket, state.refusal, state.path ?? "", { code: state.code });
  };

  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const state = stateOf(socket);
    state.inFlight.add(res);
    const done = () => {
      if (!state.inFlight.delete(res)) return;
      flush(socket, state);
    };
    res.once("finish", done);
    res.once("close", done);
  });

  server.on("clientError", (err: NodeJS.ErrnoException & { rawPacket?: unknown; reason?: string }, socket: Socket) => {
    const state = stateOf(socket);
    if (state.refusal) return; // the first failure decides; later ones are its echoes
    if (err.code === "ECONNRESET" || err.code === "EPIPE" || !socket.writable) {
      socket.destroy();
      return;
    }
    const refusal = refusalFor(err, limits);
    state.refusal = refusal;
    state.code = err.code;
    socket.pause(); // nothing more is read
    const receiving = [...state.inFlight].find(
      (res) => !(res as ServerResponse & { req: IncomingMessage }).req.complete,
    );
    if (receiving && !receiving.headersSent) {
      // The failure is this request's own (in its body, or its timeout): the app answers it, then closes.
      state.flushed = true;
      const req = (receiving as ServerResponse & { req: EdgeRequest & { id?: unknown } }).req;
      logger.warn(
        {
          requestId: String(req.id),
          status: refusal.status,
          reason: refusal.reason,
          code: err.code,
          remoteAddress: socket.remoteAddress,
        },
        "request refused by the HTTP layer",
      );
      req[kRefusal] = refusal;
      if (req.listenerCount("error") > 0) req.emit("error", refusal); // the body reader stops with it
      return;
    }
    // Answers to the requests already received are written first, then the refusal.
    state.path = pathIn(err.rawPacket);
    flush(socket, state);
  });

  // Without a listener Node drops a CONNECT request's connection without a word.
  server.on("connect", (_req: IncomingMessage, socket: Socket) => {
    refuseRaw(
      socket,
      new EdgeError(501, "CONNECT_UNSUPPORTED", "CONNECT is not supported: credhook is not a proxy"),
      "",
      {},
    );
  });

  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    (req as EdgeRequest)[kAwaitsContinue] = true;
    server.emit("request", req, res);
  });

  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
    const expect = String(req.headers.expect)
      .replace(/[^\x20-\x7e]/g, "")
      .slice(0, 60);
    (req as EdgeRequest)[kRefusal] = new EdgeError(
      417,
      "EXPECTATION_FAILED",
      `Expect: '${expect}' cannot be met; only Expect: 100-continue is supported`,
    );
    server.emit("request", req, res);
  });

  return server;
}

/**
 * The edge's checks of a request's head, before anything else reads it:
 * a refusal attached by the server (unmet `Expect`…), a missing or repeated
 * `Host` (400), and a `Content-Length` over the body limit (413, before a byte
 * of the body is read). Each is answered through the error handler and closes
 * the connection.
 */
export function edgeChecks(bodyLimitBytes: number): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const refusal = refusalOf(req);
    if (refusal) return next(refusal);
    if (req.httpVersion !== "1.0") {
      let hosts = 0;
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i]!;
        if (name.length === 4 && (name === "Host" || name.toLowerCase() === "host")) hosts++;
      }
      if (hosts !== 1) {
        return next(
          new EdgeError(
            400,
            "MALFORMED_HTTP",
            `an HTTP/1.1 request must carry exactly one Host header (RFC 9112, section 3.2); this one has ${hosts}`,
          ),
        );
      }
    }
    const length = req.headers["content-length"];
    if (length !== undefined && Number(length) > bodyLimitBytes) {
      return next(new EdgeError(413, "BODY_TOO_LARGE", `body is larger than the limit of ${bodyLimitBytes} bytes`));
    }
    next();
  };
}
