/**
 * `credhook serve`'s server: {@link startServer} listens, answers while the store opens, then
 * hands requests to the app, starts the background loops and lets the embedded gateway serve; on
 * close it drains in-flight requests. The jobs live in their own modules, re-exported here:
 * runtime.ts (store, gateways, orchestrator), http-app.ts (the express app: `createApp`'s steps and
 * the routes), loops.ts (background reconcile) and shutdown.ts (the drain); the embedded gateway
 * is `@credhook/gateway`.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Response } from "express";
import type { CredhookConfig, Logger } from "@credhook/core";
import { watchDrift } from "./drift-check.js";
import { createEdgeServer } from "./edge.js";
import { type AppOptions, type CredhookApp, prepareApp } from "./http-app.js";
import { errorBody, sendJson } from "./http-errors.js";
import { createLogger } from "./logging.js";
import { startBackgroundReconcile, startExpiryLoop } from "./loops.js";
import { drainAndClose } from "./shutdown.js";

export { createApp } from "./http-app.js";
export type { AppOptions, CredhookApp, ServerLimits } from "./http-app.js";
export { createRuntime, importProviderModule, openStore } from "./runtime.js";
export type { CredhookRuntime } from "./runtime.js";
export { SHUTDOWN_MARGIN_MS } from "./shutdown.js";

/**
 * What the server answers while it starts (the store is still being opened): `/livez` 204, `/readyz` 503
 * "not ready", anything else 503 + Retry-After saying so — each an ErrorResponse.
 */
function starting(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  req.resume();
  res.setHeader("Cache-Control", "no-store");
  if (path === "/livez") {
    res.statusCode = 204;
    res.end();
    return;
  }
  res.setHeader("Retry-After", "5");
  res.setHeader("Connection", "close");
  sendJson(
    res as unknown as Response,
    503,
    errorBody(
      503,
      [
        path === "/readyz"
          ? "not ready"
          : "credhook is starting: the credential store is not reachable yet; try again shortly",
      ],
      path,
    ),
  );
}

/** A listening server. */
export interface RunningServer {
  /**
   * The webhook's base URL as it is bound: `http://<address>:<port>` with the address the socket
   * listens on — `0.0.0.0` (every IPv4 address of the machine, the default `server.host`), `[::]`
   * (every address), or one address (`127.0.0.1`: this machine only); a host name is shown as the
   * address it resolved to. On this machine a wildcard address is reached as itself or `127.0.0.1`.
   */
  url: string;
  /** Base URL of the embedded gateway's endpoints as bound (own port, or the webhook's URL + pathPrefix), when configured. */
  gatewayUrl?: string;
  port: number;
  server: Server;
  credhook: CredhookApp;
  /**
   * Graceful shutdown: stops accepting connections, answers new requests on
   * open connections 503, waits up to `server.shutdownTimeoutMs` for in-flight
   * requests, then closes providers and the store.
   */
  close(): Promise<void>;
}

/** `http://<address>:<port>` of a listening socket: the address it is bound to, an IPv6 one in brackets. */
function boundUrl(address: AddressInfo): string {
  return `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}`;
}

/**
 * Builds the app and listens on `options.port` (default `config.server.port`; 0 picks a free port).
 * Every port is bound before anything is written for the portal users: the webhook's first (it
 * answers `starting` while the store is opened), then the embedded gateway's own (with
 * `embeddedGateway.listen`); only then are generated passwords written (see `resolveUsers` in passwords.ts), so a
 * start that fails — a port in use, a store away — leaves no password behind.
 * @throws ConfigError | Error (EADDRINUSE …: `code` and `port` as node:net's, for `describeListenError`)
 */
export async function startServer(
  config: CredhookConfig,
  options: AppOptions & { port?: number; host?: string } = {},
): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.server.logLevel);
  // Listening comes first: while the store is still being waited for (a database that is away at start), /livez
  // answers 204, /readyz 503 and every other request 503 + Retry-After; then the app takes over.
  let credhook: CredhookApp | undefined;
  let handler: (req: IncomingMessage, res: ServerResponse) => void = starting;
  const host = options.host ?? config.server.host;
  const limits = options.limits ?? {};
  const server = createEdgeServer((req, res) => handler(req, res), {
    limits: {
      bodyLimitBytes: config.server.bodyLimitBytes,
      headersTimeoutMs: limits.headersTimeoutMs ?? config.server.headersTimeoutMs,
      requestTimeoutMs: limits.requestTimeoutMs ?? config.server.requestTimeoutMs,
      maxHeaderBytes: limits.maxHeaderBytes ?? config.server.maxHeaderBytes,
    },
    logger,
    onRefused: (status, reason) => credhook?.metrics.refused(status, reason),
  });
  server.listen(options.port ?? config.server.port, host);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const bound = server.address() as AddressInfo;
  const { port } = bound;
  const url = boundUrl(bound);
  let gatewayUrl: string | undefined;
  let stopDrift: () => Promise<void> = async () => undefined;
  try {
    const prepared = await prepareApp(config, { ...options, logger, waitForStore: true });
    credhook = prepared.app;
    const metrics = credhook.metrics;
    try {
      // A config that dropped a gateway still holding live credentials is refused before anything is served.
      stopDrift = await watchDrift(credhook, config, (summary) => metrics.observeDrift(summary));
      await credhook.store.claimServer?.(); // one server per SQLite file
      gatewayUrl = await credhook.embeddedGateway?.serve({ port, url });
      prepared.settleUsers(); // every port is bound: now the generated passwords may be written
    } catch (err) {
      await stopDrift();
      await credhook.close();
      throw err;
    }
  } catch (err) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    throw err;
  }
  handler = credhook.app;
  server.keepAliveTimeout = config.server.keepAliveTimeoutMs;
  const stopReconcile = startBackgroundReconcile(credhook, config);
  const stopExpiry = startExpiryLoop(credhook, config, (r) => credhook!.metrics.observeExpiryPass(r));
  const outbox = credhook.store.outbox;
  // A config built in code without validateConfig may lack the block (its defaults): no delivery loop then.
  // Loaded here, not at the top: the Lambda handler (which imports this module) delivers no events and loads neither cloudevents nor standardwebhooks.
  const stopEvents =
    outbox && config.events
      ? (await import("./events.js")).startEventDelivery(outbox, config.events, {
          logger: credhook.logger as unknown as Logger,
          ...(options.now ? { now: options.now } : {}),
          onAttempt: (outcome) => credhook!.metrics.observeEventAttempt(outcome),
        })
      : async () => undefined;
  const stopSweep = () => Promise.all([stopReconcile(), stopExpiry(), stopEvents(), stopDrift()]).then(() => undefined);
  let closing: Promise<void> | undefined;
  return {
    url,
    ...(gatewayUrl ? { gatewayUrl } : {}),
    port,
    server,
    credhook,
    close() {
      closing ??= drainAndClose(server, credhook, stopSweep, config.server.shutdownTimeoutMs);
      return closing;
    },
  };
}
