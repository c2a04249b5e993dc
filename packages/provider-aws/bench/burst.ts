/**
 * Benchmark: a burst of concurrent portal creates against the AWS fake with
 * AWS's quotas enforced (CreateApiKey 5 rps; other API Gateway calls 10 rps,
 * burst 40; Cognito 5 rps per operation). Prints, per scenario, the wall time,
 * the effective create rate, errors, and how often the fake throttled (should
 * be 0: the client-side limiter queues instead).
 *
 * Run from the repo root:
 *   npx tsx --conditions=dev-source packages/provider-aws/bench/burst.ts [count=50]
 */
import { randomUUID } from "node:crypto";
import { silentLogger, type CredentialType, type GatewayApi } from "@credhook/core";
import { memoryStateStore } from "@credhook/provider-testkit";
import awsProviderFactory from "../src/index.js";
import { startAwsFake } from "../src/fake/index.js";

const count = Number(process.argv[2] ?? 50);

async function scenario(type: CredentialType, plansPerKey: number): Promise<void> {
  const fake = await startAwsFake();
  const apis: GatewayApi[] = [];
  for (let i = 0; i < Math.max(plansPerKey, 1); i++) {
    const apiId = `api${String(i).padStart(7, "0")}`;
    const plan = fake.apiGateway.addUsagePlan({ apiStages: [{ apiId, stage: "prod" }] });
    apis.push({ id: apiId, usagePlans: plansPerKey > 0 ? [plan.id] : [] });
  }
  const pool = fake.cognito.createUserPool({ domain: "bench" });
  fake.cognito.createResourceServer(pool.Id, "https://api.example.com", apis.map((a) => a.id));
  const provider = await awsProviderFactory.create(
    { region: "us-east-1", endpoint: fake.url, credentials: { accessKeyId: "x", secretAccessKey: "x" }, userPoolId: pool.Id, resourceServer: "https://api.example.com", maxQueueWaitMs: 120_000 },
    { gateway: "bench", configPath: "gateways.bench.options", credentialType: type, logger: silentLogger, state: memoryStateStore() },
  );
  const latencies: number[] = [];
  const t0 = performance.now();
  const results = await Promise.allSettled(
    Array.from({ length: count }, async (_, i) => {
      const s = performance.now();
      await provider.create({ credentialId: randomUUID(), credentialType: type, app: { appName: `Bench ${i}`, developer: "bench@example.com", appSlug: `bench${i}` }, apis });
      latencies.push(performance.now() - s);
    }),
  );
  const wallS = (performance.now() - t0) / 1000;
  const errors = results.filter((r) => r.status === "rejected").length;
  const stats = fake.stats();
  const throttled = Object.values(stats.throttled).reduce((a, b) => a + b, 0);
  const created = type === "API_KEY" ? fake.apiGateway.keys.size : fake.cognito.allClients().length;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => (latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0) / 1000;
  console.log(
    `${type.padEnd(18)} plans/key=${plansPerKey}  creates=${count}  created=${created}  errors=${errors}  wall=${wallS.toFixed(2)}s  ` +
      `rate=${(count / wallS).toFixed(2)}/s  latency p50=${pct(50).toFixed(2)}s p95=${pct(95).toFixed(2)}s max=${pct(100).toFixed(2)}s  ` +
      `AWS calls=${Object.values(stats.calls).reduce((a, b) => a + b, 0)}  throttled by fake=${throttled}`,
  );
  await provider.close?.();
  await fake.close();
}

await scenario("API_KEY", 0);
await scenario("API_KEY", 2);
await scenario("API_KEY", 5);
await scenario("CLIENT_CREDENTIALS", 0);
