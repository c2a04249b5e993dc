/**
 * Config errors that help where people make typos: `loadConfigFile` (the loader `credhook check-config` and
 * `credhook serve` share) reports every problem of a file at once — interpolation, the schema, the references, the
 * packages and their options — with the name that was meant (`prot` → `port`, `provider: AWS` → `aws` and the
 * built-in providers), and a YAML syntax error with the `yaml` library's code frame; `checkConfig` (the command's
 * further checks) collects its stages too; and `checkConfigReport` prints the event sinks (secrets masked), the key
 * prefix and the pattern to register with secret scanners. Through the functions the command runs.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { closestName } from "@credhook/core";
import { ConfigError } from "@credhook/core/errors";
import { checkConfig, checkConfigReport } from "../src/check-config.js";
import { importProviderModule, loadConfigFile } from "../src/index.js";
import { apiKeyStubProvider } from "./fixtures/stub-provider.js";

const PASSWORD = "config-errors-password";
const BASE = `
server:
  port: 8080
  auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] }
store: { sqlite: ./data/credhook.db }
gateways:
  aws-us: { provider: aws, credentialType: API_KEY, options: { region: us-east-1 } }
  local: { provider: local, credentialType: API_KEY }
routes:
  - { apis: [orders], gateway: aws-us }
  - default: local
`;

const dir = mkdtempSync(join(tmpdir(), "credhook-config-errors-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Writes `yaml` to a file of its own, returns its path. */
function write(yaml: string): string {
  const file = join(dir, `webhook-${++files}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

/** The messages of the ConfigError loading `yaml` throws (the test fails when it loads). */
async function loadErrors(yaml: string, env: Record<string, string> = { CREDHOOK_PASSWORD: PASSWORD }) {
  const err = await loadConfigFile(write(yaml), { env }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return (err as ConfigError).messages;
}

describe("suggestions", () => {
  it("`provider: AWS` says it is not installed, suggests aws and lists the built-in providers", async () => {
    expect(await loadErrors(BASE.replace("provider: aws", "provider: AWS"))).toEqual([
      "gateways.aws-us.provider: provider package 'AWS' is not installed — did you mean 'aws'? " +
        "(built-in providers: local, aws, azure, gcp, kong, apigee; any other value is a package name)",
    ]);
  });

  it("a provider name close to none is told the built-in providers and how to install a package", async () => {
    const [message] = await loadErrors(BASE.replace("provider: aws", "provider: credhook-provider-tyk"));
    expect(message).toMatch(
      /^gateways\.aws-us\.provider: provider package 'credhook-provider-tyk' is not installed \(built-in providers: local, aws, azure, gcp, kong, apigee; any other value is a package name: install it next to credhook, e\.g\. pnpm add credhook-provider-tyk;/,
    );
    expect(message).not.toContain("did you mean");
  });

  it("an unknown key gets the closest known key at its place: `prot` → port, an option `regin` → region", async () => {
    expect(
      await loadErrors(BASE.replace("  port: 8080", "  prot: 8080").replace("region: us-east-1", "regin: us-east-1")),
    ).toEqual([
      "server must not have property 'prot' (did you mean 'port'?)",
      "[provider-aws] gateways.aws-us.options must have required property 'region'",
      "[provider-aws] gateways.aws-us.options must not have property 'regin' (did you mean 'region'?)",
    ]);
  });

  it("a value outside an enum, a store name and a route's gateway get the closest one", async () => {
    const messages = await loadErrors(
      BASE.replace("provider: aws, credentialType: API_KEY", "provider: aws, credentialType: api_keys")
        .replace("sqlite: ./data", "sqlit: ./data")
        .replace("gateway: aws-us }", "gateway: aws-su }"),
    );
    expect(messages).toEqual([
      "gateways.aws-us.credentialType must be one of: API_KEY, CLIENT_CREDENTIALS (did you mean 'API_KEY'?)",
      "routes[0].gateway names gateway 'aws-su', which is not under gateways: (did you mean 'aws-us'? known: aws-us, local)",
      "store.sqlit: store package 'sqlit' is not installed — did you mean 'sqlite'? (built-in stores: sqlite, postgres; any other value is a package name)",
    ]);
  });

  it("store.sqlite.cacheSizeMiB: a page cache under 1 MiB (or not a whole number) is refused, naming the option", async () => {
    const messages = await loadErrors(
      BASE.replace("sqlite: ./data/credhook.db", "sqlite: { path: ./data/credhook.db, cacheSizeMiB: 0.5 }"),
    );
    expect(messages).toContain("[store-sqlite] store.sqlite.cacheSizeMiB must be integer");
    expect(messages).toContain("[store-sqlite] store.sqlite.cacheSizeMiB must be >= 1");
  });

  it("closestName: case-insensitive, at most a third of the length (at least 2 edits), never for a name far off", () => {
    expect(closestName("AWS", ["local", "aws", "azure"])).toBe("aws");
    expect(closestName("prot", ["port", "host"])).toBe("port");
    expect(closestName("gpc", ["aws", "gcp"])).toBe("gcp");
    expect(closestName("xyz", ["aws", "gcp"])).toBeUndefined();
    expect(closestName("ab", ["aws"])).toBeUndefined();
    expect(closestName("port", ["port", "prot"])).toBeUndefined();
  });
});

describe("every problem at once", () => {
  it("a YAML syntax error names file, line and column and shows the code frame", async () => {
    const file = write("server:\n  port: 8080: 1\ngateways: {}\n");
    const err = await loadConfigFile(file, { env: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).messages).toEqual([
      `${file}:2:9: not valid YAML: Nested mappings are not allowed in compact mappings\n` +
        "      port: 8080: 1\n" +
        "            ^",
    ]);
  });

  it("problems of five stages — interpolation, schema, references, package, provider options — in one error", async () => {
    const yaml = BASE.replace("  port: 8080", "  prot: 8080")
      .replace("local: { provider: local,", "local: { provider: lokal,")
      .replace("region: us-east-1", "region: us-east-1, timeoutMs: soon")
      .replace("  - default: local", "  - default: loc")
      .replace("sqlite: ./data/credhook.db", 'sqlite: "${DATA_DIR}/credhook.db"');
    expect(await loadErrors(yaml)).toEqual([
      "store.sqlite: environment variable DATA_DIR is not set (write ${DATA_DIR:-} to allow it to be empty, or ${DATA_DIR:-value} for a default)",
      "server must not have property 'prot' (did you mean 'port'?)",
      "routes[1].default names gateway 'loc', which is not under gateways: (did you mean 'local'? known: aws-us, local)",
      "[provider-aws] gateways.aws-us.options.timeoutMs must be integer",
      "gateways.local.provider: provider package 'lokal' is not installed — did you mean 'local'? " +
        "(built-in providers: local, aws, azure, gcp, kong, apigee; any other value is a package name)",
    ]);
  });

  it("a value left empty by a variable that is not set is reported once, not again by the schema", async () => {
    expect(await loadErrors(BASE.replace("port: 8080", "port: ${PORT}"))).toEqual([
      "server.port: environment variable PORT is not set (write ${PORT:-} to allow it to be empty, or ${PORT:-value} for a default)",
    ]);
  });

  it("checkConfig reports a provider's start-up problem with a short password and a secret-scanning key", async () => {
    const apiKeysOnly = apiKeyStubProvider("keys-only", { type: "object", additionalProperties: false });
    const importModule = async (specifier: string) =>
      specifier === "credhook-provider-keys-only" ? { default: apiKeysOnly } : importProviderModule(specifier);
    const yaml = `${BASE.replace(
      "local: { provider: local, credentialType: API_KEY }",
      "local: { provider: credhook-provider-keys-only, credentialType: CLIENT_CREDENTIALS }",
    )}secretScanning: { github: { publicKeys: [ { id: k1, file: missing.pem } ] } }\n`;
    const config = await loadConfigFile(write(yaml), { env: { CREDHOOK_PASSWORD: "short" }, importModule });
    const err = await checkConfig(config, importModule).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).messages).toEqual([
      expect.stringMatching(/^server\.auth\.users\[0\] \(portal\): /),
      "secretScanning.github.publicKeys[0].file: cannot read missing.pem (ENOENT)",
      "gateways.local.credentialType: provider 'credhook-provider-keys-only' does not issue CLIENT_CREDENTIALS (it issues API_KEY)",
    ]);
  });
});

describe("check-config's report", () => {
  it("prints the event sinks with their secrets masked, the key prefix and the pattern to register", async () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const yaml = `${BASE}keys: { prefix: acme }
events:
  sinks:
    - { url: "https://bob:url-password@siem.example.com/hook?token=query-token&v=2", secret: "${secret}", types: [credential.revoked] }
    - { url: "http://127.0.0.1:9/audit", secret: "${secret}", name: audit, timeoutMs: 2000 }
`;
    const config = await loadConfigFile(write(yaml), { env: { CREDHOOK_PASSWORD: PASSWORD } });
    const gateways = await checkConfig(config, importProviderModule);
    try {
      const report = checkConfigReport(config, gateways, []);
      for (const hidden of [secret, "url-password", "query-token"]) expect(report).not.toContain(hidden);
      const lines = report.split("\n");
      expect(lines).toContain(
        "keys.prefix: acme (generated API keys: the prefix, 40 random base62 characters and a 6-character checksum)",
      );
      expect(lines).toContain(
        "  secret-scanning pattern to register (GitHub, gitleaks, trufflehog): \\bacme[0-9A-Za-z]{46}\\b",
      );
      expect(lines).toContain("events.sinks (each event POSTed, signed per Standard Webhooks):");
      expect(lines).toContain(
        "  https://bob:****@siem.example.com/hook?token=****&v=**** secret=**** types=credential.revoked timeoutMs=10000",
      );
      expect(lines).toContain("  audit: http://127.0.0.1:9/audit secret=**** types=all timeoutMs=2000");
    } finally {
      await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
    }
  });

  it("says when there is no sink", async () => {
    const config = await loadConfigFile(write(BASE), { env: { CREDHOOK_PASSWORD: PASSWORD } });
    const gateways = await checkConfig(config, importProviderModule);
    try {
      expect(checkConfigReport(config, gateways, []).split("\n")).toContain(
        "events.sinks: none (events are kept for `credhook audit` only)",
      );
    } finally {
      await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
    }
  });
});
