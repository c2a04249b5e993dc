import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { createLogger, loadConfigFile, startServer, type RunningServer } from "../src/index.js";

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

/** Writes `yaml` to a temp dir, loads it with `env`, starts the server on port 0 with logs captured. */
export async function startTestServer(yaml: string, env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "credhook-test-"));
  writeFileSync(join(dir, "webhook.config.yaml"), yaml);
  return startFromFile(join(dir, "webhook.config.yaml"), dir, env);
}

/**
 * Starts the server on the repository's `examples/<name>.yaml` as shipped (e.g. pointed at a
 * cloud fake with `{ FAKE_URL: fake.url }`), with a fresh temp data dir and logs captured;
 * `close()` also removes the data dir.
 */
export async function startExampleServer(name: string, env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), `credhook-${name}-e2e-`));
  try {
    const server = await startFromFile(fileURLToPath(new URL(`../../../examples/${name}.yaml`, import.meta.url)), dir, env);
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
async function startFromFile(file: string, dir: string, env: Record<string, string>): Promise<TestServer> {
  const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir, ...env } });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split("\n").filter(Boolean));
      cb();
    },
  });
  const running = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("debug", sink) });
  const post: TestServer["post"] = (path, body, headers = {}) =>
    fetch(running.url + path, {
      method: "POST",
      headers: { authorization: AUTH, "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const get: TestServer["get"] = (path, headers = {}) => fetch(running.url + path, { headers: { authorization: AUTH, ...headers } });
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

/** The shipped-style config: every API on the embedded provider, with a known set of usage plans. */
export const LOCAL_YAML = `
server:
  auth:
    users:
      - { username: portal, password: "\${CREDHOOK_PASSWORD}" }
store: { sqlite: "\${CREDHOOK_DATA_DIR}/credhook.db" }
dataDir: "\${CREDHOOK_DATA_DIR}"
gateways:
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

/** Asserts the contract's ErrorResponse shape and returns it. */
export async function errorOf(res: Response): Promise<{ timestamp: string; status: number; error: string; messages: string[]; path: string }> {
  const text = await res.text();
  const body = JSON.parse(text);
  if (typeof body.timestamp !== "string" || Number.isNaN(Date.parse(body.timestamp))) throw new Error(`timestamp missing: ${text}`);
  if (body.status !== res.status) throw new Error(`status ${body.status} != ${res.status}`);
  if (typeof body.error !== "string" || !Array.isArray(body.messages) || typeof body.path !== "string") throw new Error(`not an ErrorResponse: ${text}`);
  if (/\bat .*\(.*:\d+:\d+\)|node_modules|\.ts:\d+/.test(text)) throw new Error(`stack trace in body: ${text}`);
  return body;
}
