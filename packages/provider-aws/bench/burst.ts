/**
 * Benchmark: a burst of concurrent portal creates against the AWS fake with
 * AWS's quotas enforced (CreateApiKey 5 rps; other API Gateway calls 10 rps,
 * burst 40; Cognito 5 rps per operation). Prints, per scenario, the wall time,
 * the effective create rate, errors, and how often the fake throttled (should
 * be 0: the client-side limiter queues instead).
 *
 * Then the issue-9 quota scenario: a burst of 30 creates (imported values,
 * one plan each, as core sends them) against a STRICT fake — at most 5
 * CreateApiKey calls in any sliding 1-second window, else 429 — once as is and
 * once with 3 injected 429s, so the SDK's retries must queue in the
 * client-side limiter too. Prints the wall time against the quota's own limit
 * (30 / 5 per s = 6.0 s) and the answers the quota throttled (goal: 0, ≤ 1.1×).
 *
 * Run from the repo root:
 *   npx tsx --conditions=dev-source packages/provider-aws/bench/burst.ts [count=50]
 */
import { randomBytes, randomUUID } from "node:crypto";
import { silentLogger } from "@credhook/core";
import type { CredentialType, GatewayApi } from "@credhook/core/provider";
import { memoryStateStore } from "@credhook/provider-testkit";
import awsProviderFactory from "../src/index.js";
import { startAwsFake } from "@credhook/fakes/aws";

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
  fake.cognito.createResourceServer(
    pool.Id,
    "https://api.example.com",
    apis.map((a) => a.id),
  );
  const provider = await awsProviderFactory.create(
    {
      region: "us-east-1",
      endpoint: fake.url,
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
      userPoolId: pool.Id,
      resourceServer: "https://api.example.com",
      maxQueueWaitMs: 120_000,
    },
    {
      gateway: "bench",
      configPath: "gateways.bench.options",
      credentialType: type,
      logger: silentLogger,
      state: memoryStateStore(),
    },
  );
  const latencies: number[] = [];
  const t0 = performance.now();
  const results = await Promise.allSettled(
    Array.from({ length: count }, async (_, i) => {
      const s = performance.now();
      await provider.create({
        credentialId: randomUUID(),
        credentialType: type,
        app: { appName: `Bench ${i}`, developer: "bench@example.com", appSlug: `bench${i}` },
        apis,
      });
      latencies.push(performance.now() - s);
    }),
  );
  const wallS = (performance.now() - t0) / 1000;
  const errors = results.filter((r) => r.status === "rejected").length;
  const stats = fake.stats();
  const throttled = Object.values(stats.throttled).reduce((a, b) => a + b, 0);
  const created = type === "API_KEY" ? fake.apiGateway.keys.size : fake.cognito.allClients().length;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    (latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0) / 1000;
  console.log(
    `${type.padEnd(18)} plans/key=${plansPerKey}  creates=${count}  created=${created}  errors=${errors}  wall=${wallS.toFixed(2)}s  ` +
      `rate=${(count / wallS).toFixed(2)}/s  latency p50=${pct(50).toFixed(2)}s p95=${pct(95).toFixed(2)}s max=${pct(100).toFixed(2)}s  ` +
      `AWS calls=${Object.values(stats.calls).reduce((a, b) => a + b, 0)}  throttled by fake=${throttled}`,
  );
  await provider.close?.();
  await fake.close();
}

/** 30 concurrent creates against the strict sliding-window CreateApiKey quota; `injected` extra 429s force SDK retries. */
async function strictQuota(injected: number): Promise<void> {
  const creates = 30;
  const fake = await startAwsFake({ apiGateway: { quotaModel: "sliding-window" } });
  const plan = fake.apiGateway.addUsagePlan({ apiStages: [{ apiId: "api0000000", stage: "prod" }] });
  const provider = await awsProviderFactory.create(
    {
      region: "us-east-1",
      endpoint: fake.url,
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
      maxQueueWaitMs: 120_000,
    },
    {
      gateway: "bench",
      configPath: "gateways.bench.options",
      credentialType: "API_KEY",
      logger: silentLogger,
      state: memoryStateStore(),
    },
  );
  if (injected > 0) fake.faults.throttle({ operation: "CreateApiKey", count: injected, retryAfterS: 0 });
  const t0 = performance.now();
  const results = await Promise.allSettled(
    Array.from({ length: creates }, (_, i) =>
      provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app: { appName: `Strict ${i}`, developer: "bench@example.com", appSlug: `strict${i}` },
        apis: [{ id: "api0000000", usagePlans: [plan.id] }],
        apiKeyValue: randomBytes(30)
          .toString("base64")
          .replace(/[^A-Za-z0-9]/g, "")
          .slice(0, 40)
          .padEnd(40, "x"),
      }),
    ),
  );
  const wallS = (performance.now() - t0) / 1000;
  const stats = fake.stats();
  const quotaThrottled = (stats.throttled.CreateApiKey ?? 0) - injected;
  const limitS = creates / 5;
  const callsLimitS = (stats.calls.CreateApiKey ?? 0) / 5;
  console.log(
    `strict 5/s sliding window  creates=${creates}  injected 429s=${injected}  errors=${results.filter((r) => r.status === "rejected").length}  ` +
      `CreateApiKey calls=${stats.calls.CreateApiKey}  throttled by the quota=${quotaThrottled}  wall=${wallS.toFixed(2)}s  ` +
      `quota's own limit=${limitS.toFixed(1)}s (ratio ${(wallS / limitS).toFixed(2)}×; for all ${stats.calls.CreateApiKey} attempts ${callsLimitS.toFixed(1)}s, ratio ${(wallS / callsLimitS).toFixed(2)}×)`,
  );
  await provider.close?.();
  await fake.close();
}

await strictQuota(0);
await strictQuota(3);
await scenario("API_KEY", 0);
await scenario("API_KEY", 2);
await scenario("API_KEY", 5);
await scenario("CLIENT_CREDENTIALS", 0);
