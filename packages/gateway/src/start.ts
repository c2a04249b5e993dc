/**
 * How the server starts the embedded gateway from the `embeddedGateway:` block:
 * {@link startEmbeddedGateway} checks the block against the gateways and the store (as
 * `credhook check-config` does), logs its warnings, opens what it needs (the usage-plan counters'
 * pool on the PostgreSQL store, `limits.counters: store`, the default there) and builds the
 * gateway over the `provider: local` gateways' credentials; {@link RunningEmbeddedGateway.serve}
 * then opens its own listener (`listen`) or notes its address under `pathPrefix` on the webhook's
 * port, where the server mounts {@link RunningEmbeddedGateway.mount}.
 */
import type { RequestListener } from "node:http";
import type { Logger, ProviderStateStore } from "@credhook/core/provider";
import { ConfigError } from "@credhook/core/errors";
import {
  countersOf,
  type EmbeddedGatewaySetting,
  embeddedGatewayProblems,
  embeddedGatewayWarnings,
  localReaders,
} from "./checks.js";
import { parseEmbeddedGatewayConfig } from "./config.js";
import { EMBEDDED_GATEWAY_STATE, EmbeddedGateway, type GatewayEndpoint } from "./gateway.js";
import { OAUTH_PATHS } from "./oauth.js";

/** Connections of the usage-plan counters' pool, per instance. */
const COUNTERS_POOL_MAX = 4;
/** How long a counter query waits for a connection, ms. */
const COUNTERS_CONNECT_TIMEOUT_MS = 2_000;

/** The `store.postgres` block: a connection string, or `{ url, schema }`. */
type PostgresBlock = string | { url: string; schema?: string };

/** What {@link startEmbeddedGateway} gets from the server besides the block. */
export interface EmbeddedGatewayContext extends EmbeddedGatewaySetting {
  /** Persistent key–value state in the credential store under `namespace` (the gateway uses `@embedded-gateway`, a name no gateway can have). */
  stateFor(namespace: string): ProviderStateStore;
  /** credhook's data directory (absolute): a generated signing-key encryption key is written there. */
  dataDir: string;
  /** The server's logger (the gateway binds `component: embedded-gateway`). */
  logger: Logger;
  /** Counts one answered request of the gateway's endpoints, for the server's metrics. */
  observe?(endpoint: GatewayEndpoint, status: number): void;
}

/** The started embedded gateway, as the server drives it. */
export interface RunningEmbeddedGateway {
  /**
   * With `pathPrefix`: the handler the server mounts on the webhook's own port, outside its Basic auth,
   * request log and routing; it answers every path under `path` (and sees `req.url` relative to it).
   * Each `aliases` entry maps an exact path outside `path` (GET and HEAD) to the path under it that
   * answers it (RFC 8414 §3.1: the metadata of an issuer with a path lives at
   * `/.well-known/oauth-authorization-server<path>`). Absent with `listen`: the gateway has its own port.
   */
  readonly mount?: { path: string; handler: RequestListener; aliases: Readonly<Record<string, string>> };
  /**
   * Called once the webhook listens: opens the gateway's own listener (`listen`), or notes its address under the webhook's.
   * @param webhook the webhook's port and its URL as bound (`http://0.0.0.0:PORT` on every IPv4 address)
   * @returns the gateway's base URL as bound (its own listener's address, or the webhook's URL + `pathPrefix`)
   * @throws Error when its own port cannot be opened (`code` EADDRINUSE/EACCES and `port`, as node:net's)
   */
  serve(webhook: { port: number; url: string }): Promise<string>;
  /** The OAuth issuer (the public base URL, no trailing slash); "" until {@link serve} when `publicUrl` is not configured. */
  readonly issuer: string;
  /**
   * Stops: closes its listener (in-flight requests get `timeoutMs`, then every connection is closed), its
   * timers and the counters' pool. Idempotent.
   * @param timeoutMs how long in-flight requests get, ms
   */
  close(timeoutMs: number): Promise<void>;
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
 * Starts the embedded gateway (not yet listening): parses the block, checks it against the gateways and
 * the store, logs each warning at `warn` (the ones `check-config` prints), indexes and loads what it needs.
 * @param block the `embeddedGateway:` block, as written or as `parseEmbeddedGatewayConfig` returned it (parsing is idempotent)
 * @throws ConfigError when the block is invalid or does not fit the gateways or the store, or the encryption key does not decrypt the stored signing keys
 * @throws Error when the store, the key file or the counters' database cannot be used; nothing is left open then
 */
export async function startEmbeddedGateway(
  block: unknown,
  context: EmbeddedGatewayContext,
): Promise<RunningEmbeddedGateway> {
  const config = parseEmbeddedGatewayConfig(block);
  const problems = embeddedGatewayProblems(config, context);
  if (problems.length > 0) throw new ConfigError(problems);
  for (const warning of embeddedGatewayWarnings(config, context)) context.logger.warn({}, warning);
  const shared =
    countersOf(config, context.sharedStore) === "store"
      ? await countersPool(context.store.postgres as PostgresBlock, context.logger)
      : undefined;
  let gateway: EmbeddedGateway;
  try {
    gateway = await EmbeddedGateway.create({
      config,
      providers: localReaders(context.gateways),
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
    get issuer() {
      return gateway.publicUrl;
    },
    close(timeoutMs) {
      // Idempotent: a caller may stop the gateway before the app closes it (the pool ends once).
      closing ??= (async () => {
        await gateway.close(timeoutMs);
        await shared?.pool.end();
      })();
      return closing;
    },
  };
}
