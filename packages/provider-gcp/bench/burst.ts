/**
 * Burst benchmark: how the client-side limiter shapes a burst of creates
 * against the API Keys fake (which enforces Google's 120 writes/minute).
 * Prints numbers; asserts nothing.
 *
 *   node_modules/.bin/tsx --conditions=dev-source packages/provider-gcp/bench/burst.ts [burst=40]   (from the repo root)
 */
import { randomUUID } from "node:crypto";
import { silentLogger } from "@credhook/core";
import { memoryStateStore } from "@credhook/provider-testkit";
import factory, { type GcpApiKeysProvider } from "../src/index.js";
import { startApiKeysFake } from "../src/fake/index.js";

const burst = Number(process.argv[2] ?? 40);
const fake = await startApiKeysFake();
const provider = (await factory.create(
  { projectId: fake.projectId, endpoint: fake.url, credentials: { type: "static-token" }, serviceTemplate: "{apiId}.apigateway.bench.cloud.goog", pollInitialDelayMs: 50 },
  { gateway: "bench", configPath: "gateways.bench.options", credentialType: "API_KEY", logger: silentLogger, state: memoryStateStore() },
)) as GcpApiKeysProvider;

const t0 = performance.now();
const results = await Promise.all(
  Array.from({ length: burst }, async () => {
    const start = performance.now();
    try {
      await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app: { appName: "Bench", developer: "b@example.com" }, apis: [{ id: "orders", usagePlans: [] }] });
      return { ok: true, ms: performance.now() - start };
    } catch (err) {
      return { ok: false, ms: performance.now() - start, status: (err as { status?: number }).status, retryAfterS: (err as { retryAfterS?: number }).retryAfterS };
    }
  }),
);
const total = performance.now() - t0;
const ok = results.filter((r) => r.ok).map((r) => r.ms).sort((a, b) => a - b);
const pct = (p: number) => (ok.length ? ok[Math.min(ok.length - 1, Math.floor((p / 100) * ok.length))]!.toFixed(0) : "-");
const refused = results.filter((r) => !r.ok);
const google429 = fake.requests().filter((r) => r.status === 429).length;
console.log(`burst of ${burst} creates (limiter: 100 writes/min, burst 20, max queue wait 10 s; fake quota 120 writes/min)`);
console.log(`  succeeded: ${ok.length}, refused by the limiter (503): ${refused.length}${refused[0] ? ` (Retry-After ${refused[0].retryAfterS} s)` : ""}, 429s from the fake: ${google429}`);
console.log(`  latency of successful creates: p50 ${pct(50)} ms, p95 ${pct(95)} ms, max ${pct(100)} ms; wall time ${total.toFixed(0)} ms`);
await provider.close();
await fake.close();
