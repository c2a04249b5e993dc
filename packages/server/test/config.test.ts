import { describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "@credhook/core/errors";
import {
  CONFIG_SCHEMA_FILE,
  createApp,
  EDGE_DEFAULTS,
  embeddedConfigText,
  EMBEDDED_CONFIG_FILE,
  interpolate,
  loadConfigFile,
  MAX_SECRET_FILE_BYTES,
} from "../src/index.js";
import { spawnTracked } from "./children.js";

const write = (yaml: string) => {
  const dir = mkdtempSync(join(tmpdir(), "credhook-cfg-"));
  const file = join(dir, "webhook.config.yaml");
  writeFileSync(file, yaml);
  return { dir, file };
};

const BASE = `
server:
  port: \${PORT:-8080}
  auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] }
store: { sqlite: ./data/credhook.db }
gateways:
  local: { provider: local, credentialType: API_KEY }
routes:
  - default: local
`;

/** BASE with `lines` added under `server:`, or inside `server.auth` (flow mapping). */
const withServer = (lines: string) => BASE.replace("server:\n", `server:\n${lines}`);
const withAuth = (entries: string) => BASE.replace("auth: {", `auth: { ${entries.trim().replace(/\n\s*/g, ", ")},`);
const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));

async function configErrors(
  yaml: string,
  env: Record<string, string> = { CREDHOOK_PASSWORD: "pw" },
): Promise<string[]> {
  const { file } = write(yaml);
  try {
    const config = await loadConfigFile(file, { env });
    await (await createApp(config, { announcePassword: () => {} })).close();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).messages;
  }
  throw new Error("expected a ConfigError");
}

describe("config loading", () => {
  it("interpolates ${VAR} and ${VAR:-default}, coerces the port, resolves paths against the file", async () => {
    const { dir, file } = write(BASE);
    const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: "pw", PORT: "9123" } });
    expect(config.server.port).toBe(9123);
    expect(config.server.auth.users[0]!.password).toBe("pw");
    expect(config.store).toEqual({ sqlite: join(dir, "data/credhook.db") });
    expect(config.server.bodyLimitBytes).toBe(65536);
    const defaulted = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: "pw" } });
    expect(defaulted.server.port).toBe(8080);
  });

  it("finds webhook.config.yaml in the working directory", async () => {
    const { dir } = write(BASE);
    const config = await loadConfigFile(undefined, { cwd: dir, env: { CREDHOOK_PASSWORD: "pw" } });
    expect(config.configFile).toBe(join(dir, "webhook.config.yaml"));
  });

  it("an unset variable without default names the YAML path", async () => {
    const messages = await configErrors(BASE, {});
    expect(messages).toEqual([
      "server.auth.users[0].password: environment variable CREDHOOK_PASSWORD is not set (write ${CREDHOOK_PASSWORD:-} to allow it to be empty, or ${CREDHOOK_PASSWORD:-value} for a default)",
    ]);
  });

  it("$$ is a literal dollar, and interpolation leaves other text alone", () => {
    expect(interpolate({ a: "x$${Y}z", b: ["${A:-1}-${B:-two}"], c: 3 }, { A: "one" })).toEqual({
      a: "x${Y}z",
      b: ["one-two"],
      c: 3,
    });
  });

  it("schema problems name their YAML paths, all at once", async () => {
    const messages = await configErrors(
      BASE.replace("port: ${PORT:-8080}", "port: 99999\n  colour: blue").replace(
        "credentialType: API_KEY",
        "credentialType: JWT",
      ),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        "server must not have property 'colour'",
        "server.port must be <= 65535",
        "gateways.local.credentialType must be one of: API_KEY, CLIENT_CREDENTIALS",
      ]),
    );
  });

  it("a route naming an unknown gateway, or a default that is not last, is an error", async () => {
    const messages = await configErrors(
      BASE.replace("  - default: local", "  - default: local\n  - { apis: [a], gateway: nope }"),
    );
    expect(messages).toEqual([
      "routes[0]: the default route must be the last one (routes after it never match)",
      "routes[1].gateway names gateway 'nope', which is not under gateways: (known: local)",
    ]);
  });

  it("a provider package that is not installed stops start-up naming the YAML path", async () => {
    const messages = await configErrors(BASE.replace("provider: local", "provider: credhook-provider-doesnotexist"));
    expect(messages).toEqual([
      "gateways.local.provider: provider package 'credhook-provider-doesnotexist' is not installed (built-in providers: local, aws, azure, gcp, kong, apigee; " +
        "any other value is a package name: install it next to credhook, e.g. pnpm add credhook-provider-doesnotexist; " +
        "a package of credhook's workspace that is not built runs from its TypeScript sources, in its folder: " +
        "CREDHOOK_FROM_SOURCE=1 node --conditions=dev-source <checkout>/packages/server/bin/credhook.mjs serve)",
    ]);
  });

  it("provider options are validated by the provider's schema, naming the provider and the YAML path", async () => {
    const messages = await configErrors(
      BASE.replace("credentialType: API_KEY }", "credentialType: API_KEY, options: { revokeMode: burn, colour: 1 } }"),
    );
    expect(messages).toEqual(
      expect.arrayContaining([
        "[provider-local] gateways.local.options must not have property 'colour'",
        "[provider-local] gateways.local.options.revokeMode must be one of: delete, disable",
      ]),
    );
  });

  it("a third-party provider is loaded by package name or path; a missing required option is named", async () => {
    const faulty = fileURLToPath(new URL("./fixtures/faulty-provider.ts", import.meta.url));
    const messages = await configErrors(BASE.replace("provider: local", `provider: ${faulty}`));
    expect(messages).toEqual(["[provider-faulty] gateways.local.options must have required property 'label'"]);
  });

  it("a gateway whose provider does not issue its credential type is an error", async () => {
    const faulty = fileURLToPath(new URL("./fixtures/faulty-provider.ts", import.meta.url));
    const messages = await configErrors(
      BASE.replace(
        "local: { provider: local, credentialType: API_KEY }",
        `local: { provider: ${faulty}, credentialType: CLIENT_CREDENTIALS, options: { label: x } }`,
      ),
    );
    expect(messages).toEqual([
      `gateways.local.credentialType: provider '${faulty}' does not issue CLIENT_CREDENTIALS (it issues API_KEY)`,
    ]);
  });

  it("${file:PATH} reads a secret file (relative to the config file, trailing line break dropped)", async () => {
    const { dir, file } = write(
      BASE.replace('password: "${CREDHOOK_PASSWORD}"', 'password: "${file:secrets/portal-password}"'),
    );
    mkdirSync(join(dir, "secrets"));
    writeFileSync(join(dir, "secrets/portal-password"), "from-a-file-s3cret\n");
    const config = await loadConfigFile(file, { env: {} });
    expect(config.server.auth.users[0]!.password).toBe("from-a-file-s3cret");
    expect(config.embeddedDefault).toBe(false);
  });

  it("VAR_FILE stands in for an unset VAR (the Docker / Kubernetes convention); both set is an error", async () => {
    const { dir, file } = write(BASE);
    writeFileSync(join(dir, "pw"), "via-env-file-s3cret\r\n");
    const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD_FILE: join(dir, "pw") } });
    expect(config.server.auth.users[0]!.password).toBe("via-env-file-s3cret");
    expect(await configErrors(BASE, { CREDHOOK_PASSWORD: "pw", CREDHOOK_PASSWORD_FILE: join(dir, "pw") })).toEqual([
      "server.auth.users[0].password: both CREDHOOK_PASSWORD and CREDHOOK_PASSWORD_FILE are set; set only one",
    ]);
  });

  it("an unreadable secret file names the YAML path and the file, never its content", async () => {
    const { dir } = write("");
    const big = join(dir, "big");
    writeFileSync(big, "x".repeat(MAX_SECRET_FILE_BYTES + 1));
    const messages = await configErrors(
      BASE.replace('password: "${CREDHOOK_PASSWORD}"', 'password: "${file:/nonexistent/credhook-pw}"').replace(
        "./data/credhook.db",
        `"\${file:${big}}"`,
      ),
      {},
    );
    expect(messages).toEqual([
      "server.auth.users[0].password: cannot read ${file:/nonexistent/credhook-pw} (/nonexistent/credhook-pw): no such file",
      `store.sqlite: cannot read \${file:${big}} (${big}): it is larger than ${MAX_SECRET_FILE_BYTES} bytes, too large for a secret`,
    ]);
    expect(await configErrors(BASE, { CREDHOOK_PASSWORD_FILE: dir })).toEqual([
      `server.auth.users[0].password: cannot read CREDHOOK_PASSWORD_FILE (${dir}): it is a directory`,
    ]);
  });

  it("with no config file: an error, or with embeddedDefault the embedded default, its relative paths under the working directory", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-empty-"));
    await expect(loadConfigFile(undefined, { cwd: dir, env: {} })).rejects.toThrow(
      /no webhook.config.yaml or webhook.config.yml in/,
    );
    const config = await loadConfigFile(undefined, { cwd: dir, env: { PORT: "9999" }, embeddedDefault: true });
    expect(config.embeddedDefault).toBe(true);
    expect(config.configFile).toBe(EMBEDDED_CONFIG_FILE);
    expect(config.server.port).toBe(9999);
    expect(config.store).toEqual({ sqlite: join(dir, "data/credhook.db") });
    expect(config.dataDir).toBe(join(dir, "data"));
    expect(Object.keys(config.gateways)).toEqual(["local", "m2m"]);
    expect(embeddedConfigText()).toMatch(/^# credhook configuration\./);
    // as `credhook init` writes it elsewhere: the editor schema line names the shipped schema from there
    const written = embeddedConfigText(join(dir, "conf", "webhook.config.yaml"));
    const schemaPath = /^# yaml-language-server: \$schema=(\S+)$/m.exec(written)?.[1] ?? "";
    expect(resolve(dir, "conf", schemaPath)).toBe(CONFIG_SCHEMA_FILE);
    expect(existsSync(CONFIG_SCHEMA_FILE)).toBe(true);
    // a config file in the working directory wins over the embedded default
    writeFileSync(join(dir, "webhook.config.yaml"), BASE);
    expect(
      (await loadConfigFile(undefined, { cwd: dir, env: { CREDHOOK_PASSWORD: "pw" }, embeddedDefault: true }))
        .embeddedDefault,
    ).toBe(false);
  });

  it("an empty webhook.config.yaml in the working directory is an error that names it, not a silent fall-back to the embedded default", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-empty-file-"));
    writeFileSync(join(dir, "webhook.config.yaml"), "");
    await expect(loadConfigFile(undefined, { cwd: dir, env: {}, embeddedDefault: true })).rejects.toThrow(
      `config file ${join(dir, "webhook.config.yaml")} is empty`,
    );
  });

  it("invalid YAML and a missing file are clear errors", async () => {
    expect(await configErrors("server: [unclosed")).toEqual([expect.stringMatching(/not valid YAML/)]);
    await expect(loadConfigFile("/nonexistent/webhook.config.yaml")).rejects.toThrow(/does not exist/);
  });
});

describe("server limits in the config", () => {
  it("default to the values credhook has always used", async () => {
    const { server } = await loadConfigFile(write(BASE).file, { env: { CREDHOOK_PASSWORD: "pw" } });
    expect(server).toMatchObject({
      bodyLimitBytes: 65536,
      headersTimeoutMs: 10000,
      requestTimeoutMs: 10000,
      maxHeaderBytes: 16384,
      keepAliveTimeoutMs: 5000,
    });
    expect(server.auth).toMatchObject({
      maxFailures: 10,
      failureWindowS: 60,
      maxGlobalFailures: 100,
      maxConcurrentPasswordChecks: 1,
      rememberLoginMs: 300000,
      maxRememberedLogins: 1000,
    });
    // The edge's own defaults (for embedding it without a config) are the same.
    expect(EDGE_DEFAULTS).toEqual({
      headersTimeoutMs: server.headersTimeoutMs,
      requestTimeoutMs: server.requestTimeoutMs,
      maxHeaderBytes: server.maxHeaderBytes,
    });
    // The global failure budget follows maxFailures unless set.
    const { server: s2 } = await loadConfigFile(write(withAuth("    maxFailures: 3\n")).file, {
      env: { CREDHOOK_PASSWORD: "pw" },
    });
    expect(s2.auth.maxGlobalFailures).toBe(30);
  });

  it("bad values are named by their YAML path, all at once", async () => {
    expect(
      await configErrors(withServer("  headersTimeoutMs: 5\n  maxHeaderBytes: 1000000\n  keepAliveTimeoutMs: 0\n")),
    ).toEqual(
      expect.arrayContaining([
        "server.headersTimeoutMs must be >= 100",
        "server.maxHeaderBytes must be <= 65536",
        "server.keepAliveTimeoutMs must be >= 100",
      ]),
    );
    expect(
      await configErrors(
        withAuth("    maxConcurrentPasswordChecks: 0\n    rememberLoginMs: -1\n    maxGlobalFailures: many\n"),
      ),
    ).toEqual(
      expect.arrayContaining([
        "server.auth.maxConcurrentPasswordChecks must be >= 1",
        "server.auth.rememberLoginMs must be >= 0",
        "server.auth.maxGlobalFailures must be integer",
      ]),
    );
    expect(await configErrors(withServer("  headersTimeoutMs: 20000\n  requestTimeoutMs: 15000\n"))).toEqual([
      "server.requestTimeoutMs (15000) must be >= server.headersTimeoutMs (20000): the whole request includes its headers",
    ]);
  });

  it("`credhook check-config` reports them with their path and exits 1", async () => {
    const { dir, file } = write(
      withServer("  requestTimeoutMs: 50\n").replace("auth: {", "auth: { maxRememberedLogins: 0,"),
    );
    const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawnTracked(process.execPath, [CLI, "check-config", "--config", file], {
        env: { ...process.env, CREDHOOK_PASSWORD: "pw", CREDHOOK_DATA_DIR: dir, CREDHOOK_FROM_SOURCE: "1" },
      });
      let text = "";
      child.stdout!.on("data", (d) => (text += String(d)));
      child.stderr!.on("data", (d) => (text += String(d)));
      child.once("exit", (c) => resolve({ code: c, out: text }));
    });
    expect(code).toBe(1);
    expect(out).toContain("server.requestTimeoutMs must be >= 100");
    expect(out).toContain("server.auth.maxRememberedLogins must be >= 1");
  });

  it("`credhook check-config` on a file with typos lists every one with the name that was meant, and exits 1", async () => {
    const { dir, file } = write(
      BASE.replace("  port: ${PORT:-8080}", "  prot: 8080").replace("provider: local", "provider: Local"),
    );
    const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawnTracked(process.execPath, [CLI, "check-config", "--config", file], {
        env: { ...process.env, CREDHOOK_PASSWORD: "long-enough-password", CREDHOOK_DATA_DIR: dir },
      });
      let text = "";
      child.stdout!.on("data", (d) => (text += String(d)));
      child.stderr!.on("data", (d) => (text += String(d)));
      child.once("exit", (c) => resolve({ code: c, out: text }));
    });
    expect(code).toBe(1);
    expect(out).toContain(
      "credhook: invalid configuration:\n" +
        "  - server must not have property 'prot' (did you mean 'port'?)\n" +
        "  - gateways.local.provider: provider package 'Local' is not installed — did you mean 'local'? " +
        "(built-in providers: local, aws, azure, gcp, kong, apigee; any other value is a package name)\n",
    );
  });
});
