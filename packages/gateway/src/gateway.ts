/**
 * The embedded gateway: the enforcement point for what the `provider: local` gateways issue,
 * for the proxies operators already run.
 *
 * | endpoint (relative to its base) | what |
 * |---|---|
 * | `ANY /check`, `ANY /check/<path>` | key check for NGINX `auth_request` / Envoy `ext_authz` |
 * | `POST /oauth2/token` | OAuth 2.0 client credentials (RFC 6749 §4.4), JWT access tokens (RFC 9068) |
 * | `POST /oauth2/introspect` | token introspection (RFC 7662) |
 * | `GET /.well-known/jwks.json` | the signing keys (RFC 7517) |
 * | `GET /.well-known/oauth-authorization-server` | metadata (RFC 8414) |
 * | `GET /.well-known/openid-configuration` | the same metadata, where OpenID Connect discovery looks |
 *
 * It serves on its own port (`embeddedGateway.listen`) or under a path prefix of the webhook's
 * port (`embeddedGateway.pathPrefix`) — never behind the webhook's Basic auth; `start.ts` is how
 * the server starts it.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { drainHttpServer } from "@credhook/core";
import type { Logger, ProviderStateStore } from "@credhook/core/provider";
import type { LocalCredentialReader } from "@credhook/provider-local";
import type { EmbeddedGatewayConfig } from "./config.js";
import { CredentialDirectory } from "./directory.js";
import { sendProblem, splitTarget } from "./http.js";
import { KEY_CHECK_PATH, KeyCheck, type CheckStatus } from "./key-check.js";
import { PlanLimiter, type SharedLimitsBackend } from "./limits.js";
import { OAUTH_PATHS, OAuthServer } from "./oauth.js";
import {
  EncryptedStoreKeyStorage,
  FileKeyStorage,
  GENERATED_KEK_FILE,
  type KekOrigin,
  SigningKeys,
  type SigningKeyStorage,
} from "./signing-keys.js";

/** Name of the provider-state namespace the embedded gateway keeps its own state in (signing keys); no gateway can have it. */
export const EMBEDDED_GATEWAY_STATE = "@embedded-gateway";

/** The endpoint a request was for, for metrics. */
export type GatewayEndpoint = "check" | "token" | "introspection" | "jwks" | "metadata" | "other";

/** Options of {@link EmbeddedGateway.create}. */
export interface EmbeddedGatewayOptions {
  config: EmbeddedGatewayConfig;
  /** Every `provider: local` gateway's credentials (API-key and client-credentials ones), as provider-local's `localCredentialReader` gives them. */
  providers: LocalCredentialReader[];
  /** Provider-state namespace for the gateway's own state: `store.stateFor(EMBEDDED_GATEWAY_STATE)`. */
  state: ProviderStateStore;
  /** credhook's data directory (for a generated signing-key encryption key). */
  dataDir: string;
  logger: Logger;
  /** Usage-plan counters on the shared PostgreSQL store; absent: in memory, per instance. */
  sharedLimits?: SharedLimitsBackend;
  /** Called once per answered request (metrics). */
  observe?: (endpoint: GatewayEndpoint, status: number) => void;
  /** Clock of the signing keys' rotation, epoch ms. @default Date.now */
  now?: () => number;
}

/**
 * The key-encryption key and where it came from: configured, else read from (or generated into)
 * `<dataDir>/oauth-signing.kek`.
 */
function keyEncryptionKey(
  configured: string | undefined,
  dataDir: string,
  logger: Logger,
): { kek: Buffer; origin: KekOrigin } {
  if (configured) return { kek: Buffer.from(configured, "base64"), origin: { configured: true } };
  const file = join(dataDir, GENERATED_KEK_FILE);
  const origin: KekOrigin = { configured: false, file };
  try {
    const kek = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
    if (kek.length !== 32) throw new Error(`${file} does not hold base64 of 32 bytes`);
    return { kek, origin };
  } catch (err) {
    if ((err as { code?: string }).code !== "ENOENT") throw err;
  }
  const kek = randomBytes(32);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(file, `${kek.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  logger.warn(
    { file },
    "generated the key that encrypts the OAuth signing keys in the store; set embeddedGateway.oauth.signing.encryptionKey to share it between instances",
  );
  return { kek, origin };
}

/** The embedded gateway: key check, OAuth endpoints and plan limits over the embedded providers' credentials. */
export class EmbeddedGateway {
  readonly directory: CredentialDirectory;
  readonly limiter: PlanLimiter;
  readonly keyCheck: KeyCheck;
  /** Undefined when no `provider: local` gateway issues client credentials. */
  readonly oauth: OAuthServer | undefined;
  /** Undefined as {@link oauth}. */
  readonly signingKeys: SigningKeys | undefined;
  private issuer = "";
  private server: Server | undefined;
  private keyTimer: NodeJS.Timeout | undefined;
  /** Stops the background pass that adds credential-id entries ({@link EmbeddedGateway.create}). */
  private readonly indexing = new AbortController();
  /** That pass, settled (it logs its own failure). */
  private indexed: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly options: EmbeddedGatewayOptions,
    signingKeys: SigningKeys | undefined,
    limiter: PlanLimiter,
  ) {
    const { config, providers, logger } = options;
    this.limiter = limiter;
    const basePath = config.pathPrefix ?? "";
    this.directory = new CredentialDirectory(providers, {
      maxEntries: config.keyCheck.cache.maxEntries,
      ttlMs: config.keyCheck.cache.ttlS * 1000,
      coherenceIntervalMs: config.keyCheck.cache.coherenceIntervalMs,
      logger,
    });
    this.signingKeys = signingKeys;
    this.oauth = signingKeys
      ? new OAuthServer({
          config: config.oauth,
          directory: this.directory,
          limiter: this.limiter,
          keys: signingKeys,
          issuer: () => this.issuer,
          logger,
        })
      : undefined;
    this.keyCheck = new KeyCheck({
      config: config.keyCheck,
      directory: this.directory,
      limiter: this.limiter,
      oauth: config.keyCheck.bearer ? this.oauth : undefined,
      logger,
      basePath,
      ...(options.observe ? { observe: (s: CheckStatus) => options.observe!("check", s) } : {}),
    });
    if (config.publicUrl) this.setPublicUrl(config.publicUrl);
  }

  /**
   * Builds the gateway: indexes credentials created before the indexes existed,
   * loads (or generates) the signing keys when a client-credentials gateway
   * exists, and starts the cache's coherence check.
   * @throws ConfigError when the encryption key (configured, or generated into the data dir) does not decrypt the stored signing keys: the message names the fix
   * @throws Error when the store or the key file cannot be read or written
   */
  static async create(options: EmbeddedGatewayOptions): Promise<EmbeddedGateway> {
    const { config, providers, logger } = options;
    for (const p of providers) {
      // An API key gateway's keys get their key entry before a key check is answered (it reads them).
      const added = await p.ensureKeyIndex({ credentialIds: false });
      if (added > 0) logger.info({ gateway: p.gatewayName, added }, "embedded gateway: indexed existing API keys");
    }
    let keys: SigningKeys | undefined;
    if (providers.some((p) => p.credentialType === "CLIENT_CREDENTIALS")) {
      const s = config.oauth.signing;
      let storage: SigningKeyStorage;
      if (s.keyFile) storage = new FileKeyStorage(s.keyFile, s.alg);
      else {
        const { kek, origin } = keyEncryptionKey(s.encryptionKey, options.dataDir, logger);
        storage = new EncryptedStoreKeyStorage(options.state, kek, origin);
      }
      keys = new SigningKeys({
        storage,
        alg: s.alg,
        rotateAfterMs: s.rotateAfterDays * 86_400_000,
        publishAheadMs: s.publishAheadS * 1000,
        retainMs: (config.oauth.tokenTtlS + 300) * 1000,
        logger,
        ...(options.now ? { now: options.now } : {}),
      });
      await keys.init();
    }
    if (
      config.keyCheck.apis.length === 0 &&
      !config.keyCheck.apiHeader &&
      providers.some((p) => p.credentialType === "API_KEY")
    ) {
      logger.warn(
        { apis: 0 },
        "embedded gateway: embeddedGateway.keyCheck.apis is empty and no apiHeader is set, so every key check answers 403 (no API for the path); add { pathPrefix, api } rules",
      );
    }
    const limiter = new PlanLimiter(options.sharedLimits);
    await limiter.init();
    if (providers.some((p) => p.limitedPlans().size > 0))
      logger.info({ counters: limiter.description }, "embedded gateway: usage-plan limits enforced");
    const gateway = new EmbeddedGateway(options, keys, limiter);
    await gateway.directory.start();
    // The credential-id entries of credentials made before that index existed: in the background, a page at a time
    // (a search by credential id reads every credential until the index is complete, so nothing waits for it). The
    // first start after an upgrade is not held back by it; a pass stopped by close() goes on at the next start.
    const { signal } = gateway.indexing;
    gateway.indexed = Promise.all(
      providers.map((p) =>
        p.ensureKeyIndex({ keys: false, signal }).then(
          (added) => {
            if (added > 0 && !signal.aborted)
              logger.info({ gateway: p.gatewayName, added }, "embedded gateway: indexed existing credentials by id");
          },
          (err: unknown) => {
            if (!signal.aborted)
              logger.warn(
                { gateway: p.gatewayName, err: { message: (err as Error).message } },
                "embedded gateway: indexing existing credentials by id failed; the next start tries again",
              );
          },
        ),
      ),
    );
    if (keys) {
      gateway.keyTimer = setInterval(() => {
        keys
          .tick()
          .catch((err: unknown) =>
            logger.error(
              { err: { message: (err as Error).message } },
              "embedded gateway: signing-key rotation failed; the current key keeps signing",
            ),
          );
      }, 60_000);
      gateway.keyTimer.unref();
    }
    return gateway;
  }

  /** The public base URL (OAuth issuer), without trailing slash; "" until set. */
  get publicUrl(): string {
    return this.issuer;
  }

  /**
   * Sets the public base URL: the OAuth issuer, and `<url>/oauth2/token` as the
   * `tokenUrl` the client-credentials providers return (unless their own
   * `tokenUrl` option is set).
   */
  setPublicUrl(url: string): void {
    this.issuer = url.replace(/\/+$/, "");
    for (const p of this.options.providers)
      if (p.credentialType === "CLIENT_CREDENTIALS") p.useTokenUrl(this.issuer + OAUTH_PATHS.token);
  }

  /**
   * The node:http request listener. `req.url` is relative to the gateway's
   * base (express strips a mount path); an error of credhook's own is a 500
   * ErrorResponse, never a stack trace.
   */
  readonly handler = (req: IncomingMessage, res: ServerResponse): void => {
    const { path, query } = splitTarget(req.url ?? "/");
    const base = this.options.config.pathPrefix ?? "";
    const fail = (err: unknown) => {
      this.options.logger.error(
        { err: { type: (err as Error)?.name, message: (err as Error)?.message }, path: base + path },
        "embedded gateway: unexpected error",
      );
      if (!res.headersSent)
        sendProblem(res, 500, base + path, ["internal error of the embedded gateway; see credhook's log"]);
      else res.destroy();
    };
    try {
      if (path === KEY_CHECK_PATH || path.startsWith(`${KEY_CHECK_PATH}/`)) {
        const done = this.keyCheck.handle(req, res, path, query);
        if (done) done.catch(fail);
        return;
      }
      const endpoint = this.route(path);
      if (this.options.observe) res.once("finish", () => this.options.observe!(endpoint, res.statusCode));
      const oauth = this.oauth;
      if (endpoint === "other") {
        return sendProblem(res, 404, base + path, [
          `no endpoint at ${base + path}; the embedded gateway serves ${base}${KEY_CHECK_PATH}${
            oauth
              ? `, ${Object.values(OAUTH_PATHS)
                  .map((p) => base + p)
                  .join(", ")}`
              : ""
          }`,
        ]);
      }
      if (!oauth) {
        return sendProblem(res, 404, base + path, [
          `${base + path}: no provider: local gateway issues CLIENT_CREDENTIALS, so the OAuth endpoints are off`,
        ]);
      }
      const post = endpoint === "token" || endpoint === "introspection";
      const allowed = post ? ["POST"] : ["GET", "HEAD"];
      if (!allowed.includes(req.method ?? "")) {
        return sendProblem(
          res,
          405,
          base + path,
          [`${req.method} is not allowed on ${base + path}; use ${allowed[0]}`],
          { allow: allowed.join(", ") },
        );
      }
      if (endpoint === "token") oauth.token(req, res, base + path).catch(fail);
      else if (endpoint === "introspection") oauth.introspect(req, res, base + path).catch(fail);
      else if (endpoint === "jwks") oauth.serveJwks(res);
      else oauth.serveMetadata(res);
    } catch (err) {
      fail(err);
    }
  };

  private route(path: string): GatewayEndpoint {
    switch (path) {
      case OAUTH_PATHS.token:
        return "token";
      case OAUTH_PATHS.introspection:
        return "introspection";
      case OAUTH_PATHS.jwks:
        return "jwks";
      case OAUTH_PATHS.metadata:
      case OAUTH_PATHS.openidConfiguration:
        return "metadata";
      default:
        return "other";
    }
  }

  /**
   * Listens on `embeddedGateway.listen` (port 0 picks a free one); sets the
   * public URL to `http://localhost:<port>` unless `publicUrl` is configured.
   * @returns the base URL as bound: `http://<address>:<port>` with the address the socket listens on
   *   (`0.0.0.0`, every IPv4 address, by default; an IPv6 one in brackets)
   * @throws Error when the gateway is configured with pathPrefix, or the port is taken
   */
  async listen(): Promise<string> {
    const l = this.options.config.listen;
    if (!l)
      throw new Error(
        "embeddedGateway has pathPrefix, not listen: mount EmbeddedGateway.handler on the webhook's server instead",
      );
    const server = createServer(this.handler);
    // Longer than a proxy's idle upstream connections (NGINX keepalive_timeout 60 s), so the proxy closes them first.
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(l.port, l.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.server = server;
    const { port, address, family } = server.address() as AddressInfo;
    if (!this.options.config.publicUrl) this.setPublicUrl(`http://localhost:${port}`);
    return `http://${family === "IPv6" ? `[${address}]` : address}:${port}`;
  }

  /**
   * Stops: closes the own listener (in-flight requests finish, idle
   * connections are closed; after `timeoutMs` every connection), and the
   * timers.
   * @param timeoutMs how long in-flight requests get, ms
   */
  async close(timeoutMs = 10_000): Promise<void> {
    if (this.keyTimer) clearInterval(this.keyTimer);
    this.indexing.abort();
    await this.indexed;
    this.directory.close();
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await drainHttpServer(server, timeoutMs);
  }
}
