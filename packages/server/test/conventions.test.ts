// Operators' conventions: string log levels and JSON on every line when stdout is not a terminal
// (start-up failures included; a generated password never in a line, only its file's path); one password policy for
// CREDHOOK_PASSWORD and `credhook hash-password`; a JSON body that starts with a UTF-8 byte
// order mark accepted (RFC 8259 §8.1).
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AUTH, LOCAL_YAML, spawnCredhook, startTestServer } from "./helpers.js";

const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));
const env = { ...process.env, CREDHOOK_FROM_SOURCE: "1" };

/** Every non-empty line of `text`, parsed as JSON (throws on a line that is not). */
const jsonLines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("log lines when stdout is not a terminal", () => {
  it("`credhook serve` with a generated password writes only JSON lines, levels as strings; the password in none: in a 0600 file whose path is logged; the listening line names the addresses bound", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "credhook-json-"));
    const cli = spawnCredhook([process.execPath, CLI, "serve"], {
      cwd,
      env: { ...env, PORT: "0", CREDHOOK_GATEWAY_PORT: "0", CREDHOOK_PASSWORD: "" },
    });
    const url = await cli.listening();
    const passwordFile = join(cwd, "data", "initial-portal-password");
    const password = readFileSync(passwordFile, "utf8").replace(/\n$/, "");
    expect(password).toMatch(/^[0-9A-Za-z]{24}$/);
    expect(statSync(passwordFile).mode & 0o777).toBe(0o600);
    const health = await fetch(`${url}/v1/health`, {
      headers: { authorization: `Basic ${Buffer.from(`portal:${password}`).toString("base64")}` },
    });
    expect(health.status).toBe(204);
    expect((await cli.stop()).code).toBe(0);
    expect(cli.output()).not.toContain(password);
    const lines = jsonLines(cli.output());
    expect(lines.length).toBeGreaterThan(3);
    for (const l of lines) expect(["trace", "debug", "info", "warn", "error", "fatal"]).toContain(l.level);
    expect(lines.find((l) => typeof l.msg === "string" && l.msg.includes("so one was generated"))).toMatchObject({
      level: "warn",
      service: "credhook",
      username: "portal",
      passwordFile,
      hashFile: join(cwd, "data", "auth-portal.scrypt"),
    });
    // the embedded default binds every IPv4 address (server.host and embeddedGateway.listen.host 0.0.0.0): the line says so
    const listening = lines.find((l) => l.msg === "credhook listening" && l.level === "info");
    expect(listening?.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    expect(listening?.embeddedGateway).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
  });

  it("a start-up failure is one JSON line on stderr, with its messages", () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-json-fail-"));
    writeFileSync(join(dir, "bad.yaml"), LOCAL_YAML.replace("server:\n", "server:\n  requestTimeoutMs: 50\n"));
    const run = spawnSync(process.execPath, [CLI, "serve", "--config", join(dir, "bad.yaml")], {
      env: { ...env, CREDHOOK_DATA_DIR: dir, CREDHOOK_PASSWORD: "long-enough-password" },
      encoding: "utf8",
    });
    expect(run.status).toBe(1);
    const [line, ...rest] = jsonLines(run.stderr);
    expect(rest).toEqual([]);
    expect(line).toMatchObject({
      level: "fatal",
      msg: "credhook could not start: invalid configuration",
      messages: [expect.stringContaining("server.requestTimeoutMs must be >= 100")],
    });
  });
});

describe("one password policy", () => {
  it("CREDHOOK_PASSWORD shorter than 12 characters stops `credhook serve`, as `credhook hash-password` refuses it", () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-short-pw-"));
    const hash = spawnSync(process.execPath, [CLI, "hash-password"], { env, input: "x\n", encoding: "utf8" });
    expect(hash.status).toBe(1);
    expect(hash.stderr).toContain("the password must have at least 12 characters");
    const serve = spawnSync(process.execPath, [CLI, "serve"], {
      cwd: dir,
      env: { ...env, PORT: "0", CREDHOOK_GATEWAY_PORT: "0", CREDHOOK_PASSWORD: "x" },
      encoding: "utf8",
    });
    expect(serve.status).toBe(1);
    const [line] = jsonLines(serve.stderr);
    expect(line!.messages).toEqual([
      expect.stringContaining("server.auth.users[0] (portal): the password must have at least 12 characters"),
    ]);
    expect(serve.stderr).not.toContain('"x"');
    // check-config runs the same policy: a file serve refuses is never reported valid
    const check = spawnSync(process.execPath, [CLI, "check-config"], {
      cwd: dir,
      env: { ...env, CREDHOOK_PASSWORD: "x" },
      encoding: "utf8",
    });
    expect(check.status).toBe(1);
    expect(check.stderr).toContain("server.auth.users[0] (portal): the password must have at least 12 characters");
    // exactly 12 is enough for both
    expect(
      spawnSync(process.execPath, [CLI, "hash-password"], { env, input: "twelve-chars\n", encoding: "utf8" }).status,
    ).toBe(0);
  });
});

describe("a body starting with a UTF-8 byte order mark", () => {
  it("is parsed as the JSON after it (RFC 8259 §8.1), plain and gzip-encoded alike", async () => {
    const s = await startTestServer(LOCAL_YAML);
    try {
      const body = Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(JSON.stringify({ appName: "Bom App", developer: "bom@example.com", apis: [{ id: "5aba4csvd4" }] })),
      ]);
      const res = await fetch(`${s.url}/v1/createCredentials`, {
        method: "POST",
        headers: { authorization: AUTH, "content-type": "application/json" },
        body,
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { apiKey: string }).apiKey).toMatch(/^credhook[0-9A-Za-z]{46}$/);
      const { gzipSync } = await import("node:zlib");
      const zipped = await fetch(`${s.url}/v1/createCredentials`, {
        method: "POST",
        headers: { authorization: AUTH, "content-type": "application/json", "content-encoding": "gzip" },
        body: gzipSync(body),
      });
      expect(zipped.status).toBe(200);
      // a BOM anywhere else is still not JSON
      const inside = await fetch(`${s.url}/v1/createCredentials`, {
        method: "POST",
        headers: { authorization: AUTH, "content-type": "application/json" },
        body: `{"appName":\uFEFF"x"}`,
      });
      expect(inside.status).toBe(400);
    } finally {
      await s.close();
    }
  });
});
