/**
 * The `credhook` command line:
 * - `credhook serve [--config FILE]`: runs the webhook until SIGTERM/SIGINT;
 * - `credhook check-config [--config FILE]`: validates the config, loads every
 *   provider, prints the resolved routing table (secrets masked), exits 0/1;
 * - `credhook hash-password`: reads a password on stdin, prints its scrypt hash
 *   for `server.auth.users[].passwordHash`.
 * Exit codes: 0 ok, 1 invalid configuration or start-up failure.
 */
import { Command } from "commander";
import { ConfigError, createRouter, isCredhookError, loadGateways, memoryStateStore, silentLogger, type Logger } from "@credhook/core";
import { destination } from "pino";
import { createRuntime, startServer, importProviderModule } from "./app.js";
import { loadConfigFile, maskSecrets } from "./config.js";
import { createLogger } from "./logging.js";
import { hashPassword } from "./passwords.js";

function reportAndExit(err: unknown): never {
  if (isCredhookError(err)) {
    process.stderr.write(`credhook: ${err instanceof ConfigError ? "invalid configuration" : "error"}:\n${err.messages.map((m) => `  - ${m}`).join("\n")}\n`);
  } else {
    process.stderr.write(`credhook: ${(err as Error)?.message ?? String(err)}\n`);
  }
  process.exit(1);
}

const program = new Command();
program.name("credhook").description("Multi-cloud credential-provisioning webhook for developer portals").showHelpAfterError();

program
  .command("serve")
  .description("run the webhook")
  .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
  .action(async (opts: { config?: string }) => {
    let running;
    try {
      const config = await loadConfigFile(opts.config);
      const logger = createLogger(config.server.logLevel);
      running = await startServer(config, { logger });
      logger.info({ url: running.url, config: config.configFile, gateways: Object.keys(config.gateways) }, "credhook listening");
      const stop = (signal: string) => {
        logger.info({ signal }, "shutting down: draining in-flight requests");
        running!
          .close()
          .then(() => {
            logger.info({}, "stopped");
            logger.flush?.();
            process.exit(0);
          })
          .catch((err: unknown) => {
            logger.error({ err: { message: (err as Error).message } }, "shutdown failed");
            process.exit(1);
          });
      };
      process.once("SIGTERM", () => stop("SIGTERM"));
      process.once("SIGINT", () => stop("SIGINT"));
    } catch (err) {
      reportAndExit(err);
    }
  });

program
  .command("check-config")
  .description("validate the config, load every provider, and print the resolved routing table (secrets masked)")
  .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
  .action(async (opts: { config?: string }) => {
    try {
      const config = await loadConfigFile(opts.config);
      const gateways = await loadGateways(config, { importModule: importProviderModule, logger: silentLogger as Logger, stateFor: () => memoryStateStore() });
      createRouter(config.routes);
      const out: string[] = [`config: ${config.configFile}`, "", "gateways:"];
      for (const [name, g] of Object.entries(config.gateways)) {
        const caps = gateways.get(name)!.provider.capabilities;
        out.push(`  ${name}: provider=${g.provider} credentialType=${g.credentialType} importsApiKeyValue=${caps.importsApiKeyValue} readsBackSecret=${caps.readsBackSecret}`);
        out.push(`    options: ${JSON.stringify(maskSecrets(g.options))}`);
      }
      out.push("", "routes (first match wins):");
      config.routes.forEach((r, i) => out.push(`  ${i + 1}. ${"default" in r ? `* (default) -> ${r.default}` : `${r.apis.join(", ")} -> ${r.gateway}`}`));
      out.push("", `server: ${JSON.stringify(maskSecrets(config.server))}`, `store: ${JSON.stringify(maskSecrets(config.store))}`, "", "configuration is valid");
      process.stdout.write(`${out.join("\n")}\n`);
      await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
      process.exit(0);
    } catch (err) {
      reportAndExit(err);
    }
  });

program
  .command("reconcile")
  .description("finish credentials left pending by a crash (complete revokes, remove interrupted creates, roll back interrupted updates) and report drift")
  .option("-c, --config <file>", "config file (default: ./webhook.config.yaml, or $CREDHOOK_CONFIG)")
  .option("--dry-run", "report what would be done; change nothing")
  .option("--older-than <seconds>", "only records last written longer ago than this (leaves in-flight requests alone)", "60")
  .option("--json", "print the report as JSON")
  .action(async (opts: { config?: string; dryRun?: boolean; olderThan: string; json?: boolean }) => {
    try {
      const olderThanS = Number(opts.olderThan);
      if (!Number.isFinite(olderThanS) || olderThanS < 0) throw new Error(`--older-than must be a number of seconds ≥ 0 (got '${opts.olderThan}')`);
      const config = await loadConfigFile(opts.config);
      const runtime = await createRuntime(config, { logger: createLogger("warn", destination(2)) });
      const report = await runtime.orchestrator.reconcile({ dryRun: !!opts.dryRun, olderThanMs: olderThanS * 1000 });
      await runtime.close();
      if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else {
        const out: string[] = [`${report.dryRun ? "[dry run] " : ""}unfinished credentials: ${report.unfinished.length}`];
        for (const u of report.unfinished) {
          out.push(`  - ${u.credentialId} (${u.appKey}, interrupted ${u.op}) on ${u.gateways.join(", ") || "no gateway"}: ${u.action}`);
          for (const e of u.errors) out.push(`      error: ${e}`);
        }
        out.push(`resources no credential owns (drift, not deleted): ${report.orphans.length}`);
        for (const o of report.orphans) out.push(`  - ${o.gateway}: ${o.nativeId} ${o.description}${o.credentialId ? ` [credential ${o.credentialId}]` : ""}`);
        if (report.unlistable.length > 0) out.push(`gateways that cannot list their resources: ${report.unlistable.join(", ")}`);
        process.stdout.write(`${out.join("\n")}\n`);
      }
      process.exit(report.unfinished.some((u) => u.errors.length > 0) ? 1 : 0);
    } catch (err) {
      reportAndExit(err);
    }
  });

program
  .command("demo")
  .description("run examples/multi-cloud.yaml against in-process fakes of AWS, Azure and Google, and walk one app through it")
  .option("-c, --config <file>", "config to run (default: examples/multi-cloud.yaml)")
  .option("-p, --port <port>", "port (0: a free one)", "8080")
  .option("--no-walkthrough", "only start the fakes and the server")
  .action(async (opts: { config?: string; port: string; walkthrough: boolean }) => {
    try {
      const { runDemo } = await import("./demo.js");
      const { server, clouds } = await runDemo({ ...(opts.config ? { config: opts.config } : {}), port: Number(opts.port), walkthrough: opts.walkthrough });
      const stop = () => {
        void server.close().then(() => clouds.close()).then(() => process.exit(0));
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
    const password = Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
    if (password.length < 12) reportAndExit(new Error("the password must have at least 12 characters"));
    process.stdout.write(`${await hashPassword(password)}\n`);
  });

await program.parseAsync(process.argv);
