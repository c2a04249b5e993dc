// adopt: a consumer made outside credhook comes under a gateway explicitly, by credhook's tags.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { accessOf, app, createRef, typedError, useFake } from "./helpers.js";

const t = useFake();
const gold = [{ id: "orders-api", usagePlans: ["gold"] }];
const none = (apis: typeof gold) =>
  apis.map((a) => ({
    id: a.id,
    action: "NONE" as const,
    usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
  }));

function legacy(groups = ["orders", "internal"]) {
  const c = t.fake.addForeignConsumer({
    username: `legacy-${randomUUID().slice(0, 8)}`,
    key: `LegacyKey${randomUUID().replace(/-/g, "")}`,
    groups,
    tags: ["made-by-hand"],
  });
  return {
    c,
    ref: { credentialId: randomUUID(), credentialType: "API_KEY" as const, nativeId: c.id, resources: {}, app },
  };
}

describe("adopt (existing Kong consumers)", () => {
  it("marks the consumer, its key and the app's ACL groups; from then on update, readSecret and revoke treat it as this gateway's", async () => {
    const { c, ref } = legacy();
    expect(await t.provider.revoke({ ...ref, credentialId: "" })).toBe("not-owned");
    const adopted = await t.provider.adopt({ ...ref, apis: gold });
    expect(adopted.resources).toEqual({ consumerId: c.id, username: c.username });
    const mark = ["credhook", "credhook-gw:kong-test", `credhook-cred:${ref.credentialId}`];
    expect(t.fake.consumers().find((x) => x.id === c.id)!.tags).toEqual(["made-by-hand", ...mark]);
    const acls = t.fake.acls().filter((a) => a.consumer.id === c.id);
    expect(acls.find((a) => a.group === "orders")!.tags).toEqual(mark);
    expect(acls.find((a) => a.group === "internal")!.tags).toBeNull(); // not one of the app's APIs: left as it was
    const key = t.fake.keyAuths().find((k) => k.consumer.id === c.id)!;
    expect((await t.provider.readSecret(ref)).apiKey).toBe(key.key);

    // an update adds the plan's rate limit; the unmarked 'internal' group survives
    await t.provider.update({ ...ref, resources: adopted.resources, previous: [], desired: gold, changes: none(gold) });
    expect(accessOf(t.fake, c.id)).toMatchObject({
      groups: ["internal", "orders"],
      plans: ["gold"],
      config: expect.objectContaining({ minute: 600, hour: 20000 }),
    });
    expect(await t.provider.listOwned()).toEqual([
      { nativeId: c.id, credentialId: ref.credentialId, description: `consumer ${c.username}` },
    ]);

    expect(await t.provider.revoke({ ...ref, credentialId: "" })).toBe("revoked");
    expect(t.fake.consumers()).toEqual([]);
    expect(await t.provider.revoke(ref)).toBe("gone");
  });

  it("is idempotent for the same credential; Conflict for another credential or another gateway's consumer", async () => {
    const { ref } = legacy();
    await t.provider.adopt({ ...ref, apis: gold });
    const requests = t.fake.requests.length;
    await t.provider.adopt({ ...ref, apis: gold });
    expect(t.fake.requests.slice(requests).map((r) => r.method)).toEqual(["GET"]);
    expect((await typedError(t.provider.adopt({ ...ref, credentialId: randomUUID(), apis: gold }))).status).toBe(409);
    const other = t.make({}, "kong-eu");
    const theirs = await createRef(other, gold);
    const err = await typedError(t.provider.adopt({ ...theirs, credentialId: randomUUID(), apis: gold }));
    expect(err.status).toBe(409);
    expect(err.message).toContain("carries another credhook mark (credhook-gw:kong-eu)");
  });

  it("NotFound for a missing consumer or one without a key-auth credential; 400 for a credential id that is not a UUID", async () => {
    expect(
      (
        await typedError(
          t.provider.adopt({
            credentialId: randomUUID(),
            credentialType: "API_KEY",
            nativeId: randomUUID(),
            resources: {},
            app,
            apis: gold,
          }),
        )
      ).status,
    ).toBe(404);
    const keyless = t.fake.addForeignConsumer({ username: "keyless" });
    expect(
      (
        await typedError(
          t.provider.adopt({
            credentialId: randomUUID(),
            credentialType: "API_KEY",
            nativeId: keyless.id,
            resources: {},
            app,
            apis: gold,
          }),
        )
      ).status,
    ).toBe(404);
    expect(t.fake.consumers().find((x) => x.id === keyless.id)!.tags).toBeNull();
    const { ref } = legacy();
    expect((await typedError(t.provider.adopt({ ...ref, credentialId: "app-1", apis: gold }))).status).toBe(400);
  });
});
