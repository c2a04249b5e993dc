import { afterEach, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
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

/**
 * A config whose one user `portal` has no password (`CREDHOOK_PASSWORD` unset), in a temp dir that is
 * also its data dir: where a generated password goes, and `start(env)`, which starts a server on it
 * (`env` added), its log lines captured.
 */
function withoutPassword(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const file = join(dir, "webhook.config.yaml");
  writeFileSync(file, yaml(`      - { username: portal, password: "\${CREDHOOK_PASSWORD:-}" }`));
  const start = async (env: Record<string, string> = {}) => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write: (c, _e, cb) => {
        for (const l of String(c).split("\n").filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const server = await startServer(await loadConfigFile(file, { env: { CREDHOOK_DATA_DIR: dir, ...env } }), {
      port: 0,
      host: "127.0.0.1",
      logger: createLogger("debug", sink),
    });
    servers.push(server);
    return { server, lines, text: () => lines.map((l) => JSON.stringify(l)).join("\n") };
  };
  return { passwordFile: join(dir, "initial-portal-password"), hashFile: join(dir, "auth-portal.scrypt"), start };
}

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

  it("generates a strong password when none is set: in a 0600 file (its path logged, never the password) and its scrypt hash, reused; reminds of the file while it is there, says where the hash is once it is gone", async () => {
    const { passwordFile, hashFile, start } = withoutPassword("credhook-gen-");
    const health = (s: RunningServer, pass: string) =>
      fetch(`${s.url}/v1/health`, { headers: { authorization: basic("portal", pass) } }).then((r) => r.status);

    const first = await start();
    const password = readFileSync(passwordFile, "utf8").replace(/\n$/, "");
    expect(password).toMatch(/^[0-9A-Za-z]{24}$/);
    expect(statSync(passwordFile).mode & 0o777).toBe(0o600);
    const stored = readFileSync(hashFile, "utf8");
    expect(stored).toMatch(/^scrypt\$/);
    expect(stored).not.toContain(password);
    expect(statSync(hashFile).mode & 0o777).toBe(0o600);
    expect(first.lines.find((l) => l.passwordFile)).toMatchObject({
      level: "warn",
      username: "portal",
      passwordFile,
      hashFile,
      msg: expect.stringContaining(`then delete that file (rm ${passwordFile})`),
    });
    expect(await health(first.server, password)).toBe(204);
    expect(await health(first.server, "")).toBe(401);
    await first.server.close();

    // the file still there: its path again (not the password), the password unchanged
    const second = await start();
    expect(readFileSync(passwordFile, "utf8")).toBe(`${password}\n`);
    expect(second.lines.find((l) => l.passwordFile)).toMatchObject({
      level: "warn",
      msg: expect.stringContaining(`the password generated for portal user 'portal' is still in ${passwordFile}`),
    });
    expect(await health(second.server, password)).toBe(204);
    await second.server.close();

    // the operator stored it and deleted the file: the hash is still the password's, and the line says how to start over
    rmSync(passwordFile);
    const third = await start();
    expect(third.lines.find((l) => l.hashFile)).toMatchObject({
      level: "info",
      msg: expect.stringContaining(`or delete that file and restart to generate a new one`),
    });
    expect(third.lines.some((l) => l.passwordFile)).toBe(false);
    expect(await health(third.server, password)).toBe(204);
    expect([first, second, third].map((s) => s.text()).join("\n")).not.toContain(password);
  });

  it("a password of the user's own makes the generated one's files go; the generated one kept where it is the one configured", async () => {
    const { passwordFile, hashFile, ...setup } = withoutPassword("credhook-own-");
    /** A start and a stop with `env` added: what it logged. */
    const start = async (env: Record<string, string>) => {
      const { server, text } = await setup.start(env);
      await server.close();
      return text();
    };
    await start({});
    const generated = readFileSync(passwordFile, "utf8").trim();
    // CREDHOOK_PASSWORD_FILE pointed at the generated password's file: it is the configured one, kept (and the reminder stays)
    expect(await start({ CREDHOOK_PASSWORD_FILE: passwordFile })).toContain("is still in");
    expect(existsSync(passwordFile) && existsSync(hashFile)).toBe(true);
    // a password of its own: the generated one opens nothing now, its files are deleted and the log says so
    const own = await start({ CREDHOOK_PASSWORD: "the-operators-own-password" });
    expect(own).toContain(`has a password of its own now, so the one generated on its first start opens nothing`);
    expect(existsSync(passwordFile) || existsSync(hashFile)).toBe(false);
    // unset again: a new password, in a new file
    await start({});
    expect(readFileSync(passwordFile, "utf8").trim()).not.toBe(generated);
  });
});
