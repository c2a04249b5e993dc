import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { controls } from "./fixtures/faulty-provider.js";
import { errorOf, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";

const FAULTY = fileURLToPath(new URL("./fixtures/faulty-provider.ts", import.meta.url));
const TTL_MS = 400;
/** The server's clock (AppOptions.now): a test moves it past the cached check's TTL instead of sleeping. */
let clockMs = Date.now();
const expireCachedCheck = () => void (clockMs += TTL_MS);

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(
    LOCAL_YAML.replace(
      "routes:\n",
      `  faulty: { provider: ${FAULTY}, credentialType: API_KEY, options: { label: probes } }\nroutes:\n  - { apis: [slow], gateway: faulty }\n`,
    ),
    {},
    undefined,
    { readinessTtlMs: TTL_MS, now: () => clockMs },
  );
});
afterAll(() => s.close());

/** A probe without any credentials. */
const probe = (path: string, method = "GET") => fetch(s.url + path, { method });

describe("probes", () => {
  it("GET /livez answers 204 with no body and no credentials; HEAD too; other methods 405", async () => {
    const res = await probe("/livez");
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect((await probe("/livez", "HEAD")).status).toBe(204);
    const post = await probe("/livez", "POST");
    expect(post.status).toBe(405);
    expect((await errorOf(post)).messages).toEqual(["POST is not allowed on /livez; use GET"]);
  });

  it("GET /readyz answers 204 when the store and every gateway are healthy, without credentials", async () => {
    controls.healthy = true;
    expireCachedCheck();
    const res = await probe("/readyz");
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
  });

  it("a failing gateway makes /readyz 503 'not ready' with no detail, logged with the reason; checks are cached, not repeated per probe", async () => {
    controls.healthy = false;
    expireCachedCheck();
    const before = controls.healthChecks;
    const answers = await Promise.all([probe("/readyz"), probe("/readyz"), probe("/readyz")]);
    for (const res of answers) {
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("5");
      const body = await errorOf(res);
      expect(body.messages).toEqual(["not ready"]);
      expect(body.path).toBe("/readyz");
      // nothing an unauthenticated caller could use: no gateway name, no cloud, no store
      expect(JSON.stringify(body)).not.toMatch(/faulty|gateway|store|DescribeService|connection/);
    }
    expect((await probe("/readyz")).status).toBe(503);
    // three concurrent probes and one more shared one gateway check
    expect(controls.healthChecks - before).toBe(1);
    const notReady = s.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "not ready");
    expect(notReady?.problems).toEqual([
      "gateway 'faulty': [gateway faulty] DescribeService failed: connection refused",
    ]);
    // the contract's health check (Basic auth) still gives the detail
    const health = await s.get("/v1/health");
    expect(health.status).toBe(503);
    expect((await errorOf(health)).messages.join(" ")).toContain("gateway 'faulty'");

    // recovered: ready again once the cached check expires
    controls.healthy = true;
    clockMs += TTL_MS - 1;
    expect((await probe("/readyz")).status).toBe(503); // the failed check is still fresh 1 ms before its TTL
    clockMs += 1;
    expect((await probe("/readyz")).status).toBe(204);
    expect(s.logs.some((l) => l.includes('"msg":"ready"'))).toBe(true);
  });

  it("probes are not counted as failed logins and need no Authorization even with a wrong one", async () => {
    const wrong = { authorization: `Basic ${Buffer.from("portal:nope").toString("base64")}` };
    for (let i = 0; i < 12; i++) expect((await fetch(`${s.url}/readyz`, { headers: wrong })).status).toBe(204);
    expect((await s.get("/v1/health")).status).toBe(204);
  });

  it("while shutting down /readyz is 503 and /livez stays 204", async () => {
    s.credhook.draining = true;
    try {
      const ready = await probe("/readyz");
      expect(ready.status).toBe(503);
      expect((await errorOf(ready)).messages).toEqual(["not ready"]);
      expect((await probe("/livez")).status).toBe(204);
      // the webhook's own endpoints answer 503 as before
      expect((await s.get("/v1/health")).status).toBe(503);
    } finally {
      s.credhook.draining = false;
    }
  });

  it("a store that cannot be read makes /readyz 503", async () => {
    await s.credhook.store.close();
    const res = await probe("/readyz");
    expect(res.status).toBe(503);
    expect((await errorOf(res)).messages).toEqual(["not ready"]);
  });
});
