/** Error mapping: throttling after retries, 5xx, timeouts, unreachable AWS; every error typed, gateway-named and secret-free. */
import { describe, expect, it } from "vitest";
import { isCredhookError } from "@credhook/core/errors";
import { startAwsFake } from "@credhook/fakes/aws";
import { createCredential, makeProvider, useSeededFake } from "./helpers.js";

const env = useSeededFake();

describe("error mapping", () => {
  it("a throttle the SDK's retries absorb is invisible", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY");
    env.fake.faults.throttle({ operation: "CreateApiKey", count: 2, retryAfterS: 0 });
    const { cred } = await createCredential(provider, "API_KEY", []);
    expect(env.fake.apiGateway.keys.has(cred.nativeId)).toBe(true);
    expect(env.fake.stats().throttled.CreateApiKey).toBe(2);
    await provider.close?.();
  });

  it("still throttled after the retries: 503 Throttled carrying AWS's Retry-After", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { maxAttempts: 2 });
    env.fake.faults.throttle({ operation: "CreateApiKey", count: 2, retryAfterS: 3 });
    const err = await createCredential(provider, "API_KEY", []).catch((e: unknown) => e);
    expect(err).toMatchObject({
      status: 503,
      code: "THROTTLED",
      retryAfterS: 3,
      message: expect.stringMatching(/^\[gateway aws-test\] CreateApiKey/),
    });
    await provider.close?.();
  });

  it("Cognito throttling after retries is a 503 too", async () => {
    const provider = await makeProvider(env.fake, env.seed, "CLIENT_CREDENTIALS", { maxAttempts: 1 });
    env.fake.faults.throttle({ service: "cognito", operation: "CreateUserPoolClient", retryAfterS: 2 });
    await expect(
      createCredential(provider, "CLIENT_CREDENTIALS", [{ id: env.seed.apiA, usagePlans: [] }]),
    ).rejects.toMatchObject({ status: 503, code: "THROTTLED", retryAfterS: 2 });
    await provider.close?.();
  });

  it("a 500 is a 502 UpstreamError, a 503 an UpstreamUnavailable", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { maxAttempts: 1 });
    env.fake.faults.serverError({ operation: "CreateApiKey", status: 500 });
    await expect(createCredential(provider, "API_KEY", [])).rejects.toMatchObject({
      status: 502,
      code: "UPSTREAM_FAILED",
    });
    env.fake.faults.serverError({ operation: "CreateApiKey", status: 503 });
    await expect(createCredential(provider, "API_KEY", [])).rejects.toMatchObject({
      status: 503,
      code: "UPSTREAM_UNAVAILABLE",
    });
    await provider.close?.();
  });

  it("a call slower than timeoutMs is a 504 UpstreamTimeout", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { maxAttempts: 1, timeoutMs: 200 });
    env.fake.faults.latency(1_500, { operation: "CreateApiKey", count: 1 });
    await expect(createCredential(provider, "API_KEY", [])).rejects.toMatchObject({
      status: 504,
      code: "UPSTREAM_TIMEOUT",
    });
    await provider.close?.();
  });

  it("an unreachable endpoint is a typed 502 naming the gateway", async () => {
    const gone = await startAwsFake();
    await gone.close();
    const provider = await makeProvider(gone, env.seed, "API_KEY", { maxAttempts: 1 });
    const err = await createCredential(provider, "API_KEY", []).catch((e: unknown) => e);
    expect(isCredhookError(err)).toBe(true);
    expect(err).toMatchObject({ status: 502, message: expect.stringContaining("[gateway aws-test] CreateApiKey") });
    await provider.close?.();
  });

  it("a failed plan attach after retries reports the upstream failure with the key as partial (never deleted by the provider)", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { maxAttempts: 1 });
    env.fake.faults.serverError({ operation: "CreateUsagePlanKey", status: 500 });
    const err = await createCredential(provider, "API_KEY", [
      { id: env.seed.apiA, usagePlans: [env.seed.planA] },
    ]).catch((e: unknown) => e);
    expect(err).toMatchObject({
      status: 502,
      partial: { nativeId: [...env.fake.apiGateway.keys.keys()][0] },
      outcomeUnknown: false,
    });
    expect(env.fake.apiGateway.keys.size).toBe(1);
    await provider.close?.();
  });
});

describe("health", () => {
  it("makes one cheap read and reuses a success for healthCacheMs", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { healthCacheMs: 60_000 });
    await Promise.all([provider.health(), provider.health()]);
    await provider.health();
    expect(env.fake.stats().calls).toEqual({ GetApiKeys: 1 });
    await provider.close?.();
  });

  it("CLIENT_CREDENTIALS probes the resource server", async () => {
    const provider = await makeProvider(env.fake, env.seed, "CLIENT_CREDENTIALS");
    await provider.health();
    expect(env.fake.stats().calls).toEqual({ DescribeResourceServer: 1 });
    await provider.close?.();
  });

  it("a failing probe is UpstreamUnavailable (503) and is not cached", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { maxAttempts: 1 });
    env.fake.faults.serverError({ operation: "GetApiKeys", status: 500 });
    await expect(provider.health()).rejects.toMatchObject({ status: 503, code: "UPSTREAM_UNAVAILABLE" });
    await expect(provider.health()).resolves.toBeUndefined();
    await provider.close?.();
  });

  it("a missing resource server makes CLIENT_CREDENTIALS unhealthy with a message naming it", async () => {
    const provider = await makeProvider(env.fake, env.seed, "CLIENT_CREDENTIALS", {
      resourceServer: "https://nope.example.com",
    });
    await expect(provider.health()).rejects.toMatchObject({
      status: 503,
      message: expect.stringContaining("resource server https://nope.example.com"),
    });
    await provider.close?.();
  });
});
