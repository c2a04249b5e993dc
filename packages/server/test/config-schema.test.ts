/**
 * The generated JSON Schema of webhook.config.yaml (packages/server/config/webhook.config.schema.json,
 * shipped in @credhook/server next to the starter config,
 * written by `pnpm schema`) is current, every shipped YAML file references it, and it
 * agrees with `credhook check-config` (the same steps — load and interpolate the file,
 * validate it, then checkConfig: every gateway's provider and its options, the router, the
 * embedded gateway's fit) on the
 * shipped files and on bad configs that a schema can express.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { ConfigError } from "@credhook/core/errors";
import { createAjv } from "@credhook/core";
import { buildConfigSchema } from "../../../schema/config-schema.js";
import { checkConfig } from "../src/check-config.js";
import { EMBEDDED_CONFIG_FILE, importProviderModule, loadConfigFile } from "../src/index.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const SCHEMA_FILE = join(REPO, "packages/server/config/webhook.config.schema.json");
const SHIPPED = [
  EMBEDDED_CONFIG_FILE,
  ...readdirSync(join(REPO, "examples"))
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => join(REPO, "examples", f)),
];
/** Values for every `${VAR}` without a default in the shipped files. */
const ENV = {
  CREDHOOK_PASSWORD: "long-enough-password",
  FAKE_URL: "http://127.0.0.1:9",
  AWS_ENDPOINT: "http://127.0.0.1:9",
  AZURE_ENDPOINT: "http://127.0.0.1:9",
  AZURE_CLIENT_SECRET: "secret",
  AZURE_SUBSCRIPTION_ID: "00000000-0000-0000-0000-000000000000",
  GCP_ENDPOINT: "http://127.0.0.1:9",
  KONG_ADMIN_URL: "http://127.0.0.1:9",
  APIGEE_ENDPOINT: "http://127.0.0.1:9",
  DATABASE_URL: "postgres://u:p@127.0.0.1:9/credhook",
  CREDHOOK_DATA_DIR: mkdtempSync(join(tmpdir(), "credhook-schema-")),
};

const committed = JSON.parse(readFileSync(SCHEMA_FILE, "utf8")) as Record<string, unknown>;
const validate = createAjv().compile(committed);

/** The schema's verdict on a YAML text: its error messages, empty when it accepts. */
function schemaErrors(yaml: string): string[] {
  return validate(parseYaml(yaml)) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** check-config's verdict on a YAML file: its ConfigError messages, empty when it accepts. */
async function checkConfigErrors(file: string): Promise<string[]> {
  try {
    const config = await loadConfigFile(file, { env: ENV });
    const gateways = await checkConfig(config, importProviderModule);
    await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).messages;
  }
}

describe("the JSON Schema of webhook.config.yaml", () => {
  it("is what `pnpm schema` writes from the current sources (run `pnpm schema` when this fails)", async () => {
    expect(readFileSync(SCHEMA_FILE, "utf8")).toBe(`${JSON.stringify(await buildConfigSchema(), null, 2)}\n`);
  });

  it.each(SHIPPED.map((f) => [f.slice(REPO.length), f]))(
    "%s references it and is accepted by it and by check-config",
    async (_name, file) => {
      const yaml = readFileSync(file, "utf8");
      const modeline = /^# yaml-language-server: \$schema=(\S+)$/m.exec(yaml);
      expect(modeline, "a `# yaml-language-server: $schema=` line").not.toBeNull();
      expect(resolve(dirname(file), modeline![1]!)).toBe(SCHEMA_FILE);
      expect(schemaErrors(yaml)).toEqual([]);
      expect(await checkConfigErrors(file)).toEqual([]);
    },
  );

  const BASE = {
    server: { port: "${PORT:-8080}", auth: { users: [{ username: "portal", password: "${CREDHOOK_PASSWORD}" }] } },
    store: { sqlite: ":memory:" },
    gateways: {
      keys: { provider: "local", credentialType: "API_KEY" },
      aws: {
        provider: "aws",
        credentialType: "API_KEY",
        options: {
          region: "us-east-1",
          endpoint: "${FAKE_URL}",
          credentials: { accessKeyId: "a", secretAccessKey: "b" },
        },
      },
      azure: {
        provider: "azure",
        credentialType: "API_KEY",
        options: { subscriptionId: "${AZURE_SUBSCRIPTION_ID}", resourceGroup: "rg", serviceName: "apim" },
      },
    },
    routes: [{ apis: ["a1"], gateway: "aws" }, { apis: ["z1"], gateway: "azure" }, { default: "keys" }],
  };
  type Config = typeof BASE & Record<string, unknown>;
  const variant = (change: (c: Config) => void): string => {
    const c = structuredClone(BASE) as Config;
    change(c);
    return JSON.stringify(c, null, 2);
  };

  it("a valid config with interpolated values: both accept it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-schema-"));
    const file = join(dir, "webhook.config.yaml");
    writeFileSync(
      file,
      variant(() => {}),
    );
    expect(schemaErrors(readFileSync(file, "utf8"))).toEqual([]);
    expect(await checkConfigErrors(file)).toEqual([]);
  });

  const BAD: Array<[string, string]> = [
    ["an unknown top-level key", variant((c) => Object.assign(c, { gatewys: {} }))],
    ["a port out of range", variant((c) => Object.assign(c.server, { port: 70000 }))],
    ["an unknown credential type", variant((c) => Object.assign(c.gateways.keys, { credentialType: "API_TOKEN" }))],
    ["a misspelt AWS option", variant((c) => Object.assign(c.gateways.aws.options, { regoin: "us-east-1" }))],
    ["an AWS option of the wrong type", variant((c) => Object.assign(c.gateways.aws.options, { region: 42 }))],
    [
      "an Azure gateway without its required serviceName",
      variant((c) => delete (c.gateways.azure.options as Partial<typeof c.gateways.azure.options>).serviceName),
    ],
    [
      "an embedded gateway with a bad port",
      variant((c) => Object.assign(c, { embeddedGateway: { listen: { port: "eighty" } } })),
    ],
    ["a route without a gateway", variant((c) => c.routes.splice(0, 1, { apis: ["a1"] } as never))],
  ];
  it.each(BAD)("%s: both reject it", async (_what, yaml) => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-schema-"));
    const file = join(dir, "webhook.config.yaml");
    writeFileSync(file, yaml);
    expect(schemaErrors(yaml)).not.toEqual([]);
    expect(await checkConfigErrors(file)).not.toEqual([]);
  });
});
