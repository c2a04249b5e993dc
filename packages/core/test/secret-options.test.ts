// Secret options: `writeOnly: true` in an options schema marks an option secret; its value is
// masked in what credhook prints (maskSecretOptions) and redacted from a provider's log lines
// and start-up errors (loadGateways, through a captured logger).
import { describe, expect, it } from "vitest";
import {
  compileSchema,
  type CredhookConfig,
  loadGateways,
  type Logger,
  MASKED_OPTION,
  maskSecretOptions,
} from "../src/index.js";
import { defineProvider, type Provider } from "../src/entry/provider.js";
import { memoryStateStore } from "../src/entry/provider-kit.js";
import { secretOptionValues } from "../src/provider-kit/secret-options.js";

const schema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  additionalProperties: false,
  properties: {
    region: { type: "string" },
    headers: { type: "object", additionalProperties: { type: "string" }, writeOnly: true },
    auth: {
      oneOf: [
        { type: "object", properties: { type: { const: "none" } } },
        { type: "object", properties: { type: { const: "bearer" }, token: { type: "string", writeOnly: true } } },
      ],
    },
    users: { type: "array", items: { $ref: "#/$defs/user" } },
    store: {
      oneOf: [
        { type: "string", writeOnly: true },
        { type: "object", properties: { url: { type: "string", writeOnly: true }, poolMax: { type: "integer" } } },
      ],
    },
  },
  $defs: {
    user: { type: "object", properties: { name: { type: "string" }, password: { type: "string", writeOnly: true } } },
  },
} as const;

const options = {
  region: "eu-west-1",
  headers: { Authorization: "Bearer hdr-secret-1", "X-Trace": "on" },
  auth: { type: "bearer", token: "tok-secret-2" },
  users: [{ name: "portal", password: "pw-secret-3" }],
  store: { url: "postgres://u:url-secret-4@db/x", poolMax: 5 },
};

describe("maskSecretOptions and secretOptionValues", () => {
  it("ajv (strict) accepts writeOnly, and the options stay valid", () => {
    expect(compileSchema(schema)(structuredClone(options))).toBe(true);
  });

  it("masks every option marked writeOnly — a whole object, a oneOf branch's member, a $ref'd item — and nothing else", () => {
    const before = structuredClone(options);
    expect(maskSecretOptions(schema, options)).toEqual({
      region: "eu-west-1",
      headers: MASKED_OPTION,
      auth: { type: "bearer", token: MASKED_OPTION },
      users: [{ name: "portal", password: MASKED_OPTION }],
      store: { url: MASKED_OPTION, poolMax: 5 },
    });
    expect(options).toEqual(before);
    // a string where the oneOf's string branch is secret: masked whole
    expect(maskSecretOptions(schema, { store: "postgres://u:p@db/x" })).toEqual({ store: MASKED_OPTION });
  });

  it("lists the secret strings of 6 characters or more (not the header value `on`), for redaction from text", () => {
    expect(secretOptionValues(schema, options).sort()).toEqual(
      ["Bearer hdr-secret-1", "tok-secret-2", "pw-secret-3", "postgres://u:url-secret-4@db/x"].sort(),
    );
    expect(secretOptionValues(schema, { region: "x" })).toEqual([]);
  });
});

/** A logger that keeps every line (bindings, object and message) as JSON. */
function captureLogger(lines: string[], bindings: Record<string, unknown> = {}): Logger {
  const line = (obj: object, msg?: string) => void lines.push(JSON.stringify({ ...bindings, ...obj, msg }));
  return {
    debug: line,
    info: line,
    warn: line,
    error: line,
    child: (more) => captureLogger(lines, { ...bindings, ...more }),
  };
}

describe("loadGateways hands a provider a logger and reports its errors without its secret options", () => {
  const factory = defineProvider({
    type: "leaky",
    optionsSchema: schema,
    create(o, context): Provider {
      context.logger.info(
        { options: o, err: new Error(`401 with ${o.auth?.type === "bearer" ? o.auth.token : ""}`) },
        `headers ${JSON.stringify(o.headers)}`,
      );
      if (o.region === "fail") throw new Error(`cannot reach the gateway with ${o.headers?.Authorization}`);
      return {
        capabilities: { credentialTypes: ["API_KEY"], importsApiKeyValue: false, readsBackSecret: false },
        create: async () => ({ nativeId: "n", apiKey: "k", resources: {} }),
        update: async () => ({ resources: {} }),
        revoke: async () => "gone",
        health: async () => {},
      };
    },
  });
  const config = (region: string) =>
    ({
      gateways: { g: { provider: "leaky-package", credentialType: "API_KEY", options: { ...options, region } } },
    }) as unknown as CredhookConfig;
  const load = (region: string, lines: string[]) =>
    loadGateways(config(region), {
      importModule: async () => ({ default: factory }),
      logger: captureLogger(lines),
      stateFor: () => memoryStateStore(),
    });
  const SECRETS = ["hdr-secret-1", "tok-secret-2", "pw-secret-3", "url-secret-4"];

  it("a log line quoting the options, an error or a message carries none of the secrets", async () => {
    const lines: string[] = [];
    const gateways = await load("eu-west-1", lines);
    expect(gateways.get("g")!.optionsSchema).toBe(factory.optionsSchema);
    expect(lines).toHaveLength(1);
    for (const s of SECRETS) expect(lines[0]).not.toContain(s);
    expect(lines[0]).toContain('"gateway":"g"');
    expect(lines[0]).toContain("eu-west-1");
  });

  it("a start-up error quoting a secret option names the gateway without the secret", async () => {
    const problems = await load("fail", []).catch((e: { messages: string[] }) => e.messages);
    expect(problems).toEqual(["gateways.g: cannot reach the gateway with ***"]);
  });
});
