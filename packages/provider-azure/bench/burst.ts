/**
 * Burst benchmark: N apps created at once (3 subscriptions each), each searched by
 * its credential id as core does after an unknown outcome (findByCredential) on a
 * service that also holds 1000 foreign subscriptions, then revoked at once —
 * against the APIM fake with ARM's real buckets (writes 200 burst, 10/s).
 * Runs with the default queue cap (maxRetryAfterS 10: a longer local queue
 * answers 503 + Retry-After at once) and with a long one (everything queues).
 * Prints timings and outcomes; asserts nothing.
 *
 *   npx tsx --conditions=dev-source packages/provider-azure/bench/burst.ts [apps=100]
 */
import { randomUUID } from "node:crypto";
import { isCredhookError } from "@credhook/core/errors";
import { memoryStateStore } from "@credhook/core/provider-kit";
import { silentLogger } from "@credhook/core";
import { createAzureProvider } from "../src/index.js";
import { startApimFake } from "@credhook/fakes/azure";

const apps = Number(process.argv[2] ?? 100);
const apis = [
  { id: "orders", usagePlans: ["gold", "silver"] },
  { id: "echo-api", usagePlans: [] },
];
const app = { appName: "Bench", developer: "bench@example.com" };

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

async function run(maxRetryAfterS: number): Promise<void> {
  const fake = await startApimFake({ products: ["gold", "silver"], apis: ["orders", "echo-api"] });
  const provider = createAzureProvider(
    {
      subscriptionId: fake.subscriptionId,
      resourceGroup: fake.resourceGroup,
      serviceName: fake.serviceName,
      endpoint: fake.url,
      credential: { type: "static-token", token: `bench-${maxRetryAfterS}` },
      maxRetryAfterS,
      timeoutMs: 300_000,
    },
    {
      gateway: "bench",
      configPath: "gateways.bench.options",
      credentialType: "API_KEY",
      logger: silentLogger,
      state: memoryStateStore(),
    },
  );
  const phase = async (name: string, op: (i: number) => Promise<unknown>) => {
    const before = fake.requests.length;
    const t0 = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: apps }, async (_, i) => {
        const s = performance.now();
        try {
          await op(i);
          return { ms: performance.now() - s, status: 200 };
        } catch (err) {
          return { ms: performance.now() - s, status: isCredhookError(err) ? err.status : 500 };
        }
      }),
    );
    const total = performance.now() - t0;
    const ok = outcomes.filter((o) => o.status === 200).map((o) => o.ms);
    const reqs = fake.requests.slice(before);
    const failed = outcomes.filter((o) => o.status !== 200);
    console.log(
      `  ${name}: ${apps} apps in ${total.toFixed(0)} ms; ${ok.length} ok (p50 ${pct(ok, 50).toFixed(0)} ms, p95 ${pct(ok, 95).toFixed(0)} ms, max ${pct(ok, 100).toFixed(0)} ms), ` +
        `${failed.length} failed ${JSON.stringify([...new Set(failed.map((f) => f.status))])} (max ${pct(
          failed.map((f) => f.ms),
          100,
        ).toFixed(0)} ms); ` +
        `${reqs.length} ARM requests, ${reqs.filter((r) => r.status === 429).length} answered 429`,
    );
  };
  const refs: Array<{ credentialId: string; nativeId: string } | undefined> = [];
  console.log(`maxRetryAfterS ${maxRetryAfterS}:`);
  await phase("create", async (i) => {
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    refs[i] = { credentialId, nativeId: cred.nativeId };
  });
  // The search core runs after a create whose outcome is unknown: one filtered list per credential,
  // whatever else the service holds (here 1000 subscriptions made by others).
  for (let i = 0; i < 1000; i++) fake.addForeignSubscription({ scope: "/products/gold" });
  await phase("findByCredential", async (i) => {
    const r = refs[i];
    if (
      r &&
      (await provider.findByCredential({ credentialId: r.credentialId, credentialType: "API_KEY", app, apis }))
        .length !== 1
    )
      throw new Error("not found");
  });
  await phase("revoke", async (i) => {
    const r = refs[i];
    if (r) await provider.revoke({ ...r, credentialType: "API_KEY", app, resources: {} });
  });
  console.log(
    `  left in the fake: ${fake.listSubscriptions().length - 1000} subscriptions (and the 1000 foreign ones)`,
  );
  await provider.close();
  await fake.close();
}

await run(10);
await run(600);
