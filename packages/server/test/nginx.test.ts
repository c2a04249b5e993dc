/**
 * A real NGINX (Debian's `nginx` package; `.ci/run` installs it when missing)
 * runs examples/nginx/credhook-auth.conf as shipped — only its addresses
 * replaced — in front of a small upstream, with auth_request to credhook's
 * embedded gateway. Skipped, saying why, only where no nginx binary exists.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startTestServer, SERVER_YAML, type TestServer } from "./helpers.js";

const NGINX = [process.env.NGINX_BIN, "/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"]
  .concat((process.env.PATH ?? "").split(":").map((d) => join(d, "nginx")))
  .find((p): p is string => !!p && existsSync(p));
if (!NGINX) {
  console.warn("nginx.test.ts SKIPPED: no nginx binary found (install Debian's nginx package: apt-get install nginx; .ci/run does so when it runs as root)");
}

const EXAMPLE = fileURLToPath(new URL("../../../examples/nginx/credhook-auth.conf", import.meta.url));

const YAML = `
${SERVER_YAML}gateways:
  local:
    provider: local
    credentialType: API_KEY
    options: { usagePlans: [ free, { id: two-per-second, rate: { perSecond: 2 } } ] }
routes: [ { default: local } ]
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck:
    apis:
      - { pathPrefix: /orders/, api: orders }
      - { pathPrefix: /weather/, api: weather }
`;

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const srv = createNetServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });

describe.skipIf(!NGINX)("a real NGINX with auth_request to the embedded gateway (examples/nginx/credhook-auth.conf)", () => {
  let credhook: TestServer;
  let upstream: Server;
  let nginx: ChildProcess;
  let base: string;
  const seen: Array<{ path: string; headers: Record<string, string | string[] | undefined> }> = [];

  beforeAll(async () => {
    credhook = await startTestServer(YAML);
    upstream = createServer((req, res) => {
      seen.push({ path: req.url!, headers: req.headers });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ upstream: true, path: req.url }));
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    const upstreamPort = (upstream.address() as AddressInfo).port;
    const nginxPort = await freePort();
    const dir = join(credhook.dir, "nginx");
    mkdirSync(join(dir, "logs"), { recursive: true });
    const site = readFileSync(EXAMPLE, "utf8")
      .replace("server 127.0.0.1:8081;", `server ${new URL(credhook.gatewayUrl!).host};`)
      .replace("server 127.0.0.1:9000;", `server 127.0.0.1:${upstreamPort};`)
      .replace("listen 8000;", `listen 127.0.0.1:${nginxPort};`);
    expect(site).toContain(`listen 127.0.0.1:${nginxPort};`);
    writeFileSync(join(dir, "credhook-auth.conf"), site);
    const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `${t}_temp_path ${join(dir, t)};`).join("\n  ");
    writeFileSync(
      join(dir, "nginx.conf"),
      `daemon off;
master_process off;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "logs", "error.log")} warn;
events { worker_connections 128; }
http {
  access_log off;
  ${temp}
  include ${join(dir, "credhook-auth.conf")};
}
`,
    );
    const args = ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "logs", "error.log")];
    const test = spawnSync(NGINX!, [...args, "-t"], { encoding: "utf8" });
    expect(test.status, test.stderr).toBe(0);
    nginx = spawn(NGINX!, args, { stdio: ["ignore", "ignore", "pipe"] });
    base = `http://127.0.0.1:${nginxPort}`;
    for (let i = 0; i < 100; i++) {
      if (await fetch(`${base}/orders/`).then(() => true, () => false)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`nginx did not start: ${readFileSync(join(dir, "logs", "error.log"), "utf8")}`);
  });

  afterAll(async () => {
    nginx?.kill("SIGTERM");
    await new Promise<void>((r) => upstream?.close(() => r()));
    await credhook?.close();
  });

  it("a key created through the webhook passes; after an update removing that API 403; after revoke 401 — within one second, nothing restarted", async () => {
    const created = await credhook.call("/v1/createCredentials", {
      appName: "Shop Frontend",
      developer: "dev@example.com",
      apis: [{ id: "orders", usagePlans: [{ id: "free" }] }, { id: "weather" }],
    });
    expect(created.status).toBe(200);
    const { apiKeyId, apiKey } = created.json as { apiKeyId: string; apiKey: string };
    const get = (path: string, key?: string) => fetch(base + path, { headers: key ? { "x-api-key": key } : {} });

    const ok = await get("/orders/42", apiKey);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ upstream: true, path: "/orders/42" });
    const last = seen.at(-1)!;
    expect(last.headers["x-credhook-app"]).toBe("Shop Frontend");
    expect(last.headers["x-credhook-developer"]).toBe("dev@example.com");
    expect(last.headers["x-credhook-key-id"]).toBe(apiKeyId);
    expect(last.headers["x-credhook-credential-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(last.headers["x-credhook-plans"]).toBe("free");
    expect(last.headers["x-api-key"]).toBeUndefined();

    const before = seen.length;
    expect((await get("/orders/42")).status).toBe(401);
    expect((await get("/orders/42", "not-a-key-000000000000000000000000000000")).status).toBe(401);
    expect((await get("/weather/../orders/1", "not-a-key-000000000000000000000000000000")).status).toBe(401);
    expect(seen.length).toBe(before);

    const updated = await credhook.call("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId,
      apis: [{ id: "orders", action: "REMOVED" }, { id: "weather", action: "NONE" }],
    });
    expect(updated.status).toBe(204);
    let t = Date.now();
    let status = (await get("/orders/42", apiKey)).status;
    while (status !== 403 && Date.now() - t < 1000) status = (await get("/orders/42", apiKey)).status;
    expect(status).toBe(403);
    expect(Date.now() - t).toBeLessThan(1000);
    expect((await get("/weather/today", apiKey)).status).toBe(200);

    const revoked = await credhook.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId });
    expect(revoked.status).toBe(204);
    t = Date.now();
    status = (await get("/weather/today", apiKey)).status;
    while (status !== 401 && Date.now() - t < 1000) status = (await get("/weather/today", apiKey)).status;
    expect(status).toBe(401);
    expect(Date.now() - t).toBeLessThan(1000);
    expect(nginx.exitCode).toBeNull();
  });

  it("a usage-plan refusal reaches the client as 429 with Retry-After (not auth_request's 500)", async () => {
    const created = await credhook.call("/v1/createCredentials", {
      appName: "Limited Frontend",
      developer: "dev@example.com",
      apis: [{ id: "orders", usagePlans: [{ id: "two-per-second" }] }],
    });
    const { apiKey } = created.json as { apiKey: string };
    const results = await Promise.all(Array.from({ length: 6 }, () => fetch(`${base}/orders/1`, { headers: { "x-api-key": apiKey } })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 429, 429, 429, 429]);
    for (const r of results.filter((x) => x.status === 429)) expect(r.headers.get("retry-after")).toBe("1");
  });
});
