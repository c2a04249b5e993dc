import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startAwsFake } from "@credhook/fakes/aws";
import { SHUTDOWN_MARGIN_MS } from "../src/index.js";
import { AUTH, LOCAL_YAML, spawnCredhook, startTestServer, until } from "./helpers.js";
import { controls } from "./fixtures/faulty-provider.js";
import { spawnTracked } from "./children.js";

const FAULTY = fileURLToPath(new URL("./fixtures/faulty-provider.ts", import.meta.url));
const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));

/** `credhook serve --config FILE` as a child process, once it listens. */
async function serve(config: string, env: Record<string, string>) {
  const cli = spawnCredhook([process.execPath, CLI, "serve", "--config", config], {
    env: { ...process.env, CREDHOOK_FROM_SOURCE: "1", ...env },
  });
  return { url: await cli.listening(), output: cli.output, stop: cli.stop };
}

describe("graceful shutdown", () => {
  it("close() lets in-flight requests finish and refuses new connections", async () => {
    const s = await startTestServer(
      LOCAL_YAML.replace(
        "routes:\n",
        `  faulty: { provider: ${FAULTY}, credentialType: API_KEY, options: { label: t } }\nroutes:\n  - { apis: [slow], gateway: faulty }\n`,
      ),
    );
    const started = controls.slowStarted;
    const inflight = s.post("/v1/createCredentials", {
      appName: "Slow",
      developer: "d@example.com",
      apis: [{ id: "slow" }],
    });
    await until("the create to reach its gateway", () => controls.slowStarted > started);
    const closed = s.close();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect((await res.json()).apiKey).toMatch(/^credhook[0-9A-Za-z]{46}$/);
    await closed;
    await expect(fetch(`${s.url}/v1/health`, { headers: { authorization: AUTH } })).rejects.toThrow();
  });

  it("`credhook serve` exits 0 on SIGTERM after draining", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-cli-"));
    writeFileSync(
      join(dir, "webhook.config.yaml"),
      LOCAL_YAML.replace("server:\n", "server:\n  port: 0\n  host: 127.0.0.1\n"),
    );
    const child = await serve(join(dir, "webhook.config.yaml"), {
      CREDHOOK_PASSWORD: "pw-for-cli-test",
      CREDHOOK_DATA_DIR: dir,
    });
    const auth = `Basic ${Buffer.from("portal:pw-for-cli-test").toString("base64")}`;
    expect((await fetch(`${child.url}/v1/health`, { headers: { authorization: auth } })).status).toBe(204);
    const { code } = await child.stop();
    expect(code).toBe(0);
    expect(child.output()).toContain('"msg":"stopped"');
    expect(child.output()).not.toContain("pw-for-cli-test");
    expect(child.output()).toContain('"memory":"default"');
  });

  it("`credhook serve` whose stdout and stderr pipes were closed (a log shipper that died) still exits 0 on SIGTERM, before the shutdown deadline", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-pipes-"));
    const shutdownTimeoutMs = 2000;
    writeFileSync(
      join(dir, "webhook.config.yaml"),
      LOCAL_YAML.replace(
        "server:\n",
        `server:\n  port: 0\n  host: 127.0.0.1\n  shutdownTimeoutMs: ${shutdownTimeoutMs}\n`,
      ),
    );
    const cli = spawnCredhook([process.execPath, CLI, "serve", "--config", join(dir, "webhook.config.yaml")], {
      env: {
        ...process.env,
        CREDHOOK_FROM_SOURCE: "1",
        CREDHOOK_PASSWORD: "pw-for-pipes-test",
        CREDHOOK_DATA_DIR: dir,
      },
    });
    const url = await cli.listening();
    // The reading ends go away: every later write of the server fails (EPIPE).
    cli.child.stdout!.destroy();
    cli.child.stderr!.destroy();
    // Requests keep logging into the broken pipes before the signal.
    for (let i = 0; i < 5; i++) expect((await fetch(`${url}/livez`)).status).toBe(204);
    await fetch(`${url}/v1/health`, { headers: { authorization: "Basic eDp5" } });
    // Exit 0 is the graceful end, before the deadline (shutdownTimeoutMs + SHUTDOWN_MARGIN_MS), which exits 1; a process
    // the broken pipes wedged would get stop()'s SIGKILL. The order of those events is the assertion, not a time.
    const { code, signal } = await cli.stop(shutdownTimeoutMs + SHUTDOWN_MARGIN_MS + 20_000);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });

  it("CREDHOOK_MEMORY=lean serves with V8 sized for memory (said in the listening line); another value stops the command at once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-lean-"));
    writeFileSync(
      join(dir, "webhook.config.yaml"),
      LOCAL_YAML.replace("server:\n", "server:\n  port: 0\n  host: 127.0.0.1\n"),
    );
    const lean = await serve(join(dir, "webhook.config.yaml"), {
      CREDHOOK_PASSWORD: "pw-lean-long-enough",
      CREDHOOK_DATA_DIR: dir,
      CREDHOOK_MEMORY: "lean",
    });
    expect((await fetch(`${lean.url}/livez`)).status).toBe(204);
    expect(lean.output()).toContain('"memory":"lean"');
    expect((await lean.stop()).code).toBe(0);
    const typo = spawnSync(process.execPath, [CLI, "serve", "--config", join(dir, "webhook.config.yaml")], {
      env: {
        ...process.env,
        CREDHOOK_PASSWORD: "pw-lean-long-enough",
        CREDHOOK_DATA_DIR: dir,
        CREDHOOK_MEMORY: "Lean",
      },
      encoding: "utf8",
    });
    expect(typo.status).toBe(1);
    expect(typo.stderr).toBe("CREDHOOK_MEMORY must be 'lean' or 'default' (got 'Lean')\n");
  });

  it("SIGTERM under load on the AWS fake ends the process by itself: drained, or at its deadline (shutdownTimeoutMs plus the margin)", async () => {
    const fake = await startAwsFake();
    try {
      fake.apiGateway.addUsagePlan({ id: "1el57v", name: "Gold", apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }] });
      fake.cognito.createUserPool({ id: "us-east-1_Credhook1", domain: "credhook-example" });
      fake.cognito.createResourceServer("us-east-1_Credhook1", "https://api.example.com", ["payments.read"]);
      fake.faults.latency(300); // every AWS call is slow: requests are still in the SDKs and limiters at SIGTERM
      const dir = mkdtempSync(join(tmpdir(), "credhook-cli-aws-"));
      const yaml = readFileSync(fileURLToPath(new URL("../../../examples/aws.yaml", import.meta.url)), "utf8").replace(
        "server:\n  port: ${PORT:-8080}\n",
        "server:\n  port: 0\n  host: 127.0.0.1\n  shutdownTimeoutMs: 1000\n",
      );
      expect(yaml).toContain("shutdownTimeoutMs: 1000");
      writeFileSync(join(dir, "webhook.config.yaml"), yaml);
      const child = await serve(join(dir, "webhook.config.yaml"), {
        CREDHOOK_PASSWORD: "pw-aws-load-test",
        CREDHOOK_DATA_DIR: dir,
        FAKE_URL: fake.url,
      });
      const auth = `Basic ${Buffer.from("portal:pw-aws-load-test").toString("base64")}`;
      const load = Array.from({ length: 60 }, (_, i) =>
        fetch(`${child.url}/v1/createCredentials`, {
          method: "POST",
          headers: { authorization: auth, "content-type": "application/json" },
          body: JSON.stringify(
            i % 3 === 2
              ? { appName: `M2M ${i}`, developer: "load@example.com", apis: [{ id: "7hq2k9xw1m" }] }
              : {
                  appName: `Load ${i}`,
                  developer: "load@example.com",
                  apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
                },
          ),
        }).then(
          (r) => r.status,
          () => 0,
        ),
      );
      // SIGTERM once the load reached AWS (waited for, not slept: a busy machine delays it).
      await until("the load to reach AWS", () => (fake.stats().calls.CreateApiKey ?? 0) > 0);
      // It ends by itself (no SIGKILL from stop()'s generous fallback): drained (exit 0), or cut by its own deadline
      // (exit 1, said in the log). How long it took is printed: on a busy machine it measures the machine too.
      const { code, signal, ms } = await child.stop(1000 + SHUTDOWN_MARGIN_MS + 20_000);
      console.log(`shutdown under load: exit ${code} after ${ms} ms (deadline ${1000 + SHUTDOWN_MARGIN_MS} ms)`);
      expect(signal).toBeNull();
      expect([0, 1]).toContain(code);
      if (code === 1) expect(child.output()).toContain("shutdown did not finish in time; exiting anyway");
      const statuses = await Promise.all(load);
      expect(statuses.every((st) => [0, 200, 503].includes(st))).toBe(true); // answered, refused while draining, or cut at the deadline
    } finally {
      await fake.close();
    }
  });

  it("a provider that never finishes closing cannot keep the process alive: exit 1 at the deadline, said in the log", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-cli-hang-"));
    writeFileSync(
      join(dir, "webhook.config.yaml"),
      LOCAL_YAML.replace("server:\n", "server:\n  port: 0\n  host: 127.0.0.1\n  shutdownTimeoutMs: 300\n").replace(
        "routes:\n",
        `  stuck: { provider: ${FAULTY}, credentialType: API_KEY, options: { label: s, hangOnClose: true } }\nroutes:\n  - { apis: [stuck-*], gateway: stuck }\n`,
      ),
    );
    const child = await serve(join(dir, "webhook.config.yaml"), {
      CREDHOOK_PASSWORD: "pw-hang-for-test",
      CREDHOOK_DATA_DIR: dir,
    });
    const { code, signal, ms } = await child.stop(300 + SHUTDOWN_MARGIN_MS + 20_000);
    // Ended by its own deadline (exit 1, said in the log), not by stop()'s SIGKILL; and not before the deadline
    // (a lower bound: a busy machine only makes it later).
    expect(signal).toBeNull();
    expect(code).toBe(1);
    expect(child.output()).toContain("shutdown did not finish in time; exiting anyway");
    expect(ms).toBeGreaterThanOrEqual(300 + SHUTDOWN_MARGIN_MS - 100);
  });

  it("`credhook check-config` prints the routing table with secrets masked, and fails on a bad config", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-check-"));
    writeFileSync(
      join(dir, "webhook.config.yaml"),
      `${LOCAL_YAML}embeddedGateway:\n  keyCheck: { apis: [ { pathPrefix: /orders/, api: orders-1 } ] }\n  oauth: { signing: { encryptionKey: "${Buffer.alloc(32, 7).toString("base64")}" } }\n`,
    );
    const run = (file: string) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawnTracked(process.execPath, [CLI, "check-config", "--config", file], {
          env: {
            ...process.env,
            CREDHOOK_PASSWORD: "masked-password-value",
            CREDHOOK_DATA_DIR: dir,
            CREDHOOK_FROM_SOURCE: "1",
          },
        });
        let out = "";
        child.stdout!.on("data", (d) => (out += String(d)));
        child.stderr!.on("data", (d) => (out += String(d)));
        child.once("exit", (code) => resolve({ code, out }));
      });
    const ok = await run(join(dir, "webhook.config.yaml"));
    expect(ok.code).toBe(0);
    expect(ok.out).toContain("1. m2m-* -> local-m2m");
    expect(ok.out).toContain("2. 5aba4csvd4, orders-*, other-api -> local");
    expect(ok.out).toContain("embedded gateway: own port 0.0.0.0:8081");
    expect(ok.out).toContain("API from: path rules /orders/ -> orders-1");
    expect(ok.out).toContain("configuration is valid");
    expect(ok.out).not.toContain("masked-password-value");
    expect(ok.out).not.toContain(Buffer.alloc(32, 7).toString("base64"));
    writeFileSync(
      join(dir, "bad.yaml"),
      LOCAL_YAML.replace("credentialType: CLIENT_CREDENTIALS", "credentialType: NOPE"),
    );
    const bad = await run(join(dir, "bad.yaml"));
    expect(bad.code).toBe(1);
    expect(bad.out).toContain("gateways.local-m2m.credentialType must be one of: API_KEY, CLIENT_CREDENTIALS");
  });
});
