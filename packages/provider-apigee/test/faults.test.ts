// Never an orphan on Apigee: after each fault the fake can inject, core-style compensation
// leaves no key with API products the portal does not hold, and a foreign app is never touched.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { countLimiterSlots } from "@credhook/provider-testkit";
import { ManualClock } from "@credhook/fakes/clock";
import { app, compensate, createRef, liveKeys, setup, typedError, useFake } from "./helpers.js";

/** The fake's clock: a held write lands when the test advances it, never while the client is still waiting. */
const clock = new ManualClock();
const t = useFake({ clock });
const apis = [
  { id: "orders", usagePlans: ["gold"] },
  { id: "echo", usagePlans: [] },
];

function foreign() {
  const made = t.fake.addForeignApp({
    developer: "partner@example.com",
    name: "partner",
    consumerKey: "PartnerKey_0123456789abc",
    apiProducts: ["orders-gold"],
  });
  const before = JSON.stringify(made);
  return { made, untouched: () => JSON.stringify(t.fake.apps().find((a) => a.appId === made.appId)) === before };
}

describe("a write that lands after the client gave up", () => {
  it("the app create held past the time-out: 504, outcome unknown; once it lands, the search by its name finds and removes it", async () => {
    const other = foreign();
    // The held create never answers in time (the fake's clock stands still); the calls before it have 2 s each.
    const provider = t.make({ timeoutMs: 2000, maxRetries: 0 });
    t.fake.inject({ delayMs: 3000, method: "POST", path: "/developers/dev%40example.com/apps" });
    const credentialId = randomUUID();
    const err = await typedError(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect([err.status, err.outcomeUnknown, err.partial]).toEqual([504, true, undefined]);
    expect(await compensate(provider, credentialId, err, apis)).toEqual([]); // nothing there yet
    await clock.whenSleeping();
    await clock.advance(3000);
    await t.fake.idle();
    expect(t.fake.apps()).toHaveLength(2); // landed: an app with a generated key nobody holds
    expect(await compensate(provider, credentialId, err, apis)).toEqual(["revoked"]);
    expect(t.fake.apps().map((a) => a.appId)).toEqual([other.made.appId]);
    expect(other.untouched()).toBe(true);
  });

  it("the key import answered 500 after it was applied: partial reported, compensation deletes the app and its keys", async () => {
    const provider = t.make({ maxRetries: 0 });
    t.fake.inject({ status: 500, afterApply: true, method: "POST", path: /\/keys$/ });
    const credentialId = randomUUID();
    const err = await typedError(
      provider.create({
        credentialId,
        credentialType: "API_KEY",
        app,
        apis,
        apiKeyValue: "ImportedValue0123456789abcdef",
      }),
    );
    expect([err.status, err.outcomeUnknown]).toEqual([502, true]);
    expect(t.fake.apps()[0]!.credentials.map((c) => c.consumerKey)).toContain("ImportedValue0123456789abcdef");
    expect(await compensate(provider, credentialId, err, apis)).toEqual(["revoked"]);
    expect(t.fake.apps()).toEqual([]);
  });

  it("a retried create after a lost answer finds the app by its name (409) and finishes it, with no duplicate", async () => {
    const provider = t.make({ maxRetries: 0 });
    t.fake.inject({ status: 503, afterApply: true, method: "POST", path: "/apps" });
    const credentialId = randomUUID();
    await typedError(
      provider.create({
        credentialId,
        credentialType: "API_KEY",
        app,
        apis,
        apiKeyValue: "SameValue_0123456789abcdef",
      }),
    );
    const cred = await provider.create({
      credentialId,
      credentialType: "API_KEY",
      app,
      apis,
      apiKeyValue: "SameValue_0123456789abcdef",
    });
    expect(t.fake.apps()).toHaveLength(1);
    expect(t.fake.apps()[0]!.credentials.map((c) => [c.consumerKey, c.apiProducts.map((p) => p.apiproduct)])).toEqual([
      ["SameValue_0123456789abcdef", ["echo", "orders-gold"]],
    ]);
    expect(cred.nativeId).toBe(t.fake.apps()[0]!.appId);
  });
});

describe("errors", () => {
  it("a duplicate key value is a Conflict that never shows the key; the app is reported and compensated", async () => {
    const other = foreign();
    const credentialId = randomUUID();
    const err = await typedError(
      t.provider.create({
        credentialId,
        credentialType: "API_KEY",
        app,
        apis,
        apiKeyValue: "PartnerKey_0123456789abc",
      }),
    );
    expect(err.status).toBe(409);
    expect(JSON.stringify(err.messages)).not.toContain("PartnerKey_0123456789abc");
    await compensate(t.provider, credentialId, err, apis);
    expect(t.fake.apps().map((a) => a.appId)).toEqual([other.made.appId]);
    expect(other.untouched()).toBe(true);
  });

  it("a value Apigee cannot import is refused before any call by the declared pattern; a non-e-mail developer is 422 up front", async () => {
    expect(
      new RegExp(t.provider.capabilities.apiKeyValuePattern!).test("AIzaSyD-_0123456789abcdefghijklmnopqrst"),
    ).toBe(true);
    expect(new RegExp(t.provider.capabilities.apiKeyValuePattern!).test("has.dot")).toBe(false);
    const before = t.fake.requests.length;
    const err = await typedError(
      t.provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app: { ...app, developer: "not-an-email" },
        apis,
      }),
    );
    expect(err.status).toBe(422);
    expect(t.fake.requests.length).toBe(before);
  });

  it("403 PERMISSION_DENIED on the delete leaves the app and names the IAM role", async () => {
    await t.fake.close();
    Object.assign(t, await setup({ denied: ["apigee.developerapps.delete"] }));
    const ref = await createRef(t.provider, apis);
    const err = await typedError(t.provider.revoke(ref));
    expect(err.status).toBe(502);
    expect(err.message).toMatch(
      /PERMISSION_DENIED: Permission 'apigee.developerapps.delete' denied.*roles\/apigee.developerAdmin/,
    );
    expect(liveKeys(t.fake)).toEqual([ref.apiKey]);
  });

  it("429 RESOURCE_EXHAUSTED is retried with back-off; past the retries it is 503", async () => {
    const ref = await createRef(t.provider, apis);
    t.fake.inject({ status: 429, method: "GET", times: 2 });
    expect((await t.provider.readSecret(ref)).apiKey).toBe(ref.apiKey);
    t.fake.inject({ status: 429, method: "GET", times: 5 });
    expect((await typedError(t.provider.readSecret(ref))).status).toBe(503);
  });

  it("the client-side limit keeps a burst under the organisation's quota: every request, retries included, takes a slot of its limiter", async () => {
    await t.fake.close();
    Object.assign(t, await setup({ throttle: { requests: 12, windowMs: 1000 } }));
    const provider = t.make({ rateLimit: { requests: 12, windowMs: 1000 } });
    // Counted at the limiter, not inferred from the fake's wall-clock window (where a request released
    // on time can arrive late on a busy machine): the limiter's spacing is checked on fake time in
    // provider-aws's limits.test.ts.
    const before = t.fake.requests.length;
    const { slots } = await countLimiterSlots("Apigee management API", () =>
      Promise.all([createRef(provider, apis), createRef(provider, apis)]),
    );
    expect(slots).toBeGreaterThan(0);
    expect(slots).toBe(t.fake.requests.length - before);
    await provider.close();
  });
});
