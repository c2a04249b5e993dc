import type { ChildProcess, SpawnOptions } from "node:child_process";
import { startAwsFake, type AwsFake } from "@credhook/fakes/aws";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { execFileTracked, spawnTracked } from "./children.js";
import {
  createLogger,
  loadConfigFile,
  startServer,
  type AppOptions,
  type RunningServer,
  type ServerLimits,
} from "../src/index.js";

export const PASSWORD = "correct-horse-battery";
export const AUTH = `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`;

/** A started server on a temp data dir with captured log lines. */
export interface TestServer extends RunningServer {
  dir: string;
  logs: string[];
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  /** GET `path` (no body) or POST `body` as JSON, as the portal; the status and the parsed JSON answer, if any. */
  call(path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> | undefined }>;
}

/** Writes `yaml` to a temp dir, loads it with `env`, starts the server on port 0 with logs captured (and `limits` and `options`, if given). */
export async function startTestServer(
  yaml: string,
  env: Record<string, string> = {},
  limits?: ServerLimits,
  options: AppOptions = {},
): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "credhook-test-"));
  writeFileSync(join(dir, "webhook.config.yaml"), yaml);
  return startFromFile(join(dir, "webhook.config.yaml"), dir, env, limits, options);
}

/**
 * Starts the server on the repository's `examples/<name>.yaml` as shipped (e.g. pointed at a
 * cloud fake with `{ FAKE_URL: fake.url }`), with a fresh temp data dir and logs captured;
 * `close()` also removes the data dir.
 */
export async function startExampleServer(name: string, env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), `credhook-${name}-e2e-`));
  try {
    const server = await startFromFile(
      fileURLToPath(new URL(`../../../examples/${name}.yaml`, import.meta.url)),
      dir,
      env,
    );
    return {
      ...server,
      async close() {
        await server.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Loads the config file with `env` (data dir `dir`), starts the server on port 0 with logs captured. */
async function startFromFile(
  file: string,
  dir: string,
  env: Record<string, string>,
  limits?: ServerLimits,
  options: AppOptions = {},
): Promise<TestServer> {
  const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir, ...env } });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split("\n").filter(Boolean));
      cb();
    },
  });
  const running = await startServer(config, {
    port: 0,
    host: "127.0.0.1",
    logger: createLogger("debug", sink),
    ...(limits ? { limits } : {}),
    ...options,
  });
  const post: TestServer["post"] = (path, body, headers = {}) =>
    fetch(running.url + path, {
      method: "POST",
      headers: { authorization: AUTH, "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const get: TestServer["get"] = (path, headers = {}) =>
    fetch(running.url + path, { headers: { authorization: AUTH, ...headers } });
  return {
    ...running,
    dir,
    logs,
    post,
    get,
    async call(path, body) {
      const res = body === undefined ? await get(path) : await post(path, JSON.stringify(body));
      const text = await res.text();
      return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
    },
  };
}

/** The server, store and data-dir part every test config shares (the portal's password and a temp data dir from the environment). */
export const SERVER_YAML = `
server:
  auth:
    users:
      - { username: portal, password: "\${CREDHOOK_PASSWORD}" }
store: { sqlite: "\${CREDHOOK_DATA_DIR}/credhook.db" }
dataDir: "\${CREDHOOK_DATA_DIR}"
`;

/** The server, store and data-dir part of a config on the run's PostgreSQL server (`\${DATABASE_URL}`), in its own `schema`, with the reconcile loop off. */
export const postgresServerYaml = (schema: string) => `
server: { auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] } }
store: { postgres: { url: "\${DATABASE_URL}", schema: ${schema} } }
reconcile: { intervalS: 0 }
dataDir: "\${CREDHOOK_DATA_DIR}"
`;

/** The embedded gateway on a port of its own, checking keys of API `weather` under `/weather/`, its cache coherent across instances within 200 ms. */
export const WEATHER_GATEWAY_YAML = `embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck:
    apis: [ { pathPrefix: /weather/, api: weather } ]
    cache: { coherenceIntervalMs: 200 }
`;

/**
 * What a test of `credhook` commands on the run's PostgreSQL server (`url`) sets up: an AWS fake with usage plan
 * `1el57v` ("Gold", API `5aba4csvd4`), a temp dir `credhook-<name>-…` holding the config `yaml`, and the commands'
 * environment ({@link cliEnv}, with `DATABASE_URL` and `AWS_ENDPOINT`). Close the fake and remove the dir when done.
 */
export async function setUpPostgresCommands(
  name: string,
  yaml: string,
  url: string,
): Promise<{ aws: AwsFake; dir: string; config: string; env: NodeJS.ProcessEnv }> {
  const aws = await startAwsFake();
  aws.apiGateway.addUsagePlan({ id: "1el57v", name: "Gold", apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }] });
  const dir = mkdtempSync(join(tmpdir(), `credhook-${name}-`));
  const config = join(dir, "webhook.config.yaml");
  writeFileSync(config, yaml);
  return { aws, dir, config, env: cliEnv(dir, { DATABASE_URL: url, AWS_ENDPOINT: aws.url }) };
}

/** credhook's command line (`bin/credhook.mjs`), for a test that runs a command as a process of its own. */
export const CLI = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));

/** The environment of a `credhook` command a test runs on a config in `dir`: the portal's password, the data dir `dir/cli`, the sources, and `extra`. */
export function cliEnv(dir: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CREDHOOK_PASSWORD: PASSWORD,
    CREDHOOK_DATA_DIR: join(dir, "cli"),
    CREDHOOK_FROM_SOURCE: "1",
    ...extra,
  };
}

/** Runs `credhook <args> --config <config>` as a process with `env`; its exit code (-1: none), stdout and stderr. */
export async function runCredhook(
  args: string[],
  config: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileTracked(process.execPath, [CLI, ...args, "--config", config], { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** The shipped-style config: every API on the embedded provider, with a known set of usage plans. */
export const LOCAL_YAML = `${SERVER_YAML}gateways:
  local:
    provider: local
    credentialType: API_KEY
    options: { usagePlans: ["1el57v", "2plan2", "3plan3"] }
  local-m2m:
    provider: local
    credentialType: CLIENT_CREDENTIALS
    options: { tokenUrl: "https://auth.example.com/oauth2/token" }
routes:
  - { apis: ["m2m-*"], gateway: local-m2m }
  - { apis: ["5aba4csvd4", "orders-*", "other-api"], gateway: local }
`;

/** A config's gateways and routes: API `5aba4csvd4` on an AWS gateway at `\${AWS_ENDPOINT}` (a fake), every other API on the embedded provider. */
export const AWS_AND_LOCAL_YAML = `gateways:
  aws:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "\${AWS_ENDPOINT}", credentials: { accessKeyId: fake, secretAccessKey: fake } }
  local: { provider: local, credentialType: API_KEY }
routes:
  - { apis: ["5aba4csvd4"], gateway: aws }
  - { default: local }
`;

/**
 * Starts two instances in this process on the config `file` (port 0 on 127.0.0.1, silent logs), one after the other,
 * each loaded with `env`, the portal's password and a data dir of its own under `dir`: two instances on one shared store.
 */
export async function startTwoInstances(
  file: string,
  dir: string,
  env: Record<string, string>,
): Promise<[RunningServer, RunningServer]> {
  const start = async (name: string) => {
    const config = await loadConfigFile(file, {
      env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: join(dir, name), ...env },
    });
    return startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") });
  };
  const a = await start("a");
  return [a, await start("b")];
}

/** What keeps `body` (answered with `status` and `contentType`) from being the contract's ErrorResponse; undefined when it is one. */
export function errorResponseProblem(
  status: number,
  contentType: string | null | undefined,
  body: string,
): string | undefined {
  let e: Record<string, unknown>;
  try {
    e = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return `${status} without a JSON body: ${JSON.stringify(body.slice(0, 200))}`;
  }
  if (!/^application\/json/.test(contentType ?? "")) return `${status} with Content-Type ${contentType}`;
  if (e.status !== status) return `ErrorResponse.status ${String(e.status)} on a ${status}: ${body}`;
  if (typeof e.timestamp !== "string" || Number.isNaN(Date.parse(e.timestamp))) return `timestamp missing: ${body}`;
  if (typeof e.error !== "string" || typeof e.path !== "string") return `not an ErrorResponse: ${body}`;
  if (!Array.isArray(e.messages) || e.messages.length === 0 || !e.messages.every((m) => typeof m === "string"))
    return `messages is not a non-empty array of strings: ${body}`;
  if (/\bat .*\(.*:\d+:\d+\)|node_modules|\.ts:\d+/.test(body)) return `stack trace in body: ${body}`;
  return undefined;
}

/** Asserts the contract's ErrorResponse shape and returns it. */
export async function errorOf(
  res: Response,
): Promise<{ timestamp: string; status: number; error: string; messages: string[]; path: string }> {
  const text = await res.text();
  const problem = errorResponseProblem(res.status, res.headers.get("content-type"), text);
  if (problem) throw new Error(problem);
  return JSON.parse(text);
}

/**
 * How long a test waits for a `credhook` process it started to listen, ms. The process runs
 * the TypeScript sources (transpiled as they load): about a second on a quiet 2-core machine, several times
 * that while the suite's other files keep both cores busy (seen: over 20 s).
 */
export const PROCESS_START_MS = 90_000;

/**
 * Polls `fn` every 25 ms until it returns a truthy value, and returns that value.
 * @param ms how long to wait before failing, ms
 * @throws Error "timed out waiting for <what>"
 */
export async function until<T>(
  what: string,
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  ms = 20_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A `credhook` process a test started. */
export interface CredhookProcess {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr. */
  output(): string;
  /** Resolves with the URL of its "credhook listening" log line; rejects if it exits first. */
  listening(): Promise<string>;
  /**
   * Sends SIGTERM and resolves once the process exited: its exit code (null when a signal ended it), that signal,
   * and the ms it took (a figure to print: a busy machine stretches it). A process still there after `killAfterMs`
   * (default 60 000: far beyond any shutdown deadline of a test config) gets SIGKILL, and `signal` says so — assert
   * `signal: null` (it ended by itself) and the exit code or log line that says how, not the ms.
   */
  stop(killAfterMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
}

/**
 * Starts `command` (`[executable, ...args]`, e.g. `[process.execPath, CLI, "serve"]`) with its output captured,
 * in a process group of its own that is ended after the test file whatever its outcome (children.ts).
 */
export function spawnCredhook(command: string[], options: SpawnOptions = {}): CredhookProcess {
  const child = spawnTracked(command[0]!, command.slice(1), { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += String(d)));
  child.stderr!.on("data", (d) => (out += String(d)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => out,
    listening: () =>
      new Promise<string>((resolve, reject) => {
        const t = setInterval(() => {
          const m = /"url":"(http:\/\/[^"]+)"/.exec(out);
          if (m) {
            clearInterval(t);
            resolve(m[1]!);
          }
        }, 25);
        void exited.then(({ code }) => {
          clearInterval(t);
          reject(new Error(`credhook exited ${code}: ${out}`));
        });
      }),
    async stop(killAfterMs = 60_000) {
      const t0 = performance.now();
      child.kill("SIGTERM");
      const fallback = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
      const { code, signal } = await exited.finally(() => clearTimeout(fallback));
      return { code, signal, ms: Math.round(performance.now() - t0) };
    },
  };
}

/**
 * Runs the server's abandoned-create sweep until no record is `abandoned` (a
 * test config sets `reconcile.settleS` short), for at most `timeoutMs` ms (default 30000: generous, it returns once settled). `everyMs`, when set, spaces the sweeps:
 * each one calls the clouds, whose read quotas a tight loop would exhaust. `between`, when set, runs before each sweep
 * but the first: a test whose fakes run on a `ManualClock` advances it there, so that their quotas refill as
 * between real sweeps.
 */
export async function sweepUntilSettled(
  s: TestServer,
  options: { timeoutMs?: number; everyMs?: number; between?: () => Promise<void> } = {},
): Promise<void> {
  let first = true;
  await until(
    "abandoned records and unsettled updates to settle",
    async () => {
      if (!first && options.everyMs) await new Promise((r) => setTimeout(r, options.everyMs));
      if (!first) await options.between?.();
      first = false;
      await s.credhook.orchestrator.sweepAbandoned();
      return (await s.credhook.store.list()).every((r) => r.status !== "abandoned" && !r.unsettled);
    },
    options.timeoutMs ?? 30_000,
  );
}

/** The portal's updateCredentials body for an API key (the contract's example `updatedAt`). */
export function apiKeyUpdate(
  appName: string,
  developer: string,
  apiKeyId: string,
  apis: Array<{ id: string; action: string; usagePlans: Array<{ id: string; action: string }> }>,
) {
  return { updatedAt: "2023-06-27T21:23:21.523Z[GMT]", appName, developer, credentialType: "API_KEY", apiKeyId, apis };
}

/** Ports for servers the tests start on 127.0.0.1: see scripts/ports.ts. */
export { freePort, restartablePort } from "../../../scripts/ports.ts";

/** A `credhook serve` process on `config`, once it listens: its URL and its output so far. */
export interface ServeProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/**
 * Spawns `credhook serve --config <config>` from the sources with `env` added to this process's
 * environment, and waits for it to listen (up to {@link PROCESS_START_MS}).
 * @param spawned every child is pushed here first, so that the caller can stop it even when it never listened
 * @throws when it does not listen in time, with the end of its output
 */
export async function spawnServe(
  config: string,
  env: Record<string, string>,
  spawned: ChildProcess[],
): Promise<ServeProcess> {
  const cli = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));
  const child = spawnTracked(process.execPath, [cli, "serve", "--config", config], {
    env: { ...process.env, CREDHOOK_FROM_SOURCE: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  spawned.push(child);
  let out = "";
  child.stdout!.on("data", (d) => (out += String(d)));
  child.stderr!.on("data", (d) => (out += String(d)));
  const url = await until(
    "an instance to listen",
    () => /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1],
    PROCESS_START_MS,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; its output: ${out.slice(-1500)}`);
  });
  return { child, url, output: () => out };
}

/**
 * An AWS API Gateway fake with the two usage plans of API `5aba4csvd4` that the multi-instance
 * tests (circuit breaker, database restarts, lost lock) create and update keys on: `1el57v`
 * ("Orders Gold", stage prod) and `2plan2` ("Orders Beta", stage beta). Close it when done.
 */
export async function startOrdersAwsFake(): Promise<AwsFake> {
  const aws = await startAwsFake();
  aws.apiGateway.addUsagePlan({
    id: "1el57v",
    name: "Orders Gold",
    apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }],
  });
  aws.apiGateway.addUsagePlan({
    id: "2plan2",
    name: "Orders Beta",
    apiStages: [{ apiId: "5aba4csvd4", stage: "beta" }],
  });
  return aws;
}
