/**
 * Part of `pnpm bench` (`--only proxy`): what the key check costs behind a real
 * NGINX. In the same rounds, at BENCH_PROXY_CONNECTIONS (16) connections, one
 * NGINX worker each: plain NGINX proxying to an upstream (a bare node:http
 * server in its own process), and NGINX running examples/nginx/credhook-auth.conf
 * as shipped (auth_request to credhook's embedded gateway) in front of the same
 * upstream; and, as the floor under any auth_request check, the same example
 * with its check answered by NGINX itself (`return 200`: no credhook, no cache).
 * Prints each round, the median throughput ratio and both p99s against the goal
 * (≥ 0.85×, p99 ≤ 1.5×) and the key-checked NGINX against that floor; then, through the key-checked NGINX,
 * how long a revoke takes to refuse the key while load runs (promise: ≤ 1 s),
 * and whether a plan's quota admits exactly its number of requests under load.
 * Asserts nothing; the figures depend on the machine's load (the load generator,
 * NGINX, the upstream and credhook share its cores).
 *
 *   BENCH_PROXY_SECONDS=5 BENCH_PROXY_CONNECTIONS=16 BENCH_PROXY_ROUNDS=3
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, loadConfigFile, startServer } from "../packages/server/src/index.js";
import {
  examplePath,
  freePort,
  NGINX_BIN,
  NGINX_MODULES,
  startNginx,
  type RunningProxy,
} from "../packages/server/test/proxies.js";

/** One load run's figures (scripts/bench-load.mjs). */
export interface ProxyLoad {
  rps: number;
  total: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

const SECONDS = Number(process.env.BENCH_PROXY_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_PROXY_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_PROXY_ROUNDS ?? 3);
const QUOTA = 300;
const PASSWORD = "bench-password-123";
const auth = `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Plain NGINX to the same upstream: the example's upstream block and keepalive, no key check. */
const PLAIN = `upstream protected_api {
    server 127.0.0.1:9000;
    keepalive 32;
}
server {
    listen 8000;
    location / {
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_pass http://protected_api;
    }
}
`;

/** A bare node:http upstream in its own process, answering a small JSON body. */
async function startUpstream(): Promise<{ port: number; pid: number; stop(): void }> {
  const port = await freePort();
  const code = `require("node:http").createServer((q, s) => { s.writeHead(200, { "content-type": "application/json" }); s.end('{"ok":true}'); })
    .listen(${port}, "127.0.0.1", () => console.log("ready")).keepAliveTimeout = 65000;`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (c) => reject(new Error(`the upstream exited with code ${c}`)));
  });
  return { port, pid: child.pid!, stop: () => child.kill("SIGTERM") };
}

/** A run's figures, with the CPU time per request of NGINX, the upstream and credhook, µs. */
type Measured = ProxyLoad & { cpu: { nginx: number; upstream: number; credhook: number } };

/**
 * Runs the proxy benchmark.
 * @param load runs autocannon in its own process with the given options (bench-server.ts's `load`)
 * @param cpuOf CPU time (user + system) a process has used so far, µs
 */
export async function proxyBench(
  load: (options: Record<string, unknown>) => Promise<ProxyLoad>,
  cpuOf: (pid: number) => number,
): Promise<void> {
  if (!NGINX_BIN || !NGINX_MODULES) {
    console.log(
      "\nproxy: SKIPPED — needs nginx and its headers-more and set-misc modules (Debian: nginx libnginx-mod-http-headers-more-filter libnginx-mod-http-set-misc)",
    );
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), "credhook-bench-proxy-"));
  const file = join(dir, "webhook.config.yaml");
  writeFileSync(
    file,
    `server: { auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] } }
store: { sqlite: "${dir}/credhook.db" }
dataDir: "${dir}"
gateways:
  local:
    provider: local
    credentialType: API_KEY
    options: { usagePlans: [ free, { id: quota, quota: { perDay: ${QUOTA} } } ] }
routes: [ { default: local } ]
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck: { apis: [ { pathPrefix: /orders/, api: orders }, { pathPrefix: /weather/, api: weather } ] }
`,
  );
  const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: PASSWORD } });
  const credhook = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") });
  const upstream = await startUpstream();
  const proxies: RunningProxy[] = [];
  try {
    const create = async (apis: unknown) => {
      const res = await fetch(`${credhook.url}/v1/createCredentials`, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({ appName: "Bench", developer: "bench@example.com", apis }),
      });
      return (await res.json()) as { apiKeyId: string; apiKey: string };
    };
    const key = await create([{ id: "orders", usagePlans: [{ id: "free" }] }]);
    const targets = { gateway: new URL(credhook.gatewayUrl!).host, upstreamPort: upstream.port };
    const plain = await startNginx(targets, PLAIN);
    proxies.push(plain);
    const checked = await startNginx(targets);
    proxies.push(checked);
    const example = readFileSync(examplePath("nginx/credhook-auth.conf"), "utf8");
    const floorText = example.replace("proxy_pass http://credhook_gateway/check;", "return 200;");
    if (floorText === example)
      throw new Error("examples/nginx/credhook-auth.conf no longer has `proxy_pass http://credhook_gateway/check;`");
    const floor = await startNginx(targets, floorText);
    proxies.push(floor);
    const headers = { "x-api-key": key.apiKey };
    /** A run through `proxy`; credhook runs in this process (which otherwise only waits for the load generator). */
    const run = async (proxy: RunningProxy, seconds: number): Promise<Measured> => {
      const pids = { nginx: proxy.process.pid!, upstream: upstream.pid, credhook: process.pid };
      const before = { nginx: cpuOf(pids.nginx), upstream: cpuOf(pids.upstream), credhook: cpuOf(pids.credhook) };
      const r = await load({ url: `${proxy.base}/orders/42`, headers, connections: CONNECTIONS, duration: seconds });
      const per = (k: keyof typeof pids) => (cpuOf(pids[k]) - before[k]) / Math.max(1, r.total);
      return { ...r, cpu: { nginx: per("nginx"), upstream: per("upstream"), credhook: per("credhook") } };
    };

    for (const p of [plain, checked, floor]) await run(p, 1);
    const rounds: Array<{ p: Measured; k: Measured; f: Measured }> = [];
    for (let i = 0; i < ROUNDS; i++)
      rounds.push({ p: await run(plain, SECONDS), k: await run(checked, SECONDS), f: await run(floor, SECONDS) });
    const line = (label: string, r: Measured) =>
      `${label.padEnd(36)} ${r.rps.toFixed(0).padStart(6)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors}; ` +
      `CPU µs/request: NGINX ${r.cpu.nginx.toFixed(1)}, upstream ${r.cpu.upstream.toFixed(1)}, credhook ${r.cpu.credhook.toFixed(1)}`;
    console.log(
      `\nproxy: plain NGINX and key-checked NGINX (examples/nginx) to the same upstream, ${CONNECTIONS} connections, one NGINX worker each, ${ROUNDS} rounds of ${SECONDS} s:`,
    );
    rounds.forEach((r, i) => {
      console.log(line(`round ${i + 1}: plain NGINX`, r.p));
      console.log(line(`round ${i + 1}: key-checked NGINX`, r.k));
      console.log(line(`round ${i + 1}: floor (auth_request, no credhook)`, r.f));
    });
    const ratio = median(rounds.map((r) => r.k.rps / r.p.rps));
    const [p99p, p99k] = [median(rounds.map((r) => r.p.p99)), median(rounds.map((r) => r.k.p99))];
    console.log(
      `key-checked / plain NGINX, median of ${ROUNDS} rounds: throughput ${ratio.toFixed(2)}× (goal ≥ 0.85×); p99 ${p99k} ms vs ${p99p} ms = ${(p99k / Math.max(p99p, 0.001)).toFixed(2)}× (goal ≤ 1.5×)`,
    );
    // Capacity: requests per CPU-second of everything serving them (NGINX + upstream [+ credhook]) —
    // what the ratio would be on a machine where nothing else runs (the load generator included).
    const total = (r: Measured) => r.cpu.nginx + r.cpu.upstream + r.cpu.credhook;
    console.log(
      `capacity (requests per CPU-second of NGINX + upstream + credhook), key-checked / plain: ${median(rounds.map((r) => total(r.p) / total(r.k))).toFixed(2)}×; ` +
        `credhook ${median(rounds.map((r) => r.k.cpu.credhook)).toFixed(1)} µs/request (cache misses only), NGINX ${median(rounds.map((r) => r.k.cpu.nginx)).toFixed(1)} vs ${median(rounds.map((r) => r.p.cpu.nginx)).toFixed(1)} µs`,
    );
    const floorRatio = median(rounds.map((r) => r.f.rps / r.p.rps));
    console.log(
      `floor / plain NGINX: ${floorRatio.toFixed(2)}× (what auth_request itself costs); key-checked / floor: ${median(rounds.map((r) => r.k.rps / r.f.rps)).toFixed(2)}×, p99 floor ${median(rounds.map((r) => r.f.p99))} ms`,
    );

    // Revocation through the proxy, under load: the first 401 after the revoke's 204.
    const victim = await create([{ id: "orders", usagePlans: [{ id: "free" }] }]);
    const background = load({
      url: `${checked.base}/orders/1`,
      headers: { "x-api-key": victim.apiKey },
      connections: CONNECTIONS - 1,
      duration: 3,
    });
    await new Promise((r) => setTimeout(r, 1000));
    const revoked = await fetch(`${credhook.url}/v1/revokeCredentials`, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ credentialType: "API_KEY", apiKeyId: victim.apiKeyId }),
    });
    const t0 = performance.now();
    let status = 0;
    while (status !== 401 && performance.now() - t0 < 5000)
      status = (await fetch(`${checked.base}/orders/1`, { headers: { "x-api-key": victim.apiKey } })).status;
    const took = performance.now() - t0;
    await background;
    console.log(
      `revoke (${revoked.status}) under load → first 401 through NGINX after ${took.toFixed(0)} ms (promise: ≤ 1000 ms)${status === 401 ? "" : " — NOT SEEN"}`,
    );

    // A quota of QUOTA a day, hammered through the proxy: exactly QUOTA admitted.
    const quota = await create([{ id: "weather", usagePlans: [{ id: "quota" }] }]);
    const q = await load({
      url: `${checked.base}/weather/1`,
      headers: { "x-api-key": quota.apiKey },
      connections: CONNECTIONS,
      amount: QUOTA * 4,
    });
    const admitted = q.total - q.non2xx;
    console.log(
      `plan quota ${QUOTA}/day, ${q.total} requests answered through NGINX at ${CONNECTIONS} connections (errors ${q.errors}): ${admitted} admitted (${admitted === QUOTA ? "exact" : "NOT EXACT"})`,
    );
  } finally {
    for (const p of proxies) await p.stop();
    upstream.stop();
    await credhook.close();
  }
}
