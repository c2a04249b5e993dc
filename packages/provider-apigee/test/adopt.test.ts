// adopt: an Apigee developer app made outside credhook comes under a gateway explicitly, by credhook's attributes.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { app, createRef, typedError, useFake } from "./helpers.js";

const t = useFake();
const gold = [{ id: "orders", usagePlans: ["gold"] }];
const none = (apis: typeof gold) =>
  apis.map((a) => ({
    id: a.id,
    action: "NONE" as const,
    usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
  }));

function legacy() {
  const made = t.fake.addForeignApp({
    developer: "partner@example.com",
    name: "legacy-app",
    consumerKey: "LegacyConsumerKey_0123456789",
    apiProducts: ["orders-gold", "echo"],
    attributes: [{ name: "team", value: "b" }],
  });
  return {
    made,
    ref: { credentialId: randomUUID(), credentialType: "API_KEY" as const, nativeId: made.appId, resources: {}, app },
  };
}

describe("adopt (existing Apigee apps)", () => {
  it("marks the app's attributes; from then on update, readSecret and revoke treat it as this gateway's", async () => {
    const { made, ref } = legacy();
    expect(await t.provider.revoke({ ...ref, credentialId: "" })).toBe("not-owned");
    const adopted = await t.provider.adopt({ ...ref, apis: gold });
    expect(adopted.resources).toEqual({ appId: made.appId, appName: "legacy-app", developer: "partner@example.com" });
    const now = t.fake.apps().find((a) => a.appId === made.appId)!;
    expect(now.attributes).toEqual([
      { name: "team", value: "b" },
      { name: "credhook-gateway", value: "apigee-test" },
      { name: "credhook-credential", value: ref.credentialId },
      { name: "DisplayName", value: "Orders App" },
    ]);
    expect(now.credentials).toEqual(made.credentials); // keys and products untouched by adopt
    expect((await t.provider.readSecret(ref)).apiKey).toBe("LegacyConsumerKey_0123456789");

    // the next update brings the products to the app's plans: echo (no longer an API of the app) goes, after silver is added
    const both = [{ id: "orders", usagePlans: ["gold", "silver"] }];
    await t.provider.update({
      ...ref,
      resources: adopted.resources,
      previous: gold,
      desired: both,
      changes: none(both),
    });
    expect(t.fake.apps()[0]!.credentials[0]!.apiProducts.map((p) => p.apiproduct)).toEqual([
      "orders-gold",
      "orders-silver",
    ]);
    expect(await t.provider.listOwned()).toEqual([
      { nativeId: made.appId, credentialId: ref.credentialId, description: "developer app legacy-app" },
    ]);
    expect(await t.provider.revoke({ ...ref, credentialId: "" })).toBe("revoked");
    expect(t.fake.apps()).toEqual([]);
  });

  it("is idempotent for the same credential; Conflict for another credential or another gateway's app; NotFound and 400 otherwise", async () => {
    const { ref } = legacy();
    await t.provider.adopt({ ...ref, apis: gold });
    await t.provider.adopt({ ...ref, apis: gold });
    expect((await typedError(t.provider.adopt({ ...ref, credentialId: randomUUID(), apis: gold }))).status).toBe(409);
    const theirs = await createRef(t.make({}, "apigee-eu"), gold);
    const err = await typedError(t.provider.adopt({ ...theirs, credentialId: randomUUID(), apis: gold }));
    expect(err.message).toContain("carries another credhook mark (credhook-gateway=apigee-eu)");
    expect((await typedError(t.provider.adopt({ ...ref, nativeId: randomUUID(), apis: gold }))).status).toBe(404);
    expect((await typedError(t.provider.adopt({ ...ref, credentialId: "app-1", apis: gold }))).status).toBe(400);
  });

  it("client credentials: an app is adopted by its client id (consumer key), found among the organisation's apps", async () => {
    const { made } = legacy();
    const cc = t.make({}, "apigee-test", "CLIENT_CREDENTIALS");
    const ref = {
      credentialId: randomUUID(),
      credentialType: "CLIENT_CREDENTIALS" as const,
      nativeId: "LegacyConsumerKey_0123456789",
      resources: {},
      app,
    };
    await cc.adopt({ ...ref, apis: gold });
    expect((await cc.readSecret(ref)).clientSecret).toBe(made.credentials[0]!.consumerSecret);
    expect(await cc.revoke(ref)).toBe("revoked");
  });
});

describe("setEnabled (credhook disable / enable)", () => {
  it("revokes and approves every consumer key of the app in Apigee, keeping the app; a foreign app is left alone", async () => {
    const ref = await createRef(t.provider, gold);
    const statuses = () =>
      t.fake
        .apps()
        .find((a) => a.appId === ref.nativeId)!
        .credentials.map((c) => c.status);
    expect(statuses()).toEqual(["approved"]);
    expect(await t.provider.setEnabled(ref, false)).toBe("revoked");
    expect(statuses()).toEqual(["revoked"]);
    expect(await t.provider.setEnabled(ref, true)).toBe("revoked");
    expect(statuses()).toEqual(["approved"]);
    const { made, ref: foreign } = legacy();
    expect(await t.provider.setEnabled({ ...foreign, credentialId: "" }, false)).toBe("not-owned");
    expect(made.credentials.map((c) => c.status)).toEqual(["approved"]);
  });
});
