/**
 * Graceful shutdown of a listening server: answer new requests 503, stop the background loops,
 * let in-flight requests finish (closing keep-alive connections as they become idle), then close
 * the app (the embedded gateway, the providers, the store).
 */
import type { Server } from "node:http";
import { drainHttpServer } from "@credhook/core";
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
  await drainHttpServer(server, timeoutMs);
  await credhook.close();
}
