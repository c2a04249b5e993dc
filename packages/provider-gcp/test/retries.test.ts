import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { makeProvider, rejection } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Flaky App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];
const count = (rpc: string) => fake.requests().filter((r) => r.rpc === rpc).length;

describe("retries of transient failures", () => {
  it("a 503 on createKey is retried and one key is created", async () => {
    const provider = await makeProvider(fake);
    fake.control.fail({ status: 503, rpcs: ["CreateKey"] });
    const cred = await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis });
    expect(count("CreateKey")).toBe(2);
    expect(fake.keys().map((k) => k.keyId)).toEqual([cred.nativeId]);
    await provider.close();
  });

  it("a failed poll is polled again: createKey is sent once", async () => {
    const provider = await makeProvider(fake);
    fake.control.fail({ status: 503, rpcs: ["GetOperation"] });
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    expect(count("CreateKey")).toBe(1);
    expect(
      fake
        .requests()
        .filter((r) => r.rpc === "GetOperation")
        .map((r) => r.status),
    ).toEqual([503, 200, 200]);
    expect(fake.keys()).toHaveLength(1);
    expect(cred.apiKey).toBe(fake.key(cred.nativeId)!.keyString);
    await provider.close();
  });

  it("a createKey applied but answered 500 is sent again, meets ALREADY_EXISTS and resumes its own key: one key", async () => {
    const provider = await makeProvider(fake);
    fake.control.fail({ status: 500, rpcs: ["CreateKey"], afterApply: true });
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    expect(
      fake
        .requests()
        .filter((r) => r.rpc === "CreateKey")
        .map((r) => r.status),
    ).toEqual([500, 409]);
    expect(fake.keys().map((k) => k.keyId)).toEqual([cred.nativeId]);
    expect(cred.apiKey).toBe(fake.key(cred.nativeId)!.keyString);
    await provider.close();
  });

  it("a read that times out is retried (the request time-out cancels it)", async () => {
    const provider = await makeProvider(fake, { requestTimeoutMs: 100 });
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    fake.control.setLatency(400, { rpcs: ["GetKeyString"] });
    // the first GetKeyString times out; to let the retry succeed, drop the latency as soon as it was seen
    const watcher = setInterval(() => {
      if (count("GetKeyString") >= 2) fake.control.setLatency(0);
    }, 5);
    try {
      const back = await provider.readSecret({
        credentialId,
        credentialType: "API_KEY",
        nativeId: cred.nativeId,
        resources: cred.resources,
        app,
      });
      expect(back.apiKey).toBe(cred.apiKey);
    } finally {
      clearInterval(watcher);
    }
    expect(count("GetKeyString")).toBeGreaterThanOrEqual(3);
    await provider.close();
  });

  it("gives up after maxAttempts with UpstreamError (502), naming the call", async () => {
    const provider = await makeProvider(fake, { retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 2 } });
    fake.control.fail({ status: 500, rpcs: ["CreateKey"], times: 3 });
    const err = await rejection(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 502, code: "UPSTREAM_FAILED" });
    expect((err as Error).message).toMatch(/^\[gateway gcp-test\] createKey credhook-\w+ failed: 500 INTERNAL$/);
    expect(count("CreateKey")).toBe(3);
    expect(fake.keys()).toEqual([]);
    await provider.close();
  });

  it("a 4xx is not retried, and a refused create reports a definite outcome", async () => {
    const provider = await makeProvider(fake);
    for (const status of [400, 403]) {
      fake.control.fail({ status, rpcs: ["CreateKey"] });
      const err = await rejection(
        provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }),
      );
      expect(err).toMatchObject({ status: 502, outcomeUnknown: false, partial: undefined });
    }
    expect(count("CreateKey")).toBe(2);
    expect(fake.keys()).toEqual([]);
    await provider.close();
  });

  it("the transient retries of one operation share the retry budget", async () => {
    const provider = await makeProvider(fake, {
      retry: { maxAttempts: 10, initialDelayMs: 100, maxDelayMs: 100, budgetMs: 250 },
    });
    fake.control.fail({ status: 503, rpcs: ["CreateKey"], times: 10 });
    const err = await rejection(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 502 });
    // back-offs of ~100 ms (jittered) fit 250 ms two or three times: far fewer than maxAttempts
    expect(count("CreateKey")).toBeGreaterThanOrEqual(2);
    expect(count("CreateKey")).toBeLessThanOrEqual(4);
    await provider.close();
  });
});
