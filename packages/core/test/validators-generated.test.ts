/**
 * The contract's and the config's validators run as `pnpm schema` compiled them ahead of time
 * (src/*.validators.generated.ts): that code must be what ajv generates today from the current
 * schemas and options, and must answer as a validator compiled at run time does.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  buildConfigValidator,
  buildContractValidators,
  buildMetaSchemaValidator,
  CONFIG_VALIDATOR_FILE,
  CONTRACT_VALIDATORS_FILE,
  META_SCHEMA_VALIDATOR_FILE,
} from "../../../schema/validators.js";
import { CONTRACT_REQUESTS, contractDefs, contractSchemaId } from "../src/validation.js";
import {
  compileContractValidator,
  compileSchema,
  configSchema,
  createAjv,
  formatAjvErrors,
  formatConfigErrors,
  validateConfig,
} from "../src/index.js";
import { ValidationError, ConfigError } from "../src/entry/errors.js";

/** Request bodies with problems of every kind the schemas check, and good ones with unknown fields. */
const BODIES: unknown[] = [
  { appName: "a", developer: "d", apis: [{ id: "x", usagePlans: [{ id: "p" }] }], later: { any: 1 } },
  { appName: "", developer: 3, apis: [{ id: 1 }, {}], customCredentials: [] },
  { appName: "a", developer: "d", apis: [] },
  { appName: "a".repeat(300), apis: [{ id: "x", usagePlans: [{}] }] },
  {
    credentialId: "c",
    appName: "a",
    developer: "d",
    apis: [{ id: "x", action: "MOVED", usagePlans: [{ id: "p", action: "ADDED" }] }],
  },
  { credentialId: "", extra: true },
  {},
];

/** Interpolated configs, valid and invalid. */
const CONFIGS: unknown[] = [
  {
    server: { port: "8081", auth: { users: [{ username: "p", password: "x" }] } },
    gateways: { g: { provider: "aws", credentialType: "API_KEY" } },
    routes: [{ default: "g" }],
  },
  {
    server: { port: "x", logLevel: "loud", auth: { users: [] } },
    gateways: { "bad name": { provider: "", credentialType: "KEY" } },
    routes: [{ apis: [], gateway: 1 }],
    extra: 1,
  },
  { store: {}, gateways: {}, routes: [] },
];

describe("the precompiled validators", () => {
  it("are what `pnpm schema` writes from the current schemas (run `pnpm schema` when this fails)", () => {
    expect(readFileSync(CONTRACT_VALIDATORS_FILE, "utf8")).toBe(buildContractValidators());
    expect(readFileSync(CONFIG_VALIDATOR_FILE, "utf8")).toBe(buildConfigValidator());
    expect(readFileSync(META_SCHEMA_VALIDATOR_FILE, "utf8")).toBe(buildMetaSchemaValidator());
  });

  it("refuse an invalid schema in compileSchema with the error ajv's own meta-schema check throws", () => {
    const invalid: object[] = [
      { type: "strin" },
      { type: "object", properties: { a: { minLength: -1 } }, required: "a" },
      { anyOf: [] },
      { type: "object", additionalProperties: 3 },
      { $defs: { x: { items: { prefixItems: [{ type: 5 }] } } } },
      { if: { type: "bogus" }, else: { pattern: 7 } },
      { $schema: "http://json-schema.org/draft-07/schema#", type: "strin" },
    ];
    for (const schema of invalid) {
      let expected = "";
      try {
        createAjv().compile(structuredClone(schema));
      } catch (err) {
        expected = (err as Error).message;
      }
      expect(expected).toMatch(
        /^schema is invalid: data|^no schema with key or ref "http:\/\/json-schema.org\/draft-07/,
      );
      expect(() => compileSchema(structuredClone(schema))).toThrow(expected);
      expect(() => compileSchema(structuredClone(schema), { coerceTypes: true, useDefaults: true })).toThrow(expected);
    }
    const valid = { type: "object", properties: { port: { type: "integer", default: 8080 } } };
    const validate = compileSchema<{ port: number }>(valid, { coerceTypes: true, useDefaults: true });
    const data = { port: "81" };
    expect(validate(data)).toBe(true);
    expect(data).toEqual({ port: 81 });
  });

  it("answer every request body as the contract's schemas compiled at run time do", () => {
    const ajv = createAjv();
    ajv.addSchema({ $id: contractSchemaId, $defs: contractDefs() });
    const validator = compileContractValidator();
    const methods = {
      CreateCredentialsRequest: validator.createRequest,
      UpdateCredentialsRequest: validator.updateRequest,
      RevokeCredentialsRequest: validator.revokeRequest,
    };
    for (const name of CONTRACT_REQUESTS) {
      const compiled = ajv.getSchema(`${contractSchemaId}#/$defs/${name}`)!;
      for (const body of BODIES) {
        const ok = compiled(structuredClone(body));
        let messages: string[] = [];
        try {
          methods[name](structuredClone(body));
        } catch (err) {
          expect(err).toBeInstanceOf(ValidationError);
          messages = (err as ValidationError).messages;
        }
        expect(messages.length === 0).toBe(ok);
        expect(messages).toEqual(ok ? [] : formatAjvErrors(compiled.errors, (path) => `body${path}`));
      }
    }
  });

  it("cover valid and invalid inputs alike", () => {
    expect(
      CONFIGS.map((c) =>
        createAjv({ coerceTypes: true, useDefaults: true }).compile(configSchema as object)(structuredClone(c)),
      ),
    ).toEqual([true, false, false]);
  });

  it("check and complete a configuration as configSchema compiled at run time does", () => {
    const compiled = createAjv({ coerceTypes: true, useDefaults: true }).compile(configSchema as object);
    for (const config of CONFIGS) {
      const expected = structuredClone(config);
      const ok = compiled(expected);
      if (ok) {
        const auth = (expected as { server: { auth: { maxFailures: number; maxGlobalFailures?: number } } }).server
          .auth;
        auth.maxGlobalFailures ??= 10 * auth.maxFailures;
        expect(validateConfig(structuredClone(config))).toEqual(expected);
      } else {
        expect(() => validateConfig(structuredClone(config))).toThrow(ConfigError);
        try {
          validateConfig(structuredClone(config));
        } catch (err) {
          // The schema's problems first, worded alike; the reference checks' problems (every problem at once) after them.
          const schemaMessages = formatConfigErrors(compiled.errors, "", { schema: configSchema, data: expected });
          expect((err as ConfigError).messages.slice(0, schemaMessages.length)).toEqual(schemaMessages);
        }
      }
    }
  });
});
