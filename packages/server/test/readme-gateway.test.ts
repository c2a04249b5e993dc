/**
 * Every snippet of docs/embedded-gateway.md ("Protect an API with the embedded
 * gateway", linked from the README), as written (only addresses, and the
 * placeholders a reader fills in, replaced): the configuration block starts `serve` and passes `check-config`;
 * the shell snippets run with bash and curl; the openid-client snippet runs; the
 * JSON bodies shown are what credhook answers (but the timestamp).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { checkConfig } from "../src/check-config.js";
import { importProviderModule, loadConfigFile } from "../src/index.js";
import { execFileTracked } from "./children.js";
import { PASSWORD, startTestServer, SERVER_YAML, type TestServer } from "./helpers.js";

const SECTION = readFileSync(fileURLToPath(new URL("../../../docs/embedded-gateway.md", import.meta.url)), "utf8");
/** The section's fenced blocks, in order: { lang, text }. */
const BLOCKS = [...SECTION.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]! }));
const block = (lang: string, containing: string) => {
  const found = BLOCKS.find((b) => b.lang === lang && b.text.includes(containing));
  if (!found) throw new Error(`no ${lang} block with '${containing}' in docs/embedded-gateway.md`);
  return found.text;
};

const GATEWAY_BLOCK = block("yaml", "embeddedGateway:");
const PLANS_BLOCK = block("yaml", "usagePlans:");
/** The page's blocks as one config: its usage plans' gateways, a client-credentials gateway for m2m-*, its embeddedGateway block on a free port. */
const YAML = `${SERVER_YAML}${PLANS_BLOCK}  m2m: { provider: local, credentialType: CLIENT_CREDENTIALS }
routes:
  - { apis: ["m2m-*"], gateway: m2m }
  - { default: local }
${GATEWAY_BLOCK.replace("listen: { port: 8081, host: 0.0.0.0 }", "listen: { port: 0, host: 127.0.0.1 }").replace(/^ {2}publicUrl: .*\n/m, "")}`;

let s: TestServer;
let gw: string;
beforeAll(async () => {
  expect(YAML).toContain("port: 0, host: 127.0.0.1");
  s = await startTestServer(YAML);
  gw = s.gatewayUrl!;
});
afterAll(() => s?.close());

/** Runs a shell snippet of the page with bash (and curl), its address pointed at the test's gateway; its stdout. */
const sh = async (snippet: string, env: Record<string, string> = {}) =>
  (
    await execFileTracked("bash", ["-euo", "pipefail", "-c", snippet.replaceAll("http://localhost:8081", gw)], {
      env: { ...process.env, ...env },
    })
  ).stdout;

/** The page's JSON body without its timestamp. */
const shown = (containing: string) => {
  const { timestamp, ...rest } = JSON.parse(block("json", containing)) as Record<string, unknown>;
  expect(Date.parse(timestamp as string)).not.toBeNaN();
  return rest;
};
const answered = async (res: Response) => {
  const { timestamp, ...rest } = (await res.json()) as Record<string, unknown>;
  expect(Date.parse(timestamp as string)).not.toBeNaN();
  return rest;
};

describe("docs/embedded-gateway.md, as written", () => {
  it("its configuration blocks start `serve` (SQLite) and pass `check-config` — one validation", async () => {
    expect(GATEWAY_BLOCK).toContain("counters: memory");
    const file = join(s.dir, "readme.yaml");
    writeFileSync(file, YAML);
    const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: s.dir } });
    const gateways = await checkConfig(config, importProviderModule);
    await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
  });

  it("the key check curl answers 200 with the x-credhook-* headers; the refusal body is the one shown", async () => {
    const { json } = await s.call("/v1/createCredentials", {
      appName: "Readme App",
      developer: "d@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    const { apiKey } = json as { apiKey: string };
    const snippet = block("sh", "/check");
    expect(snippet).toContain("K=<apiKey>");
    const out = await sh(snippet.replace("<apiKey>", apiKey));
    expect(out).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(out).toMatch(/^x-credhook-api: 5aba4csvd4\r$/m);
    expect(out).toMatch(/^x-credhook-plans: 1el57v\r$/m);
    const refused = await fetch(`${gw}/check`, { headers: { "x-original-uri": "/orders/42" } });
    expect(refused.status).toBe(401);
    expect(await answered(refused)).toEqual(shown('"status":401'));
  });

  it("the token curl gets the token shown; the openid-client snippet discovers with its defaults and gets one; the token passes the check", async () => {
    const { json } = await s.call("/v1/createCredentials", {
      appName: "Readme Client",
      developer: "d@example.com",
      apis: [{ id: "m2m-reports" }],
    });
    const { clientId, clientSecret } = json as { clientId: string; clientSecret: string };
    const snippet = block("sh", "/oauth2/token");
    const expected = JSON.parse(/# → (\{.*\})/.exec(snippet)![1]!.replace('"eyJ…"', '"eyJ"')) as Record<
      string,
      unknown
    >;
    const token = JSON.parse(
      await sh(snippet.replace(/# →.*/, ""), { CLIENT_ID: clientId, CLIENT_SECRET: clientSecret }),
    ) as Record<string, unknown>;
    expect(token).toEqual({ ...expected, access_token: expect.stringMatching(/^eyJ/) });

    const js = block("js", "openid-client");
    expect(js).not.toContain("algorithm");
    // The issuer (no publicUrl: http://localhost:<port>) is what discovery checks.
    const body = js
      .replace(/^import \* as client from "openid-client";\n/, "")
      .replaceAll("http://localhost:8081", s.credhook.embeddedGateway!.issuer);
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
      ...args: string[]
    ) => (...a: unknown[]) => Promise<unknown>;
    const tokens = (await new AsyncFunction("client", "clientId", "clientSecret", `${body}\nreturn tokens;`)(
      await import("openid-client"),
      clientId,
      clientSecret,
    )) as {
      access_token: string;
      scope: string;
    };
    expect(tokens.scope).toBe("reports.read");
    const ok = await fetch(`${gw}/check`, {
      headers: { authorization: `Bearer ${tokens.access_token}`, "x-original-uri": "/reports/monthly" },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-credhook-client-id")).toBe(clientId);
    expect(ok.headers.get("x-credhook-scopes")).toBe("reports.read");
  });

  it("an OAuth error is the body shown (error is the OAuth code)", async () => {
    const { json } = await s.call("/v1/createCredentials", {
      appName: "Readme Client 2",
      developer: "d@example.com",
      apis: [{ id: "m2m-reports" }],
    });
    const { clientId, clientSecret } = json as { clientId: string; clientSecret: string };
    const res = await fetch(`${gw}/oauth2/token`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString("base64")}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials&scope=admin",
    });
    expect(res.status).toBe(400);
    expect(await answered(res)).toEqual(shown('"error":"invalid_scope"'));
  });

  it("the usage plans block: gold admits 5 requests a second", async () => {
    const { json } = await s.call("/v1/createCredentials", {
      appName: "Gold App",
      developer: "d@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "gold" }] }],
    });
    const { apiKey } = json as { apiKey: string };
    const results = await Promise.all(
      Array.from({ length: 7 }, () =>
        fetch(`${gw}/check`, { headers: { "x-api-key": apiKey, "x-original-uri": "/orders/1" } }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429, 429]);
  });
});
