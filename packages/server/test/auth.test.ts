import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createLogger, hashPassword, loadConfigFile, startServer, type RunningServer } from "../src/index.js";
import { errorOf, startTestServer, type TestServer } from "./helpers.js";

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
let servers: Array<RunningServer | TestServer> = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

const yaml = (users: string, extra = "") => `
server:
  auth:
    ${extra}
    users:
${users}
store: { sqlite: "\${CREDHOOK_DATA_DIR}/credhook.db" }
dataDir: "\${CREDHOOK_DATA_DIR}"
gateways: { local: { provider: local, credentialType: API_KEY } }
routes: [ { default: local } ]
`;

describe("Basic auth", () => {
  it("accepts every configured user: plain password from the environment and scrypt hash (rotation)", async () => {
    const hash = await hashPassword("the-new-password-2026");
    const s = await startTestServer(
      yaml(
        `      - { username: portal, password: "\${CREDHOOK_PASSWORD}" }\n      - { username: portal-next, passwordHash: "${hash}" }`,
      ),
    );
    servers.push(s);
    const h = (authorization: string) => fetch(`${s.url}/v1/health`, { headers: { authorization } });
    expect((await h(basic("portal", "correct-horse-battery"))).status).toBe(204);
    expect((await h(basic("portal-next", "the-new-password-2026"))).status).toBe(204);
    expect((await h(basic("portal-next", "correct-horse-battery"))).status).toBe(401);
    expect((await h(basic("portal", "the-new-password-2026"))).status).toBe(401);
  });

  it("answers 429 with Retry-After after too many failed logins from one client, to every credential not yet verified; a verified one still passes", async () => {
    const s = await startTestServer(
      yaml(
        `      - { username: portal, password: "\${CREDHOOK_PASSWORD}" }\n      - { username: portal-next, password: "the-next-password-2026" }`,
        "maxFailures: 3\n    failureWindowS: 30",
      ),
    );
    servers.push(s);
    const h = (authorization: string) => fetch(`${s.url}/v1/health`, { headers: { authorization } });
    // Successful requests, even many at once, consume nothing.
    const ok = await Promise.all(Array.from({ length: 20 }, () => h(basic("portal", "correct-horse-battery"))));
    expect(ok.map((r) => r.status)).toEqual(Array(20).fill(204));
    for (let i = 0; i < 3; i++) expect((await h(basic("portal", `wrong-${i}`))).status).toBe(401);
    const blocked = await h(basic("portal-next", "the-next-password-2026")); // right, but never verified yet
    expect(blocked.status).toBe(429);
    const retry = Number(blocked.headers.get("retry-after"));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(30);
    expect((await errorOf(blocked)).messages[0]).toMatch(/too many failed logins from this client/);
    expect((await h(basic("portal", "wrong-again"))).status).toBe(429); // not even checked
    expect((await h(basic("portal", "correct-horse-battery"))).status).toBe(204); // remembered: never locked out
  });

  it("generates a strong password when none is set, prints it once, keeps only its scrypt hash (0600), and reuses it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-gen-"));
    const file = join(dir, "webhook.config.yaml");
    writeFileSync(file, yaml(`      - { username: portal, password: "\${CREDHOOK_PASSWORD:-}" }`));
    const env = { CREDHOOK_DATA_DIR: dir };
    const announced: string[] = [];
    const logs: string[] = [];
    const sink = new Writable({ write: (c, _e, cb) => (logs.push(String(c)), cb()) });
    const start = async () =>
      startServer(await loadConfigFile(file, { env }), {
        port: 0,
        host: "127.0.0.1",
        logger: createLogger("debug", sink),
        announcePassword: (_u, p) => announced.push(p),
      });
    const first = await start();
    expect(announced).toHaveLength(1);
    const password = announced[0]!;
    expect(password).toMatch(/^[0-9A-Za-z]{24}$/);
    const stored = readFileSync(join(dir, "auth-portal.scrypt"), "utf8");
    expect(stored).toMatch(/^scrypt\$/);
    expect(stored).not.toContain(password);
    expect(statSync(join(dir, "auth-portal.scrypt")).mode & 0o777).toBe(0o600);
    expect(
      (await fetch(`${first.url}/v1/health`, { headers: { authorization: basic("portal", password) } })).status,
    ).toBe(204);
    expect((await fetch(`${first.url}/v1/health`, { headers: { authorization: basic("portal", "") } })).status).toBe(
      401,
    );
    await first.close();

    const second = await start();
    servers.push(second);
    expect(announced).toHaveLength(1); // not generated again
    expect(
      (await fetch(`${second.url}/v1/health`, { headers: { authorization: basic("portal", password) } })).status,
    ).toBe(204);
    expect(logs.join("")).not.toContain(password);
  });
});
