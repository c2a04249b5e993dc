// One key for the whole app: every subscription carries the same primary key, including those added later.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { isCredhookKey } from "@credhook/core";
import { app, compensate, createRef, noneChanges, subsOf, typedError, useFake } from "./helpers.js";

const t = useFake();

describe("shared key", () => {
  it("create gives every product and API scope a subscription with the imported key, active, readable name", async () => {
    const key = "SharedKeyValue".repeat(3);
    const ref = await createRef(
      t.provider,
      [
        { id: "orders", usagePlans: ["gold", "silver"] },
        { id: "echo-api", usagePlans: [] },
      ],
      key,
    );
    expect(ref.apiKey).toBe(key);
    const subs = subsOf(t.fake, ref.nativeId);
    expect(subs.map((s) => s.scope).sort()).toEqual(["/apis/echo-api", "/products/gold", "/products/silver"]);
    expect(subs.every((s) => s.primaryKey === key && s.state === "active")).toBe(true);
    expect(subs.every((s) => s.displayName === "Orders App (dev@example.com)")).toBe(true);
    expect(ref.nativeId).toBe(`credhook-${ref.credentialId}`);
    expect(subs.map((s) => s.sid).sort()).toEqual([
      `${ref.nativeId}-a-echo-api`,
      `${ref.nativeId}-p-gold`,
      `${ref.nativeId}-p-silver`,
    ]);
    expect(JSON.stringify(ref.resources)).not.toContain(key);
  });

  it("two APIs in one product share one subscription", async () => {
    const ref = await createRef(t.provider, [
      { id: "orders", usagePlans: ["gold"] },
      { id: "billing", usagePlans: ["gold"] },
    ]);
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.scope)).toEqual(["/products/gold"]);
  });

  it("without an imported value the t.provider generates a key in credhook's format", async () => {
    const ref = await createRef(t.provider, [{ id: "orders", usagePlans: ["gold", "silver"] }]);
    expect(isCredhookKey(ref.apiKey!)).toBe(true);
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.primaryKey)).toEqual([ref.apiKey, ref.apiKey]);
  });

  it("update ADDED reads the key back with listSecrets and gives the new product the same key", async () => {
    const before = [{ id: "orders", usagePlans: ["gold"] }];
    const ref = await createRef(t.provider, before);
    const after = [
      { id: "orders", usagePlans: ["gold", "bronze"] },
      { id: "echo-api", usagePlans: [] },
    ];
    await t.provider.update({
      ...ref,
      previous: before,
      desired: after,
      changes: [
        {
          id: "orders",
          action: "NONE",
          usagePlans: [
            { id: "gold", action: "NONE" },
            { id: "bronze", action: "ADDED" },
          ],
        },
        { id: "echo-api", action: "ADDED", usagePlans: [] },
      ],
    });
    const subs = subsOf(t.fake, ref.nativeId);
    expect(subs.map((s) => s.scope).sort()).toEqual(["/apis/echo-api", "/products/bronze", "/products/gold"]);
    expect(subs.every((s) => s.primaryKey === ref.apiKey)).toBe(true);
    expect(t.fake.requests.filter((r) => r.path.endsWith("/listSecrets"))).toHaveLength(1);
    expect((await t.provider.readSecret(ref)).apiKey).toBe(ref.apiKey);
  });

  it("a service that refuses one key on several subscriptions: 422, and what was made is reported for compensation", async () => {
    t.fake.setRejectDuplicateKeys(true);
    const credentialId = randomUUID();
    const apis = [{ id: "orders", usagePlans: ["gold", "silver"] }];
    const err = await typedError(t.provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err.status).toBe(422);
    expect(err.message).toMatch(/refuses one key on several subscriptions.*one APIM product/);
    expect(err.partial?.nativeId).toBe(`credhook-${credentialId}`);
    await compensate(t.provider, credentialId, err, apis);
    expect(t.fake.listSubscriptions()).toEqual([]);
    // a single-product app still works there
    const ref = await createRef(t.provider, [{ id: "orders", usagePlans: ["gold"] }]);
    expect(subsOf(t.fake, ref.nativeId)).toHaveLength(1);
  });

  it("a key value another credential holds on such a service is a Conflict (409) and leaks no key", async () => {
    t.fake.setRejectDuplicateKeys(true);
    const key = "TakenKeyValue".repeat(3);
    await createRef(t.provider, [{ id: "orders", usagePlans: ["gold"] }], key);
    const err = await typedError(
      t.provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis: [{ id: "orders", usagePlans: ["silver"] }],
        apiKeyValue: key,
      }),
    );
    expect(err.status).toBe(409);
    expect(JSON.stringify(err.messages)).not.toContain(key);
  });

  it("update NONE re-checks: a subscription deleted out of band is recreated with the same key", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold", "silver"] }];
    const ref = await createRef(t.provider, apis);
    t.fake.dropSubscription(`${ref.nativeId}-p-silver`);
    await t.provider.update({ ...ref, previous: apis, desired: apis, changes: noneChanges(apis) });
    expect(subsOf(t.fake, ref.nativeId).map((s) => [s.scope, s.primaryKey === ref.apiKey])).toEqual([
      ["/products/gold", true],
      ["/products/silver", true],
    ]);
  });
});
