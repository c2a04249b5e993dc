/**
 * Benchmark: the full server on the embedded provider, and on the three cloud
 * fakes (examples/multi-cloud.yaml). Prints throughput, latency percentiles (ms)
 * and resident memory (MiB); asserts nothing.
 *
 *   npx --yes pnpm@10 bench [requests=400] [concurrency=16]
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, loadConfigFile, startServer } from "../packages/server/src/index.js";
import { startDemoClouds } from "../packages/server/src/demo.js";

const N = Number(process.argv[2] ?? 400);
const C = Number(process.argv[3] ?? 16);
const PASSWORD = "bench-password-123";
const auth = `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`;

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

const local = join(mkdtempSync(join(tmpdir(), "credhook-bench-cfg-")), "webhook.config.yaml");
writeFileSync(
  local,
  `server: { auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] } }
store: { sqlite: "\${CREDHOOK_DATA_DIR}/credhook.db" }
dataDir: "\${CREDHOOK_DATA_DIR}"
gateways: { local: { provider: local, credentialType: API_KEY } }
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
