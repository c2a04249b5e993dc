/**
 * Burst benchmark against the API Keys fake (which enforces Google's 120
 * writes and 240 reads per minute). Prints figures; asserts nothing.
 *
 * 1. How the client-side limiter (default options) shapes a burst of creates.
 * 2. The same burst while the fake answers RESOURCE_EXHAUSTED (no retry hint,
 *    as Google usually does) to every 4th createKey / operation poll /
 *    getKeyString: how many creates succeed thanks to the retries, and how many
 *    live keys nobody holds remain after core-style compensation of the failures.
 *
 *   node_modules/.bin/tsx --conditions=dev-source packages/provider-gcp/bench/burst.ts [burst=40]   (from the repo root)
 */
import { randomUUID } from "node:crypto";
import type { GcpProviderOptions } from "../src/index.js";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { compensate, liveOrphans, makeProvider } from "../test/helpers.js";

const burst = Number(process.argv[2] ?? 40);
const app = { appName: "Bench", developer: "b@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];

async function run(fake: ApiKeysFake, label: string, options: Partial<GcpProviderOptions>): Promise<void> {
  // default limiter and retry options, except for fast polls
  const provider = await makeProvider(fake, { pollInitialDelayMs: 50, retry: undefined, ...options });
  const t0 = performance.now();
  const results = await Promise.all(
    Array.from({ length: burst }, async () => {
      const credentialId = randomUUID();
      const start = performance.now();
      try {
        const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
        return { credentialId, nativeId: cred.nativeId, ms: performance.now() - start };
      } catch (err) {
        return { credentialId, err, ms: performance.now() - start };
      }
    }),
  );
  const total = performance.now() - t0;
  const ok = results
    .filter((r) => r.nativeId)
    .map((r) => r.ms)
    .sort((a, b) => a - b);
  const pct = (p: number) =>
    ok.length ? ok[Math.min(ok.length - 1, Math.floor((p / 100) * ok.length))]!.toFixed(0) : "-";
  const failed = results.filter((r) => r.err);
  const byStatus = new Map<string, number>();
  for (const f of failed) {
    const e = f.err as { status?: number; retryAfterS?: number };
    const k = `${e.status}${e.retryAfterS ? ` (Retry-After ${e.retryAfterS} s)` : ""}`;
    byStatus.set(k, (byStatus.get(k) ?? 0) + 1);
  }
  const held = results.flatMap((r) => (r.nativeId ? [r.nativeId] : []));
  const orphansBefore = liveOrphans(fake, held).length;
  fake.control.clearFaults();
  for (const f of failed) await compensate(provider, f.credentialId, f.err, app, apis);
  const orphansAfter = liveOrphans(fake, held).length;
  const google429 = fake.requests().filter((r) => r.status === 429).length;
  console.log(`${label}`);
  console.log(
    `  succeeded: ${ok.length}/${burst}; failed: ${failed.length}${failed.length ? ` (${[...byStatus].map(([k, n]) => `${n}× ${k}`).join(", ")})` : ""}; 429s answered by the fake: ${google429}`,
  );
  console.log(
    `  latency of successful creates: p50 ${pct(50)} ms, p95 ${pct(95)} ms, max ${pct(100)} ms; wall time ${total.toFixed(0)} ms`,
  );
  console.log(`  live keys nobody holds: ${orphansBefore} before compensation, ${orphansAfter} after`);
  await provider.close();
}

const fake = await startApiKeysFake();
await run(
  fake,
  `burst of ${burst} creates, default limiter (100 writes/min, burst 20, max queue wait 10 s; fake quota 120 writes/min)`,
  {},
);

fake.control.reset();
fake.control.setKeyStringInCreateResult(false);
fake.control.fail({ status: 429, rpcs: ["CreateKey", "GetOperation", "GetKeyString"], every: 4, times: 100_000 });
await run(
  fake,
  `burst of ${burst} creates, every 4th createKey/poll/getKeyString answered 429 (no retry hint); default retry budget 10 s`,
  {
    rateLimit: { writesPerMinute: 100, writeBurst: burst, readsPerMinute: 200, readBurst: 200 },
  },
);

fake.control.reset();
fake.control.setKeyStringInCreateResult(false);
fake.control.fail({ status: 429, rpcs: ["CreateKey", "GetOperation", "GetKeyString"], every: 4, times: 100_000 });
await run(fake, `the same without retries (retry.budgetMs 0): core compensates every failure`, {
  rateLimit: { writesPerMinute: 100, writeBurst: burst, readsPerMinute: 200, readBurst: 200 },
  retry: { budgetMs: 0 },
});
await fake.close();
