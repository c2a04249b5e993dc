import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import * as oidc from "openid-client";
import { errorOf, startTestServer, SERVER_YAML, type TestServer } from "./helpers.js";

/** Every API on the embedded provider; the embedded gateway on its own (free) port. */
const YAML = `
${SERVER_YAML}gateways:
  local:
    provider: local
    credentialType: API_KEY
    options:
      usagePlans:
        - free
        - { id: five-per-second, rate: { perSecond: 5 } }
        - { id: three-a-day, quota: { perDay: 3 } }
  m2m:
    provider: local
    credentialType: CLIENT_CREDENTIALS
    options:
      usagePlans: [ m2m-free, { id: m2m-two-a-minute, rate: { perMinute: 2 } } ]
routes:
  - { apis: ["m2m-*"], gateway: m2m }
  - { default: local }
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck:
    queryParam: api_key
    apiHeader: x-credhook-api
    apis:
      - { pathPrefix: /orders/, api: orders }
      - { pathPrefix: /weather/, api: weather }
      - { pathPrefix: /reports/, api: m2m-reports }
  oauth:
    tokenTtlS: 600
    scopes: { m2m-reports: [reports.read, reports.write] }
`;

let s: TestServer;
let gw: string;
beforeAll(async () => {
  s = await startTestServer(YAML);
  gw = s.gatewayUrl!;
});
afterAll(() => s.close());

const createKey = async (appName: string, apis: Array<{ id: string; usagePlans?: Array<{ id: string }> }>) => {
  const r = await s.call("/v1/createCredentials", { appName, developer: "dev@example.com", apis });
  expect(r.status).toBe(200);
  return r.json as { apiKeyId: string; apiKey: string };
};
const createClient = async (appName: string, apis: Array<{ id: string; usagePlans?: Array<{ id: string }> }>) => {
  const r = await s.call("/v1/createCredentials", { appName, developer: "m2m@example.com", apis });
  expect(r.status).toBe(200);
  return r.json as { clientId: string; clientSecret: string; customCredentials: { tokenUrl: string } };
};
const check = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${gw}/check`, { headers: { "x-original-uri": path, ...headers } });

describe("key check (NGINX auth_request / Envoy ext_authz)", () => {
  it("answers 200 with the app, developer, credential, key id, API and plans for a live key that holds the API", async () => {
    const key = await createKey("Checked App", [{ id: "orders", usagePlans: [{ id: "free" }] }, { id: "weather" }]);
    const res = await check("/orders/42?x=1", { "x-api-key": key.apiKey });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    expect(res.headers.get("x-credhook-app")).toBe("Checked App");
    expect(res.headers.get("x-credhook-developer")).toBe("dev@example.com");
    expect(res.headers.get("x-credhook-key-id")).toBe(key.apiKeyId);
    expect(res.headers.get("x-credhook-credential-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get("x-credhook-api")).toBe("orders");
    expect(res.headers.get("x-credhook-plans")).toBe("free");
    expect((await check("/weather/today", { "x-api-key": key.apiKey })).headers.get("x-credhook-api")).toBe("weather");
  });

  it("401 for a missing or unknown key, with WWW-Authenticate and an ErrorResponse naming the header", async () => {
    const missing = await check("/orders/1");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toContain('APIKey realm="credhook", header="x-api-key"');
    expect((await errorOf(missing)).messages[0]).toMatch(
      /no API key: send it in the x-api-key header or the api_key query parameter/,
    );
    const unknown = await check("/orders/1", { "x-api-key": "0".repeat(40) });
    expect(unknown.status).toBe(401);
    expect((await errorOf(unknown)).messages).toEqual(["the API key is not valid (unknown or revoked)"]);
  });

  it("403 for a key without the API, or a path no rule names; the API header wins over path rules", async () => {
    const key = await createKey("Orders Only", [{ id: "orders" }]);
    const other = await check("/weather/today", { "x-api-key": key.apiKey });
    expect(other.status).toBe(403);
    expect((await errorOf(other)).messages).toEqual(["the credential does not hold API 'weather'"]);
    const nowhere = await check("/admin/", { "x-api-key": key.apiKey });
    expect(nowhere.status).toBe(403);
    expect((await errorOf(nowhere)).messages[0]).toMatch(/no API is configured for path '\/admin\/'/);
    expect((await check("/admin/", { "x-api-key": key.apiKey, "x-credhook-api": "orders" })).status).toBe(200);
    expect((await check("/orders/1", { "x-api-key": key.apiKey, "x-credhook-api": "weather" })).status).toBe(403);
  });

  it("normalises the original path: dot segments and encoded slashes cannot reach another API's prefix", async () => {
    const key = await createKey("Weather Only", [{ id: "weather" }]);
    expect((await check("/weather/../orders/1", { "x-api-key": key.apiKey })).status).toBe(403);
    expect((await check("/weather/%2e%2e/orders/1", { "x-api-key": key.apiKey })).status).toBe(403);
    expect((await check("//weather//today", { "x-api-key": key.apiKey })).status).toBe(200);
  });

  it("takes the key from the query parameter, and the original path from the check path when no X-Original-URI is sent (Envoy path_prefix)", async () => {
    const key = await createKey("Envoy App", [{ id: "orders" }]);
    expect((await check(`/orders/1?api_key=${key.apiKey}`)).status).toBe(200);
    const envoy = await fetch(`${gw}/check/orders/7`, { method: "POST", headers: { "x-api-key": key.apiKey } });
    expect(envoy.status).toBe(200);
    expect(envoy.headers.get("x-credhook-api")).toBe("orders");
    expect(
      (await fetch(`${gw}/check/weather/7`, { method: "DELETE", headers: { "x-api-key": key.apiKey } })).status,
    ).toBe(403);
  });

  it("an update or a revoke through the webhook takes effect on the very next check (the cache is invalidated at once)", async () => {
    const key = await createKey("Cached App", [{ id: "orders" }, { id: "weather" }]);
    for (let i = 0; i < 3; i++) expect((await check("/orders/1", { "x-api-key": key.apiKey })).status).toBe(200);
    const upd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: key.apiKeyId,
      apis: [{ id: "orders", action: "REMOVED" }],
    });
    expect(upd.status).toBe(204);
    expect((await check("/orders/1", { "x-api-key": key.apiKey })).status).toBe(403);
    expect((await check("/weather/1", { "x-api-key": key.apiKey })).status).toBe(200);
    const rev = await s.post("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: key.apiKeyId });
    expect(rev.status).toBe(204);
    expect((await check("/weather/1", { "x-api-key": key.apiKey })).status).toBe(401);
  });

  it("a replayed create rotates the key: the old value stops passing, the new one passes", async () => {
    const first = await createKey("Rotated App", [{ id: "orders" }]);
    expect((await check("/orders/1", { "x-api-key": first.apiKey })).status).toBe(200);
    const again = await createKey("Rotated App", [{ id: "orders" }]);
    expect(again.apiKeyId).toBe(first.apiKeyId);
    expect(again.apiKey).not.toBe(first.apiKey);
    expect((await check("/orders/1", { "x-api-key": first.apiKey })).status).toBe(401);
    expect((await check("/orders/1", { "x-api-key": again.apiKey })).status).toBe(200);
  });

  it("lets the proxy cache an admission only under the SHA-1 of exactly what decided it, to the end of the current second, and never a counted or refused one", async () => {
    const key = await createKey("Cacheable App", [
      { id: "orders" },
      { id: "weather", usagePlans: [{ id: "five-per-second" }] },
    ]);
    const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");
    const claim = (uri: string, authz = "") => sha1(`${key.apiKey}\n${authz}\n${uri}`);
    const notCached = async (res: Response) => {
      expect(res.headers.get("x-accel-expires")).toBeNull();
      expect(res.headers.get("cache-control")).toBe("no-store");
    };
    // The admission's second is read on Date: a faked one, set to a known instant, instead of the wall clock.
    const second = Math.floor(Date.now() / 1000) + 3600;
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(second * 1000 + 500);
      const cached = await check("/orders/1?x=1", {
        "x-api-key": key.apiKey,
        "x-credhook-cache-key": claim("/orders/1?x=1"),
      });
      expect(cached.status).toBe(200);
      expect(cached.headers.get("x-accel-expires")).toBe(`@${second}`); // to the end of this second
      expect(cached.headers.get("cache-control")).toBeNull();
      // In the first CACHE_MARGIN_MS (25 ms) of a second: not cached (a revoke right after would wait a whole second).
      vi.setSystemTime((second + 1) * 1000 + 24);
      await notCached(
        await check("/orders/1?x=1", { "x-api-key": key.apiKey, "x-credhook-cache-key": claim("/orders/1?x=1") }),
      );
      vi.setSystemTime((second + 1) * 1000 + 25);
      const next = await check("/orders/1?x=1", {
        "x-api-key": key.apiKey,
        "x-credhook-cache-key": claim("/orders/1?x=1"),
      });
      expect(next.headers.get("x-accel-expires")).toBe(`@${second + 1}`);
    } finally {
      vi.useRealTimers();
    }
    // Another URI, another key header, a digest of something else, an API header, no original URI: never cacheable.
    await notCached(
      await check("/orders/2", { "x-api-key": key.apiKey, "x-credhook-cache-key": claim("/orders/1?x=1") }),
    );
    await notCached(
      await check("/orders/1?x=1", { "x-api-key": key.apiKey, "x-credhook-cache-key": sha1("\n\n/orders/1?x=1") }),
    );
    await notCached(
      await check("/orders/1?x=1", {
        "x-api-key": key.apiKey,
        authorization: "Basic eA==",
        "x-credhook-cache-key": claim("/orders/1?x=1"),
      }),
    );
    await notCached(
      await check("/orders/1?x=1", {
        "x-api-key": key.apiKey,
        "x-credhook-api": "orders",
        "x-credhook-cache-key": claim("/orders/1?x=1"),
      }),
    );
    await notCached(
      await fetch(`${gw}/check/orders/1`, {
        headers: { "x-api-key": key.apiKey, "x-credhook-cache-key": sha1(`${key.apiKey}\n\n`) },
      }),
    );
    await notCached(await check("/orders/1", { "x-api-key": key.apiKey }));
    // A limited plan counts every request: never cached. A refusal: never cached.
    const limited = await check("/weather/1", { "x-api-key": key.apiKey, "x-credhook-cache-key": claim("/weather/1") });
    expect(limited.status).toBe(200);
    await notCached(limited);
    const refused = await check("/admin/1", { "x-api-key": key.apiKey, "x-credhook-cache-key": claim("/admin/1") });
    expect(refused.status).toBe(403);
    await notCached(refused);
  });

  it("is not behind the webhook's Basic auth, and the webhook's endpoints are not on the gateway's port", async () => {
    expect(
      (
        await fetch(`${gw}/v1/health`, {
          headers: { authorization: `Basic ${Buffer.from("portal:x").toString("base64")}` },
        })
      ).status,
    ).toBe(404);
    expect((await fetch(`${s.url}/check`)).status).toBe(404);
  });
});

describe("usage plan limits", () => {
  it("a key on a 5 requests/second plan gets exactly 5 requests of each second, for three seconds in a row; the rest are 429 with Retry-After, until the second ends", async () => {
    const key = await createKey("Burst App", [{ id: "orders", usagePlans: [{ id: "five-per-second" }] }]);
    const agent = { "x-api-key": key.apiKey };
    // The limiter's window (rate-limiter-flexible) is read on Date and ended by a timer: the test moves a faked clock
    // to the window's end instead of sending for three seconds of real time, which a busy machine stretches or bunches.
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] });
    try {
      for (let second = 0; second < 3; second++) {
        const statuses: number[] = [];
        for (let i = 0; i < 8; i++) {
          const res = await check("/orders/1", agent);
          statuses.push(res.status);
          if (res.status === 429) {
            expect(res.headers.get("retry-after")).toBe("1");
            expect((await errorOf(res)).messages).toEqual([
              "usage plan 'five-per-second' allows 5 requests per second",
            ]);
          } else await res.arrayBuffer();
        }
        expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
        vi.advanceTimersByTime(999);
        const late = await check("/orders/1", agent);
        expect(late.status).toBe(429); // 1 ms before the window ends: still refused
        await late.arrayBuffer();
        vi.advanceTimersByTime(1); // the window (a second from its first request) ends
      }
    } finally {
      vi.useRealTimers();
    }
  });

  it("a daily quota admits exactly its count, then 429 with Retry-After up to the next UTC midnight; another key is not affected", async () => {
    const key = await createKey("Quota App", [{ id: "orders", usagePlans: [{ id: "three-a-day" }] }]);
    const other = await createKey("Quota App 2", [{ id: "orders", usagePlans: [{ id: "three-a-day" }] }]);
    // The quota's day is read on Date: a faked one, 29.75 s before a UTC midnight, instead of the wall clock.
    const today = new Date();
    const midnight = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() + 2);
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(midnight - 29_750);
      const results = await Promise.all(
        Array.from({ length: 8 }, () => check("/orders/1", { "x-api-key": key.apiKey })),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(3);
      const refused = results.filter((r) => r.status === 429);
      expect(refused).toHaveLength(5);
      for (const r of refused) expect(r.headers.get("retry-after")).toBe("30"); // 29.75 s to midnight, rounded up
      expect((await check("/orders/1", { "x-api-key": other.apiKey })).status).toBe(200);
      vi.setSystemTime(midnight - 1);
      expect((await check("/orders/1", { "x-api-key": key.apiKey })).status).toBe(429);
      vi.setSystemTime(midnight); // a new UTC day: a new quota
      expect((await check("/orders/1", { "x-api-key": key.apiKey })).status).toBe(200);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("OAuth 2.0 client credentials (RFC 6749 §4.4, RFC 9068, RFC 8414, RFC 7662)", () => {
  const discover = (clientId: string, clientSecret: string, auth: "basic" | "post" = "basic") =>
    oidc.discovery(
      new URL(s.credhook.embeddedGateway!.issuer),
      clientId,
      clientSecret,
      auth === "basic" ? oidc.ClientSecretBasic(clientSecret) : oidc.ClientSecretPost(clientSecret),
      {
        algorithm: "oauth2",
        execute: [oidc.allowInsecureRequests],
      },
    );

  it("openid-client discovers the metadata, gets a token with the webhook's credential, and jose verifies it against the JWKS", async () => {
    const cred = await createClient("Reporting Client", [
      { id: "m2m-reports", usagePlans: [{ id: "m2m-free" }] },
      { id: "m2m-billing" },
    ]);
    const issuer = s.credhook.embeddedGateway!.issuer;
    expect(cred.customCredentials.tokenUrl).toBe(`${issuer}/oauth2/token`);
    const config = await discover(cred.clientId, cred.clientSecret);
    const meta = config.serverMetadata();
    expect(meta.issuer).toBe(issuer);
    expect(meta.token_endpoint).toBe(cred.customCredentials.tokenUrl);
    expect(meta.grant_types_supported).toEqual(["client_credentials"]);
    expect(meta.token_endpoint_auth_methods_supported).toEqual(["client_secret_basic", "client_secret_post"]);

    const tokens = await oidc.clientCredentialsGrant(config);
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.expires_in).toBe(600);
    expect(tokens.scope!.split(" ").sort()).toEqual(["m2m-billing", "reports.read", "reports.write"]);

    const jwks = createRemoteJWKSet(new URL(meta.jwks_uri!));
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, {
      issuer,
      typ: "at+jwt",
      algorithms: ["RS256"],
    });
    expect(protectedHeader.kid).toEqual(expect.any(String));
    expect(payload.sub).toBe(cred.clientId);
    expect(payload.client_id).toBe(cred.clientId);
    expect(payload.aud).toEqual(expect.arrayContaining(["m2m-reports", "m2m-billing"]));
    expect(payload.exp! - payload.iat!).toBe(600);
    expect(payload.jti).toEqual(expect.any(String));

    const narrow = await oidc.clientCredentialsGrant(await discover(cred.clientId, cred.clientSecret, "post"), {
      scope: "reports.read",
    });
    expect(narrow.scope).toBe("reports.read");
    const { payload: p2 } = await jwtVerify(narrow.access_token, jwks, { issuer, audience: "m2m-reports" });
    expect(p2.scope).toBe("reports.read");
  });

  it("after revoke, introspection says inactive and no new token is issued", async () => {
    const cred = await createClient("Revoked Client", [{ id: "m2m-reports" }]);
    const rs = await createClient("Resource Server", [{ id: "m2m-internal" }]);
    const config = await discover(cred.clientId, cred.clientSecret);
    const { access_token } = await oidc.clientCredentialsGrant(config);
    const rsConfig = await discover(rs.clientId, rs.clientSecret);
    const live = await oidc.tokenIntrospection(rsConfig, access_token);
    expect(live).toMatchObject({
      active: true,
      client_id: cred.clientId,
      sub: cred.clientId,
      scope: "reports.read reports.write",
      token_type: "Bearer",
    });

    const rev = await s.post("/v1/revokeCredentials", {
      credentialType: "CLIENT_CREDENTIALS",
      clientId: cred.clientId,
    });
    expect(rev.status).toBe(204);
    expect(await oidc.tokenIntrospection(rsConfig, access_token)).toEqual({ active: false });
    // A 401 with a WWW-Authenticate challenge (RFC 6749 §5.2): openid-client surfaces the challenge, the body says invalid_client.
    const refused = await oidc.clientCredentialsGrant(config).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
    const challenge = refused as oidc.WWWAuthenticateChallengeError;
    expect(challenge.status).toBe(401);
    expect(challenge.cause[0]!.scheme).toBe("basic");
    expect(await challenge.response.json()).toMatchObject({ error: "invalid_client", status: 401 });
  });

  it("the token endpoint answers RFC 6749 §5.2 errors: wrong secret, both auth methods, unsupported grant, invalid scope", async () => {
    const cred = await createClient("Errors Client", [{ id: "m2m-reports" }]);
    const token = `${gw}/oauth2/token`;
    const basic = (id: string, secret: string) =>
      `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(token, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body,
      });

    const wrong = await post("grant_type=client_credentials", {
      authorization: basic(cred.clientId, `${cred.clientSecret}x`),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    expect(await wrong.json()).toMatchObject({
      error: "invalid_client",
      status: 401,
      path: "/oauth2/token",
      messages: [expect.stringMatching(/client authentication failed/)],
    });

    const both = await post(
      `grant_type=client_credentials&client_id=${cred.clientId}&client_secret=${cred.clientSecret}`,
      { authorization: basic(cred.clientId, cred.clientSecret) },
    );
    expect(both.status).toBe(400);
    expect((await both.json()).error).toBe("invalid_request");

    const grant = await post("grant_type=password&username=a&password=b", {
      authorization: basic(cred.clientId, cred.clientSecret),
    });
    expect(grant.status).toBe(400);
    expect((await grant.json()).error).toBe("unsupported_grant_type");

    const scope = await post("grant_type=client_credentials&scope=reports.read%20admin", {
      authorization: basic(cred.clientId, cred.clientSecret),
    });
    expect(scope.status).toBe(400);
    expect(await scope.json()).toMatchObject({
      error: "invalid_scope",
      error_description: expect.stringContaining("'admin'"),
    });

    const dup = await post(`grant_type=client_credentials&grant_type=client_credentials`, {
      authorization: basic(cred.clientId, cred.clientSecret),
    });
    expect((await dup.json()).error).toBe("invalid_request");

    const json = await fetch(token, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic(cred.clientId, cred.clientSecret) },
      body: "{}",
    });
    expect(json.status).toBe(400);
    expect((await json.json()).error_description).toMatch(/application\/x-www-form-urlencoded/);

    const get = await fetch(token);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");

    const ok = await post(
      `grant_type=client_credentials&client_id=${cred.clientId}&client_secret=${cred.clientSecret}`,
    );
    expect(ok.status).toBe(200);
    expect(ok.headers.get("cache-control")).toBe("no-store");
  });

  it("the token endpoint enforces the client's plan limits: 429 with Retry-After", async () => {
    const cred = await createClient("Limited Client", [
      { id: "m2m-reports", usagePlans: [{ id: "m2m-two-a-minute" }] },
    ]);
    const config = await discover(cred.clientId, cred.clientSecret);
    await oidc.clientCredentialsGrant(config);
    await oidc.clientCredentialsGrant(config);
    const res = await fetch(`${gw}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `grant_type=client_credentials&client_id=${cred.clientId}&client_secret=${cred.clientSecret}`,
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect((await errorOf(res)).messages).toEqual(["usage plan 'm2m-two-a-minute' allows 2 requests per minute"]);
  });

  it("the key check accepts the access token as a bearer token, within its scopes, until the client is revoked", async () => {
    const cred = await createClient("Bearer Client", [{ id: "m2m-reports", usagePlans: [{ id: "m2m-free" }] }]);
    const { access_token } = await oidc.clientCredentialsGrant(await discover(cred.clientId, cred.clientSecret));
    const ok = await check("/reports/1", { authorization: `Bearer ${access_token}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-credhook-client-id")).toBe(cred.clientId);
    expect(ok.headers.get("x-credhook-plans")).toBe("m2m-free");
    const other = await check("/orders/1", { authorization: `Bearer ${access_token}` });
    expect(other.status).toBe(403);
    expect(other.headers.get("www-authenticate")).toMatch(/error="insufficient_scope"/);
    await s.post("/v1/revokeCredentials", { credentialType: "CLIENT_CREDENTIALS", clientId: cred.clientId });
    const revoked = await check("/reports/1", { authorization: `Bearer ${access_token}` });
    expect(revoked.status).toBe(401);
    expect(revoked.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
  });

  it("keeps no secret in plaintext: not the client secret, not the signing key (encrypted in the store, key-encryption key 0600)", async () => {
    const cred = await createClient("Secret Client", [{ id: "m2m-reports" }]);
    const key = await createKey("Secret Key App", [{ id: "orders" }]);
    await oidc.clientCredentialsGrant(await discover(cred.clientId, cred.clientSecret));
    const db =
      readFileSync(join(s.dir, "credhook.db")).toString("latin1") +
      readFileSync(join(s.dir, "credhook.db-wal")).toString("latin1");
    expect(db).not.toContain(cred.clientSecret);
    expect(db).not.toContain(key.apiKey);
    expect(db).toContain("signing-key:");
    const stored = await s.credhook.store.stateFor("@embedded-gateway").list("signing-key:");
    expect(stored.length).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(stored)).not.toMatch(/"d":/);
    expect(statSync(join(s.dir, "oauth-signing.kek")).mode & 0o777).toBe(0o600);
    const jwks = (await (await fetch(`${gw}/.well-known/jwks.json`)).json()) as {
      keys: Array<Record<string, unknown>>;
    };
    expect(jwks.keys.length).toBeGreaterThanOrEqual(1);
    for (const k of jwks.keys) {
      expect(k).toMatchObject({ kty: "RSA", alg: "RS256", use: "sig", kid: expect.any(String) });
      expect(k).not.toHaveProperty("d");
    }
    const { access_token } = await oidc.clientCredentialsGrant(await discover(cred.clientId, cred.clientSecret));
    expect(jwks.keys.map((k) => k.kid)).toContain(decodeProtectedHeader(access_token).kid);
    expect(s.logs.join("\n")).not.toContain(cred.clientSecret);
    expect(s.logs.join("\n")).not.toContain(access_token);
  });
});
