/**
 * `credhook demo [--config FILE] [--port N] [--no-walkthrough]`: the multi-cloud demo (demo.ts) on in-process fakes
 * of the five clouds, from the repository only; it keeps serving until SIGTERM or SIGINT.
 */
import type { Command } from "commander";
import { parsePort } from "./common.js";
import { fail } from "./output.js";

/** Registers `credhook demo` on `program`. */
export function register(program: Command): void {
  program
    .command("demo")
    .description(
      "run examples/multi-cloud.yaml against in-process fakes of AWS (API Gateway + Cognito), Azure API Management, Google Cloud API Keys, Kong and Apigee X, and walk one app through it (repository only)",
    )
    .option("-c, --config <file>", "config to run (default: examples/multi-cloud.yaml)")
    .option("-p, --port <port>", "port (0: a free one) (default: $PORT, else 8080)")
    .option("--no-walkthrough", "only start the fakes and the server")
    .action(async (opts: { config?: string; port?: string; walkthrough: boolean }) => {
      try {
        const port =
          opts.port === undefined ? parsePort(process.env.PORT || "8080", "PORT") : parsePort(opts.port, "--port");
        // Loaded when the demo runs, not by every command.
        const { runDemo } = await import("../demo.js");
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
        await fail(err);
      }
    });
}
