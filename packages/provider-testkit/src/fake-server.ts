/**
 * Helpers for the in-process HTTP fakes of cloud control planes that provider
 * tests point the unmodified official SDKs at.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Handles one request of a fake; may be async. Unhandled throws answer 500. */
export type FakeHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/** A running fake: its base URL (`http://127.0.0.1:PORT`), port, and `close()`. */
export interface FakeServer {
  url: string;
  port: number;
  server: Server;
  /** Stops listening and drops keep-alive sockets. */
  close(): Promise<void>;
}

/** Starts `handler` on 127.0.0.1, port 0 (a free port). */
export async function startFakeServer(handler: FakeHandler): Promise<FakeServer> {
  const server = createServer((req, res) => {
    Promise.resolve(handler(req, res)).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { message: String((err as Error)?.message ?? err) });
      else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Reads and JSON-parses a request body; `undefined` when empty. */
export async function readJsonBody<T = unknown>(req: IncomingMessage): Promise<T | undefined> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text.length === 0 ? undefined : (JSON.parse(text) as T);
}

/** Writes a JSON answer with `status` and extra `headers`. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = body === undefined ? "" : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}
