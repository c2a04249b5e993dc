/** Graceful close of a node:http server, shared by the webhook's shutdown and the embedded gateway's listener. */
import type { Server } from "node:http";

/** How often idle keep-alive connections are closed while a server drains, ms. */
const IDLE_SWEEP_MS = 50;

/**
 * Stops `server` accepting connections and waits for it to close: each keep-alive connection is
 * closed as soon as it is idle (its last response ended), and after `timeoutMs` every connection
 * left is closed, in-flight or not.
 * @param timeoutMs how long in-flight requests get, ms
 */
export async function drainHttpServer(server: Server, timeoutMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const sweeper = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
  const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
  await closed;
  clearInterval(sweeper);
  clearTimeout(timer);
}
