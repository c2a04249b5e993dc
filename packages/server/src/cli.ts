/**
 * The `credhook` command line:
 * - `credhook serve [--config FILE]`: runs the webhook until SIGTERM/SIGINT (with
 *   no config file: the embedded default);
 * - `credhook init [FILE]`: writes the commented starter config;
 * - `credhook check-config [--config FILE]`: validates the config, loads every
 *   provider, prints the resolved routing table (secrets masked), exits 0/1;
 * - `credhook reconcile [--dry-run] [--older-than S] [--json]`: finishes interrupted
 *   operations, cleans up abandoned creates, revokes garbage, reports drift;
 * - `credhook adopt FILE [--dry-run] [--json]`: brings credentials made outside
 *   credhook under it (marks them on their gateway, records them);
 * - `credhook audit [--app A] [--since T] [--undelivered] [--json]`: lists the credential events the
 *   store keeps (the audit trail), oldest first; `--undelivered` the pending and dead ones; `--redeliver [--app A]`
 *   makes the dead ones pending again;
 * - `credhook inspect`, `credhook list`, `credhook revoke`: where a credential lives, and revoking it
 *   everywhere at once when it leaks (inspect.ts);
 * - `credhook demo`: the multi-cloud demo on cloud fakes (repository only);
 * - `credhook hash-password`: reads a password on stdin, prints its scrypt hash
 *   for `server.auth.users[].passwordHash`.
 * Exit codes: 0 ok, 1 invalid configuration or start-up failure.
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { Command } from "commander";
import { ConfigError, isCredhookError } from "@credhook/core/errors";
import type { Logger } from "@credhook/core";
import { destination } from "pino";
import { createRuntime, openStore, startServer, importProviderModule, SHUTDOWN_MARGIN_MS } from "./app.js";
import { CONFIG_SEARCH_PLACES, embeddedConfigText, loadConfigFile, type LoadedConfig } from "./config.js";
import { checkConfig, checkConfigReport, configWarnings, describeEmbeddedGatewayBlock } from "./check-config.js";
import { describeListenError } from "./listen-errors.js";
import { createLogger, operatorMessage, settleLogs } from "./logging.js";
import { hashPassword, passwordProblem } from "./passwords.js";
import { registerCredentialCommands } from "./inspect.js";
import { registerExpiryCommand } from "./expiry-cli.js";
import { formatAuditLines, formatReconcileReport, parseSince, readAdoptionFile } from "./operations-cli.js";
import { startTracing } from "./tracing.js";
import { VERSION } from "./version.js";

/** Loads `--config FILE`, `$CREDHOOK_CONFIG` or `./webhook.config.yaml`, else the embedded default. */
const loadConfig = (file: string | undefined): Promise<LoadedConfig> => loadConfigFile(file, { embeddedDefault: true });

/**
 * Says why the command failed on stderr and exits 1. With `json` (`credhook serve`, whose output a
 * log pipeline reads), one JSON line when stdout is not a terminal (see operatorMessage).
 */
function reportAndExit(err: unknown, json = false): never {
  const messages = isCredhookError(err) ? err.messages : [(err as Error)?.message ?? String(err)];
  const what = isCredhookError(err) ? (err instanceof ConfigError ? "invalid configuration" : "error") : undefined;
  const text = what ? `credhook: ${what}:\n${messages.map((m) => `  - ${m}`).join("\n")}` : `credhook: ${messages[0]}`;
  if (json) operatorMessage("fatal", `credhook could not start${what ? `: ${what}` : ""}`, { messages }, text);
  else process.stderr.write(`${text}\n`);
  process.exit(1);
}

const program = new Command();
program
  .name("credhook")
  .description("Multi-cloud credential-provisioning webhook for developer portals")
  .version(VERSION, "-V, --version", "print credhook's version")
  .showHelpAfterError();

program
  .command("serve")
  .description("run the webhook")
  .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
  .action(async (opts: { config?: string }) => {
    let running;
    let loaded: LoadedConfig | undefined;
    try {
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
      running = await startServer(config, { logger });
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
      reportAndExit((loaded && describeListenError(err, loaded)) ?? err, true);
    }
  });

program
  .command("init")
  .description("write the commented starter config (the embedded default) to ./webhook.config.yaml, or FILE")
  .argument("[file]", "where to write it", CONFIG_SEARCH_PLACES[0])
  .option("-f, --force", "overwrite an existing file")
  .action((file: string, opts: { force?: boolean }) => {
    const target = resolve(file);
    try {
      writeFileSync(target, embeddedConfigText(target), { flag: opts.force ? "w" : "wx", mode: 0o644 });
    } catch (err) {
      if ((err as { code?: string }).code === "EEXIST")
        reportAndExit(new Error(`${target} exists already; pass --force to overwrite it`));
      reportAndExit(new Error(`cannot write ${target}: ${(err as Error).message}`));
    }
    process.stdout.write(
      `wrote ${target}\n` +
        `  edit it (gateways:, routes:), check it with \`credhook check-config\`, run it with \`credhook serve\`.\n` +
        `  Set CREDHOOK_PASSWORD (or CREDHOOK_PASSWORD_FILE), or let credhook generate a password on first start.\n`,
    );
  });

program
  .command("check-config")
  .description("validate the config, load every provider, and print the resolved routing table (secrets masked)")
  .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
  .action(async (opts: { config?: string }) => {
    try {
      const config = await loadConfig(opts.config);
      const gateways = await checkConfig(config, importProviderModule);
      process.stdout.write(
        checkConfigReport(config, gateways, describeEmbeddedGatewayBlock(config), configWarnings(config, gateways)),
      );
      await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
      process.exit(0);
    } catch (err) {
      reportAndExit(err);
    }
  });

program
  .command("reconcile")
  .description(
    "finish credentials left pending by a crash (complete revokes, abandon and clean up interrupted creates, roll back interrupted updates), clean up abandoned creates, report drift",
  )
  .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
  .option("--dry-run", "report what would be done; change nothing")
  .option(
    "--older-than <seconds>",
    "only records last written longer ago than this (leaves in-flight requests alone)",
    "60",
  )
  .option("--json", "print the report as JSON")
  .action(async (opts: { config?: string; dryRun?: boolean; olderThan: string; json?: boolean }) => {
    try {
      const olderThanS = Number(opts.olderThan);
      if (!Number.isFinite(olderThanS) || olderThanS < 0)
        throw new Error(`--older-than must be a number of seconds ≥ 0 (got '${opts.olderThan}')`);
      const config = await loadConfig(opts.config);
      const tracing = await startTracing();
      const runtime = await createRuntime(config, { logger: createLogger("warn", destination(2)) });
      const report = await runtime.orchestrator.reconcile({ dryRun: !!opts.dryRun, olderThanMs: olderThanS * 1000 });
      await runtime.close();
      await tracing?.shutdown();
      if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else process.stdout.write(`${formatReconcileReport(report, olderThanS).join("\n")}\n`);
      process.exit(
        [...report.unfinished, ...report.abandoned, ...report.unsettled].some((u) => u.errors.length > 0) ? 1 : 0,
      );
    } catch (err) {
      reportAndExit(err);
    }
  });

program
  .command("adopt")
  .description(
    "bring credentials made outside credhook (by hand, or by the webhook credhook replaces) under credhook: mark them on their gateway and record them",
  )
  .argument(
    "<file>",
    "JSON file: an array of { credentialType, apiKeyId | clientId, appName, developer, appSlug?, apis: [{ id, usagePlans: [{ id }] }] }",
  )
  .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
  .option("--dry-run", "check and report what would be adopted; change nothing")
  .option("--json", "print the results as JSON")
  .action(async (file: string, opts: { config?: string; dryRun?: boolean; json?: boolean }) => {
    try {
      const entries = await readAdoptionFile(file);
      const config = await loadConfig(opts.config);
      const runtime = await createRuntime(config, { logger: createLogger("warn", destination(2)) });
      const results = await runtime.orchestrator.adopt(entries, { dryRun: !!opts.dryRun });
      await runtime.close();
      if (opts.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
      else {
        const out = results.map(
          (r) =>
            `  - ${r.publicId}${r.gateway ? ` (gateway ${r.gateway})` : ""}: ${r.action}${r.reason ? `: ${r.reason}` : ""}${r.credentialId ? ` as credential ${r.credentialId}` : ""}`,
        );
        const adopted = results.filter((r) => r.action !== "skipped").length;
        process.stdout.write(
          `${opts.dryRun ? "[dry run] " : ""}${opts.dryRun ? "would adopt" : "adopted"} ${adopted} of ${results.length}\n${out.join("\n")}\n`,
        );
      }
      process.exit(results.some((r) => r.action === "skipped") ? 1 : 0);
    } catch (err) {
      reportAndExit(err);
    }
  });

program
  .command("audit")
  .description(
    "list the credential events the store keeps (the audit trail: created, updated, revoked, abandoned, cleaned up, adopted, drift found), oldest first, with their delivery state",
  )
  .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
  .option("--app <app>", "only this app's events: its slug, its name, or its app key (slug:…, app:…)")
  .option(
    "--since <time>",
    "only events at or after this time: ISO 8601 (2026-05-01) or a duration back from now (24h, 7d)",
  )
  .option(
    "--undelivered",
    "only events not delivered yet: pending, and dead (refused by a sink too often; exit code 1 when any)",
  )
  .option("--limit <n>", "at most this many, the newest", "1000")
  .option("--json", "print the events as JSON (each: the CloudEvent and its delivery state)")
  .option(
    "--redeliver",
    "make the dead events (of --app, when given) pending again, due now, for the serving instances to deliver once the sink is fixed; prints how many",
  )
  .action(
    async (opts: {
      config?: string;
      app?: string;
      since?: string;
      undelivered?: boolean;
      limit: string;
      json?: boolean;
      redeliver?: boolean;
    }) => {
      try {
        if (opts.redeliver && (opts.since !== undefined || opts.undelivered))
          throw new Error("--redeliver takes --app only (it requeues every dead event of the app, or all)");
        const limit = Number(opts.limit);
        if (!Number.isInteger(limit) || limit < 1)
          throw new Error(`--limit must be an integer ≥ 1 (got '${opts.limit}')`);
        const since = opts.since === undefined ? undefined : parseSince(opts.since, Date.now());
        const config = await loadConfig(opts.config);
        const store = await openStore(config, createLogger("warn", destination(2)) as unknown as Logger);
        try {
          if (!store.outbox) throw new Error("this store keeps no events (its package has no outbox)");
          if (opts.redeliver) {
            const n = await store.outbox.requeueDead(new Date().toISOString(), opts.app);
            process.stdout.write(
              opts.json
                ? `${JSON.stringify({ requeued: n })}\n`
                : `${n} dead event${n === 1 ? "" : "s"} made pending again\n`,
            );
            await store.close();
            process.exit(0);
          }
          const filter = { ...(opts.app ? { app: opts.app } : {}), ...(since ? { since } : {}), limit };
          const events = opts.undelivered
            ? [
                ...(await store.outbox.list({ ...filter, status: "pending" })),
                ...(await store.outbox.list({ ...filter, status: "dead" })),
              ].sort((a, b) => a.seq - b.seq)
            : await store.outbox.list(filter);
          if (opts.json) process.stdout.write(`${JSON.stringify(events, null, 2)}\n`);
          else process.stdout.write(`${formatAuditLines(events).join("\n")}\n`);
          await store.close();
          process.exit(opts.undelivered && events.some((e) => e.status === "dead") ? 1 : 0);
        } catch (err) {
          await store.close();
          throw err;
        }
      } catch (err) {
        reportAndExit(err);
      }
    },
  );

registerCredentialCommands(program, { loadConfig, reportAndExit });
registerExpiryCommand(program, { loadConfig, reportAndExit });

program
  .command("demo")
  .description(
    "run examples/multi-cloud.yaml against in-process fakes of AWS, Azure and Google, and walk one app through it",
  )
  .option("-c, --config <file>", "config to run (default: examples/multi-cloud.yaml)")
  .option("-p, --port <port>", "port (0: a free one) (default: $PORT, else 8080)")
  .option("--no-walkthrough", "only start the fakes and the server")
  .action(async (opts: { config?: string; port?: string; walkthrough: boolean }) => {
    try {
      const raw = opts.port ?? (process.env.PORT || "8080");
      const port = Number(raw);
      if (!/^\d+$/.test(raw) || port > 65535)
        throw new Error(
          `the port must be an integer from 0 to 65535 (got '${raw}'${opts.port === undefined ? " from PORT" : ""})`,
        );
      const { runDemo } = await import("./demo.js");
      const { server, clouds } = await runDemo({
        ...(opts.config ? { config: opts.config } : {}),
        port,
        walkthrough: opts.walkthrough,
      });
      const stop = () => {
        void server
          .close()
          .then(() => clouds.close())
          .then(() => process.exit(0));
      };
      process.once("SIGTERM", stop);
      process.once("SIGINT", stop);
    } catch (err) {
      reportAndExit(err);
    }
  });

program
  .command("hash-password")
  .description("read a password on stdin and print its scrypt hash, for server.auth.users[].passwordHash")
  .action(async () => {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    const password = Buffer.concat(chunks)
      .toString("utf8")
      .replace(/\r?\n$/, "");
    const problem = passwordProblem(password);
    if (problem) reportAndExit(new Error(problem));
    process.stdout.write(`${await hashPassword(password)}\n`);
  });

await program.parseAsync(process.argv);
