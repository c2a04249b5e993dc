/**
 * The one validation of a loaded configuration beyond its schema, shared by
 * `credhook check-config` and `credhook serve` (which makes the same checks
 * before it opens anything else), so that a file `serve` refuses is never
 * reported valid: every gateway's provider loaded with its options, the routes,
 * and the embedded gateway's fit with the gateways and the store.
 */
import { ConfigError } from "@credhook/core/errors";
import {
  createRouter,
  loadGateways,
  silentLogger,
  type CredhookConfig,
  type Gateway,
  type Logger,
} from "@credhook/core";
import { memoryStateStore } from "@credhook/core/provider-kit";
import { LocalProvider } from "@credhook/provider-local";
import { userPasswordProblems } from "./passwords.js";

/**
 * What keeps `embeddedGateway:` from working with the rest of the configuration
 * (its own block is validated when the file is loaded).
 * @param gateways the loaded gateways, by name
 * @param sharedStore whether the store is shared by instances (then counters default to `store`); unknown before it is opened
 * @returns one message per problem, naming its YAML path; empty when none
 */
export function embeddedGatewayProblems(
  config: CredhookConfig,
  gateways: Map<string, Gateway>,
  sharedStore = false,
): string[] {
  const gw = config.embeddedGateway as { limits?: { counters?: string } } | undefined;
  if (!gw) return [];
  const problems: string[] = [];
  if (![...gateways.values()].some((g) => g.provider instanceof LocalProvider)) {
    problems.push(
      "embeddedGateway: no gateway uses provider: local, so the embedded gateway would have nothing to enforce; remove embeddedGateway or add a local gateway",
    );
  }
  if (
    (gw.limits?.counters ?? (sharedStore ? "store" : "memory")) === "store" &&
    (config.store as { postgres?: unknown }).postgres === undefined
  ) {
    problems.push(
      "embeddedGateway.limits.counters: store keeps usage-plan counters on the PostgreSQL store, but store: is not postgres (one SQLite instance counts every request in memory: use counters: memory)",
    );
  }
  return problems;
}

/**
 * Runs every check of `config` that needs no store and no listener: loads each
 * gateway's provider (options validated, state in memory), builds the router,
 * checks the configured passwords against the password policy and the embedded gateway
 * against the gateways and the store.
 * @param importModule how provider packages are imported (the server's `importProviderModule`)
 * @returns the loaded gateways (close their providers when done)
 * @throws ConfigError listing every problem with its YAML path
 */
export async function checkConfig(
  config: CredhookConfig,
  importModule: (specifier: string) => Promise<unknown>,
): Promise<Map<string, Gateway>> {
  const gateways = await loadGateways(config, {
    importModule,
    logger: silentLogger as Logger,
    stateFor: () => memoryStateStore(),
  });
  try {
    createRouter(config.routes);
    const problems = [...userPasswordProblems(config.server.auth.users), ...embeddedGatewayProblems(config, gateways)];
    if (problems.length > 0) throw new ConfigError(problems);
    return gateways;
  } catch (err) {
    await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
    throw err;
  }
}
