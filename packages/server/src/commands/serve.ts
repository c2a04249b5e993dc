/**
 * `credhook serve [--config FILE] [--port N]`: runs the webhook until SIGTERM or SIGINT, then drains in-flight requests
 * and exits 0 (1 when the shutdown did not finish within `server.shutdownTimeoutMs` + 2 s); with no config file, the
 * embedded default. A supervisor starts this process itself, not through pnpm (docs/deploy.md).
 */
import type { Command } from "commander";
import { SHUTDOWN_MARGIN_MS, startServer } from "../app.js";
import { CONFIG_SEARCH_PLACES, type LoadedConfig } from "../config.js";
import { describeListenError } from "../listen-errors.js";
import { createLogger, settleLogs } from "../logging.js";
import { startTracing } from "../tracing.js";
import { VERSION } from "../version.js";
import { CONFIG_OPTION, loadConfig, parsePort } from "./common.js";
import { fail } from "./output.js";

/** Registers `credhook serve` on `program`. */
export function register(program: Command): void {
  program
    .command("serve")
    .description("run the webhook")
    .option(...CONFIG_OPTION)
    .option("-p, --port <port>", "port (0: a free one) (default: the config's server.port: $PORT, else 8080)")
    .action(async (opts: { config?: string; port?: string }) => {
      let running;
      let loaded: LoadedConfig | undefined;
      let port: number | undefined;
      try {
        port = opts.port === undefined ? undefined : parsePort(opts.port, "--port");
        const config = await loadConfig(opts.config);
        loaded = config;
        const logger = createLogger(config.server.logLevel);
        if (config.embeddedDefault) {
          logger.info(
            { config: config.configFile, dataDir: config.dataDir },
            `no ${CONFIG_SEARCH_PLACES[0]} in ${process.cwd()} (nor --config, nor CREDHOOK_CONFIG): serving the embedded default; \`credhook init\` writes it to a file you can edit`,
          );
        }
        const tracing = await startTracing({ logger });
        running = await startServer(config, { logger, ...(port !== undefined ? { port } : {}) });
        // Signal handlers before the line that says it listens: whoever waits for that line (a supervisor, a test)
        // may send SIGTERM at once, and must find the graceful shutdown in place, not the default (killed).
        const stop = (signal: string) => {
          logger.info({ signal }, "shutting down: draining in-flight requests");
          // Whatever a provider's limiter, an SDK or a connection still holds, the process ends in time.
          const deadlineMs = config.server.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS;
          setTimeout(() => {
            logger.error({ signal, deadlineMs }, "shutdown did not finish in time; exiting anyway");
            void settleLogs(logger).then(() => process.exit(1));
          }, deadlineMs);
          const exit = (code: number) => settleLogs(logger).then(() => process.exit(code));
          running!
            .close()
            .then(() => tracing?.shutdown())
            .then(() => {
              logger.info({}, "stopped");
              return exit(0);
            })
            .catch((err: unknown) => {
              logger.error({ err: { message: (err as Error).message } }, "shutdown failed");
              return exit(1);
            });
        };
        process.once("SIGTERM", () => stop("SIGTERM"));
        process.once("SIGINT", () => stop("SIGINT"));
        logger.info(
          {
            url: running.url,
            version: VERSION,
            node: process.version,
            config: config.configFile,
            gateways: Object.keys(config.gateways),
            tracing: !!tracing,
            // CREDHOOK_MEMORY, which the `credhook` command (bin/credhook.mjs) applies at start
            memory: process.env.CREDHOOK_MEMORY === "lean" ? "lean" : "default",
            // The embedded gateway's URL as bound, and its OAuth issuer.
            ...(running.gatewayUrl
              ? { embeddedGateway: running.gatewayUrl, issuer: running.credhook.embeddedGateway?.issuer }
              : {}),
          },
          "credhook listening",
        );
      } catch (err) {
        // A port from --port is named as that option, and moved with it; else the config's setting is.
        const portOption =
          port === undefined ? undefined : { where: `--port ${port} on the command line`, fix: "pass another --port" };
        await fail((loaded && describeListenError(err, loaded, process.env, portOption)) ?? err, { json: true });
      }
    });
}
