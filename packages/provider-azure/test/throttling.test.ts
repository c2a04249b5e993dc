// ARM throttling, 5xx and time limits: retried by the SDK, then mapped to 503/502/504 with Retry-After.
import { describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { Throttled } from "@credhook/core/errors";
import { ManualClock } from "@credhook/fakes/clock";
import { app, createRef, subsOf, typedError, useFake } from "./helpers.js";

const apis = [{ id: "orders", usagePlans: ["gold", "silver"] }];

const t = useFake();
/** A reference of this gateway's form whose subscriptions do not exist. */
const unknownRef = {
  credentialId: "",
  credentialType: "API_KEY" as const,
  nativeId: `credhook-${randomUUID()}`,
  resources: {},
  app,
};

describe("throttling and failures", () => {
  it("a 429 with Retry-After is retried by the SDK and the create succeeds", async () => {
    const provider = t.make();
    t.fake.inject({ status: 429, retryAfterS: 0, method: "PUT", times: 2 });
    const ref = await createRef(provider, apis);
    expect(subsOf(t.fake, ref.nativeId)).toHaveLength(2);
    expect(t.fake.requests.filter((r) => r.method === "PUT").map((r) => r.status)).toEqual([429, 429, 201, 201]);
  });

  it("still throttled after the SDK's retries: Throttled (503) with the server's Retry-After; the written subscription is reported, not deleted", async () => {
    const provider = t.make({ maxRetries: 2 });
    t.fake.inject({ status: 429, retryAfterS: 1, method: "PUT", path: "-p-silver", times: 3 });
    const credentialId = randomUUID();
    const err = await typedError(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err).toBeInstanceOf(Throttled);
    expect(err.status).toBe(503);
    expect((err as Throttled).retryAfterS).toBe(1);
    expect(err.message).toMatch(
      /^\[gateway azure-test\] Azure Resource Manager still throttled creating subscription .*-p-silver/,
    );
    // every attempt was refused with 429: the silver PUT certainly did not land
    expect(err.outcomeUnknown).toBe(false);
    expect((err.partial!.resources.subscriptions as Array<{ sid: string }>).map((s) => s.sid)).toEqual([
      `credhook-${credentialId}-p-gold`,
    ]);
    expect(t.fake.listSubscriptions().map((s) => s.sid)).toEqual([`credhook-${credentialId}-p-gold`]);
    expect(t.fake.requests.filter((r) => r.method === "DELETE")).toEqual([]);
  });

  it("a Retry-After above maxRetryAfterS answers 503 at once instead of holding the request", async () => {
    const provider = t.make({ maxRetryAfterS: 5 });
    t.fake.inject({ status: 429, retryAfterS: 120, method: "GET", path: "/subscriptions" });
    const err = await typedError(provider.readSecret(unknownRef));
    expect(err.status).toBe(503);
    expect((err as Throttled).retryAfterS).toBe(120);
    expect(t.fake.requests).toHaveLength(1);
  });

  it("the fake's ARM write bucket running dry is absorbed by the SDK's Retry-After retries", async () => {
    // The bucket refills on the fake's clock only: the first three of the six PUTs drain it, the next
    // ones are refused however slowly they arrive, and it refills when the test advances the clock
    // (to three tokens: what the three PUTs left need).
    const clock = new ManualClock();
    await t.restart({ clock, throttle: { writes: { capacity: 3, refillPerSecond: 20 } } });
    const provider = t.make();
    const creates = Promise.all([createRef(provider, apis), createRef(provider, apis), createRef(provider, apis)]);
    const puts = () => t.fake.requests.filter((r) => r.method === "PUT").map((r) => r.status);
    await vi.waitFor(() => expect(puts()).toContain(429), { timeout: 20_000 });
    await clock.advance(1000); // the Retry-After the fake sent (1 s): the bucket is full again
    const refs = await creates;
    for (const ref of refs) expect(subsOf(t.fake, ref.nativeId)).toHaveLength(2);
    expect(puts().slice(0, 4)).toEqual([201, 201, 201, 429]);
    expect(puts().filter((s) => s === 201)).toHaveLength(6);
  });

  it("a persistent 5xx is an UpstreamError (502); a 503 is UpstreamUnavailable", async () => {
    const provider = t.make({ maxRetries: 0 });
    t.fake.inject({ status: 500, method: "GET", path: "/subscriptions" });
    expect((await typedError(provider.readSecret(unknownRef))).status).toBe(502);
    t.fake.inject({ status: 503, method: "GET", path: "/subscriptions" });
    const err = await typedError(provider.readSecret(unknownRef));
    expect(err.status).toBe(503);
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
  });

  it("a call slower than timeoutMs is an UpstreamTimeout (504)", async () => {
    // The fake's clock stands still: the answer never comes before the client's 100 ms (real time) run out.
    await t.restart({ clock: new ManualClock() });
    const provider = t.make({ timeoutMs: 100, maxRetries: 0 });
    t.fake.setLatency(400);
    const err = await typedError(provider.readSecret(unknownRef));
    expect(err.status).toBe(504);
    expect(err.message).toMatch(/did not finish within 100 ms/);
  });

  it("an unreachable endpoint is an UpstreamError (502) naming no secret", async () => {
    const url = t.fake.url;
    await t.fake.close();
    const provider = t.make({ endpoint: url, maxRetries: 0 });
    const err = await typedError(
      provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis,
        apiKeyValue: "SecretValue".repeat(4),
      }),
    );
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/not reachable/);
    expect(JSON.stringify(err.messages)).not.toContain("SecretValue");
    await t.restart();
  });

  it("an ARM message that echoes the key is masked", async () => {
    const provider = t.make({ maxRetries: 0 });
    const key = "EchoedKeyValue".repeat(3);
    t.fake.inject({
      status: 400,
      code: "ValidationError",
      message: `primaryKey '${key}' is not allowed here`,
      method: "PUT",
    });
    const err = await typedError(
      provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis: [{ id: "orders", usagePlans: ["gold"] }],
        apiKeyValue: key,
      }),
    );
    expect(JSON.stringify(err.messages)).not.toContain(key);
    expect(err.message).toContain("***");
  });

  it("the client-side ARM bucket: a queue longer than maxRetryAfterS answers 503 at once, before calling ARM", async () => {
    const provider = t.make({
      rateLimit: { writeBurst: 2, writesPerSecond: 0.1 },
      maxRetryAfterS: 5,
      credential: { type: "static-token", token: "bucket-test" },
    });
    await createRef(provider, [{ id: "orders", usagePlans: ["gold"] }]);
    await createRef(provider, [{ id: "orders", usagePlans: ["silver"] }]);
    const puts = t.fake.requests.filter((r) => r.method === "PUT").length;
    const err = await typedError(
      provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis: [{ id: "orders", usagePlans: ["bronze"] }],
      }),
    );
    expect(err).toBeInstanceOf(Throttled);
    expect((err as Throttled).retryAfterS).toBe(10);
    expect(err.message).toMatch(/too many ARM writes are queued to stay under ARM's 0.1\/s; try again in 10 s/);
    expect(t.fake.requests.filter((r) => r.method === "PUT").length).toBe(puts);
    expect(t.fake.requests.some((r) => r.status === 429)).toBe(false);
    await provider.close();
  });
});
