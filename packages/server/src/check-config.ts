/**
 * The one validation of a loaded configuration beyond its schema, shared by
 * `credhook check-config` and `credhook serve` (which makes the same checks
 * before it opens anything else), so that a file `serve` refuses is never
 * reported valid: every gateway's provider loaded with its options, the routes,
 * and the embedded gateway's fit with the gateways and the store.
 */
import {
  ConfigError,
  createRouter,
  loadGateways,
  maskSecretOptions,
  memoryStateStore,
  silentLogger,
  type CredhookConfig,
  type Gateway,
  type Logger,
} from "@credhook/core";
import { LocalProvider } from "@credhook/provider-local";
import type { EmbeddedGatewayConfig } from "@credhook/provider-local/gateway";
import { maskSecrets, type LoadedConfig } from "./config.js";
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

/** What `check-config` prints about `embeddedGateway:`. */
function embeddedGatewaySummary(gw: EmbeddedGatewayConfig | undefined): string[] {
  if (!gw) return ["embedded gateway: off (no embeddedGateway: block)"];
  const base = gw.pathPrefix
    ? `path prefix ${gw.pathPrefix} on the webhook's port`
    : `own port ${gw.listen!.host}:${gw.listen!.port}`;
  const k = gw.keyCheck;
  const rules = k.apis.map((r) => `${r.pathPrefix} -> ${r.api}`).join(", ");
  const s = gw.oauth.signing;
  return [
    `embedded gateway: ${base}${gw.publicUrl ? `, public URL ${gw.publicUrl}` : ""}`,
    `  key check: ${gw.pathPrefix ?? ""}/check; key from header ${k.header}${k.queryParam ? ` or query parameter ${k.queryParam}` : ""}${k.bearer ? ", or a Bearer access token" : ""}`,
    `  API from: ${[k.apiHeader ? `header ${k.apiHeader}` : "", rules ? `path rules ${rules}` : ""].filter(Boolean).join(", then ") || "nothing configured (every check is 403 until keyCheck.apis or keyCheck.apiHeader is set)"}`,
    `  usage-plan counters: ${gw.limits.counters ?? "store on PostgreSQL, else memory"}`,
    `  OAuth: token lifetime ${gw.oauth.tokenTtlS} s, ${s.alg} keys in ${s.keyFile ?? "the store (encrypted)"}, ${s.rotateAfterDays > 0 ? `rotated every ${s.rotateAfterDays} days` : "never rotated"}`,
  ];
}

/**
 * A gateway's options as credhook prints them: every option its provider's schema marks secret
 * (`writeOnly: true`, see core's `maskSecretOptions`) masked, then any value whose name suggests a
 * secret (`maskSecrets`: passwords, tokens, keys, connection strings).
 * @param gateway the loaded gateway (its provider's `optionsSchema`); undefined: name-based masking only
 * @param options the gateway's `options:` block as written
 */
export function printableOptions(gateway: Gateway | undefined, options: unknown): unknown {
  return maskSecrets(gateway?.optionsSchema ? maskSecretOptions(gateway.optionsSchema, options) : options);
}

/**
 * What `credhook check-config` prints for a configuration {@link checkConfig} accepted: the
 * config file, each gateway with its provider's capabilities and its options (secrets masked,
 * {@link printableOptions}), the routes, the embedded gateway, the server and the store.
 * @param gateways what {@link checkConfig} returned for `config`
 * @returns the report's lines, each ending in a line break
 */
export function checkConfigReport(config: LoadedConfig, gateways: Map<string, Gateway>): string {
  const out: string[] = [
    `config: ${config.configFile}${config.embeddedDefault ? " (embedded default: no config file found)" : ""}`,
    "",
    "gateways:",
  ];
  for (const [name, g] of Object.entries(config.gateways)) {
    const gateway = gateways.get(name);
    const caps = gateway!.provider.capabilities;
    out.push(
      `  ${name}: provider=${g.provider} credentialType=${g.credentialType} importsApiKeyValue=${caps.importsApiKeyValue} readsBackSecret=${caps.readsBackSecret}`,
    );
    out.push(`    options: ${JSON.stringify(printableOptions(gateway, g.options))}`);
  }
  out.push("", "routes (first match wins):");
  config.routes.forEach(
    (r, i) =>
      void out.push(
        `  ${i + 1}. ${"default" in r ? `* (default) -> ${r.default}` : `${r.apis.join(", ")} -> ${r.gateway}`}`,
      ),
  );
  out.push("", ...embeddedGatewaySummary(config.embeddedGateway as EmbeddedGatewayConfig | undefined));
  out.push(
    "",
    `server: ${JSON.stringify(maskSecrets(config.server))}`,
    `store: ${JSON.stringify(maskSecrets(config.store))}`,
    "",
    "configuration is valid",
  );
  return `${out.join("\n")}\n`;
}
