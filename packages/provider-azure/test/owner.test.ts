// ownerMode developer-user: subscriptions owned by the APIM user of the developer's e-mail.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { app, compensate, createRef, subsOf, typedError, useFake } from "./helpers.js";

const t = useFake(
  { products: ["gold", "silver", { id: "trial", subscriptionsLimit: 1 }] },
  { ownerMode: "developer-user" },
);

describe("ownerMode developer-user", () => {
  it("creates the developer's APIM user once and owns every subscription with it", async () => {
    const a = await createRef(t.provider, [{ id: "orders", usagePlans: ["gold", "silver"] }]);
    const b = await createRef(t.provider, [{ id: "orders", usagePlans: ["gold"] }]);
    const users = t.fake.listUsers().filter((u) => u.email === "dev@example.com");
    expect(users).toHaveLength(1);
    expect(users[0]!.id).toMatch(/^credhook-[0-9a-f]{32}$/);
    for (const s of [...subsOf(t.fake, a.nativeId), ...subsOf(t.fake, b.nativeId)])
      expect(s.ownerId).toBe(`/users/${users[0]!.id}`);
    expect(a.resources.ownerId).toBe(`/users/${users[0]!.id}`);
  });

  it("reuses an existing APIM user found by e-mail, case-insensitively", async () => {
    const ref = await createRef(t.provider, [{ id: "orders", usagePlans: ["gold"] }]);
    const owner = subsOf(t.fake, ref.nativeId)[0]!.ownerId;
    const other = await t.provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app: { ...app, developer: "DEV@example.com" },
      apis: [{ id: "orders", usagePlans: ["silver"] }],
    });
    expect(subsOf(t.fake, other.nativeId)[0]!.ownerId).toBe(owner);
  });

  it("a developer that is not an e-mail address is a 422 and nothing is created", async () => {
    const err = await typedError(
      t.provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app: { ...app, developer: "not-an-email" },
        apis: [{ id: "orders", usagePlans: ["gold"] }],
      }),
    );
    expect(err.status).toBe(422);
    expect(t.fake.listSubscriptions()).toEqual([]);
  });

  it("a product whose per-user subscription limit is reached is a Conflict (409); compensation removes what was made", async () => {
    await createRef(t.provider, [{ id: "orders", usagePlans: ["trial"] }]);
    const credentialId = randomUUID();
    const apis = [{ id: "orders", usagePlans: ["gold", "trial"] }];
    const err = await typedError(t.provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err.status).toBe(409);
    expect(err.message).toMatch(/product trial .* allows no more subscriptions/);
    expect(err.outcomeUnknown).toBe(false);
    await compensate(t.provider, credentialId, err, apis);
    expect(t.fake.listSubscriptions()).toHaveLength(1);
  });
});
