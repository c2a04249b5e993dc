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
  apiKeyScanPattern,
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
 * Runs every check of `config` that needs no store and no listener, beyond what loading the file checked
 * (`loadConfigFile`: the schema, the routes, each package and its options): creates each gateway's provider
 * (state in memory: a provider's own start-up checks, its credential type), builds the router, checks the configured
 * passwords against the password policy and the embedded gateway's block against the gateways and
 * the store (`@credhook/gateway`'s checks), and GitHub's public keys of `secretScanning.github` (each a P-256 public key,
 * its file readable) — and reports what all of them found at once.
 * @param importModule how provider packages are imported (the server's `importProviderModule`)
 * @returns the loaded gateways (close their providers when done)
 * @throws ConfigError listing every problem with its YAML path
 */
export async function checkConfig(
  config: CredhookConfig,
  importModule: (specifier: string) => Promise<unknown>,
): Promise<Map<string, Gateway>> {
  const problems = [...userPasswordProblems(config.server.auth.users)];
  const collect = (err: unknown) => {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.messages);
  };
  try {
    githubKeysOf(config.secretScanning?.github, (config as { configFile?: string }).configFile);
  } catch (err) {
    collect(err);
  }
  let gateways: Map<string, Gateway> | undefined;
  try {
    gateways = await loadGateways(config, {
      importModule,
      logger: silentLogger as Logger,
      stateFor: () => memoryStateStore(),
    });
  } catch (err) {
    collect(err);
  }
  if (!gateways) throw new ConfigError(problems);
  try {
    createRouter(config.routes);
    if (config.embeddedGateway) {
      const block = parseEmbeddedGatewayConfig(config.embeddedGateway);
      problems.push(...embeddedGatewayProblems(block, gatewaySetting(config, gateways)));
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
 * A sink's URL as credhook prints it: a password in its user-info and every query value (webhook URLs often carry a
 * token there) masked as `****`.
 */
export function printableUrl(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "****";
  for (const key of new Set(u.searchParams.keys())) u.searchParams.set(key, "****");
  // URLSearchParams percent-encodes what it writes: show the mask as it is written.
  return u.href.replaceAll("%2A%2A%2A%2A", "****");
}

/**
 * `credhook check-config`'s lines on the credential events (docs/events.md): each sink (its `name` when it has one,
 * its URL with {@link printableUrl}, the event types it takes, its time-out; its signing secret as `****`), or that
 * there is none, then the retention, polling, batch size and retries.
 */
export function describeEvents(config: Pick<CredhookConfig, "events">): string[] {
  const { sinks, retentionDays, pollIntervalMs, batchSize, retry } = config.events;
  return [
    sinks.length === 0
      ? "events.sinks: none (events are kept for `credhook audit` only)"
      : "events.sinks (each event POSTed, signed per Standard Webhooks):",
    ...sinks.map(
      (sink) =>
        `  ${sink.name ? `${sink.name}: ` : ""}${printableUrl(sink.url)} secret=**** types=${sink.types?.join(",") ?? "all"} timeoutMs=${sink.timeoutMs}`,
    ),
    `events: retentionDays=${retentionDays} pollIntervalMs=${pollIntervalMs} batchSize=${batchSize} retry=${JSON.stringify(retry)}`,
  ];
}

/**
 * `credhook check-config`'s lines on the API key format (docs/leak-response.md): `keys.prefix`, and the regular
 * expression a secret scanner registers to find the keys (`apiKeyScanPattern`: GitHub secret scanning's partner
 * program or custom patterns, gitleaks, trufflehog).
 */
export function describeKeys(config: Pick<CredhookConfig, "keys">): string[] {
  return [
    `keys.prefix: ${config.keys.prefix} (generated API keys: the prefix, 40 random base62 characters and a 6-character checksum)`,
    `  secret-scanning pattern to register (GitHub, gitleaks, trufflehog): ${apiKeyScanPattern(config.keys.prefix)}`,
  ];
}

/**
 * What `credhook check-config` prints for a configuration {@link checkConfig} accepted: the
 * config file, each gateway with its provider's capabilities and its options (secrets masked,
 * {@link printableOptions}), the routes, the embedded gateway, the secret-scanning endpoint, the
 * key prefix and the pattern to register with secret scanners ({@link describeKeys}), the event sinks
 * ({@link describeEvents}), the expiry policies, the server and the store.
 * @param gateways what {@link checkConfig} returned for `config`
 * @param gatewayLines what {@link describeEmbeddedGatewayBlock} says of the embedded gateway
 * @param warnings what {@link configWarnings} says: a `warnings:` section before the verdict, when any
 * @param storeLines what the store's credentials say against the config (drift-check.ts), after the store's line
 * @returns the report's lines, each ending in a line break
 */
export function checkConfigReport(
  config: LoadedConfig,
  gateways: Map<string, Gateway>,
  gatewayLines: string[],
  warnings: readonly string[] = [],
  storeLines: readonly string[] = [],
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
      `  ${name}: provider=${g.provider} credentialType=${g.credentialType} importsApiKeyValue=${caps.importsApiKeyValue} readsBackSecret=${caps.readsBackSecret}${g.retired ? " retired (no new credentials)" : ""}`,
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
  out.push(
    "",
    ...gatewayLines,
    describeSecretScanning(config),
    ...describeKeys(config),
    ...describeEvents(config),
    ...describeExpiry(config),
  );
  out.push(
    "",
    `server: ${JSON.stringify(maskSecrets(config.server))}`,
    `store: ${JSON.stringify(maskSecrets(config.store))}`,
    ...storeLines,
    "",
  );
  if (warnings.length > 0) out.push("warnings:", ...warnings.map((w) => `  - ${w}`), "");
  out.push("configuration is valid");
  return `${out.join("\n")}\n`;
}
