import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { memoryStateStore } from "@credhook/core/provider-kit";
import { silentLogger } from "@credhook/core";
import type { RateSlots } from "@credhook/core/provider";
import factory from "../src/index.js";
import type { GcpApiKeysProvider } from "../src/index.js";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { fakeOptions } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());

it("with several instances on one store, every call waits for its slot among all of them, spaced at the project's quota", async () => {
  const reserved: Array<{ key: string; intervalMs: number }> = [];
  const rateSlots: RateSlots = {
    async reserve(key, intervalMs) {
      reserved.push({ key, intervalMs });
      return reserved.length === 1 ? 50 : 0; // the first call waits its turn
    },
  };
  const provider = (await factory.create(fakeOptions(fake), {
    gateway: "gcp",
    configPath: "gateways.gcp.options",
    credentialType: "API_KEY",
    logger: silentLogger,
    state: memoryStateStore(),
    rateSlots,
  })) as GcpApiKeysProvider;
  const t0 = Date.now();
  await provider.create({
    credentialId: randomUUID(),
    credentialType: "API_KEY",
    app: { appName: "Shared", developer: "d@example.com" },
    apis: [{ id: "orders", usagePlans: [] }],
  });
  expect(Date.now() - t0).toBeGreaterThanOrEqual(50);
  const writes = reserved.filter((r) => r.key.endsWith("|fake-project|write"));
  const reads = reserved.filter((r) => r.key.endsWith("|fake-project|read"));
  expect(writes.length).toBeGreaterThanOrEqual(1); // createKey
  expect(reads.length).toBeGreaterThanOrEqual(1); // the operation poll
  const o = fakeOptions(fake);
  expect(writes[0]!.intervalMs).toBe(Math.ceil(60_000 / (o.rateLimit?.writesPerMinute ?? 100))); // default 100 of Google's 120 writes per minute
  expect(reads[0]!.intervalMs).toBe(Math.ceil(60_000 / (o.rateLimit?.readsPerMinute ?? 200))); // default 200 of 240 reads per minute
  await provider.close();
});
