/**
 * A raw HTTP/1.1 client for tests of the HTTP edge: writes exact bytes on a
 * node:net socket (optionally in timed pieces, or as an endless stream) and
 * parses every response the server sends back until it closes the connection.
 */
import { connect, type Socket } from "node:net";

/** One parsed HTTP response. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON, when it is JSON. */
  json?: Record<string, unknown>;
}

/** What the server sent on one connection. */
export interface RawExchange {
  /** Final responses, in order (1xx interim responses are in `interim`). */
  responses: RawResponse[];
  interim: number[];
  /** True when the server closed the connection (FIN or reset) before `waitMs` ran out. */
  closed: boolean;
  /** Bytes the client wrote before the connection closed (less than it meant to: the server cut it short). */
  bytesWritten: number;
}

/** Options of {@link rawExchange}. */
export interface RawOptions {
  /** Pieces written after `head`, each after its `delayMs`. */
  pieces?: Array<{ data: string | Buffer; delayMs?: number }>;
  /** After the pieces, keep writing this chunk as fast as the socket takes it until it closes (a flood). */
  flood?: Buffer;
  /** Longest wait for the server to close, ms. @default 5000 */
  waitMs?: number;
  /** Source address (any 127.x.y.z on Linux), to act as another client. */
  localAddress?: string;
  /** Stop waiting once this many final responses arrived (the connection may stay open). */
  stopAfter?: number;
}

/** Parses consecutive HTTP responses from `buf`; returns them and the 1xx statuses. */
export function parseResponses(buf: Buffer): { responses: RawResponse[]; interim: number[] } {
  const responses: RawResponse[] = [];
  const interim: number[] = [];
  let at = 0;
  while (at < buf.length) {
    const end = buf.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    const lines = buf.toString("latin1", at, end).split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1]);
    if (!status)
      throw new Error(`not an HTTP response at byte ${at}: ${JSON.stringify(buf.toString("latin1", at, at + 80))}`);
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(":");
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    at = end + 4;
    if (status < 200) {
      interim.push(status);
      continue;
    }
    let body = "";
    if (status === 204 || status === 304) body = "";
    else if (headers["content-length"] !== undefined) {
      const n = Number(headers["content-length"]);
      body = buf.toString("utf8", at, at + n);
      at += n;
    } else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      for (;;) {
        const lineEnd = buf.indexOf("\r\n", at);
        const size = parseInt(buf.toString("latin1", at, lineEnd), 16);
        at = lineEnd + 2;
        if (!size) {
          at += 2;
          break;
        }
        body += buf.toString("utf8", at, at + size);
        at += size + 2;
      }
    } else {
      body = buf.toString("utf8", at);
      at = buf.length;
    }
    let json: Record<string, unknown> | undefined;
    try {
      json = body ? (JSON.parse(body) as Record<string, unknown>) : undefined;
    } catch {
      json = undefined;
    }
    responses.push({ status, headers, body, ...(json ? { json } : {}) });
  }
  return { responses, interim };
}

/** Opens a connection to `port`, writes `head` then `options.pieces` (and a flood), and collects what comes back. */
export function rawExchange(port: number, head: string | Buffer, options: RawOptions = {}): Promise<RawExchange> {
  const waitMs = options.waitMs ?? 5000;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let closed = false;
    let bytesWritten = 0;
    let finished = false;
    const socket: Socket = connect({
      port,
      host: "127.0.0.1",
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    });
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseResponses(Buffer.concat(chunks));
      resolve({ ...parsed, closed, bytesWritten });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      if (options.stopAfter !== undefined) {
        try {
          if (parseResponses(Buffer.concat(chunks)).responses.length >= options.stopAfter) finish();
        } catch {
          /* incomplete yet */
        }
      }
    });
    const onClose = () => {
      closed = true;
      finish();
    };
    socket.on("end", onClose);
    socket.on("close", onClose);
    socket.on("error", () => undefined);
    const gone = new Promise<void>((done) => socket.once("close", () => done()));
    const write = async (data: string | Buffer) => {
      if (closed || socket.destroyed) return;
      const b = Buffer.isBuffer(data) ? data : Buffer.from(data, "latin1");
      bytesWritten += b.length;
      if (!socket.write(b)) await Promise.race([new Promise((done) => socket.once("drain", done)), gone]);
    };
    socket.on("connect", async () => {
      await write(head);
      for (const p of options.pieces ?? []) {
        if (p.delayMs) await new Promise((r) => setTimeout(r, p.delayMs));
        await write(p.data);
      }
      if (options.flood) while (!closed && !socket.destroyed && !finished) await write(options.flood);
    });
  });
}
