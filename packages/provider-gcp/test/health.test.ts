import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { makeProvider, rejection } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const lists = () => fake.requests().filter((r) => r.rpc === "ListKeys");

describe("health", () => {
  it("probes with one single-key listKeys and reuses a success for healthCacheMs", async () => {
    const provider = await makeProvider(fake, { healthCacheMs: 60_000 });
    await provider.health();
    await provider.health();
    await Promise.all([provider.health(), provider.health()]);
    expect(lists()).toHaveLength(1);
    expect(new URL(lists()[0]!.url, "http://x").searchParams.get("pageSize")).toBe("1");
    await provider.close();
  });

  it("concurrent first calls share one probe", async () => {
    const provider = await makeProvider(fake);
    await Promise.all([provider.health(), provider.health(), provider.health()]);
    expect(lists()).toHaveLength(1);
    await provider.close();
  });

  it("a failing probe is UpstreamUnavailable (503), reused briefly, then probed again", async () => {
    const provider = await makeProvider(fake, { healthCacheMs: 0 });
    fake.control.fail({ status: 503, rpcs: ["ListKeys"] });
    const err = await rejection(provider.health());
    expect(err).toMatchObject({ status: 503, code: "UPSTREAM_UNAVAILABLE" });
    expect((err as Error).message).toMatch(/^\[gateway gcp-test\] health probe \(listKeys\) failed: 503 UNAVAILABLE$/);
    await provider.health(); // healthCacheMs 0: failures are not reused either
    expect(lists()).toHaveLength(2);
    await provider.close();
  });

  it("a failure is reused (no new probe) within the failure window", async () => {
    const provider = await makeProvider(fake, { healthCacheMs: 60_000 });
    fake.control.fail({ status: 403, rpcs: ["ListKeys"] });
    await rejection(provider.health());
    expect(await rejection(provider.health())).toMatchObject({ status: 503 });
    expect(lists()).toHaveLength(1);
    await provider.close();
  });
});
