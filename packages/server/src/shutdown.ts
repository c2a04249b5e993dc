/**
 * Graceful shutdown of a listening server: answer new requests 503, stop the background loops,
 * let in-flight requests finish (closing keep-alive connections as they become idle), then close
 * the app (its extensions, the providers, the store).
 */
import type { Server } from "node:http";
import type { CredhookApp } from "./http-app.js";

/**
 * `credhook serve` on SIGTERM/SIGINT: time allowed after `server.shutdownTimeoutMs`
 * for the providers and the store to close; then the process exits (code 1) whatever is still pending, ms.
 */
export const SHUTDOWN_MARGIN_MS = 2000;

/**
 * Drains `server` and closes `credhook`: from now on requests on open connections are answered
 * 503 (`credhook.draining`), `stopLoops` is awaited, the server stops accepting connections and
 * closes each keep-alive connection once idle; after `timeoutMs` every connection is closed; then
 * `credhook.close()`.
 * @param timeoutMs how long in-flight requests get (`server.shutdownTimeoutMs`), ms
 */
export async function drainAndClose(
  server: Server,
  credhook: CredhookApp,
  stopLoops: () => Promise<void>,
  timeoutMs: number,
): Promise<void> {
  credhook.draining = true;
  await stopLoops();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Keep-alive connections become idle as their last response ends: close them as they do.
  server.closeIdleConnections();
  const sweeper = setInterval(() => server.closeIdleConnections(), 50);
  const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
  await closed;
  clearInterval(sweeper);
  clearTimeout(timer);
  await credhook.close();
}
