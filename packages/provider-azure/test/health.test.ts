// health(): one cheap read of the service, cached; failures are UpstreamUnavailable (503).
import { describe, expect, it } from "vitest";
import { typedError, useFake } from "./helpers.js";

const t = useFake();

const serviceGets = () => t.fake.requests.filter((r) => r.method === "GET" && r.path === "/").length;

describe("health", () => {
  it("reads the service once and answers later calls from the cache", async () => {
    const provider = t.make({ healthCacheMs: 60_000 });
    await Promise.all([provider.health(), provider.health()]);
    await provider.health();
    expect(serviceGets()).toBe(1);
  });

  it("with healthCacheMs 0 every call reads the service", async () => {
    const provider = t.make({ healthCacheMs: 0 });
    await provider.health();
    await provider.health();
    expect(serviceGets()).toBe(2);
  });

  it("a failing read is UpstreamUnavailable (503) naming the gateway, cached briefly", async () => {
    const provider = t.make({ maxRetries: 0 });
    t.fake.inject({
      status: 403,
      code: "AuthorizationFailed",
      message: "The client does not have authorization",
      path: /^\/$/,
    });
    const err = await typedError(provider.health());
    expect(err.status).toBe(503);
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.message).toMatch(
      /^\[gateway azure-test\] Azure Resource Manager refused reading service .*AuthorizationFailed.*README: RBAC/,
    );
    expect((await typedError(provider.health())).status).toBe(503);
    expect(t.fake.requests).toHaveLength(1);
  });

  it("a wrong resource group is unhealthy", async () => {
    const provider = t.make({ resourceGroup: "rg-elsewhere", maxRetries: 0 });
    const err = await typedError(provider.health());
    expect(err.status).toBe(503);
    expect(err.message).toContain("ResourceGroupNotFound");
  });
});
