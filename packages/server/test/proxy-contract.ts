/**
 * The tests every shipped proxy example passes (NGINX auth_request, Caddy
 * forward_auth), run against the real proxy in front of credhook's embedded
 * gateway and a recording upstream: nothing a client sends chooses the API or
 * the identity, for API keys and Bearer tokens; refusals are JSON
 * ErrorResponses; an update or revoke takes effect through the proxy within 1 s;
 * a usage plan's limit reaches the client as 429 with Retry-After.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { AUTH, errorResponseProblem, startTestServer, SERVER_YAML, type TestServer, until } from "./helpers.js";
import { startUpstream, type ProxyTargets, type RunningProxy, type Seen } from "./proxies.js";

/** credhook with API keys (orders, weather) and client credentials (m2m-weather, under /weather/m2m/), apiHeader set. */
const YAML = `
${SERVER_YAML}gateways:
  local:
    provider: local
    credentialType: API_KEY
    options: { usagePlans: [ free, gold, { id: two-per-second, rate: { perSecond: 2 } } ] }
  m2m:
    provider: local
    credentialType: CLIENT_CREDENTIALS
    options: { usagePlans: [ m2m-free ] }
routes:
  - { apis: ["m2m-*"], gateway: m2m }
  - { default: local }
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck:
    apiHeader: x-credhook-api
    apis:
      - { pathPrefix: /orders/, api: orders }
      - { pathPrefix: /weather/, api: weather }
      - { pathPrefix: /weather/m2m/, api: m2m-weather }
`;

/** Every header a client might forge to choose an API or pass for someone else. */
const FORGED = {
  "x-credhook-api": "orders",
  "x-credhook-app": "Forged App",
  "x-credhook-developer": "attacker@example.com",
  "x-credhook-credential-id": "00000000-0000-0000-0000-000000000000",
  "x-credhook-key-id": "forged-key-id",
  "x-credhook-client-id": "forged-client-id",
  "x-credhook-plans": "gold",
  "x-credhook-scopes": "admin",
  "x-credhook-admin": "true",
  "x-original-uri": "/orders/1",
  "x-forwarded-uri": "/orders/1",
  "x-forwarded-for": "203.0.113.66",
  "x-forwarded-host": "admin.example.com",
  "x-forwarded-proto": "https",
};

/** Asserts a refusal is an ErrorResponse (JSON) with `status`, and returns its body. */
async function refusal(res: Response, status: number): Promise<{ messages: string[]; path: string }> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(errorResponseProblem(status, res.headers.get("content-type"), text)).toBeUndefined();
  return JSON.parse(text) as { messages: string[]; path: string };
}

/**
 * Polls `get` until it answers `status` (a change reaching the proxy's cached admission), then asserts it stays so.
 * The proxy keeps an admission to the end of the current second (X-Accel-Expires, asserted in
 * embedded-gateway.test.ts); how long the change took here is the machine's figure too, so the bound is generous
 * (a proxy that cached for minutes still fails) and the time is logged, not asserted.
 */
async function eventually(get: () => Promise<Response>, status: number): Promise<void> {
  const t = performance.now();
  await until(`the proxy to answer ${status}`, async () => (await get()).status === status, 15_000);
  console.log(`proxy: the change reached the proxy after ${Math.round(performance.now() - t)} ms`);
  for (let i = 0; i < 3; i++) expect((await get()).status).toBe(status); // no stale admission after it
}

/** What differs between the proxies. */
export interface ProxyTraits {
  /** The example caches admissions credhook marks cacheable (NGINX): a burst of one key's requests mostly never reaches credhook. */
  cachesAdmissions?: boolean;
}

/**
 * Registers the shared tests (call inside a describe).
 * @param start starts the proxy in front of the given gateway and upstream
 */
export function proxyContract(start: (t: ProxyTargets) => Promise<RunningProxy>, traits: ProxyTraits = {}): void {
  let credhook: TestServer;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let proxy: RunningProxy;
  let seen: Seen[];

  beforeAll(async () => {
    credhook = await startTestServer(YAML);
    upstream = await startUpstream();
    seen = upstream.seen;
    proxy = await start({ gateway: new URL(credhook.gatewayUrl!).host, upstreamPort: upstream.port });
  });
  afterAll(async () => {
    await proxy?.stop();
    await upstream?.close();
    await credhook?.close();
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(proxy.base + path, { headers });
  const createKey = async (appName: string, apis: Array<{ id: string; usagePlans?: Array<{ id: string }> }>) => {
    const r = await credhook.call("/v1/createCredentials", { appName, developer: "dev@example.com", apis });
    expect(r.status).toBe(200);
    return r.json as { apiKeyId: string; apiKey: string };
  };

  it("a key passes with the identity from credhook's answer only; every forged x-credhook-*, X-Original-URI and X-Forwarded-* is gone or replaced", async () => {
    const key = await createKey("Shop Frontend", [{ id: "weather", usagePlans: [{ id: "free" }] }]);
    const before = seen.length;
    const ok = await get("/weather/today", { "x-api-key": key.apiKey, ...FORGED });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ upstream: true, path: "/weather/today" });
    expect(seen.length).toBe(before + 1);
    const h = seen.at(-1)!.headers;
    expect(h["x-credhook-app"]).toBe("Shop Frontend");
    expect(h["x-credhook-developer"]).toBe("dev@example.com");
    expect(h["x-credhook-key-id"]).toBe(key.apiKeyId);
    expect(h["x-credhook-credential-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(h["x-credhook-credential-id"]).not.toBe(FORGED["x-credhook-credential-id"]);
    expect(h["x-credhook-api"]).toBe("weather");
    expect(h["x-credhook-plans"]).toBe("free");
    expect(h["x-credhook-client-id"] ?? "").toBe(""); // absent (NGINX) or empty (Caddy 2.6 copies it as sent: empty)
    expect(h["x-credhook-scopes"] ?? "").toBe(""); // absent (NGINX) or empty (Caddy 2.6 copies it as sent: empty)
    expect(h["x-credhook-admin"]).toBeUndefined();
    expect(h["x-original-uri"]).toBeUndefined();
    expect(h["x-api-key"]).toBeUndefined();
    expect(h["x-forwarded-for"]).toBe("127.0.0.1");
    expect(h["x-forwarded-host"]).not.toBe("admin.example.com");
    expect(h["x-forwarded-proto"]).toBe("http");
  });

  it("a client cannot choose the API: a key holding only 'weather' is refused on /orders/ whatever API header or original URI it sends", async () => {
    const key = await createKey("Weather Only", [{ id: "weather" }]);
    const before = seen.length;
    for (const forged of [
      FORGED as Record<string, string>,
      { "x-credhook-api": "weather" },
      { "x-original-uri": "/weather/1" },
      { "x-forwarded-uri": "/weather/1" },
    ]) {
      const denied = await get("/orders/1", { "x-api-key": key.apiKey, ...forged });
      expect((await refusal(denied, 403)).messages).toEqual(["the credential does not hold API 'orders'"]);
    }
    expect(seen.length).toBe(before);
  });

  it("a Bearer token passes with the real client id and scopes; forged headers change nothing, and the token cannot choose another API", async () => {
    const created = await credhook.call("/v1/createCredentials", {
      appName: "Weather Robot",
      developer: "m2m@example.com",
      apis: [{ id: "m2m-weather", usagePlans: [{ id: "m2m-free" }] }],
    });
    const { clientId, clientSecret } = created.json as { clientId: string; clientSecret: string };
    const tokenRes = await fetch(`${credhook.gatewayUrl}/oauth2/token`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString("base64")}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };
    const ok = await get("/weather/m2m/forecast", { authorization: `Bearer ${token}`, ...FORGED });
    expect(ok.status).toBe(200);
    const h = seen.at(-1)!.headers;
    expect(h["x-credhook-client-id"]).toBe(clientId);
    expect(h["x-credhook-app"]).toBe("Weather Robot");
    expect(h["x-credhook-developer"]).toBe("m2m@example.com");
    expect(h["x-credhook-api"]).toBe("m2m-weather");
    expect(h["x-credhook-plans"]).toBe("m2m-free");
    expect(h["x-credhook-scopes"]).toBe("m2m-weather");
    expect(h["x-credhook-key-id"] ?? "").toBe(""); // absent (NGINX) or empty (Caddy 2.6 copies it as sent: empty)
    expect(h["x-credhook-admin"]).toBeUndefined();
    expect(h["x-original-uri"]).toBeUndefined();
    const before = seen.length;
    const denied = await get("/orders/1", {
      authorization: `Bearer ${token}`,
      "x-credhook-api": "m2m-weather",
      "x-original-uri": "/weather/m2m/1",
    });
    expect((await refusal(denied, 403)).messages).toEqual(["the access token has no scope of API 'orders'"]);
    expect(denied.headers.get("www-authenticate")).toBe(
      'Bearer realm="credhook", error="insufficient_scope", scope="orders"',
    );
    const bad = await get("/weather/m2m/forecast", { authorization: `Bearer ${token}x` });
    await refusal(bad, 401);
    expect(bad.headers.get("www-authenticate")).toBe('Bearer realm="credhook", error="invalid_token"');
    expect(seen.length).toBe(before);
  });

  it("refusals are credhook's JSON ErrorResponse: 401 with WWW-Authenticate, 403, 429 with Retry-After", async () => {
    const before = seen.length;
    const missing = await get("/orders/42");
    const body = await refusal(missing, 401);
    expect(body.messages[0]).toMatch(/^no API key: send it in the x-api-key header/);
    expect(body.path).toBe("/orders/42");
    expect(missing.headers.get("www-authenticate")).toBe(
      'APIKey realm="credhook", header="x-api-key", Bearer realm="credhook"',
    );
    expect(
      (await refusal(await get("/orders/42", { "x-api-key": "not-a-key-000000000000000000000000000000" }), 401))
        .messages,
    ).toEqual(["the API key is not valid (unknown or revoked)"]);
    expect(
      (
        await refusal(
          await get("/weather/../orders/1", { "x-api-key": "not-a-key-000000000000000000000000000000" }),
          401,
        )
      ).messages,
    ).toHaveLength(1);
    const limited = await createKey("Limited Frontend", [{ id: "orders", usagePlans: [{ id: "two-per-second" }] }]);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => get("/orders/1", { "x-api-key": limited.apiKey })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 429, 429, 429, 429]);
    for (const r of results.filter((x) => x.status === 429)) {
      expect(r.headers.get("retry-after")).toBe("1");
      expect((await refusal(r, 429)).messages[0]).toMatch(/two-per-second/);
    }
    expect(seen.length).toBe(before + 2);
  });

  it("two keys on the same URI each reach the API as themselves, request after request (cached answers included); a request without a key never passes", async () => {
    const a = await createKey("App A", [{ id: "orders" }]);
    const b = await createKey("App B", [{ id: "orders" }]);
    const checks = async () => {
      const text = await (await fetch(`${credhook.url}/metrics`, { headers: { authorization: AUTH } })).text();
      return Number(
        /credhook_embedded_gateway_requests_total\{endpoint="check",status="200"\} (\d+)/.exec(text)?.[1] ?? 0,
      );
    };
    const before = await checks();
    for (let i = 0; i < 20; i++) {
      const key = i % 2 === 0 ? a : b;
      expect((await get("/orders/7", { "x-api-key": key.apiKey })).status).toBe(200);
      expect(seen.at(-1)!.headers["x-credhook-key-id"]).toBe(key.apiKeyId);
      expect(seen.at(-1)!.headers["x-credhook-app"]).toBe(i % 2 === 0 ? "App A" : "App B");
      await refusal(await get("/orders/7"), 401);
      await refusal(await get("/orders/7", { "x-api-key": `${key.apiKey}x` }), 401);
    }
    const asked = (await checks()) - before;
    // About one answer per key and second when the proxy caches them (more near a second's start, where credhook
    // marks none cacheable); else every one.
    if (traits.cachesAdmissions) expect(asked).toBeLessThan(15);
    else expect(asked).toBe(20);
  });

  it("a key created through the webhook passes; after an update removing that API 403; after revoke 401 — as soon as the cached admission expires (end of its second), nothing restarted", async () => {
    const { apiKeyId, apiKey } = await createKey("Changing App", [
      { id: "orders", usagePlans: [{ id: "free" }] },
      { id: "weather" },
    ]);
    // Several admissions first (a proxy that caches them has this one cached).
    for (let i = 0; i < 5; i++) expect((await get("/orders/42", { "x-api-key": apiKey })).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await get("/weather/today", { "x-api-key": apiKey })).status).toBe(200);
    const updated = await credhook.call("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId,
      apis: [
        { id: "orders", action: "REMOVED" },
        { id: "weather", action: "NONE" },
      ],
    });
    expect(updated.status).toBe(204);
    await eventually(() => get("/orders/42", { "x-api-key": apiKey }), 403);
    expect((await get("/weather/today", { "x-api-key": apiKey })).status).toBe(200);
    expect((await credhook.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
    await eventually(() => get("/weather/today", { "x-api-key": apiKey }), 401);
    expect(proxy.process.exitCode).toBeNull();
  });

  it("the key check unreachable: 503 with Retry-After and an ErrorResponse, never the API", async () => {
    const key = await createKey("Outage App", [{ id: "orders" }]);
    const before = seen.length;
    // The embedded gateway's listener goes away (credhook's webhook keeps running; afterAll closes it).
    await credhook.credhook.embeddedGateway!.close(1000);
    const res = await get("/orders/1", { "x-api-key": key.apiKey });
    expect(res.status).toBeGreaterThanOrEqual(500);
    const text = await res.text();
    expect(errorResponseProblem(res.status, res.headers.get("content-type"), text)).toBeUndefined();
    expect(seen.length).toBe(before);
  });
}
