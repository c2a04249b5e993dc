// Never an orphan on Kong: after each fault the fake can inject, core-style compensation
// (revoke the error's `partial`, then findByCredential + revoke) leaves no consumer the
// portal does not hold, and a foreign consumer is never touched.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { countLimiterSlots } from "@credhook/provider-testkit";
import { ManualClock } from "@credhook/fakes/clock";
import { app, compensate, createRef, typedError, useFake } from "./helpers.js";

/** The fake's clock: a held write lands when the test advances it, never while the client is still waiting. */
const clock = new ManualClock();
const t = useFake({ clock });
const apis = [
  { id: "orders-api", usagePlans: ["gold"] },
  { id: "echo", usagePlans: [] },
];

function foreign() {
  const c = t.fake.addForeignConsumer({ username: "partner", key: "PartnerKeyValue0123456789", groups: ["orders"] });
  const snapshot = () =>
    JSON.stringify([
      t.fake.consumers().find((x) => x.id === c.id),
      t.fake.keyAuths().filter((k) => k.consumer.id === c.id),
    ]);
  const before = snapshot();
  return { c, untouched: () => snapshot() === before };
}

describe("a write that lands after the client gave up", () => {
  it("POST /consumers held past the time-out: 504, outcome unknown; once it lands, the search by tags finds and removes it", async () => {
    const other = foreign();
    // The held create never answers in time (the fake's clock stands still); the calls before it have 2 s each.
    const provider = t.make({ timeoutMs: 2000, maxRetries: 0 });
    t.fake.inject({ delayMs: 3000, method: "POST", path: "/consumers" });
    const credentialId = randomUUID();
    const err = await typedError(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err.status).toBe(504);
    expect(err.outcomeUnknown).toBe(true);
    expect(err.partial).toBeUndefined();
    expect(await compensate(provider, credentialId, err, apis)).toEqual([]); // nothing there yet
    await clock.whenSleeping();
    await clock.advance(3000);
    await t.fake.idle();
    expect(t.fake.consumers().map((c) => c.username)).toContain(`credhook-kong-test-${credentialId}`);
    expect(await compensate(provider, credentialId, err, apis)).toEqual(["revoked"]);
    expect(t.fake.consumers().map((c) => c.id)).toEqual([other.c.id]);
    expect(other.untouched()).toBe(true);
  });

  it("a retried create after a lost answer finds the consumer by its username (409) and finishes it, with no duplicate", async () => {
    const provider = t.make({ maxRetries: 0 });
    t.fake.inject({ status: 500, afterApply: true, method: "POST", path: "/consumers" });
    const credentialId = randomUUID();
    const err = await typedError(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err.status).toBe(502);
    expect(err.outcomeUnknown).toBe(true);
    const again = await provider.create({
      credentialId,
      credentialType: "API_KEY",
      app,
      apis,
      apiKeyValue: "SameValueAcrossGateways0123456789",
    });
    expect(t.fake.consumers()).toHaveLength(1);
    expect(t.fake.keyAuths().map((k) => k.key)).toEqual(["SameValueAcrossGateways0123456789"]);
    expect(again.nativeId).toBe(t.fake.consumers()[0]!.id);
  });
});

describe("failures after the consumer exists are reported, never cleaned up alone", () => {
  for (const [path, status] of [
    ["/key-auth", 500],
    ["/acls", 403],
    ["/plugins", 429],
  ] as const) {
    it(`${status} on POST …${path}: typed error with partial; compensation removes the consumer`, async () => {
      const provider = t.make({ maxRetries: 0, maxRetryAfterS: 0 });
      t.fake.inject({ status, method: "POST", path, retryAfterS: 3 });
      const credentialId = randomUUID();
      const err = await typedError(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
      expect(err.status).toBe({ 500: 502, 403: 502, 429: 503 }[status]);
      if (status === 429) expect((err as unknown as { retryAfterS: number }).retryAfterS).toBe(3);
      if (status === 403) expect(err.message).toContain("grant its RBAC role");
      expect(err.partial?.nativeId).toBe(t.fake.consumers()[0]!.id);
      expect(t.fake.requests.filter((r) => r.method === "DELETE")).toEqual([]);
      expect(await compensate(provider, credentialId, err, apis)).toEqual(["revoked", "gone"].slice(0, 1));
      expect(t.fake.consumers()).toEqual([]);
      expect(t.fake.keyAuths()).toEqual([]);
      expect(t.fake.acls()).toEqual([]);
    });
  }

  it("a duplicate key value is a Conflict that never shows the key; the consumer is reported for compensation", async () => {
    const other = foreign();
    const credentialId = randomUUID();
    const err = await typedError(
      t.provider.create({
        credentialId,
        credentialType: "API_KEY",
        app,
        apis,
        apiKeyValue: "PartnerKeyValue0123456789",
      }),
    );
    expect(err.status).toBe(409);
    expect(JSON.stringify(err.messages)).not.toContain("PartnerKeyValue0123456789");
    await compensate(t.provider, credentialId, err, apis);
    expect(t.fake.consumers().map((c) => c.id)).toEqual([other.c.id]);
    expect(other.untouched()).toBe(true);
  });
});

describe("throttling (Konnect) and RBAC", () => {
  it("a 429 with a short Retry-After is waited for and retried; a long one answers 503 at once", async () => {
    const ref = await createRef(t.provider, apis);
    t.fake.inject({ status: 429, retryAfterS: 1, method: "GET" });
    expect((await t.provider.readSecret(ref)).apiKey).toBe(ref.apiKey);
    const provider = t.make({ maxRetryAfterS: 2 });
    t.fake.inject({ status: 429, retryAfterS: 30, method: "GET" });
    const before = t.fake.requests.length;
    const err = await typedError(provider.readSecret(ref));
    expect([err.status, (err as unknown as { retryAfterS: number }).retryAfterS]).toEqual([503, 30]);
    // Not waited for: the one GET answered 429 was not retried (a wait of 30 s would also outlast the test's time-out).
    expect(t.fake.requests.slice(before).map((r) => [r.method, r.status])).toEqual([["GET", 429]]);
  });

  it("the client-side limiter keeps a burst under the fake's Konnect-style rate limit: every request, retries included, takes a slot of it", async () => {
    await t.fake.close();
    const { setup } = await import("./helpers.js");
    Object.assign(t, await setup({ throttle: { requests: 10, windowMs: 1000 } }));
    const provider = t.make({ rateLimit: { requests: 10, windowMs: 1000 } });
    // Counted at the limiter, not inferred from the fake's wall-clock window (where a request released on time can arrive late on a busy machine).
    const before = t.fake.requests.length;
    const { result: refs, slots } = await countLimiterSlots("Kong Admin API", () =>
      Promise.all(Array.from({ length: 3 }, () => createRef(provider, [{ id: "echo", usagePlans: [] }]))),
    );
    expect(refs).toHaveLength(3);
    expect(slots).toBeGreaterThan(0);
    expect(slots).toBe(t.fake.requests.length - before);
    await provider.close();
  });

  it("a wrong RBAC token is 502 naming the permissions; a role without DELETE leaves the consumer and says so", async () => {
    await t.fake.close();
    const { setup } = await import("./helpers.js");
    Object.assign(t, await setup({ adminToken: "right", denied: [{ method: "DELETE", path: "/consumers" }] }));
    const wrong = t.make({ auth: { type: "rbac-token", token: "wrong" } });
    const err = await typedError(wrong.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }));
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/refused \(401\): Invalid credentials.*grant its RBAC role/);
    const right = t.make({ auth: { type: "rbac-token", token: "right" } });
    const ref = await createRef(right, apis);
    expect((await typedError(right.revoke(ref))).status).toBe(502);
    expect(t.fake.consumers()).toHaveLength(1);
    await expect(right.health()).resolves.toBeUndefined();
    await expect(wrong.health()).rejects.toMatchObject({ status: 503 });
  });
});
