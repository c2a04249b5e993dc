/**
 * `credhook check-config [--config FILE]`: validates the config (every problem at once), loads every provider and
 * prints the resolved routing table, the key prefix and scan pattern, the event sinks and any warnings, secrets masked
 * (check-config.ts makes the report), then reads the store when it can and counts the live credentials that differ
 * from the config (drift-check.ts); exit 1 when the config is invalid or drops a gateway that still holds live
 * credentials.
 */
import type { Command } from "commander";
import { checkConfig, checkConfigReport, configWarnings, describeEmbeddedGatewayBlock } from "../check-config.js";
import { assertNoStrandedGateway, checkStoreDrift, driftLine, retiredRouteWarnings } from "../drift-check.js";
import { importProviderModule, openStore } from "../runtime.js";
import type { Logger } from "@credhook/core";
import { CONFIG_OPTION, commandLogger, loadConfig } from "./common.js";
import { EXIT, run } from "./output.js";

/** Registers `credhook check-config` on `program`. */
export function register(program: Command): void {
  program
    .command("check-config")
    .description(
      "validate the config (every problem at once), load every provider, and print the routing table, key prefix and scan pattern, event sinks and warnings (secrets masked); read the store when it can and count the credentials that differ from the config; exit 1 when the config drops a gateway that still holds live credentials",
    )
    .option(...CONFIG_OPTION)
    .action((opts: { config?: string }) =>
      run(async () => {
        const config = await loadConfig(opts.config);
        const gateways = await checkConfig(config, importProviderModule);
        try {
          const drift = await checkStoreDrift(config, gateways, (c) =>
            openStore(c, commandLogger() as unknown as Logger),
          );
          if ("summary" in drift) assertNoStrandedGateway(drift.summary);
          const out = checkConfigReport(
            config,
            gateways,
            describeEmbeddedGatewayBlock(config),
            [...configWarnings(config, gateways), ...retiredRouteWarnings(config)],
            [
              "summary" in drift
                ? driftLine(drift.summary)
                : `credentials: not checked against the config: ${drift.skipped}`,
            ],
          );
          return { out, code: EXIT.done };
        } finally {
          await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
        }
      }),
    );
}
