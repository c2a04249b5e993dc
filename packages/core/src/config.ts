/**
 * The shape of `webhook.config.yaml` after `${VAR}` interpolation, its JSON
 * Schema, and validation whose messages name the YAML path of each problem
 * (`gateways.aws-us.credentialType must be one of: API_KEY, CLIENT_CREDENTIALS`).
 * Loading the file (cosmiconfig, interpolation) is the server's job.
 */
import type { ErrorObject, ValidateFunction } from "ajv";
import type { CredentialType } from "./contract.js";
import { validateConfigSchema } from "./config.validators.generated.js";
import { ConfigError } from "./errors.js";
import { CREDENTIAL_EVENT_TYPES } from "./events.js";
import { EXPIRY_ACTIONS, type GatewayExpiryConfig, resolveExpiryPolicies } from "./expiry-policy.js";
import type { RouteRule } from "./routing.js";
import { API_KEY_PREFIX_PATTERN, DEFAULT_API_KEY_PREFIX } from "./secrets.js";
import { closestName, didYouMean } from "./suggest.js";
import { formatAjvErrors } from "./validation.js";

/** A portal user allowed to call the webhook. Exactly one of `password` / `passwordHash`. */
export interface AuthUser {
  username: string;
  /** Plain password, normally `${CREDHOOK_PASSWORD}`. Empty means "generate one on first start" (see the server README). */
  password?: string;
  /** scrypt hash made by `credhook hash-password`: `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>`. */
  passwordHash?: string;
}

/** `server:` block. */
export interface ServerConfig {
  /** TCP port. @default 8080 */
  port: number;
  /** Listen address. @default "0.0.0.0" */
  host: string;
  /** Largest accepted request body, bytes. @default 65536 (64 KiB) */
  bodyLimitBytes: number;
  /** Time to let in-flight requests finish on SIGTERM, ms. @default 10000 */
  shutdownTimeoutMs: number;
  /** pino level. @default "info" */
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** express `trust proxy` setting (for the client address of the failed-login limit). @default false */
  trustProxy: boolean | number | string;
  /**
   * Time a client has to send a request's headers, ms; then 408 and the connection closed
   * (Node's `headersTimeout`: https://nodejs.org/docs/latest-v20.x/api/http.html#serverheaderstimeout).
   * 100 to 600000. @default 10000
   */
  headersTimeoutMs: number;
  /**
   * Time a client has to send a whole request, headers and body, ms; then 408 and the connection
   * closed (Node's `requestTimeout`). At least {@link headersTimeoutMs}; 100 to 3600000. @default 10000
   */
  requestTimeoutMs: number;
  /** Largest request line plus headers, bytes; beyond it 431 (Node's `maxHeaderSize`). 1024 to 65536. @default 16384 */
  maxHeaderBytes: number;
  /** How long an idle keep-alive connection is kept open, ms (Node's `keepAliveTimeout`). 100 to 600000. @default 5000 */
  keepAliveTimeoutMs: number;
  auth: {
    users: AuthUser[];
    /** Realm in `WWW-Authenticate`. @default "credhook" */
    realm: string;
    /** Failed logins from one client address allowed per window before 429. @default 10 */
    maxFailures: number;
    /** Window of {@link maxFailures}, seconds. @default 60 */
    failureWindowS: number;
    /** Failed logins from all client addresses together allowed per window before 429 (every credential not remembered). @default 10 × maxFailures */
    maxGlobalFailures: number;
    /** Password-hash (scrypt, ≈ 32 MiB and tens of ms each) checks running at once; one more is answered 503 with `Retry-After: 1`. 1 to 64. @default 1 */
    maxConcurrentPasswordChecks: number;
    /** How long a verified login is remembered (accepted at once, never locked out) after its last use, ms; 0: never remembered. 0 to 86400000. @default 300000 */
    rememberLoginMs: number;
    /** Most logins remembered at once (the least recently used is forgotten first). 1 to 100000. @default 1000 */
    maxRememberedLogins: number;
  };
}

/** `store:` block: exactly one backend. */
/**
 * `store:`: one key, the store's name (`sqlite`, `postgres`, or a store
 * package's name), whose value is that store's options (each store's README).
 * @default { sqlite: "./data/credhook.db" }
 */
export type StoreConfig = Record<string, unknown>;

/** One entry of `gateways:`. */
export interface GatewayConfig {
  /** `local`, `aws`, `azure`, `gcp`, `kong`, `apigee`, or a package name (`credhook-provider-tyk`). */
  provider: string;
  /** The credential type this gateway issues. */
  credentialType: CredentialType;
  /** Provider options, validated by the provider's own options schema. */
  options: Record<string, unknown>;
  /**
   * The gateway's circuit breaker: after `threshold` calls in a row failed with the cloud down or
   * unreachable (502/503/504), its requests answer 503 + Retry-After at once, without a call, until
   * a trial call — one every `halfOpenAfterS` — succeeds. `threshold: 0` turns it off.
   * @default { threshold: 5, halfOpenAfterS: 5 }
   */
  circuitBreaker?: { threshold?: number; halfOpenAfterS?: number };
  /**
   * The maximum age of this gateway's credentials, and of its usage plans' (docs/expiry.md): a warning event
   * before it, and an action at it (notify, disable, revoke). @default none: credentials do not expire
   */
  expiry?: GatewayExpiryConfig;
  /**
   * A gateway on its way out (docs/gateway-migration.md): it takes no new credential — a create routed to it, or
   * an update that would put a credential on it, answers 422 naming it — while the credentials it holds keep
   * working: their updates and revokes reach it as before (`credhook apply --dry-run` lists them). Keep a gateway
   * with live credentials under `gateways:` with `retired: true` until none is left on it: `check-config` and
   * `serve` refuse a config that drops it while it still holds some. @default false
   */
  retired?: boolean;
}

/** `expiry:` block: `credhook serve`'s expiry pass (the policies are per gateway: `gateways.<name>.expiry`). */
export interface ExpiryConfig {
  /** Seconds between two expiry passes (the first runs soon after the start); 0: off. 0 to 604800. @default 3600 */
  intervalS: number;
}

/** `keys:` block: the format of the API key values credhook generates (docs/leak-response.md). */
export interface KeysConfig {
  /**
   * The prefix of every API key value credhook generates for the gateways that import values (AWS, Azure,
   * Apigee, Kong, the embedded gateway): a lowercase letter, then 1 to 15 lowercase letters or digits
   * (`API_KEY_PREFIX_PATTERN`). The value is the prefix, 40 random base62 characters and a 6-character CRC32
   * checksum, so secret scanners can find it (`apiKeyScanPattern`, `isCredhookKey`). A key a provider
   * generates itself when it rotates a secret, and Google's own key strings, do not carry it.
   * @default "credhook"
   */
  prefix: string;
}

/** One public key of GitHub's secret scanning partner program, as GitHub publishes them (docs/leak-response.md). */
export interface SecretScanningPublicKey {
  /** GitHub's `key_identifier`: the `Github-Public-Key-Identifier` header of the alerts it signs with this key. */
  id: string;
  /** The key as PEM (`-----BEGIN PUBLIC KEY-----…`, GitHub's `key`): an ECDSA P-256 public key. Exactly one of `pem`, `file`. */
  pem?: string;
  /** A file holding the PEM (relative to the config file). Exactly one of `pem`, `file`. */
  file?: string;
}

/**
 * `secretScanning:` block: the endpoint a secret-scanning service calls when it finds one of credhook's keys in
 * public (docs/leak-response.md). Off when absent.
 */
export interface SecretScanningConfig {
  /** GitHub's secret scanning partner program: alerts signed by GitHub's keys (ECDSA P-256, SHA-256). */
  github?: {
    /** The path the endpoint answers `POST` on, on the webhook's port, outside its Basic auth. @default "/v1/secret-scanning/github" */
    path: string;
    /**
     * What a reported key of credhook's does: `notify` (a `credential.leaked` event only, the key keeps working),
     * `disable` (turned off on every gateway, its record kept; revoked where a gateway cannot turn it off) or
     * `revoke` (removed from every gateway). @default "disable"
     */
    policy: "notify" | "disable" | "revoke";
    /**
     * GitHub's public keys (https://api.github.com/meta/public_keys/secret_scanning), copied by the operator:
     * credhook fetches nothing. An alert signed by another key is refused (401).
     */
    publicKeys: SecretScanningPublicKey[];
  };
}

/** `reconcile:` block: the clean-up credhook does while it serves. */
export interface ReconcileConfig {
  /**
   * Seconds between two passes of `credhook serve`'s reconcile loop: one
   * instance at a time finishes the interrupted operations of instances that
   * died (told apart from live ones by the store's locks, not by age) and
   * sweeps abandoned creates. 0: off.
   * @default 5 on a shared store (PostgreSQL), 0 on SQLite (set by the server from the store)
   */
  intervalS?: number;
  /**
   * Seconds between two passes of `credhook serve`'s sweep over abandoned
   * creates (failed creates whose cloud writes may have landed, or whose
   * cleanup failed) — each pass searches for and revokes what they left — and
   * over unsettled updates (failed updates whose writes may have landed after
   * the rollback), brought back to their records. 0: off (then only the app's
   * next request and `credhook reconcile` do it).
   * @default 30
   */
  abandonedIntervalS: number;
  /**
   * Seconds an abandoned create's record is kept after it was given up, so a
   * cloud write that lands late is still found and revoked, and seconds after
   * a failed update's start before its unsettled gateways are brought back to
   * the record (clouds do not cancel work when a client gives up).
   * @default 300
   */
  settleS: number;
}

/** One HTTP sink of `events.sinks`: where `credhook serve` POSTs each event. */
export interface EventSinkConfig {
  /** The sink's URL (`http://` or `https://`); each event is POSTed to it in CloudEvents' structured JSON mode. */
  url: string;
  /**
   * The Standard Webhooks signing secret (https://www.standardwebhooks.com/): `whsec_` and base64 of 24 to
   * 64 random bytes, as the sink's verifier expects it. Secret: give it as `${VAR}`; masked wherever credhook prints options.
   */
  secret: string;
  /** Only these event types go to this sink. @default every type */
  types?: string[];
  /** A name for the sink in `credhook audit` and the logs. @default the URL's origin and path */
  name?: string;
  /** Time one POST may take, ms; then the attempt failed. 100 to 120000. @default 10000 */
  timeoutMs: number;
}

/** `events:` block: the credential events (docs/events.md). */
export interface EventsConfig {
  /** HTTP sinks every event goes to (each once it accepted it). @default [] (events are kept for `credhook audit` only) */
  sinks: EventSinkConfig[];
  /** Days a delivered (or dead) event is kept for `credhook audit`; 0 keeps them. Pending events are never pruned. @default 90 */
  retentionDays: number;
  /** How often `credhook serve` looks for events to deliver, ms. 100 to 60000. @default 1000 */
  pollIntervalMs: number;
  /**
   * Most events one delivery pass claims (each of another app: an app's events go one at a time, in order) and sends
   * at once — up to this many POSTs in flight to a sink; passes follow one another while each claims a full batch.
   * With no sink, the most a pass settles as delivered in one store write. 1 to 1000. @default 200
   */
  batchSize: number;
  /**
   * Retries of an event a sink refused (a non-2xx answer, no answer): the n-th retry waits
   * `min(initialDelayMs × 2^(n-1), maxDelayMs)`; after `maxAttempts` attempts the event is `dead` —
   * kept, listed by `credhook audit --undelivered`, counted by `credhook_events{status="dead"}` — and
   * the app's later events go on. @default { maxAttempts: 12, initialDelayMs: 1000, maxDelayMs: 3600000 }
   */
  retry: { maxAttempts: number; initialDelayMs: number; maxDelayMs: number };
}

/** The whole configuration, defaults applied. */
export interface CredhookConfig {
  server: ServerConfig;
  store: StoreConfig;
  reconcile: ReconcileConfig;
  /** The format of the API key values credhook generates. */
  keys: KeysConfig;
  /** The credential events: their sinks, retries and retention. */
  events: EventsConfig;
  /** The secret-scanning alert endpoint (GitHub's partner program); off when absent. */
  secretScanning?: SecretScanningConfig;
  /** The expiry pass (docs/expiry.md). */
  expiry?: ExpiryConfig;
  /** Directory for credhook's own files (a generated password's file and hash). @default "./data" */
  dataDir: string;
  gateways: Record<string, GatewayConfig>;
  routes: RouteRule[];
  /**
   * The embedded gateway's endpoints (key check, OAuth token endpoint, plan
   * limits) for the `provider: local` gateways; off when absent. The block as written: the
   * server parses it with `@credhook/gateway`'s `parseEmbeddedGatewayConfig` into its own type.
   */
  embeddedGateway?: object;
}

/** The schema of one expiry policy's keys (`gateways.<name>.expiry` and each of its `plans`; docs/expiry.md): days, and the action. */
const EXPIRY_POLICY_PROPERTIES = {
  maxAgeDays: { type: "integer", minimum: 1, maximum: 36500 },
  warnDays: { type: "integer", minimum: 0, maximum: 36499 },
  action: { enum: [...EXPIRY_ACTIONS] },
} as const;

/**
 * JSON Schema of the configuration file (after interpolation). Unknown keys are rejected: a typo must not be ignored silently.
 * {@link validateConfig} runs its validator as `pnpm schema` precompiled it (config.validators.generated.ts): after a change
 * here, run `pnpm schema` (a test fails until then).
 */
export const configSchema = {
  type: "object",
  additionalProperties: false,
  required: ["gateways", "routes"],
  properties: {
    server: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        port: { type: "integer", minimum: 0, maximum: 65535, default: 8080 },
        host: { type: "string", minLength: 1, default: "0.0.0.0" },
        bodyLimitBytes: { type: "integer", minimum: 1024, maximum: 10485760, default: 65536 },
        shutdownTimeoutMs: { type: "integer", minimum: 0, maximum: 600000, default: 10000 },
        logLevel: { enum: ["fatal", "error", "warn", "info", "debug", "trace", "silent"], default: "info" },
        trustProxy: { type: ["boolean", "integer", "string"], default: false },
        headersTimeoutMs: { type: "integer", minimum: 100, maximum: 600000, default: 10000 },
        requestTimeoutMs: { type: "integer", minimum: 100, maximum: 3600000, default: 10000 },
        maxHeaderBytes: { type: "integer", minimum: 1024, maximum: 65536, default: 16384 },
        keepAliveTimeoutMs: { type: "integer", minimum: 100, maximum: 600000, default: 5000 },
        auth: {
          type: "object",
          additionalProperties: false,
          required: ["users"],
          properties: {
            users: {
              type: "array",
              minItems: 1,
              items: {
                type: "object",
                additionalProperties: false,
                required: ["username"],
                properties: {
                  username: { type: "string", minLength: 1, pattern: "^[^:]+$" },
                  password: { type: "string" },
                  passwordHash: {
                    type: "string",
                    pattern: "^scrypt\\$\\d+\\$\\d+\\$\\d+\\$[A-Za-z0-9+/=]+\\$[A-Za-z0-9+/=]+$",
                  },
                },
              },
            },
            realm: { type: "string", minLength: 1, pattern: '^[^"\\\\]+$', default: "credhook" },
            maxFailures: { type: "integer", minimum: 1, default: 10 },
            failureWindowS: { type: "integer", minimum: 1, default: 60 },
            maxGlobalFailures: { type: "integer", minimum: 1 },
            maxConcurrentPasswordChecks: { type: "integer", minimum: 1, maximum: 64, default: 1 },
            rememberLoginMs: { type: "integer", minimum: 0, maximum: 86400000, default: 300000 },
            maxRememberedLogins: { type: "integer", minimum: 1, maximum: 100000, default: 1000 },
          },
        },
      },
    },
    store: {
      type: "object",
      default: { sqlite: "./data/credhook.db" },
      minProperties: 1,
      maxProperties: 1,
      propertyNames: { minLength: 1 },
    },
    dataDir: { type: "string", minLength: 1, default: "./data" },
    embeddedGateway: { type: "object" },
    keys: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        prefix: { type: "string", pattern: API_KEY_PREFIX_PATTERN, default: DEFAULT_API_KEY_PREFIX },
      },
    },
    secretScanning: {
      type: "object",
      additionalProperties: false,
      properties: {
        github: {
          type: "object",
          additionalProperties: false,
          required: ["publicKeys"],
          properties: {
            path: { type: "string", pattern: "^(/[A-Za-z0-9._~-]+)+$", default: "/v1/secret-scanning/github" },
            policy: { enum: ["notify", "disable", "revoke"], default: "disable" },
            publicKeys: {
              type: "array",
              minItems: 1,
              items: {
                type: "object",
                additionalProperties: false,
                required: ["id"],
                properties: {
                  id: { type: "string", minLength: 1 },
                  pem: { type: "string", minLength: 1 },
                  file: { type: "string", minLength: 1 },
                },
              },
            },
          },
        },
      },
    },
    reconcile: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        intervalS: { type: "integer", minimum: 0, maximum: 86400 },
        abandonedIntervalS: { type: "integer", minimum: 0, maximum: 86400, default: 30 },
        settleS: { type: "integer", minimum: 0, maximum: 604800, default: 300 },
      },
    },
    events: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        sinks: {
          type: "array",
          default: [],
          items: {
            type: "object",
            additionalProperties: false,
            required: ["url", "secret"],
            properties: {
              url: { type: "string", pattern: "^https?://[^\\s]+$" },
              secret: { type: "string", writeOnly: true, pattern: "^(whsec_)?[A-Za-z0-9+/]{32,}={0,2}$" },
              types: { type: "array", minItems: 1, items: { enum: [...CREDENTIAL_EVENT_TYPES] } },
              name: { type: "string", minLength: 1 },
              timeoutMs: { type: "integer", minimum: 100, maximum: 120000, default: 10000 },
            },
          },
        },
        retentionDays: { type: "integer", minimum: 0, maximum: 36500, default: 90 },
        pollIntervalMs: { type: "integer", minimum: 100, maximum: 60000, default: 1000 },
        batchSize: { type: "integer", minimum: 1, maximum: 1000, default: 200 },
        retry: {
          type: "object",
          additionalProperties: false,
          default: {},
          properties: {
            maxAttempts: { type: "integer", minimum: 1, maximum: 1000, default: 12 },
            initialDelayMs: { type: "integer", minimum: 10, maximum: 86400000, default: 1000 },
            maxDelayMs: { type: "integer", minimum: 10, maximum: 86400000, default: 3600000 },
          },
        },
      },
    },
    expiry: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        intervalS: { type: "integer", minimum: 0, maximum: 604800, default: 3600 },
      },
    },
    gateways: {
      type: "object",
      minProperties: 1,
      propertyNames: { pattern: "^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$" },
      additionalProperties: {
        type: "object",
        additionalProperties: false,
        required: ["provider", "credentialType"],
        properties: {
          provider: { type: "string", minLength: 1 },
          credentialType: { enum: ["API_KEY", "CLIENT_CREDENTIALS"] },
          options: { type: "object", default: {} },
          retired: { type: "boolean", default: false },
          circuitBreaker: {
            type: "object",
            additionalProperties: false,
            properties: {
              threshold: { type: "integer", minimum: 0, maximum: 1000, default: 5 },
              halfOpenAfterS: { type: "number", minimum: 0.1, maximum: 3600, default: 5 },
            },
          },
          expiry: {
            type: "object",
            additionalProperties: false,
            properties: {
              ...EXPIRY_POLICY_PROPERTIES,
              plans: {
                type: "object",
                propertyNames: { minLength: 1 },
                additionalProperties: {
                  type: "object",
                  additionalProperties: false,
                  required: ["maxAgeDays"],
                  properties: EXPIRY_POLICY_PROPERTIES,
                },
              },
            },
          },
        },
      },
    },
    routes: {
      type: "array",
      minItems: 1,
      items: {
        oneOf: [
          {
            type: "object",
            additionalProperties: false,
            required: ["apis", "gateway"],
            properties: {
              apis: { type: "array", minItems: 1, items: { type: "string", minLength: 1 } },
              gateway: { type: "string" },
            },
          },
          {
            type: "object",
            additionalProperties: false,
            required: ["default"],
            properties: { default: { type: "string" } },
          },
        ],
      },
    },
  },
} as const;

/** Turns an ajv instance path (`/gateways/aws-us/options/region`) into a YAML path (`gateways.aws-us.options.region`, `routes[1].gateway`). */
export function yamlPath(base: string, instancePath: string): string {
  let out = base;
  for (const raw of instancePath.split("/").slice(1)) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(seg) ? `[${seg}]` : out === "" ? seg : `.${seg}`;
  }
  return out === "" ? "(root)" : out;
}

/** The segments of a JSON pointer (`/gateways/aws~1us`, `#/properties/server`), unescaped. */
function pointerSegments(pointer: string): string[] {
  return pointer
    .replace(/^#/, "")
    .split("/")
    .slice(1)
    .map((seg) => decodeURIComponent(seg).replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The value at a JSON pointer in `root`, or undefined when the path does not exist. */
function valueAt(root: unknown, pointer: string): unknown {
  let at = root;
  for (const seg of pointerSegments(pointer)) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string, unknown>)[seg];
  }
  return at;
}

/** What {@link formatConfigErrors} may look at to suggest the name that was meant. */
export interface ConfigErrorContext {
  /** The schema validated against: an unknown key gets the closest of its object's `properties` as a suggestion. */
  schema?: object;
  /** The data validated: a string that is not one of an `enum`'s values gets the closest one as a suggestion. */
  data?: unknown;
}

/**
 * The suggestion for one ajv error: for an unknown key (`additionalProperties`), the closest key the schema knows
 * at that place (the error's `schemaPath` less its keyword); for a value not in an `enum`, the closest value.
 * @returns ` (did you mean 'port'?)`, or "" when nothing is close
 */
function suggestionFor(err: ErrorObject, context: ConfigErrorContext): string {
  if (err.keyword === "additionalProperties" && context.schema) {
    const parent = valueAt(context.schema, err.schemaPath.slice(0, err.schemaPath.lastIndexOf("/")));
    const known = (parent as { properties?: Record<string, unknown> } | undefined)?.properties;
    return known ? didYouMean(String(err.params.additionalProperty), Object.keys(known)) : "";
  }
  if (err.keyword === "enum" && "data" in context) {
    const value = valueAt(context.data, err.instancePath);
    const allowed = (err.params.allowedValues as unknown[]).filter((v): v is string => typeof v === "string");
    return typeof value === "string" ? didYouMean(value, allowed) : "";
  }
  return "";
}

/**
 * Readable messages, one per problem, each starting with its YAML path under `base`; with `context`, an unknown key
 * or enum value ends with the known one closest to it (`server must not have property 'prot' (did you mean 'port'?)`).
 */
export function formatConfigErrors(
  errors: ErrorObject[] | null | undefined,
  base: string,
  context: ConfigErrorContext = {},
): string[] {
  return formatAjvErrors(
    errors,
    (instancePath) => yamlPath(base, instancePath),
    (err) => suggestionFor(err, context),
  );
}

/** A plain object (not an array, not null): a YAML mapping. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Every problem of an interpolated config object at once — its schema's (unknown keys with the closest known one,
 * types, ranges) and its references' (every route's gateway exists, `default` is the last route, every user has one
 * password source, the expiry policies) — and the object with defaults applied. A reference check whose part of the
 * object failed the schema is left out (it would repeat that problem in other words).
 * @returns `config`: the object with defaults applied, a {@link CredhookConfig} only when `problems` is empty;
 *   `problems`: one message per problem, each starting with its YAML path
 */
export function configProblems(raw: unknown): { config: CredhookConfig; problems: string[] } {
  // `${PORT:-8080}` interpolates to a string: coerce scalars to the schema's types, and fill defaults.
  // The validator is configSchema's with those options, compiled ahead of time by `pnpm schema` (no compiling here).
  const validate = validateConfigSchema as unknown as ValidateFunction;
  const copy = structuredClone(raw ?? {});
  const errors = validate(copy) ? [] : (validate.errors ?? []);
  const problems = formatConfigErrors(errors, "", { schema: configSchema, data: copy });
  const config = copy as unknown as CredhookConfig & { server: Partial<ServerConfig> };
  if (!isObject(config)) return { config, problems };
  /** Whether the schema found a problem at or under the JSON pointer `at`. */
  const failed = (at: string) => errors.some((e) => e.instancePath === at || e.instancePath.startsWith(`${at}/`));
  const server = isObject(config.server) ? config.server : undefined;
  if (server && !failed("/server/requestTimeoutMs") && !failed("/server/headersTimeoutMs")) {
    if (server.requestTimeoutMs! < server.headersTimeoutMs!)
      problems.push(
        `server.requestTimeoutMs (${server.requestTimeoutMs}) must be >= server.headersTimeoutMs (${server.headersTimeoutMs}): the whole request includes its headers`,
      );
  }
  if (server && server.auth === undefined)
    problems.push(
      'server.auth must be set: at least one user, e.g. { users: [{ username: portal, password: "${CREDHOOK_PASSWORD}" }] }',
    );
  if (server?.auth && !failed("/server/auth")) {
    server.auth.maxGlobalFailures ??= 10 * server.auth.maxFailures;
    server.auth.users.forEach((u, i) => {
      if (u.password !== undefined && u.passwordHash !== undefined)
        problems.push(`server.auth.users[${i}] must have only one of password and passwordHash`);
      if (u.password === undefined && u.passwordHash === undefined)
        problems.push(`server.auth.users[${i}] must have password or passwordHash`);
    });
  }
  const gateways = isObject(config.gateways) ? config.gateways : {};
  const names = Object.keys(gateways);
  if (Array.isArray(config.routes)) {
    config.routes.forEach((r, i) => {
      if (!isObject(r) || failed(`/routes/${i}`)) return;
      const key = "default" in r ? "default" : "gateway";
      const gw = "default" in r ? r.default : r.gateway;
      if (!names.includes(gw)) {
        const meant = closestName(gw, names);
        problems.push(
          `routes[${i}].${key} names gateway '${gw}', which is not under gateways: (${meant ? `did you mean '${meant}'? ` : ""}known: ${names.join(", ")})`,
        );
      }
      if ("default" in r && i !== config.routes.length - 1)
        problems.push(`routes[${i}]: the default route must be the last one (routes after it never match)`);
    });
  }
  const checked = Object.entries(gateways).filter(
    ([name, gw]) => isObject(gw) && !failed(`/gateways/${name.replace(/~/g, "~0").replace(/\//g, "~1")}/expiry`),
  );
  problems.push(...resolveExpiryPolicies(Object.fromEntries(checked)).problems);
  return { config: config as CredhookConfig, problems };
}

/**
 * Validates an interpolated config object and applies defaults: {@link configProblems}, thrown.
 * @throws ConfigError listing every problem with its YAML path
 */
export function validateConfig(raw: unknown): CredhookConfig {
  const { config, problems } = configProblems(raw);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
