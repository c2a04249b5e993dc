/**
 * Benchmark: the full server on the embedded provider, and on the three cloud
 * fakes (examples/multi-cloud.yaml). Prints throughput, latency percentiles (ms)
 * and resident memory (MiB); asserts nothing. Then the embedded gateway's key
 * check under autocannon, as a ratio to a bare node:http server measured in the
 * same run (goal: ≥ 0.5×, p99 ≤ 2 ms at 64 connections).
 *
 *   npx --yes pnpm@10 bench [requests=400] [concurrency=16]
 *   BENCH_CHECK_SECONDS=5 BENCH_CHECK_CONNECTIONS=64 BENCH_CHECK_ROUNDS=3 (the key-check part); BENCH_ONLY=check runs only that part
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createLogger, loadConfigFile, startServer } from "../packages/server/src/index.js";
import { startDemoClouds } from "../packages/server/src/demo.js";


const N = Number(process.argv[2] ?? 400);
const C = Number(process.argv[3] ?? 16);
const PASSWORD = "bench-password-123";
const auth = `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`;
/** The portal user and the SQLite store in the run's temp dir, shared by the configs below. */
const YAML_HEAD = `server: { auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] } }
store: { sqlite: "\${CREDHOOK_DATA_DIR}/credhook.db" }
dataDir: "\${CREDHOOK_DATA_DIR}"
`;

async function run(label: string, file: string, env: Record<string, string>, apis: (i: number) => unknown[]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "credhook-bench-"));
  const config = await loadConfigFile(file, { env: { ...env, CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir } });
  const server = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") });
  const post = async (path: string, body: unknown) => {
    const t = performance.now();
    const res = await fetch(server.url + path, { method: "POST", headers: { authorization: auth, "content-type": "application/json" }, body: JSON.stringify(body) });
    const json = res.status === 200 ? ((await res.json()) as { apiKeyId: string }) : (await res.text(), undefined);
    return { ms: performance.now() - t, status: res.status, json };
  };
  const phase = async (name: string, make: (i: number) => Promise<{ ms: number; status: number }>) => {
    const times: number[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: C }, async () => {
        while (next < N) {
          const r = await make(next++);
          times.push(r.ms);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      }),
    );
    const secs = (performance.now() - t0) / 1000;
    times.sort((a, b) => a - b);
    const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!.toFixed(1);
    console.log(
      `${label.padEnd(12)} ${name.padEnd(7)} ${N} requests, concurrency ${C}: ${(N / secs).toFixed(0)} req/s, p50 ${pct(50)} ms, p95 ${pct(95)} ms, p99 ${pct(99)} ms, statuses ${JSON.stringify(Object.fromEntries(statuses))}, rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
    );
  };
  const ids: string[] = [];
  await phase("create", async (i) => {
    const r = await post("/v1/createCredentials", { appName: `Bench ${i}`, developer: "bench@example.com", apis: apis(i) });
    if (r.json) ids[i] = r.json.apiKeyId;
    return r;
  });
  await phase("update", (i) => post("/v1/updateCredentials", { credentialType: "API_KEY", apiKeyId: ids[i], apis: [] }));
  await phase("revoke", (i) => post("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: ids[i] }));
  await server.close();
}

if (process.env.BENCH_ONLY !== "check") {
  const local = join(mkdtempSync(join(tmpdir(), "credhook-bench-cfg-")), "webhook.config.yaml");
  writeFileSync(
    local,
    `${YAML_HEAD}gateways: { local: { provider: local, credentialType: API_KEY } }
routes: [ { default: local } ]
`,
  );
  await run("embedded", local, {}, () => [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }]);

  const clouds = await startDemoClouds();
  // AWS + Azure + embedded: one key on three gateways; bounded by API Gateway's control-plane quotas
  // (CreateApiKey and DeleteApiKey 5/s, other calls 10/s shared), which credhook's limiter enforces.
  const multi = new URL("../examples/multi-cloud.yaml", import.meta.url).pathname;
  await run("multi-cloud", multi, clouds.env, () => [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }, { id: "orders-eu-1", usagePlans: [{ id: "eu-gold" }] }, { id: "weather" }]).catch(
    (err: unknown) => console.log(`multi-cloud failed: ${(err as Error).message}`),
  );
  await clouds.close();
}

// ------------------------------------------------------------------ key check

const CHECK_SECONDS = Number(process.env.BENCH_CHECK_SECONDS ?? 5);
const CHECK_CONNECTIONS = Number(process.env.BENCH_CHECK_CONNECTIONS ?? 64);
const CHECK_ROUNDS = Number(process.env.BENCH_CHECK_ROUNDS ?? 3);
/** One autocannon run: its figures, and the CPU time this (the server's) process spent per request, µs. */
type Load = { rps: number; total: number; p50: number; p99: number; non2xx: number; errors: number; cpuUsPerRequest: number };

/** autocannon against `url` in its own process (scripts/bench-load.mjs), while this process serves. */
async function load(url: string, headers: Record<string, string>, seconds = CHECK_SECONDS): Promise<Load> {
  const runner = new URL("./bench-load.mjs", import.meta.url).pathname;
  const options = { url, headers, connections: CHECK_CONNECTIONS, duration: seconds };
  const cpu = process.cpuUsage();
  const { stdout } = await promisify(execFile)(process.execPath, [runner, JSON.stringify(options)], {
    maxBuffer: 1 << 20,
  });
  const used = process.cpuUsage(cpu);
  const r = JSON.parse(stdout) as Omit<Load, "cpuUsPerRequest">;
  return { ...r, cpuUsPerRequest: (used.user + used.system) / Math.max(1, r.total) };
}

const fmt = (label: string, r: Load) =>
  `${label.padEnd(42)} ${r.rps.toFixed(0).padStart(6)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, server CPU ${r.cpuUsPerRequest.toFixed(1)} µs/request, non-2xx ${r.non2xx}, errors ${r.errors}`;

async function keyCheck(): Promise<void> {
  const bare = createServer((_req, res) => {
    res.writeHead(200, { "content-length": "0" });
    res.end();
  });
  await new Promise<void>((r) => bare.listen(0, "127.0.0.1", r));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;

  const dir = mkdtempSync(join(tmpdir(), "credhook-bench-check-"));
  const file = join(dir, "webhook.config.yaml");
  writeFileSync(
    file,
    `${YAML_HEAD}gateways:
  local:
    provider: local
    credentialType: API_KEY
    options: { usagePlans: [ free, { id: limited, rate: { perSecond: 1000000000 } } ] }
routes: [ { default: local } ]
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck: { apis: [ { pathPrefix: /orders/, api: orders }, { pathPrefix: /weather/, api: weather } ] }
`,
  );
  const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir } });
  const server = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") });
  const res = await fetch(`${server.url}/v1/createCredentials`, {
    method: "POST",
    headers: { authorization: auth, "content-type": "application/json" },
    body: JSON.stringify({ appName: "Bench", developer: "bench@example.com", apis: [{ id: "orders", usagePlans: [{ id: "free" }] }, { id: "weather", usagePlans: [{ id: "limited" }] }] }),
  });
  const { apiKey } = (await res.json()) as { apiKey: string };
  const check = `${server.gatewayUrl}/check`;
  const plain = { "x-api-key": apiKey, "x-original-uri": "/orders/42" };
  const limited = { "x-api-key": apiKey, "x-original-uri": "/weather/today" };

  // Warm-up (JIT, connection setup); then rounds of bare / key check / key check with a plan limit,
  // back to back, so that load from elsewhere on the machine hits both alike. The median round counts.
  await load(bareUrl, {}, 1);
  await load(check, plain, 1);
  const rounds: Array<{ b: Load; k: Load; l: Load }> = [];
  for (let i = 0; i < CHECK_ROUNDS; i++) {
    rounds.push({ b: await load(bareUrl, {}), k: await load(check, plain), l: await load(check, limited) });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`\nkey check, ${CHECK_CONNECTIONS} connections, ${CHECK_ROUNDS} rounds of ${CHECK_SECONDS} s each (autocannon in its own process):`);
  rounds.forEach((r, i) => {
    console.log(fmt(`round ${i + 1}: bare node:http (200, empty)`, r.b));
    console.log(fmt(`round ${i + 1}: key check (cached key)`, r.k));
    console.log(fmt(`round ${i + 1}: key check + plan limit`, r.l));
  });
  const ratio = median(rounds.map((r) => r.k.rps / r.b.rps));
  const ratioLimited = median(rounds.map((r) => r.l.rps / r.b.rps));
  // Capacity: requests per CPU-second of the serving process — independent of how fast the load generator
  // (which shares this machine's cores, and parses the key check's longer answers) can go.
  const capacity = median(rounds.map((r) => r.b.cpuUsPerRequest / r.k.cpuUsPerRequest));
  console.log(
    `key check / bare node:http, median of ${CHECK_ROUNDS} rounds: throughput ${ratio.toFixed(2)}× (goal ≥ 0.5×), with a plan limit ${ratioLimited.toFixed(2)}×; ` +
      `server capacity (requests per CPU-second) ${capacity.toFixed(2)}×; p99 key check ${median(rounds.map((r) => r.k.p99))} ms, bare ${median(rounds.map((r) => r.b.p99))} ms (goal ≤ 2 ms)`,
  );
  await server.close();
  await new Promise<void>((r) => bare.close(() => r()));
}

await keyCheck();
