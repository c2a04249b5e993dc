// Failures that name their cause: a port in use says which setting chose it (PORT,
// CREDHOOK_GATEWAY_PORT, the config file's key), and an OTLP endpoint that is invalid or
// does not answer is logged once and does not hold up the shutdown.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SHUTDOWN_MARGIN_MS, TRACING_SHUTDOWN_MS } from "../src/index.js";
import { AUTH, LOCAL_YAML, PASSWORD, spawnCredhook, until } from "./helpers.js";

const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));
const cwd = mkdtempSync(join(tmpdir(), "credhook-failures-"));
/** `credhook serve`'s own shutdown deadline in the OTLP tests (shutdownTimeoutMs + SHUTDOWN_MARGIN_MS), ms. */
const DEADLINE_MS = 10_000;
const baseEnv = { ...process.env, CREDHOOK_FROM_SOURCE: "1", CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: cwd };

/** A port some other process holds, and a listener that accepts connections and never answers. */
let taken: Server;
let takenPort: number;
const held: Socket[] = [];
beforeAll(async () => {
  taken = createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => taken.listen(0, "0.0.0.0", resolve));
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(() => {
  for (const s of held) s.destroy();
  taken.close();
});

/** `credhook serve` that is expected to fail at start: its exit status and stderr. */
const failedServe = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, [CLI, "serve", ...args], {
    cwd,
    env: { ...baseEnv, ...env },
    encoding: "utf8",
    timeout: 60_000,
  });

describe("a port in use", () => {
  it("of the embedded gateway names CREDHOOK_GATEWAY_PORT and embeddedGateway.listen.port", () => {
    const run = failedServe([], { PORT: "0", CREDHOOK_GATEWAY_PORT: String(takenPort) });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`port ${takenPort}`);
    expect(run.stderr).toContain("the embedded gateway's port, is in use");
    expect(run.stderr).toContain("embeddedGateway.listen.port");
    expect(run.stderr).toContain(`CREDHOOK_GATEWAY_PORT=${takenPort}`);
    expect(run.stderr).toContain("set CREDHOOK_GATEWAY_PORT to a free port");
  });

  it("of the webhook names PORT and server.port", () => {
    const run = failedServe([], { PORT: String(takenPort), CREDHOOK_GATEWAY_PORT: "0" });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("the webhook's port, is in use");
    expect(run.stderr).toContain(`server.port in`);
    expect(run.stderr).toContain(`PORT=${takenPort}`);
  });

  it("at a first start generates no password; the next start, the port free, generates it and serves with it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "credhook-first-start-"));
    const firstStart = { CREDHOOK_PASSWORD: "", CREDHOOK_DATA_DIR: dataDir, PORT: "0" };
    const run = failedServe([], { ...firstStart, CREDHOOK_GATEWAY_PORT: String(takenPort) });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`port ${takenPort} on 0.0.0.0, the embedded gateway's port, is in use`);
    expect(run.stdout + run.stderr).not.toContain("so one was generated");
    expect(readdirSync(dataDir).filter((f) => f.startsWith("auth-") || f.startsWith("initial-"))).toEqual([]);

    const cli = spawnCredhook([process.execPath, CLI, "serve"], {
      cwd,
      env: { ...baseEnv, ...firstStart, CREDHOOK_GATEWAY_PORT: "0" },
    });
    const url = await cli.listening();
    const password = readFileSync(join(dataDir, "initial-portal-password"), "utf8").trim();
    const health = await fetch(`${url}/v1/health`, {
      headers: { authorization: `Basic ${Buffer.from(`portal:${password}`).toString("base64")}` },
    });
    expect(health.status).toBe(204);
    expect((await cli.stop()).code).toBe(0);
    expect(existsSync(join(dataDir, "auth-portal.scrypt"))).toBe(true);
  });

  it("written in a config file names the file and its key", () => {
    const file = join(cwd, "fixed-port.yaml");
    writeFileSync(file, LOCAL_YAML.replace("server:\n", `server:\n  port: ${takenPort}\n`));
    const run = failedServe(["--config", file], {});
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`server.port in ${file}: ${takenPort}`);
    expect(run.stderr).toContain("change server.port");
  });
});

describe("an OTLP endpoint that fails", () => {
  for (const endpoint of ["unreachable", "silent"] as const) {
    it(`(${endpoint}) is logged once, and SIGTERM still ends the server gracefully: the tracing flush stops at its bound, before the process's deadline`, async () => {
      // unreachable: nothing listens (connection refused); silent: accepts and never answers (an exporter timeout)
      const url = endpoint === "silent" ? `http://127.0.0.1:${takenPort}` : "http://127.0.0.1:9";
      const config = join(cwd, `otlp-${endpoint}.yaml`);
      writeFileSync(
        config,
        // The process's own deadline (shutdownTimeoutMs + SHUTDOWN_MARGIN_MS = 10 s) is far above the tracing flush
        // bound (TRACING_SHUTDOWN_MS) and far below the exporter's 30 s timeout: a shutdown that waited for the
        // exporter would be cut there (exit 1, "shutdown did not finish in time").
        LOCAL_YAML.replace(
          "server:\n",
          `server:\n  port: 0\n  host: 127.0.0.1\n  shutdownTimeoutMs: ${DEADLINE_MS - SHUTDOWN_MARGIN_MS}\n`,
        ),
      );
      const cli = spawnCredhook([process.execPath, CLI, "serve", "--config", config], {
        cwd,
        env: {
          ...baseEnv,
          OTEL_EXPORTER_OTLP_ENDPOINT: url,
          OTEL_BSP_SCHEDULE_DELAY: "50",
          OTEL_EXPORTER_OTLP_TIMEOUT: "30000",
        },
      });
      const base = await cli.listening();
      const said = () =>
        cli
          .output()
          .split("\n")
          .filter((l) => l.includes("traces cannot be exported")).length;
      for (let i = 0; i < 3; i++) await fetch(`${base}/v1/health`, { headers: { authorization: AUTH } });
      if (endpoint === "unreachable") {
        // the exporter retries a refused connection with backoff (about 15 s) before it reports the batch failed
        await until("the export error to be logged", () => said() > 0, 60_000);
        for (let i = 0; i < 3; i++) await fetch(`${base}/v1/health`, { headers: { authorization: AUTH } });
        await new Promise((r) => setTimeout(r, 500));
        expect(said()).toBe(1);
        expect(cli.output()).toContain('"endpoint":"http://127.0.0.1:9"');
      }
      const { code, signal, ms } = await cli.stop(DEADLINE_MS + 20_000);
      console.log(`OTLP endpoint ${endpoint}: stopped in ${ms} ms (tracing flush bound ${TRACING_SHUTDOWN_MS} ms)`);
      // It stopped by itself, gracefully (exit 0, "stopped"): the tracing flush ended at its bound, before the
      // process's deadline — not by the deadline (exit 1) and not by stop()'s SIGKILL.
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      expect(cli.output()).toContain('"msg":"stopped"');
      expect(cli.output()).not.toContain("shutdown did not finish in time");
      if (endpoint === "silent") expect(cli.output()).toContain("the last spans were not exported in time");
      expect(said()).toBeLessThanOrEqual(1);
    }, 90_000);
  }
});
