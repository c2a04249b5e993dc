import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createLogger, loadConfigFile, startServer, type RunningServer } from "../src/index.js";

export const PASSWORD = "correct-horse-battery";
export const AUTH = `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`;

/** A started server on a temp data dir with captured log lines. */
export interface TestServer extends RunningServer {
  dir: string;
  logs: string[];
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
}

/** Writes `yaml` to a temp dir, loads it with `env`, starts the server on port 0 with logs captured. */
export async function startTestServer(yaml: string, env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "credhook-test-"));
  writeFileSync(join(dir, "webhook.config.yaml"), yaml);
  const config = await loadConfigFile(join(dir, "webhook.config.yaml"), { env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir, ...env } });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split("\n").filter(Boolean));
      cb();
    },
  });
  const running = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("debug", sink) });
  return {
    ...running,
    dir,
    logs,
    post: (path, body, headers = {}) =>
      fetch(running.url + path, {
        method: "POST",
        headers: { authorization: AUTH, "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
    get: (path, headers = {}) => fetch(running.url + path, { headers: { authorization: AUTH, ...headers } }),
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
