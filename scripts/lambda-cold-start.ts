/**
 * The Lambda zip as the bench and the tests use it: built with `scripts/lambda-bundle.mjs` as an
 * operator does, unzipped into an empty task root, and started cold in a fresh `node` process as
 * Lambda's Node.js runtime does (import the handler module, then invoke it).
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { unzipSync } from "fflate";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Runs `node scripts/lambda-bundle.mjs --config <config> --out <zip> --work <work>`; returns what it printed (the size). */
export function buildLambdaZip(config: string, zip: string, work: string): string {
  return execFileSync(
    process.execPath,
    [join(ROOT, "scripts", "lambda-bundle.mjs"), "--config", config, "--out", zip, "--work", work],
    { encoding: "utf8" },
  );
}

/** Unzips `zip` into `dir` (created); returns `dir`. */
export function unzipTo(zip: string, dir: string): string {
  for (const [name, data] of Object.entries(unzipSync(readFileSync(zip)))) {
    if (name.endsWith("/")) continue;
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), data);
  }
  return dir;
}

/** What Lambda's runtime does in a fresh process: import the handler module, invoke it once. Prints the timings as JSON. */
const RUNNER = `
const t0 = performance.now();
const m = await import(process.env.BENCH_ENTRY);
const t1 = performance.now();
const r = await m.handler(JSON.parse(process.env.BENCH_EVENT), { awsRequestId: "bench", functionName: "credhook", callbackWaitsForEmptyEventLoop: true });
const t2 = performance.now();
process.stdout.write(JSON.stringify({ boot: t0, init: t1 - t0, first: t2 - t1, status: r.statusCode, body: r.body }) + "\\n");
process.exit(0);
`;

/** An HTTP API (payload format 2.0) event for GET /v1/health with the portal's Basic credentials (`password` for user `portal`). */
export const healthEvent = (password: string) => ({
  version: "2.0",
  routeKey: "$default",
  rawPath: "/v1/health",
  rawQueryString: "",
  headers: {
    authorization: `Basic ${Buffer.from(`portal:${password}`).toString("base64")}`,
    host: "abc123.execute-api.us-east-1.amazonaws.com",
  },
  requestContext: {
    accountId: "123456789012",
    apiId: "abc123",
    domainName: "abc123.execute-api.us-east-1.amazonaws.com",
    http: {
      method: "GET",
      path: "/v1/health",
      protocol: "HTTP/1.1",
      sourceIp: "203.0.113.9",
      userAgent: "bench-lambda",
    },
    requestId: "bench-request",
    routeKey: "$default",
    stage: "$default",
    time: "25/Nov/2026:00:00:00 +0000",
    timeEpoch: 1795651200000,
  },
  isBase64Encoded: false,
});

/** The timings of one cold start (ms since the process started, import, first invocation) and the answer. */
export interface ColdStart {
  boot: number;
  init: number;
  first: number;
  status: number;
  body?: string;
}

/**
 * One fresh `node` process in `taskRoot` (the unzipped zip) doing what Lambda's runtime does:
 * import index.mjs, invoke `handler` once with {@link healthEvent}. `env` adds to a bare environment.
 * @param nodeArgs options for `node` itself, e.g. `["--cpu-prof", "--cpu-prof-dir", dir]` to profile the cold start
 * @throws when the process fails or prints no timings
 */
export function coldStart(
  taskRoot: string,
  env: Record<string, string>,
  password: string,
  nodeArgs: string[] = [],
): Promise<ColdStart> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, "--input-type=module", "-e", RUNNER], {
      cwd: taskRoot,
      env: {
        PATH: process.env.PATH!,
        HOME: process.env.HOME!,
        LAMBDA_TASK_ROOT: taskRoot,
        BENCH_ENTRY: pathToFileURL(join(taskRoot, "index.mjs")).href,
        BENCH_EVENT: JSON.stringify(healthEvent(password)),
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.once("exit", (code) => {
      const line = out.split("\n").find((l) => l.startsWith('{"boot"'));
      if (code !== 0 || !line) return reject(new Error(`the cold start failed (exit ${code}):\n${out}\n${err}`));
      resolveRun(JSON.parse(line) as ColdStart);
    });
  });
}
