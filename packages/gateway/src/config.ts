/**
 * The `embeddedGateway:` block of `webhook.config.yaml`: where the embedded
 * gateway's endpoints listen, how the key check finds the key and the API, the
 * OAuth token settings and signing keys. Validated by the server with
 * {@link parseEmbeddedGatewayConfig} (messages name the YAML path); defaults applied.
 */
import { compileSchema, formatConfigErrors } from "@credhook/core";
import { ConfigError } from "@credhook/core/errors";

/** Signature algorithms of access tokens: RS256 (RFC 9068 §2.1 requires every party to support it) or ES256 (P-256). */
export type SigningAlg = "RS256" | "ES256";

/** One path-prefix → API id rule of the key check. */
export interface ApiPathRule {
  /** Path prefix of the original request (`/orders/`); the longest matching prefix wins. */
  pathPrefix: string;
  /** The API id (as the portal knows it) that requests under that prefix are for. */
  api: string;
}

/** `embeddedGateway.keyCheck`. */
export interface KeyCheckConfig {
  /** Request header that carries the API key (case-insensitive). @default "x-api-key" */
  header: string;
  /** Query parameter of the original request that may carry the key instead. @default unset: keys only in the header (URLs end up in access logs) */
  queryParam?: string;
  /** Also accept `Authorization: Bearer <access token>` issued by the embedded token endpoint. @default true */
  bearer: boolean;
  /**
   * Header, set by the proxy, that names the API id of the request. Checked
   * before {@link apis}. Must begin with {@link responseHeaderPrefix}: the shipped
   * proxy examples remove every client-sent header with that prefix, so only the
   * proxy can state it (a name a client could send is refused at start). @default unset
   */
  apiHeader?: string;
  /** Header carrying the original request URI (NGINX `auth_request`: `proxy_set_header X-Original-URI $request_uri`). Without it, the path after `/check` is used (Envoy `ext_authz` `path_prefix`). @default "x-original-uri" */
  originalUriHeader: string;
  /** Path-prefix → API id rules; longest prefix wins. @default [] */
  apis: ApiPathRule[];
  /** Prefix of the response headers naming app, developer, credential, API and plans. @default "x-credhook-" */
  responseHeaderPrefix: string;
  /** The in-memory credential cache. */
  cache: {
    /** Entries kept (credentials found and keys not found), least recently used evicted first. @default 10000 */
    maxEntries: number;
    /** Longest time an entry is trusted without being invalidated, seconds. @default 300 */
    ttlS: number;
    /** How often the store's change stamps are read, to see changes made by other processes sharing the store, ms. @default 1000 */
    coherenceIntervalMs: number;
  };
}

/** `embeddedGateway.oauth.signing`. */
export interface SigningConfig {
  /** @default "RS256" */
  alg: SigningAlg;
  /** A JWKS file (private keys) credhook keeps its signing keys in (created 0600 when missing), instead of the credential store. */
  keyFile?: string;
  /**
   * Key that encrypts signing keys kept in the credential store (AES-256-GCM):
   * base64 of 32 bytes (`openssl rand -base64 32`). Unset or empty: generated on first
   * start into `<dataDir>/oauth-signing.kek` (0600) — set the same one on every
   * instance when several share a store (`check-config` and start-up warn on
   * PostgreSQL without it; an instance whose key does not decrypt the stored
   * signing keys refuses to start).
   */
  encryptionKey?: string;
  /** A new signing key takes over after this many days; 0 never rotates. @default 30 */
  rotateAfterDays: number;
  /** A new key is published in the JWKS this long before it signs, seconds (so caches of the JWKS hold it in time). @default 86400 */
  publishAheadS: number;
}

/** `embeddedGateway.oauth`. */
export interface OAuthConfig {
  /** Lifetime of access tokens, seconds. @default 3600 */
  tokenTtlS: number;
  /** `aud` of every access token. @default unset: the ids of the APIs the token's scopes cover */
  audience?: string;
  /** Scope names per API id; an API not listed has its id as its one scope. @default {} */
  scopes: Record<string, string[]>;
  signing: SigningConfig;
}

/** `embeddedGateway.limits`. */
export interface LimitsConfig {
  /**
   * Where usage-plan counters live: `memory` (each instance counts what it
   * sees) or `store` (on the shared PostgreSQL store, one count for all
   * instances). @default `store` when the credential store is PostgreSQL, else `memory`
   */
  counters?: "memory" | "store";
}

/** The whole `embeddedGateway:` block, defaults applied. */
export interface EmbeddedGatewayConfig {
  /** Its own listener (the default: port 8081 on 0.0.0.0). Exclusive with {@link pathPrefix}. */
  listen?: { port: number; host: string };
  /** Serve the endpoints on the webhook's port under this prefix (`/gateway`), outside its Basic auth. Exclusive with {@link listen}. */
  pathPrefix?: string;
  /** Base URL clients reach the endpoints at: the OAuth issuer, and the base of `tokenUrl`. Empty means unset. @default `http://localhost:<port><prefix>` */
  publicUrl?: string;
  keyCheck: KeyCheckConfig;
  oauth: OAuthConfig;
  limits: LimitsConfig;
}

const headerName = { type: "string", pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" } as const;

/** JSON Schema of `embeddedGateway:` (ajv with `useDefaults` fills the defaults). */
export const embeddedGatewaySchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    listen: {
      type: "object",
      additionalProperties: false,
      properties: {
        port: { type: "integer", minimum: 0, maximum: 65535, default: 8081 },
        host: { type: "string", minLength: 1, default: "0.0.0.0" },
      },
    },
    pathPrefix: { type: "string", pattern: "^(/[A-Za-z0-9._~-]+)+$" },
    publicUrl: { type: "string", format: "uri", pattern: "^https?://[^?#]*[^/?#]$" },
    keyCheck: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        header: { ...headerName, default: "x-api-key" },
        queryParam: { type: "string", minLength: 1 },
        bearer: { type: "boolean", default: true },
        apiHeader: headerName,
        originalUriHeader: { ...headerName, default: "x-original-uri" },
        apis: {
          type: "array",
          default: [],
          items: {
            type: "object",
            additionalProperties: false,
            required: ["pathPrefix", "api"],
            properties: { pathPrefix: { type: "string", pattern: "^/" }, api: { type: "string", minLength: 1 } },
          },
        },
        responseHeaderPrefix: { ...headerName, default: "x-credhook-" },
        cache: {
          type: "object",
          additionalProperties: false,
          default: {},
          properties: {
            maxEntries: { type: "integer", minimum: 1, default: 10000 },
            ttlS: { type: "integer", minimum: 1, default: 300 },
            coherenceIntervalMs: { type: "integer", minimum: 50, default: 1000 },
          },
        },
      },
    },
    limits: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: { counters: { enum: ["memory", "store"] } },
    },
    oauth: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        tokenTtlS: { type: "integer", minimum: 30, maximum: 86400, default: 3600 },
        audience: { type: "string", minLength: 1 },
        scopes: {
          type: "object",
          default: {},
          additionalProperties: {
            type: "array",
            minItems: 1,
            items: { type: "string", pattern: "^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$" },
          },
        },
        signing: {
          type: "object",
          additionalProperties: false,
          default: {},
          properties: {
            alg: { enum: ["RS256", "ES256"], default: "RS256" },
            keyFile: { type: "string", minLength: 1 },
            encryptionKey: { type: "string" },
            rotateAfterDays: { type: "integer", minimum: 0, default: 30 },
            publishAheadS: { type: "integer", minimum: 0, default: 86400 },
          },
        },
      },
    },
  },
} as const;

/**
 * Checks what the schema cannot: `listen` and `pathPrefix` exclusive, a prefix
 * that does not shadow the webhook's endpoints, duplicate path rules, a
 * publish-ahead shorter than the rotation period, a well-formed encryption key.
 * Fills `listen` when neither is given.
 * @param at YAML path of the block, for messages (`embeddedGateway`)
 * @returns one message per problem (empty when valid)
 */
export function checkEmbeddedGatewayConfig(config: EmbeddedGatewayConfig, at = "embeddedGateway"): string[] {
  const problems: string[] = [];
  if (config.listen && config.pathPrefix)
    problems.push(`${at}: set either listen (own port) or pathPrefix (on the webhook's port), not both`);
  if (!config.listen && !config.pathPrefix) config.listen = { port: 8081, host: "0.0.0.0" };
  if (config.pathPrefix && /^\/(v1|metrics)(\/|$)/.test(config.pathPrefix)) {
    problems.push(
      `${at}.pathPrefix '${config.pathPrefix}' would shadow the webhook's endpoints; choose another, e.g. /gateway`,
    );
  }
  const seen = new Set<string>();
  config.keyCheck.apis.forEach((r, i) => {
    if (seen.has(r.pathPrefix)) problems.push(`${at}.keyCheck.apis[${i}].pathPrefix '${r.pathPrefix}' is listed twice`);
    seen.add(r.pathPrefix);
  });
  const s = config.oauth.signing;
  if (s.rotateAfterDays > 0 && s.publishAheadS >= s.rotateAfterDays * 86400) {
    problems.push(
      `${at}.oauth.signing.publishAheadS (${s.publishAheadS} s) must be shorter than rotateAfterDays (${s.rotateAfterDays} days)`,
    );
  }
  if (s.encryptionKey && Buffer.from(s.encryptionKey, "base64").length !== 32) {
    problems.push(
      `${at}.oauth.signing.encryptionKey must be base64 of exactly 32 bytes (e.g. the output of: openssl rand -base64 32)`,
    );
  }
  for (const k of ["header", "apiHeader", "originalUriHeader", "responseHeaderPrefix"] as const) {
    const v = config.keyCheck[k];
    if (v !== undefined) config.keyCheck[k] = v.toLowerCase();
  }
  const k = config.keyCheck;
  if (
    k.apiHeader !== undefined &&
    (!k.apiHeader.startsWith(k.responseHeaderPrefix) || k.apiHeader === k.responseHeaderPrefix)
  ) {
    problems.push(
      `${at}.keyCheck.apiHeader '${k.apiHeader}' would let a client choose the API: it must begin with keyCheck.responseHeaderPrefix ` +
        `'${k.responseHeaderPrefix}' (e.g. ${k.responseHeaderPrefix}api), the prefix whose client-sent headers the proxy removes before it sets its own`,
    );
  }
  return problems;
}

/**
 * Validates the `embeddedGateway:` block (after `${VAR}` interpolation) and
 * applies defaults.
 * @param raw the block as read from YAML
 * @param at its YAML path, for messages
 * @throws ConfigError listing every problem with its YAML path
 */
export function parseEmbeddedGatewayConfig(raw: unknown, at = "embeddedGateway"): EmbeddedGatewayConfig {
  const validate = compileSchema(embeddedGatewaySchema as object, { coerceTypes: true, useDefaults: true });
  const copy = structuredClone(raw ?? {}) as Record<string, unknown> & {
    oauth?: { signing?: Record<string, unknown> };
  };
  // An empty `${VAR:-}` means "not set".
  if (copy.publicUrl === "") delete copy.publicUrl;
  if (copy.oauth?.signing?.encryptionKey === "") delete copy.oauth.signing.encryptionKey;
  if (!validate(copy))
    throw new ConfigError(formatConfigErrors(validate.errors, at, { schema: embeddedGatewaySchema, data: copy }));
  const config = copy as unknown as EmbeddedGatewayConfig;
  const problems = checkEmbeddedGatewayConfig(config, at);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
