// Issue 9 at provider level: after each fault the fake can inject, core-style compensation
// (revoke the error's `partial`, then findByCredential + revoke) leaves zero live
// subscriptions the portal does not hold, and a foreign subscription is never touched.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { ManualClock } from "@credhook/fakes/clock";
import { app, compensate, createRef, liveSubs, noneChanges, subsOf, typedError, useFake } from "./helpers.js";

/** The fake's clock: a held PUT lands when the test advances it, never while the client is still waiting. */
const clock = new ManualClock();
const t = useFake({ clock });
const apis = [{ id: "orders", usagePlans: ["gold", "silver"] }];

/** A foreign subscription on the same service, and a check that it is exactly as made. */
function foreign() {
  const made = t.fake.addForeignSubscription({ scope: "/products/gold", displayName: "Partner key (made by hand)" });
  return { made, untouched: () => JSON.stringify(t.fake.getSubscription(made.sid)) === JSON.stringify(made) };
}

/**
 * A create whose PUT of `path` the fake holds for 3 s of its clock, from a client that gives up after
 * 2 s (real time; the held PUT never answers in time, the calls before it have 2 s each): asserts the
 * 504 with outcome unknown. The PUT lands on {@link land}.
 */
async function lateCreate(path: string) {
  const provider = t.make({ timeoutMs: 2000, maxRetries: 0 });
  t.fake.inject({ delayMs: 3000, method: "PUT", path });
  const credentialId = randomUUID();
  const err = await typedError(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
  expect(err.status).toBe(504);
  expect(err.outcomeUnknown).toBe(true);
  return { provider, credentialId, err };
}

/** Lets the held PUT land: the fake's clock passes its 3 s, then every held write has been applied. */
async function land(): Promise<void> {
  await clock.whenSleeping();
  await clock.advance(3000);
  await t.fake.idle();
}

describe("a PUT that lands after the client's timeout (issue 9, case 2)", () => {
  it("the first PUT: 504 with outcome unknown and no DELETE; once it lands, the search by the credential's mark finds and removes it", async () => {
    const other = foreign();
    const { provider, credentialId, err } = await lateCreate("-p-gold");
    expect(err.partial?.nativeId).toBe(`credhook-${credentialId}`);
    // core's compensation in the request: nothing there yet
    expect(await compensate(provider, credentialId, err, apis)).toEqual(["gone"]);
    expect(t.fake.requests.filter((r) => r.method === "DELETE")).toEqual([]);
    // the cloud finishes the PUT: an active subscription whose key nobody holds…
    await land();
    expect(subsOf(t.fake, `credhook-${credentialId}`).map((s) => s.state)).toEqual(["active"]);
    // …which core's later attempt (next request, sweep, reconcile) finds by the deterministic id and revokes
    expect(await compensate(provider, credentialId, err, apis)).toEqual(["revoked"]);
    expect(liveSubs(t.fake).map((s) => s.sid)).toEqual([other.made.sid]);
    expect(other.untouched()).toBe(true);
  });

  it("a later PUT: the subscription written is reported as partial, the late one is found after it lands", async () => {
    const { provider, credentialId, err } = await lateCreate("-p-silver");
    expect((err.partial!.resources.subscriptions as Array<{ sid: string }>).map((s) => s.sid)).toEqual([
      `credhook-${credentialId}-p-gold`,
    ]);
    await compensate(provider, credentialId, err, apis);
    await land();
    expect(liveSubs(t.fake)).toHaveLength(1);
    await compensate(provider, credentialId, err, apis);
    expect(liveSubs(t.fake)).toEqual([]);
  });
});

describe("a write applied, then answered 500", () => {
  it("create with no retries: 502, outcome unknown; compensation removes the applied subscription", async () => {
    const provider = t.make({ maxRetries: 0 });
    t.fake.inject({ status: 500, afterApply: true, method: "PUT", path: "-p-silver" });
    const credentialId = randomUUID();
    const err = await typedError(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err.status).toBe(502);
    expect(err.outcomeUnknown).toBe(true);
    expect(t.fake.requests.find((r) => r.method === "PUT" && r.path.endsWith("-p-silver"))).toMatchObject({
      status: 500,
      appliedStatus: 201,
    });
    expect(subsOf(t.fake, `credhook-${credentialId}`)).toHaveLength(2);
    await compensate(provider, credentialId, err, apis);
    expect(liveSubs(t.fake)).toEqual([]);
  });

  it("create with the SDK's retries: the idempotent PUT is replaced on retry, the create succeeds with no duplicate", async () => {
    t.fake.inject({ status: 500, afterApply: true, method: "PUT", path: "-p-silver" });
    const ref = await createRef(t.make(), apis);
    expect(subsOf(t.fake, ref.nativeId).map((s) => [s.scope, s.primaryKey === ref.apiKey])).toEqual([
      ["/products/gold", true],
      ["/products/silver", true],
    ]);
    expect(t.fake.requests.filter((r) => r.path.endsWith("-p-silver")).map((r) => r.status)).toEqual([500, 200]);
  });

  it("revoke: a DELETE applied then answered 500 fails the call; the retry finds nothing left ('gone')", async () => {
    const provider = t.make({ maxRetries: 0 });
    const ref = await createRef(provider, [{ id: "orders", usagePlans: ["gold"] }]);
    t.fake.inject({ status: 500, afterApply: true, method: "DELETE" });
    expect((await typedError(provider.revoke(ref))).status).toBe(502);
    expect(liveSubs(t.fake)).toEqual([]);
    expect(await provider.revoke(ref)).toBe("gone");
  });
});

describe("403 / 429 / 500 at any call, reads included", () => {
  it("403 on the first PUT: 502 naming the RBAC fix, nothing written, outcome known", async () => {
    const provider = t.make({ maxRetries: 0 });
    t.fake.inject({ status: 403, method: "PUT" });
    const err = await typedError(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }));
    expect(err.status).toBe(502);
    expect(err.message).toMatch(
      /AuthorizationFailed: .*Microsoft\.ApiManagement\/service\/subscriptions\/write.*grant the principal/,
    );
    expect(err.outcomeUnknown).toBe(false);
    expect(err.partial).toBeUndefined();
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("403 on a later PUT: the written subscription is reported (outcome known) and compensated", async () => {
    const provider = t.make({ maxRetries: 0 });
    t.fake.inject({ status: 403, method: "PUT", path: "-p-silver" });
    const credentialId = randomUUID();
    const err = await typedError(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err.outcomeUnknown).toBe(false);
    expect(err.partial?.nativeId).toBe(`credhook-${credentialId}`);
    await compensate(provider, credentialId, err, apis);
    expect(liveSubs(t.fake)).toEqual([]);
  });

  it("403 / 429 / 500 on listSecrets during an update: typed errors, nothing written", async () => {
    const provider = t.make({ maxRetries: 0, maxRetryAfterS: 0 });
    const before = [{ id: "orders", usagePlans: ["gold"] }];
    const ref = await createRef(provider, before);
    const update = () =>
      provider.update({
        ...ref,
        previous: before,
        desired: apis,
        changes: [
          {
            id: "orders",
            action: "NONE",
            usagePlans: [
              { id: "gold", action: "NONE" },
              { id: "silver", action: "ADDED" },
            ],
          },
        ],
      });
    const writes = () =>
      t.fake.requests.filter((r) => r.method === "PUT" || r.method === "DELETE" || r.method === "PATCH").length;
    const w = writes();
    for (const [status, expected] of [
      [403, 502],
      [429, 503],
      [500, 502],
    ] as const) {
      t.fake.inject({ status, retryAfterS: 1, method: "POST", path: "/listSecrets" });
      expect((await typedError(update())).status).toBe(expected);
    }
    expect(writes()).toBe(w);
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.scope)).toEqual(["/products/gold"]);
  });

  it("403 on the list of a revoke, 500 on one DELETE: nothing is lost, the next revoke finishes", async () => {
    const provider = t.make({ maxRetries: 0 });
    const ref = await createRef(provider, apis);
    t.fake.inject({ status: 403, method: "GET", path: "/subscriptions" });
    expect((await typedError(provider.revoke(ref))).status).toBe(502);
    expect(subsOf(t.fake, ref.nativeId)).toHaveLength(2);
    t.fake.inject({ status: 500, method: "DELETE", path: "-p-silver" });
    expect((await typedError(provider.revoke(ref))).status).toBe(502);
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.scope)).toEqual(["/products/silver"]);
    expect(await provider.revoke(ref)).toBe("revoked");
    expect(liveSubs(t.fake)).toEqual([]);
  });

  it("findByCredential is one list filtered by the credential's id stem; a 429/500 on it is a typed error", async () => {
    const provider = t.make({ maxRetries: 0, maxRetryAfterS: 0 });
    const ref = await createRef(provider, apis);
    const before = t.fake.requests.length;
    const found = await provider.findByCredential({
      credentialId: ref.credentialId,
      credentialType: "API_KEY",
      app,
      apis,
    });
    expect(found).toEqual([
      {
        nativeId: ref.nativeId,
        credentialId: ref.credentialId,
        description: expect.stringContaining(`${ref.nativeId}-p-gold`),
      },
    ]);
    expect(t.fake.requests.slice(before).map((r) => [r.method, r.path, r.filter])).toEqual([
      ["GET", "/subscriptions", `startswith(name,'${ref.nativeId}-')`],
    ]);
    t.fake.inject({ status: 429, retryAfterS: 2, method: "GET" });
    expect(
      (
        await typedError(
          provider.findByCredential({ credentialId: ref.credentialId, credentialType: "API_KEY", app, apis }),
        )
      ).status,
    ).toBe(503);
    t.fake.inject({ status: 500, method: "GET" });
    expect(
      (
        await typedError(
          provider.findByCredential({ credentialId: ref.credentialId, credentialType: "API_KEY", app, apis }),
        )
      ).status,
    ).toBe(502);
  });

  it("a 429 on every attempt of a PUT is a refusal (outcome known); a 5xx among the attempts makes it unknown", async () => {
    const provider = t.make({ maxRetries: 1 });
    t.fake.inject({ status: 429, retryAfterS: 0, method: "PUT", times: 2 });
    expect(
      (await typedError(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis })))
        .outcomeUnknown,
    ).toBe(false);
    t.fake.inject({ status: 500, method: "PUT" });
    t.fake.inject({ status: 429, retryAfterS: 0, method: "PUT" });
    expect(
      (await typedError(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis })))
        .outcomeUnknown,
    ).toBe(true);
    expect(t.fake.listSubscriptions()).toEqual([]);
  });
});

describe("a suspended credential stays suspended (issue 9, case 8)", () => {
  it("an update that ADDs a product creates it suspended, with the same key; the suspended one stays suspended", async () => {
    const before = [{ id: "orders", usagePlans: ["gold"] }];
    const ref = await createRef(t.provider, before);
    t.fake.touchSubscription(`${ref.nativeId}-p-gold`, { state: "suspended" });
    await t.provider.update({
      ...ref,
      previous: before,
      desired: apis,
      changes: [
        {
          id: "orders",
          action: "NONE",
          usagePlans: [
            { id: "gold", action: "NONE" },
            { id: "silver", action: "ADDED" },
          ],
        },
      ],
    });
    expect(subsOf(t.fake, ref.nativeId).map((s) => [s.scope, s.state, s.primaryKey === ref.apiKey])).toEqual([
      ["/products/gold", "suspended", true],
      ["/products/silver", "suspended", true],
    ]);
  });

  it("a NONE update repairing a deleted subscription of a suspended credential recreates it suspended", async () => {
    const ref = await createRef(t.provider, apis);
    t.fake.touchSubscription(`${ref.nativeId}-p-gold`, { state: "suspended" });
    t.fake.dropSubscription(`${ref.nativeId}-p-silver`);
    await t.provider.update({ ...ref, previous: apis, desired: apis, changes: noneChanges(apis) });
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.state)).toEqual(["suspended", "suspended"]);
    expect(liveSubs(t.fake).some((s) => s.state === "active")).toBe(false);
  });
});
