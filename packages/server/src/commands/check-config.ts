/**
 * `credhook check-config [--config FILE]`: validates the config (every problem at once), loads every provider and
 * prints the resolved routing table, the key prefix and scan pattern, the event sinks and any warnings, secrets masked
 * (check-config.ts makes the report); exit 1 when the config is invalid.
 */
import type { Command } from "commander";
import { checkConfig, checkConfigReport, configWarnings, describeEmbeddedGatewayBlock } from "../check-config.js";
import { importProviderModule } from "../runtime.js";
import { CONFIG_OPTION, loadConfig } from "./common.js";
import { EXIT, run } from "./output.js";

/** Registers `credhook check-config` on `program`. */
export function register(program: Command): void {
  program
    .command("check-config")
    .description(
      "validate the config (every problem at once), load every provider, and print the routing table, key prefix and scan pattern, event sinks and warnings (secrets masked)",
    )
    .option(...CONFIG_OPTION)
    .action((opts: { config?: string }) =>
      run(async () => {
        const config = await loadConfig(opts.config);
        const gateways = await checkConfig(config, importProviderModule);
        const out = checkConfigReport(
          config,
          gateways,
          describeEmbeddedGatewayBlock(config),
          configWarnings(config, gateways),
        );
        await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
        return { out, code: EXIT.done };
      }),
    );
}
