/**
 * What `provider: local` contributes besides credentials: the embedded gateway, as core's
 * {@link ProviderExtension} for the `embeddedGateway:` block. The server reaches it through
 * core's registry (`BUILTIN_EXTENSIONS`, `loadExtensions`) and this interface alone; everything
 * that knows the gateway's config, its providers and its store needs is here:
 * - the block parsed once into {@link EmbeddedGatewayConfig};
 * - the checks against the gateways and the store (`credhook check-config` and `serve` alike), and the
 *   warnings (the OAuth signing keys' encryption key unset on a shared store);
 * - usage-plan counters on the PostgreSQL store (`limits.counters: store`, the default there):
 *   a small pool of its own on the store's database, closed with the gateway;
 * - its own listener (`listen`), or its handler mounted under `pathPrefix` on the webhook's port.
 */
import type {
  ExtensionCheckContext,
  ExtensionContext,
  Logger,
  Provider,
  ProviderExtension,
  RunningExtension,
} from "@credhook/core/provider";
import type { LocalProvider } from "./index.js";
import { type EmbeddedGatewayConfig, parseEmbeddedGatewayConfig } from "./gateway/config.js";
import { EMBEDDED_GATEWAY_STATE, EmbeddedGateway, GENERATED_KEK_FILE } from "./gateway/index.js";
import { OAUTH_PATHS } from "./gateway/oauth.js";

/** The config key of the embedded gateway, as core's `BUILTIN_EXTENSIONS` names it. */
export const EMBEDDED_GATEWAY_KEY = "embeddedGateway";

/** Connections of the usage-plan counters' pool, per instance. */
const COUNTERS_POOL_MAX = 4;
/** How long a counter query waits for a connection, ms. */
const COUNTERS_CONNECT_TIMEOUT_MS = 2_000;

/** The `store.postgres` block: a connection string, or `{ url, schema }`. */
type PostgresBlock = string | { url: string; schema?: string };

/**
 * What keeps `embeddedGateway:` from working with the gateways and the store (its own block is
 * validated by {@link parseEmbeddedGatewayConfig}).
 * @returns one message per problem, naming its YAML path; empty when none
 */
export function embeddedGatewayProblems(config: EmbeddedGatewayConfig, context: ExtensionCheckContext): string[] {
  const problems: string[] = [];
  if (context.providers.length === 0) {
    problems.push(
      "embeddedGateway: no gateway uses provider: local, so the embedded gateway would have nothing to enforce; remove embeddedGateway or add a local gateway",
    );
  }
  if (
    (config.limits.counters ?? (context.sharedStore ? "store" : "memory")) === "store" &&
    context.store.postgres === undefined
  ) {
    problems.push(
      "embeddedGateway.limits.counters: store keeps usage-plan counters on the PostgreSQL store, but store: is not postgres (one SQLite instance counts every request in memory: use counters: memory)",
    );
  }
  return problems;
}

/**
 * What works as configured but goes wrong once several instances share the store: a
 * client-credentials gateway's signing keys kept in the PostgreSQL store (no `keyFile`) without a
 * configured `encryptionKey`, so that each instance would generate its own key into its data
 * directory and the second could not decrypt what the first stored (it refuses to start).
 * @param clientCredentials whether a `provider: local` gateway issues CLIENT_CREDENTIALS (the OAuth endpoints, and their signing keys, are on)
 * @returns one message per warning, naming its YAML path and the fix; empty when none
 */
export function embeddedGatewayWarnings(
  config: EmbeddedGatewayConfig,
  context: ExtensionCheckContext,
  clientCredentials: boolean,
): string[] {
  const shared = context.sharedStore || context.store.postgres !== undefined;
  const s = config.oauth.signing;
  if (!shared || !clientCredentials || s.keyFile || s.encryptionKey) return [];
  const option = "embeddedGateway.oauth.signing.encryptionKey";
  return [
    `${option} is not set on a store that several instances share (PostgreSQL): each instance generates its own key into ` +
      `${GENERATED_KEK_FILE} in its data directory to encrypt the OAuth signing keys in the store, so an instance with another ` +
      `data directory cannot decrypt them and refuses to start. Set ${option} to the same key on every instance: ` +
      `base64 of 32 bytes (openssl rand -base64 32), e.g. from a Kubernetes Secret`,
  ];
}

/** What `credhook check-config` prints about `embeddedGateway:`. */
export function describeEmbeddedGateway(gw: EmbeddedGatewayConfig): string[] {
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
 * A pool on the PostgreSQL store's database for the shared usage-plan counters. `pg` is loaded
 * only here: the embedded default (SQLite) never loads it.
 */
async function countersPool(store: PostgresBlock, logger: Logger) {
  const { url, schema } = typeof store === "string" ? { url: store, schema: undefined } : store;
  const { default: pg } = await import("pg");
  const pool = new pg.Pool({
    connectionString: url,
    max: COUNTERS_POOL_MAX,
    connectionTimeoutMillis: COUNTERS_CONNECT_TIMEOUT_MS,
  });
  pool.on("error", (err) =>
    logger.warn(
      { err: err.message },
      "embedded gateway: PostgreSQL connection of the usage-plan counters lost; the pool reconnects",
    ),
  );
  return { pool, sharedLimits: { storeClient: pool, schemaName: schema ?? "credhook" } };
}

/**
 * The embedded gateway as `provider: local`'s extension.
 * @param isLocal tells the providers of this package (every one core hands it is: the guard only types them)
 */
export function embeddedGatewayExtension(
  isLocal: (p: Provider) => p is LocalProvider,
): ProviderExtension<EmbeddedGatewayConfig> {
  return {
    configKey: EMBEDDED_GATEWAY_KEY,
    parseConfig: parseEmbeddedGatewayConfig,
    problems: embeddedGatewayProblems,
    warnings: (config, context) =>
      embeddedGatewayWarnings(
        config,
        context,
        context.providers.some(({ provider: p }) => isLocal(p) && p.credentialType === "CLIENT_CREDENTIALS"),
      ),
    describe: describeEmbeddedGateway,
    async start(config: EmbeddedGatewayConfig, context: ExtensionContext): Promise<RunningExtension> {
      const providers = context.providers.map((p) => p.provider).filter(isLocal);
      const counters = config.limits.counters ?? (context.sharedStore ? "store" : "memory");
      const shared =
        counters === "store" ? await countersPool(context.store.postgres as PostgresBlock, context.logger) : undefined;
      let gateway: EmbeddedGateway;
      try {
        gateway = await EmbeddedGateway.create({
          config,
          providers,
          state: context.stateFor(EMBEDDED_GATEWAY_STATE),
          dataDir: context.dataDir,
          logger: context.logger.child({ component: "embedded-gateway" }),
          ...(shared ? { sharedLimits: shared.sharedLimits } : {}),
          ...(context.observe ? { observe: context.observe } : {}),
        });
      } catch (err) {
        await shared?.pool.end();
        throw err;
      }
      const prefix = config.pathPrefix;
      let closing: Promise<void> | undefined;
      return {
        ...(prefix
          ? {
              mount: {
                path: prefix,
                handler: gateway.handler,
                // RFC 8414 §3.1: for an issuer with a path, metadata lives at /.well-known/oauth-authorization-server<path>.
                aliases: { [`${OAUTH_PATHS.metadata}${prefix}`]: OAUTH_PATHS.metadata },
              },
            }
          : {}),
        async serve(webhook) {
          let url: string;
          if (prefix) {
            url = webhook.url + prefix;
            if (!config.publicUrl) gateway.setPublicUrl(`http://localhost:${webhook.port}${prefix}`);
          } else {
            url = await gateway.listen();
          }
          if (!config.publicUrl && context.sharedStore) {
            context.logger.warn(
              { issuer: gateway.publicUrl },
              "embeddedGateway.publicUrl is not set: each instance on this shared store has its own OAuth issuer, so a token from one is not valid on another; set it to the address clients use",
            );
          }
          return url;
        },
        describe: () => ({ issuer: gateway.publicUrl }),
        close(timeoutMs) {
          // Idempotent: a caller may stop the gateway before the app closes it (the pool ends once).
          closing ??= (async () => {
            await gateway.close(timeoutMs);
            await shared?.pool.end();
          })();
          return closing;
        },
      };
    },
  };
}
