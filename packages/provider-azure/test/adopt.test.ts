// adopt: a subscription made outside credhook comes under a gateway explicitly, by a
// record in the gateway's provider state (APIM can neither rename nor tag a subscription).
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { app, createRef, noneChanges, subsOf, typedError, useFake } from "./helpers.js";

const t = useFake();
const gold = [{ id: "orders", usagePlans: ["gold"] }];

/** A subscription another webhook made, and credhook's reference to it under credential id `credentialId`. */
function legacy(credentialId = randomUUID(), scope = "/products/gold") {
  const made = t.fake.addForeignSubscription({
    scope,
    sid: `legacy-${randomUUID().slice(0, 8)}`,
    primaryKey: "LegacyKeyValue".repeat(3),
  });
  return { made, ref: { credentialId, credentialType: "API_KEY" as const, nativeId: made.sid, resources: {}, app } };
}

describe("adopt", () => {
  it("records the adoption; from then on update, readSecret and revoke (also with no credential id) treat it as this gateway's", async () => {
    const { made, ref } = legacy();
    expect(await t.provider.revoke({ ...ref, credentialId: "" })).toBe("not-owned");
    const adopted = await t.provider.adopt({ ...ref, apis: gold });
    expect(adopted.resources.subscriptions).toEqual([{ sid: made.sid, scope: "/products/gold", etag: made.etag }]);
    expect(await t.state.get(`adopted:${made.sid}`)).toMatchObject({
      nativeId: made.sid,
      credentialId: ref.credentialId,
      sids: [made.sid],
    });
    expect(t.fake.getSubscription(made.sid)).toEqual(made); // adopting changes nothing in APIM
    expect((await t.provider.readSecret(ref)).apiKey).toBe(made.primaryKey);

    // an update adds silver under this gateway's own id form, with the adopted key
    const both = [{ id: "orders", usagePlans: ["gold", "silver"] }];
    await t.provider.update({
      ...ref,
      resources: adopted.resources,
      previous: gold,
      desired: both,
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
    const silver = t.fake.getSubscription(`credhook-${ref.credentialId}-p-silver`);
    expect(silver).toMatchObject({ state: "active", primaryKey: made.primaryKey });
    expect(await t.provider.listOwned()).toEqual([
      {
        nativeId: made.sid,
        credentialId: ref.credentialId,
        description: expect.stringMatching(
          new RegExp(`^${made.sid}: .*\\(adopted\\); credhook-${ref.credentialId}-p-silver`),
        ),
      },
    ]);

    // revoke with no credential id (the store lost the record): both go, the record too
    expect(await t.provider.revoke({ ...ref, credentialId: "" })).toBe("revoked");
    expect(t.fake.listSubscriptions()).toEqual([]);
    expect(await t.state.get(`adopted:${made.sid}`)).toBeUndefined();
    expect(await t.provider.revoke(ref)).toBe("gone");
  });

  it("is idempotent for the same credential, and a Conflict for another", async () => {
    const { ref } = legacy();
    await t.provider.adopt({ ...ref, apis: gold });
    await t.provider.adopt({ ...ref, apis: gold });
    const err = await typedError(t.provider.adopt({ ...ref, credentialId: randomUUID(), apis: gold }));
    expect(err.status).toBe(409);
    expect(err.message).toMatch(/was adopted for credhook credential .* already/);
    expect(await t.provider.revoke({ ...ref, credentialId: randomUUID() })).toBe("not-owned");
  });

  it("refuses another credhook gateway's subscription (Conflict), whether that gateway runs in this process or not", async () => {
    const eu = t.make({ subscriptionIdPrefix: "credhook-eu-" }, "azure-eu");
    const theirs = await createRef(eu, gold);
    for (const nativeId of [theirs.nativeId, `${theirs.nativeId}-p-gold`]) {
      const err = await typedError(
        t.provider.adopt({
          credentialId: randomUUID(),
          credentialType: "API_KEY",
          nativeId,
          resources: {},
          app,
          apis: gold,
        }),
      );
      expect(err.status).toBe(409);
      expect(err.message).toContain("carries the mark of another credhook gateway (gateway 'azure-eu')");
    }
    const elsewhere = t.fake.addForeignSubscription({ scope: "/products/gold", sid: `team-b-${randomUUID()}-p-gold` });
    const err = await typedError(
      t.provider.adopt({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        nativeId: elsewhere.sid,
        resources: {},
        app,
        apis: gold,
      }),
    );
    expect(err.message).toContain("(prefix 'team-b-')");
    // and its own credentials: the same credential id is a no-op, another is a Conflict
    const mine = await createRef(t.provider, gold);
    expect((await t.provider.adopt({ ...mine, apis: gold })).resources.subscriptions).toHaveLength(1);
    expect((await typedError(t.provider.adopt({ ...mine, credentialId: randomUUID(), apis: gold }))).status).toBe(409);
    expect(subsOf(t.fake, theirs.nativeId)).toHaveLength(1);
  });

  it("refuses a subscription scoped to none of the app's APIs (the next update would delete it): Conflict", async () => {
    const { ref } = legacy(randomUUID(), "/apis");
    const err = await typedError(t.provider.adopt({ ...ref, apis: gold }));
    expect(err.status).toBe(409);
    expect(err.message).toMatch(
      /is scoped to \/apis, which none of the app's APIs on this gateway maps to \(\/products\/gold\)/,
    );
    expect(await t.state.list("adopted:")).toEqual([]);
  });

  it("NotFound for a missing or cancelled subscription; ValidationError for a credential id that is not a UUID", async () => {
    expect(
      (
        await typedError(
          t.provider.adopt({
            credentialId: randomUUID(),
            credentialType: "API_KEY",
            nativeId: "no-such-sub",
            resources: {},
            app,
            apis: gold,
          }),
        )
      ).status,
    ).toBe(404);
    const cancelled = t.fake.addForeignSubscription({ scope: "/products/gold", state: "cancelled" });
    expect(
      (
        await typedError(
          t.provider.adopt({
            credentialId: randomUUID(),
            credentialType: "API_KEY",
            nativeId: cancelled.sid,
            resources: {},
            app,
            apis: gold,
          }),
        )
      ).status,
    ).toBe(404);
    const { ref } = legacy();
    expect((await typedError(t.provider.adopt({ ...ref, credentialId: "app-1", apis: gold }))).status).toBe(400);
  });

  it("another gateway does not inherit the adoption (each gateway has its own state)", async () => {
    const { made, ref } = legacy();
    await t.provider.adopt({ ...ref, apis: gold });
    const eu = t.make({ subscriptionIdPrefix: "credhook-eu-" }, "azure-eu");
    expect(await eu.revoke({ ...ref, credentialId: "" })).toBe("not-owned");
    expect(
      (
        await typedError(
          eu.update({ ...ref, credentialId: "", previous: gold, desired: gold, changes: noneChanges(gold) }),
        )
      ).status,
    ).toBe(404);
    expect(t.fake.getSubscription(made.sid)).toEqual(made);
  });
});
