/**
 * The shape of `webhook.config.yaml` after `${VAR}` interpolation, its JSON
 * Schema, and validation whose messages name the YAML path of each problem
 * (`gateways.aws-us.credentialType must be one of: API_KEY, CLIENT_CREDENTIALS`).
 * Loading the file (cosmiconfig, interpolation) is the server's job.
 */
import type { ErrorObject } from "ajv";
import type { CredentialType } from "./contract.js";
import { ConfigError } from "./errors.js";
import type { RouteRule } from "./routing.js";
import { createAjv, formatAjvErrors } from "./validation.js";

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
  auth: {
    users: AuthUser[];
    /** Realm in `WWW-Authenticate`. @default "credhook" */
    realm: string;
    /** Failed logins from one client address allowed per window before 429. @default 10 */
    maxFailures: number;
    /** Window of {@link maxFailures}, seconds. @default 60 */
    failureWindowS: number;
  };
}

/** `store:` block: exactly one backend. */
export type StoreConfig = { sqlite: string } | { postgres: string };

/** One entry of `gateways:`. */
export interface GatewayConfig {
  /** `local`, `aws`, `azure`, `gcp`, or a package name (`credhook-provider-kong`). */
  provider: string;
  /** The credential type this gateway issues. */
  credentialType: CredentialType;
  /** Provider options, validated by the provider's own options schema. */
  options: Record<string, unknown>;
}

/** The whole configuration, defaults applied. */
export interface CredhookConfig {
  server: ServerConfig;
  store: StoreConfig;
  /** Directory for credhook's own files (the generated password's hash). @default "./data" */
  dataDir: string;
  gateways: Record<string, GatewayConfig>;
  routes: RouteRule[];
}

/** JSON Schema of the configuration file (after interpolation). Unknown keys are rejected: a typo must not be ignored silently. */
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
                  passwordHash: { type: "string", pattern: "^scrypt\\$\\d+\\$\\d+\\$\\d+\\$[A-Za-z0-9+/=]+\\$[A-Za-z0-9+/=]+$" },
                },
              },
            },
            realm: { type: "string", minLength: 1, pattern: '^[^"\\\\]+$', default: "credhook" },
            maxFailures: { type: "integer", minimum: 1, default: 10 },
            failureWindowS: { type: "integer", minimum: 1, default: 60 },
          },
        },
      },
    },
    store: {
      type: "object",
      default: { sqlite: "./data/credhook.db" },
      oneOf: [
        { type: "object", additionalProperties: false, required: ["sqlite"], properties: { sqlite: { type: "string", minLength: 1 } } },
        { type: "object", additionalProperties: false, required: ["postgres"], properties: { postgres: { type: "string", minLength: 1 } } },
      ],
    },
    dataDir: { type: "string", minLength: 1, default: "./data" },
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
            properties: { apis: { type: "array", minItems: 1, items: { type: "string", minLength: 1 } }, gateway: { type: "string" } },
          },
          { type: "object", additionalProperties: false, required: ["default"], properties: { default: { type: "string" } } },
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

/** Readable messages, one per problem, each starting with its YAML path under `base`. */
export function formatConfigErrors(errors: ErrorObject[] | null | undefined, base: string): string[] {
  return formatAjvErrors(errors, (instancePath) => yamlPath(base, instancePath));
}

/**
 * Validates an interpolated config object and applies defaults.
 * Checks the schema, then references: every route's gateway exists, `default`
 * is the last route, every user has a password source.
 * @throws ConfigError listing every problem with its YAML path
 */
export function validateConfig(raw: unknown): CredhookConfig {
  // `${PORT:-8080}` interpolates to a string: coerce scalars to the schema's types, and fill defaults.
  const ajv = createAjv({ coerceTypes: true, useDefaults: true });
  const validate = ajv.compile(configSchema as object);
  const copy = structuredClone(raw ?? {});
  if (!validate(copy)) throw new ConfigError(formatConfigErrors(validate.errors, ""));
  const config = copy as unknown as CredhookConfig & { server: Partial<ServerConfig> };
  const problems: string[] = [];
  if (!config.server.auth) problems.push("server.auth must be set: at least one user, e.g. { users: [{ username: portal, password: \"${CREDHOOK_PASSWORD}\" }] }");
  config.server.auth?.users.forEach((u, i) => {
    if (u.password !== undefined && u.passwordHash !== undefined) problems.push(`server.auth.users[${i}] must have only one of password and passwordHash`);
    if (u.password === undefined && u.passwordHash === undefined) problems.push(`server.auth.users[${i}] must have password or passwordHash`);
  });
  const names = new Set(Object.keys(config.gateways));
  config.routes.forEach((r, i) => {
    const gw = "default" in r ? r.default : r.gateway;
    if (!names.has(gw)) problems.push(`routes[${i}].${"default" in r ? "default" : "gateway"} names gateway '${gw}', which is not under gateways: (known: ${[...names].join(", ")})`);
    if ("default" in r && i !== config.routes.length - 1) problems.push(`routes[${i}]: the default route must be the last one (routes after it never match)`);
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return config as CredhookConfig;
}
