/**
 * What provider packages contribute besides credentials (core's `ProviderExtension`: the embedded
 * gateway of `provider: local`), as the server drives it — found through core's registry
 * (`loadExtensions`) and asked through its interface, never by a provider's class:
 * started with the app, mounted on the webhook's port or given its own listener once the webhook
 * listens, and closed on shutdown.
 */
import type { Express, Request, Response } from "express";
import type { Logger as PinoLogger } from "pino";
import { type CredhookConfig, loadExtensions, type Logger, type RunningExtension } from "@credhook/core";
import { ConfigError } from "@credhook/core/errors";
import type { CredhookRuntime } from "./runtime.js";
import { importProviderModule } from "./runtime.js";

/**
 * Starts every extension the config turns on, after the same checks as `credhook check-config`
 * (made with the store's `shared` known: usage-plan counters default to the store on PostgreSQL);
 * logs each of their warnings (the ones `check-config` prints) at `warn` first.
 * @param observe counts one answered request of an extension's endpoints (the server's metrics)
 * @returns the running extensions by config key (`embeddedGateway`), in the registry's order
 * @throws ConfigError when a block does not fit the gateways or the store; Error when one cannot start (those started are closed)
 */
export async function startExtensions(
  config: CredhookConfig,
  runtime: CredhookRuntime,
  logger: PinoLogger,
  observe: (endpoint: string, status: number) => void,
): Promise<Map<string, RunningExtension>> {
  const { extensions, problems, warnings } = await loadExtensions(config, runtime.gateways, {
    importModule: importProviderModule,
    sharedStore: runtime.store.shared ?? false,
  });
  if (problems.length > 0) throw new ConfigError(problems);
  for (const warning of warnings) logger.warn(warning);
  const running = new Map<string, RunningExtension>();
  try {
    for (const e of extensions) {
      running.set(
        e.configKey,
        await e.extension.start(e.config, {
          providers: e.gateways.map((g) => ({ gateway: g.name, provider: g.provider })),
          store: config.store,
          sharedStore: runtime.store.shared ?? false,
          stateFor: (namespace) => runtime.store.stateFor(namespace),
          dataDir: config.dataDir,
          logger: logger as unknown as Logger,
          observe,
        }),
      );
    }
  } catch (err) {
    await closeExtensions(running, config.server.shutdownTimeoutMs);
    throw err;
  }
  return running;
}

/**
 * Mounts the extensions that serve on the webhook's port: each one's handler under its path and
 * its aliases (GET and HEAD) — before the webhook's own layers, so outside its Basic auth,
 * request log and routing.
 */
export function mountExtensions(app: Express, running: ReadonlyMap<string, RunningExtension>): void {
  for (const { mount } of running.values()) {
    if (!mount) continue;
    app.use(mount.path, mount.handler);
    for (const [from, to] of Object.entries(mount.aliases ?? {})) {
      app.get(from, (req: Request, res: Response) => {
        req.url = to;
        mount.handler(req, res);
      });
    }
  }
}

/**
 * Lets every extension serve once the webhook listens (its own listener, or its address under the webhook's).
 * @returns each extension's base URL as bound, by config key
 * @throws Error when one cannot open its port (those before it are serving: close the app)
 */
export async function serveExtensions(
  running: ReadonlyMap<string, RunningExtension>,
  webhook: { port: number; url: string },
): Promise<Map<string, string>> {
  const urls = new Map<string, string>();
  for (const [key, e] of running) {
    const url = await e.serve?.(webhook);
    if (url) urls.set(key, url);
  }
  return urls;
}

/**
 * Closes the extensions, the last started first.
 * @param timeoutMs how long each one's in-flight requests get, ms
 */
export async function closeExtensions(
  running: ReadonlyMap<string, RunningExtension>,
  timeoutMs: number,
): Promise<void> {
  for (const e of [...running.values()].reverse()) await e.close(timeoutMs);
}
