// Apigee's apps.list pages by `startKey` (listOwned reads every page); a client id whose record was lost is found with its `filter`.
import { expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { app, createRef, setup } from "./helpers.js";

it("listOwned follows `startKey` across pages; a lost client id is found with filter=consumerKey=…", async () => {
  const { fake, provider, make } = await setup({ maxRows: 2 });
  try {
    const refs = [];
    for (let i = 0; i < 4; i++) refs.push(await createRef(provider, [{ id: "echo", usagePlans: [] }]));
    fake.addForeignApp({ developer: "partner@example.com", name: "partner-app" });
    const owned = await provider.listOwned();
    expect(owned.map((o) => o.nativeId).sort()).toEqual(refs.map((r) => r.nativeId).sort());
    expect(
      fake.requests.filter((r) => r.path.startsWith("/v1/organizations/fake-org/apps?")).length,
    ).toBeGreaterThanOrEqual(3);

    const cc = make({}, "apigee-test", "CLIENT_CREDENTIALS");
    const credentialId = randomUUID();
    const created = await cc.create({
      credentialId,
      credentialType: "CLIENT_CREDENTIALS",
      app,
      apis: [{ id: "echo", usagePlans: [] }],
    });
    // the store lost the record: the revoke by client id alone asks apps.list for the app holding that key
    expect(
      await cc.revoke({
        credentialId: "",
        credentialType: "CLIENT_CREDENTIALS",
        nativeId: created.nativeId,
        resources: {},
        app,
      }),
    ).toBe("revoked");
    expect(fake.requests.some((r) => r.path.includes(`filter=consumerKey%3D${created.nativeId}`))).toBe(true);
    expect(fake.apps().some((a) => a.credentials.some((c) => c.consumerKey === created.nativeId))).toBe(false);
  } finally {
    await fake.close();
  }
});
