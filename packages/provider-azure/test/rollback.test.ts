// create: a missing product rolls back the subscriptions already created and answers InvalidReference (422).
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { app, typedError, useFake } from "./helpers.js";


const t = useFake();

describe("create rollback", () => {
  it("deletes the subscriptions already created when a later product does not exist", async () => {
    const err = await typedError(
      t.provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis: [
          { id: "orders", usagePlans: ["gold", "silver"] },
          { id: "billing", usagePlans: ["platinum"] },
        ],
        apiKeyValue: "RollbackKey".repeat(4),
      }),
    );
    expect(err.status).toBe(422);
    expect(err.code).toBe("INVALID_REFERENCE");
    expect(err.message).toBe(`[gateway azure-test] product platinum does not exist on service ${t.fake.resourceGroup}/${t.fake.serviceName} (usage plan platinum of API billing)`);
    expect(t.fake.listSubscriptions()).toEqual([]);
    // gold and silver were created (201) and then deleted (200), with If-Match
    expect(t.fake.requests.filter((r) => r.method === "PUT" && r.status === 201)).toHaveLength(2);
    const deletes = t.fake.requests.filter((r) => r.method === "DELETE");
    expect(deletes.filter((r) => r.status === 200)).toHaveLength(2);
    expect(deletes.every((r) => r.ifMatch === "*")).toBe(true);
  });

  it("a missing first product leaves nothing and names the product", async () => {
    const err = await typedError(
      t.provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [{ id: "orders", usagePlans: ["platinum", "gold"] }] }),
    );
    expect(err.status).toBe(422);
    expect(err.message).toContain("product platinum does not exist");
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("a missing API (an API with no usage plan) is an InvalidReference too", async () => {
    const err = await typedError(
      t.provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [{ id: "orders", usagePlans: ["gold"] }, { id: "ghost-api", usagePlans: [] }] }),
    );
    expect(err.status).toBe(422);
    expect(err.message).toContain("API ghost-api does not exist");
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("an upstream failure mid-create also rolls back, and maps to a 5xx", async () => {
    t.fake.inject({ status: 500, times: 10, method: "PUT", path: "-p-silver" });
    const err = await typedError(
      t.make({ maxRetries: 1 }).create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [{ id: "orders", usagePlans: ["gold", "silver"] }] }),
    );
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/^\[gateway azure-test\] creating subscription credhook-.*-p-silver \(\/products\/silver\) on service .* failed with HTTP 500/);
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("a retried create with the same credential id replaces the same subscriptions (no duplicates)", async () => {
    const credentialId = randomUUID();
    const input = { credentialId, credentialType: "API_KEY" as const, app, apis: [{ id: "orders", usagePlans: ["gold"] }], apiKeyValue: "ReplayKey".repeat(5) };
    const a = await t.provider.create(input);
    const b = await t.provider.create(input);
    expect(b.nativeId).toBe(a.nativeId);
    expect(t.fake.listSubscriptions()).toHaveLength(1);
    expect(t.fake.requests.filter((r) => r.method === "PUT").map((r) => r.status)).toEqual([201, 200]);
  });
});
