/**
 * Issue 9, case 1: "a burst of 40 creates with occasional RESOURCE_EXHAUSTED
 * left 8 live orphans". With retries within the budget the burst succeeds;
 * without them, every failed create is compensated core-style and no live
 * key is left that the portal does not hold.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import type { GcpProviderOptions } from "../src/index.js";
import { compensate, liveOrphans, makeProvider } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Burst App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];
const BURST = 40;
/** Client-side room for the whole burst and its compensation at once (the fake enforces the real quota: 120 writes, 240 reads a minute). */
const roomy: Partial<GcpProviderOptions> = {
  rateLimit: { writesPerMinute: 100, writeBurst: 100, readsPerMinute: 200, readBurst: 200 },
};

/** Runs the burst; returns the held keyIds (successes) and the failures with their credential ids. */
async function burst(options: Partial<GcpProviderOptions>) {
  const provider = await makeProvider(fake, options);
  const runs = await Promise.all(
    Array.from({ length: BURST }, async () => {
      const credentialId = randomUUID();
      try {
        return { credentialId, cred: await provider.create({ credentialId, credentialType: "API_KEY", app, apis }) };
      } catch (err) {
        return { credentialId, err };
      }
    }),
  );
  return { provider, held: runs.flatMap((r) => (r.cred ? [r.cred.nativeId] : [])), failed: runs.filter((r) => r.err) };
}

describe(`a burst of ${BURST} creates with occasional RESOURCE_EXHAUSTED`, () => {
  it("retried within the budget: every create succeeds, one key each, no orphan", async () => {
    fake.control.setKeyStringInCreateResult(false);
    fake.control.fail({ status: 429, rpcs: ["CreateKey", "GetOperation", "GetKeyString"], every: 4, times: 1000 });
    const { provider, held, failed } = await burst({ ...roomy, retry: { throttleInitialDelayMs: 20 } });
    expect(failed).toEqual([]);
    expect(new Set(held).size).toBe(BURST);
    expect(fake.requests().filter((r) => r.status === 429).length).toBeGreaterThan(BURST / 2);
    expect(liveOrphans(fake, held)).toEqual([]);
    expect(fake.keys().filter((k) => !k.deleteTime)).toHaveLength(BURST);
    await provider.close();
  });

  it("without retries (budget 0): the failed creates are compensated core-style and leave 0 live orphans", async () => {
    fake.control.setKeyStringInCreateResult(false);
    fake.control.fail({ status: 429, rpcs: ["CreateKey", "GetOperation", "GetKeyString"], every: 4, times: 1000 });
    const { provider, held, failed } = await burst({ ...roomy, retry: { budgetMs: 0 } });
    expect(failed.length).toBeGreaterThan(0);
    const afterAccept = failed.filter((f) => (f.err as { partial?: unknown }).partial);
    expect(afterAccept.length).toBeGreaterThan(0); // 429 on a poll or on getKeyString: the key existed
    expect(liveOrphans(fake, held).length).toBe(afterAccept.length);
    fake.control.clearFaults();
    for (const f of failed) await compensate(provider, f.credentialId, f.err, app, apis);
    expect(liveOrphans(fake, held)).toEqual([]);
    expect(
      fake
        .keys()
        .filter((k) => !k.deleteTime)
        .map((k) => k.keyId)
        .sort(),
    ).toEqual([...held].sort());
    await provider.close();
  });
});
