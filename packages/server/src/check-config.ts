/**
 * The one validation of a loaded configuration beyond its schema, shared by
 * `credhook check-config` and `credhook serve` (which makes the same checks
 * before it opens anything else), so that a file `serve` refuses is never
 * reported valid: every gateway's provider loaded with its options, the routes,
 * the embedded gateway's fit with the gateways and the store, and the secret-scanning
 * alerts' keys.
 */
import { ConfigError } from "@credhook/core/errors";
import {
  createRouter,
  loadGateways,
  maskSecretOptions,
  resolveExpiryPolicies,
  silentLogger,
  type CredhookConfig,
  type Gateway,
  type Logger,
} from "@credhook/core";
import { memoryStateStore } from "@credhook/core/provider-kit";
import {
  describeEmbeddedGateway,
  type EmbeddedGatewaySetting,
  embeddedGatewayProblems,
  embeddedGatewayWarnings,
  parseEmbeddedGatewayConfig,
} from "@credhook/gateway";
import { maskSecrets, type LoadedConfig } from "./config.js";
import { userPasswordProblems } from "./passwords.js";
import { describeSecretScanning, githubKeysOf } from "./secret-scanning.js";

/** What `credhook check-config` prints about `embeddedGateway:`: its own lines, or that it is off. */
export function describeEmbeddedGatewayBlock(config: CredhookConfig): string[] {
  return config.embeddedGateway
    ? describeEmbeddedGateway(parseEmbeddedGatewayConfig(config.embeddedGateway))
    : ["embeddedGateway: off (no embeddedGateway: block)"];
}

/** The setting the `embeddedGateway:` block is checked against before the store is opened (`sharedStore` unknown: false). */
function gatewaySetting(config: CredhookConfig, gateways: Map<string, Gateway>): EmbeddedGatewaySetting {
  return { gateways, store: config.store, sharedStore: false };
}

/**
 * What `credhook check-config` warns of (it prints them under `warnings:`, `serve` logs them when it
 * starts): the embedded gateway's, such as its OAuth signing keys on PostgreSQL without one configured
 * encryption key for every instance.
 * @param gateways the loaded gateways (from {@link checkConfig})
 * @returns one message per warning, naming its YAML path and the fix
 */
export function configWarnings(config: CredhookConfig, gateways: Map<string, Gateway>): string[] {
  return config.embeddedGateway
    ? embeddedGatewayWarnings(parseEmbeddedGatewayConfig(config.embeddedGateway), gatewaySetting(config, gateways))
    : [];
}

/**
 * Runs every check of `config` that needs no store and no listener: loads each
 * gateway's provider (options validated, state in memory), builds the router,
 * checks the configured passwords against the password policy and the embedded gateway's block
 * against the gateways and the store (`@credhook/gateway`'s checks), and GitHub's
 * public keys of `secretScanning.github` (each a P-256 public key, its file readable).
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
    const problems = userPasswordProblems(config.server.auth.users);
    if (config.embeddedGateway) {
      const block = parseEmbeddedGatewayConfig(config.embeddedGateway);
      problems.push(...embeddedGatewayProblems(block, gatewaySetting(config, gateways)));
    }
    try {
      githubKeysOf(config.secretScanning?.github, (config as { configFile?: string }).configFile);
    } catch (err) {
      problems.push(...(err instanceof ConfigError ? err.messages : [String(err)]));
    }
    if (problems.length > 0) throw new ConfigError(problems);
    return gateways;
  } catch (err) {
    await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
    throw err;
  }
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

/** `credhook check-config`'s lines on expiry: each policy (gateway, or gateway and plan) with its age, warning and action. */
export function describeExpiry(config: Pick<CredhookConfig, "gateways">): string[] {
  const { policies } = resolveExpiryPolicies(config.gateways);
  const lines = Object.values(policies).flatMap((g) =>
    [...(g.policy ? [g.policy] : []), ...Object.values(g.plans)].map(
      (p) => `  ${p.path}: maxAgeDays=${p.maxAgeDays} warnDays=${p.warnDays} action=${p.action}`,
    ),
  );
  return lines.length === 0 ? ["expiry: off (no gateway has an expiry block)"] : ["expiry:", ...lines];
}

/**
 * What `credhook check-config` prints for a configuration {@link checkConfig} accepted: the
 * config file, each gateway with its provider's capabilities and its options (secrets masked,
 * {@link printableOptions}), the routes, the embedded gateway, the server and the store.
 * @param gateways what {@link checkConfig} returned for `config`
 * @param gatewayLines what {@link describeEmbeddedGatewayBlock} says of the embedded gateway
 * @param warnings what {@link configWarnings} says: a `warnings:` section before the verdict, when any
 * @returns the report's lines, each ending in a line break
 */
export function checkConfigReport(
  config: LoadedConfig,
  gateways: Map<string, Gateway>,
  gatewayLines: string[],
  warnings: readonly string[] = [],
): string {
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
  out.push("", ...gatewayLines, describeSecretScanning(config), ...describeExpiry(config));
  out.push(
    "",
    `server: ${JSON.stringify(maskSecrets(config.server))}`,
    `store: ${JSON.stringify(maskSecrets(config.store))}`,
    "",
  );
  if (warnings.length > 0) out.push("warnings:", ...warnings.map((w) => `  - ${w}`), "");
  out.push("configuration is valid");
  return `${out.join("\n")}\n`;
}
