import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as oidc from "openid-client";
import { checkConfig, checkConfigReport, configWarnings } from "../src/check-config.js";
import { createLogger, embeddedConfigText, importProviderModule, loadConfigFile, startServer } from "../src/index.js";
import { AUTH, errorOf, PASSWORD, startTestServer, SERVER_YAML, type TestServer } from "./helpers.js";

const YAML = `
${SERVER_YAML}gateways:
  local: { provider: local, credentialType: API_KEY }
  m2m: { provider: local, credentialType: CLIENT_CREDENTIALS, options: { tokenUrl: "https://auth.example.com/oauth2/token" } }
routes:
  - { apis: ["m2m-*"], gateway: m2m }
  - { default: local }
embeddedGateway:
  pathPrefix: /gateway
  keyCheck: { header: X-Key, apiHeader: X-Credhook-Api }
  oauth: { signing: { alg: ES256, keyFile: ./signing-keys.json } }
`;

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(YAML);
});
afterAll(() => s.close());

describe("embedded gateway under a path prefix of the webhook's port", () => {
  it("serves the key check under the prefix without Basic auth, while the webhook keeps its auth", async () => {
    expect(s.gatewayUrl).toBe(`${s.url}/gateway`);
    const { json } = await s.call("/v1/createCredentials", {
      appName: "Prefixed",
      developer: "d@example.com",
      apis: [{ id: "orders" }],
    });
    const key = (json as { apiKey: string }).apiKey;
    const ok = await fetch(`${s.url}/gateway/check`, { headers: { "x-key": key, "x-credhook-api": "orders" } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-credhook-api")).toBe("orders");
    const denied = await fetch(`${s.url}/gateway/check`, { headers: { "x-credhook-api": "orders" } });
    expect(denied.status).toBe(401);
    expect((await errorOf(denied)).path).toBe("/gateway/check");
    expect((await fetch(`${s.url}/v1/health`)).status).toBe(401);
    const unknown = await fetch(`${s.url}/gateway/nope`);
    expect(unknown.status).toBe(404);
    expect((await errorOf(unknown)).messages[0]).toMatch(
      /the embedded gateway serves \/gateway\/check, \/gateway\/oauth2\/token/,
    );
  });

  it("publishes RFC 8414 metadata at the path-inserted well-known URI, so a standard client discovers the issuer with its path", async () => {
    const issuer = `http://localhost:${s.port}/gateway`;
    const inserted = await fetch(`${s.url}/.well-known/oauth-authorization-server/gateway`);
    expect(inserted.status).toBe(200);
    expect(await inserted.json()).toMatchObject({
      issuer,
      token_endpoint: `${issuer}/oauth2/token`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
    });
    const { json } = await s.call("/v1/createCredentials", {
      appName: "Prefixed Client",
      developer: "d@example.com",
      apis: [{ id: "m2m-x" }],
    });
    const cred = json as { clientId: string; clientSecret: string; customCredentials: { tokenUrl: string } };
    // The gateway option tokenUrl wins over the embedded gateway's own.
    expect(cred.customCredentials.tokenUrl).toBe("https://auth.example.com/oauth2/token");
    const config = await oidc.discovery(new URL(issuer), cred.clientId, cred.clientSecret, undefined, {
      algorithm: "oauth2",
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await oidc.clientCredentialsGrant(config, { scope: "m2m-x" });
    expect(tokens.scope).toBe("m2m-x");
    // openid-client's default (OpenID Connect) discovery appends /.well-known/openid-configuration to the issuer.
    const oidcDefault = await oidc.discovery(new URL(issuer), cred.clientId, cred.clientSecret, undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    expect((await oidc.clientCredentialsGrant(oidcDefault)).scope).toBe("m2m-x");
    const jwks = (await (await fetch(`${s.url}/gateway/.well-known/jwks.json`)).json()) as {
      keys: Array<{ kty: string; alg: string }>;
    };
    expect(jwks.keys[0]).toMatchObject({ kty: "EC", alg: "ES256" });
  });
});

describe("embedded gateway configuration at start-up", () => {
  it("refuses to start when no gateway uses provider local", async () => {
    await expect(
      startTestServer(`
server: { auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] } }
store: { sqlite: ":memory:" }
gateways: { aws: { provider: aws, credentialType: API_KEY, options: { region: us-east-1 } } }
routes: [ { default: aws } ]
embeddedGateway: {}
`),
    ).rejects.toMatchObject({ messages: [expect.stringMatching(/^embeddedGateway: no gateway uses provider: local/)] });
  });

  it("refuses usage-plan counters on a store that is not PostgreSQL — serve and check-config alike (one validation)", async () => {
    const yaml = `${SERVER_YAML}gateways: { local: { provider: local, credentialType: API_KEY } }
routes: [ { default: local } ]
embeddedGateway: { limits: { counters: store } }
`;
    const message = expect.stringMatching(
      /^embeddedGateway\.limits\.counters: store keeps usage-plan counters on the PostgreSQL store/,
    );
    await expect(startTestServer(yaml)).rejects.toMatchObject({ messages: [message] });
    const dir = mkdtempSync(join(tmpdir(), "credhook-check-config-"));
    try {
      writeFileSync(join(dir, "webhook.config.yaml"), yaml);
      const config = await loadConfigFile(join(dir, "webhook.config.yaml"), {
        env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir },
      });
      await expect(checkConfig(config, importProviderModule)).rejects.toMatchObject({ messages: [message] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses an API header a client could send itself (one without the prefix the proxy examples strip)", async () => {
    const yaml = (apiHeader: string) => `${SERVER_YAML}gateways: { local: { provider: local, credentialType: API_KEY } }
routes: [ { default: local } ]
embeddedGateway: { keyCheck: { apiHeader: ${apiHeader} } }
`;
    await expect(startTestServer(yaml("X-Api"))).rejects.toMatchObject({
      messages: [
        "embeddedGateway.keyCheck.apiHeader 'x-api' would let a client choose the API: it must begin with keyCheck.responseHeaderPrefix 'x-credhook-' (e.g. x-credhook-api), the prefix whose client-sent headers the proxy removes before it sets its own",
      ],
    });
    await expect(startTestServer(yaml("x-credhook-"))).rejects.toMatchObject({
      messages: [expect.stringMatching(/apiHeader 'x-credhook-' would let a client choose the API/)],
    });
  });

  it("warns (check-config's warnings: section) where instances share the store and the OAuth signing keys have no configured encryption key, and only there", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-check-config-"));
    const warningsOf = async (store: string, gateways: string, signing: string) => {
      writeFileSync(
        join(dir, "webhook.config.yaml"),
        `${SERVER_YAML.replace(/^store: .*$/m, `store: ${store}`)}gateways: ${gateways}
routes: [ { default: local } ]
embeddedGateway: { oauth: { signing: ${signing} } }
`,
      );
      const config = await loadConfigFile(join(dir, "webhook.config.yaml"), {
        env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir },
      });
      const gateways_ = await checkConfig(config, importProviderModule);
      const warnings = configWarnings(config, gateways_);
      return { warnings, report: checkConfigReport(config, gateways_, [], warnings) };
    };
    const postgres = `{ postgres: "postgres://credhook@db.example:5432/credhook" }`;
    const withM2m = `{ local: { provider: local, credentialType: API_KEY }, m2m: { provider: local, credentialType: CLIENT_CREDENTIALS } }`;
    try {
      const { warnings, report } = await warningsOf(postgres, withM2m, "{}");
      expect(warnings).toEqual([
        expect.stringMatching(
          /^embeddedGateway\.oauth\.signing\.encryptionKey is not set on a store that several instances share \(PostgreSQL\): each instance generates its own key into oauth-signing\.kek in its data directory .* refuses to start\. Set embeddedGateway\.oauth\.signing\.encryptionKey to the same key on every instance: base64 of 32 bytes \(openssl rand -base64 32\), e.g\. from a Kubernetes Secret$/,
        ),
      ]);
      expect(report).toContain(`\nwarnings:\n  - ${warnings[0]}\n\nconfiguration is valid\n`);
      const key = randomBytes(32).toString("base64");
      for (const [store, gateways, signing] of [
        [postgres, withM2m, `{ encryptionKey: "${key}" }`], // the same key everywhere
        [postgres, withM2m, "{ keyFile: ./keys.json }"], // no keys in the store
        [postgres, "{ local: { provider: local, credentialType: API_KEY } }", "{}"], // no OAuth: no signing keys
        [`{ sqlite: "${dir}/credhook.db" }`, withM2m, "{}"], // one instance
      ] as const) {
        const { warnings: none, report: quiet } = await warningsOf(store, gateways, signing);
        expect(none, `${store} ${gateways} ${signing}`).toEqual([]);
        expect(quiet).not.toContain("warnings:");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("names the YAML path of a wrong option", async () => {
    await expect(
      startTestServer(`
server: { auth: { users: [ { username: portal, password: "long-enough-password" } ] } }
gateways: { local: { provider: local, credentialType: API_KEY } }
routes: [ { default: local } ]
embeddedGateway: { keyCheck: { cache: { maxEntries: 0 } } }
`),
    ).rejects.toMatchObject({ messages: ["embeddedGateway.keyCheck.cache.maxEntries must be >= 1"] });
  });
});

describe("the shipped config (the embedded default, which `credhook init` writes)", () => {
  it("turns the embedded gateway on: its own port, API keys checked, OAuth tokens for m2m-* APIs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-shipped-"));
    const config = await loadConfigFile(undefined, {
      cwd: dir,
      embeddedDefault: true,
      env: { PORT: "0", CREDHOOK_GATEWAY_PORT: "0", CREDHOOK_DATA_DIR: dir, CREDHOOK_PASSWORD: PASSWORD },
    });
    const server = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") });
    try {
      // The address its own listener is bound to: the shipped config's embeddedGateway.listen.host, every IPv4 address.
      const gw = server.gatewayUrl!;
      expect(gw).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
      expect(gw).not.toBe(server.url);
      const create = (body: unknown) =>
        fetch(`${server.url}/v1/createCredentials`, {
          method: "POST",
          headers: { authorization: AUTH, "content-type": "application/json" },
          body: JSON.stringify(body),
        }).then((r) => r.json());
      const key = (await create({ appName: "Shipped", developer: "d@example.com", apis: [{ id: "5aba4csvd4" }] })) as {
        apiKey: string;
      };
      expect((await fetch(`${gw}/check`, { headers: { "x-api-key": "nope" } })).status).toBe(401);
      // No API rule is configured yet: a live key is refused, saying where to configure one.
      const unconfigured = await fetch(`${gw}/check`, {
        headers: { "x-api-key": key.apiKey, "x-original-uri": "/orders/1" },
      });
      expect(unconfigured.status).toBe(403);
      expect((await errorOf(unconfigured)).messages[0]).toMatch(/embeddedGateway\.keyCheck\.apis/);

      const client = (await create({
        appName: "Shipped M2M",
        developer: "d@example.com",
        apis: [{ id: "m2m-reports" }],
      })) as { clientId: string; clientSecret: string; customCredentials: { tokenUrl: string } };
      const port = new URL(gw).port;
      expect(client.customCredentials.tokenUrl).toBe(`http://localhost:${port}/oauth2/token`);
      const oauth = await oidc.discovery(
        new URL(`http://localhost:${port}`),
        client.clientId,
        client.clientSecret,
        undefined,
        { algorithm: "oauth2", execute: [oidc.allowInsecureRequests] },
      );
      expect((await oidc.clientCredentialsGrant(oauth)).scope).toBe("m2m-reports");
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("its commented key-check path rules work once uncommented: the key of an app holding the API passes, another gets 403", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-shipped-rules-"));
    const text = embeddedConfigText();
    const example = text.match(/\n( *)apis: \[\][^\n]*\n((?:\1#[^\n]*\n)+)/)!;
    const rules = example[2]!
      .split("\n")
      .filter((l) => /^ *# {1,3}(apis:| +- \{ pathPrefix)/.test(l))
      .map((l) => l.replace("# ", ""));
    expect(rules.length).toBeGreaterThanOrEqual(2);
    writeFileSync(join(dir, "webhook.config.yaml"), text.replace(example[0], `\n${rules.join("\n")}\n`));
    const config = await loadConfigFile(undefined, {
      cwd: dir,
      env: { PORT: "0", CREDHOOK_GATEWAY_PORT: "0", CREDHOOK_DATA_DIR: dir, CREDHOOK_PASSWORD: PASSWORD },
    });
    const server = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") });
    try {
      const create = (appName: string, api: string) =>
        fetch(`${server.url}/v1/createCredentials`, {
          method: "POST",
          headers: { authorization: AUTH, "content-type": "application/json" },
          body: JSON.stringify({ appName, developer: "d@example.com", apis: [{ id: api }] }),
        }).then((r) => r.json() as Promise<{ apiKey: string }>);
      const orders = await create("Orders app", "5aba4csvd4");
      const weather = await create("Weather app", "weather");
      const check = (key: string, uri: string) =>
        fetch(`${server.gatewayUrl}/check`, { headers: { "x-api-key": key, "x-original-uri": uri } });
      const ok = await check(orders.apiKey, "/orders/42?x=1");
      expect(ok.status).toBe(200);
      expect(ok.headers.get("x-credhook-api")).toBe("5aba4csvd4");
      expect((await check(weather.apiKey, "/orders/42")).status).toBe(403);
      expect((await check(weather.apiKey, "/weather/today")).status).toBe(200);
    } finally {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
