// create never cleans up alone: a failure after a PUT was accepted throws with `partial`
// (what exists) and `outcomeUnknown` (a PUT that may still land); core compensates.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { app, compensate, typedError, useFake } from "./helpers.js";

const t = useFake();

describe("create failures", () => {
  it("a later product that does not exist: 422 with the subscriptions already written as partial, nothing deleted; compensation removes them", async () => {
    const credentialId = randomUUID();
    const apis = [
      { id: "orders", usagePlans: ["gold", "silver"] },
      { id: "billing", usagePlans: ["platinum"] },
    ];
    const err = await typedError(
      t.provider.create({ credentialId, credentialType: "API_KEY", app, apis, apiKeyValue: "PartialKey".repeat(4) }),
    );
    expect(err.status).toBe(422);
    expect(err.code).toBe("INVALID_REFERENCE");
    expect(err.message).toBe(
      `[gateway azure-test] product platinum does not exist on service ${t.fake.resourceGroup}/${t.fake.serviceName} (usage plan platinum of API billing)`,
    );
    expect(err.outcomeUnknown).toBe(false);
    const nativeId = `credhook-${credentialId}`;
    expect(err.partial?.nativeId).toBe(nativeId);
    expect((err.partial!.resources.subscriptions as Array<{ sid: string }>).map((s) => s.sid).sort()).toEqual([
      `${nativeId}-p-gold`,
      `${nativeId}-p-silver`,
    ]);
    expect(JSON.stringify(err.partial)).not.toContain("PartialKey");
    expect(t.fake.requests.filter((r) => r.method === "DELETE")).toEqual([]);
    expect(t.fake.listSubscriptions()).toHaveLength(2);
    expect(await compensate(t.provider, credentialId, err, apis)).toEqual(["revoked"]);
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("a missing first product leaves nothing, reports nothing, and names the product", async () => {
    const err = await typedError(
      t.provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis: [{ id: "orders", usagePlans: ["platinum", "gold"] }],
      }),
    );
    expect(err.status).toBe(422);
    expect(err.message).toContain("product platinum does not exist");
    expect(err.partial).toBeUndefined();
    expect(err.outcomeUnknown).toBe(false);
    expect(t.fake.requests.filter((r) => r.method === "PUT")).toHaveLength(1);
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("a missing API (an API with no usage plan) is an InvalidReference too", async () => {
    const credentialId = randomUUID();
    const apis = [
      { id: "orders", usagePlans: ["gold"] },
      { id: "ghost-api", usagePlans: [] },
    ];
    const err = await typedError(t.provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err.status).toBe(422);
    expect(err.message).toContain("API ghost-api does not exist");
    await compensate(t.provider, credentialId, err, apis);
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("a 5xx mid-create is a 502 with outcome unknown (the PUT may have landed); compensation leaves nothing", async () => {
    t.fake.inject({ status: 500, times: 10, method: "PUT", path: "-p-silver" });
    const credentialId = randomUUID();
    const apis = [{ id: "orders", usagePlans: ["gold", "silver"] }];
    const err = await typedError(
      t.make({ maxRetries: 1 }).create({ credentialId, credentialType: "API_KEY", app, apis }),
    );
    expect(err.status).toBe(502);
    expect(err.message).toMatch(
      /^\[gateway azure-test\] creating subscription credhook-.*-p-silver \(\/products\/silver\) on service .* failed with HTTP 500/,
    );
    expect(err.outcomeUnknown).toBe(true);
    expect(t.fake.listSubscriptions().map((s) => s.sid)).toEqual([`credhook-${credentialId}-p-gold`]);
    await compensate(t.provider, credentialId, err, apis);
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("a retried create with the same credential id replaces the same subscriptions (no duplicates)", async () => {
    const credentialId = randomUUID();
    const input = {
      credentialId,
      credentialType: "API_KEY" as const,
      app,
      apis: [{ id: "orders", usagePlans: ["gold"] }],
      apiKeyValue: "ReplayKey".repeat(5),
    };
    const a = await t.provider.create(input);
    const b = await t.provider.create(input);
    expect(b.nativeId).toBe(a.nativeId);
    expect(t.fake.listSubscriptions()).toHaveLength(1);
    expect(t.fake.requests.filter((r) => r.method === "PUT").map((r) => r.status)).toEqual([201, 200]);
  });

  it("a credential id that is not a UUID is refused before any call (the mark needs one)", async () => {
    const err = await typedError(
      t.provider.create({
        credentialId: "not-a-uuid",
        credentialType: "API_KEY",
        app,
        apis: [{ id: "orders", usagePlans: ["gold"] }],
      }),
    );
    expect(err.status).toBe(400);
    expect(t.fake.requests).toEqual([]);
  });
});
