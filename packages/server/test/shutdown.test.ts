import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AUTH, LOCAL_YAML, startTestServer } from "./helpers.js";

const FAULTY = fileURLToPath(new URL("./fixtures/faulty-provider.ts", import.meta.url));
const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));

describe("graceful shutdown", () => {
  it("close() lets in-flight requests finish and refuses new connections", async () => {
    const s = await startTestServer(
      LOCAL_YAML.replace("routes:\n", `  faulty: { provider: ${FAULTY}, credentialType: API_KEY, options: { label: t } }\nroutes:\n  - { apis: [slow], gateway: faulty }\n`),
    );
    const inflight = s.post("/v1/createCredentials", { appName: "Slow", developer: "d@example.com", apis: [{ id: "slow" }] });
    await new Promise((r) => setTimeout(r, 100));
    const closed = s.close();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect((await res.json()).apiKey).toMatch(/^[0-9A-Za-z]{40}$/);
    await closed;
    await expect(fetch(`${s.url}/v1/health`, { headers: { authorization: AUTH } })).rejects.toThrow();
  });

  it("`credhook serve` exits 0 on SIGTERM after draining", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-cli-"));
    writeFileSync(join(dir, "webhook.config.yaml"), LOCAL_YAML.replace("server:\n", "server:\n  port: 0\n  host: 127.0.0.1\n"));
    const child = spawn(process.execPath, [CLI, "serve", "--config", join(dir, "webhook.config.yaml")], {
      env: { ...process.env, CREDHOOK_PASSWORD: "pw-for-cli-test", CREDHOOK_DATA_DIR: dir, CREDHOOK_FROM_SOURCE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += String(d)));
    child.stderr.on("data", (d) => (out += String(d)));
    const url = await new Promise<string>((resolve, reject) => {
      const t = setInterval(() => {
        const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
        if (m) {
          clearInterval(t);
          resolve(m[1]!);
        }
      }, 50);
      child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const auth = `Basic ${Buffer.from("portal:pw-for-cli-test").toString("base64")}`;
    expect((await fetch(`${url}/v1/health`, { headers: { authorization: auth } })).status).toBe(204);
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(out).toContain('"msg":"stopped"');
    expect(out).not.toContain("pw-for-cli-test");
  });

  it("`credhook check-config` prints the routing table with secrets masked, and fails on a bad config", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-check-"));
    writeFileSync(join(dir, "webhook.config.yaml"), LOCAL_YAML);
    const run = (file: string) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, "check-config", "--config", file], {
          env: { ...process.env, CREDHOOK_PASSWORD: "masked-password-value", CREDHOOK_DATA_DIR: dir, CREDHOOK_FROM_SOURCE: "1" },
        });
        let out = "";
        child.stdout.on("data", (d) => (out += String(d)));
        child.stderr.on("data", (d) => (out += String(d)));
        child.once("exit", (code) => resolve({ code, out }));
      });
    const ok = await run(join(dir, "webhook.config.yaml"));
    expect(ok.code).toBe(0);
    expect(ok.out).toContain("1. m2m-* -> local-m2m");
    expect(ok.out).toContain("2. 5aba4csvd4, orders-*, other-api -> local");
    expect(ok.out).toContain("configuration is valid");
    expect(ok.out).not.toContain("masked-password-value");
    writeFileSync(join(dir, "bad.yaml"), LOCAL_YAML.replace("credentialType: CLIENT_CREDENTIALS", "credentialType: NOPE"));
    const bad = await run(join(dir, "bad.yaml"));
    expect(bad.code).toBe(1);
    expect(bad.out).toContain("gateways.local-m2m.credentialType must be one of: API_KEY, CLIENT_CREDENTIALS");
  });
});
