// Apigee's apps.list pages by `startKey`: listOwned, and finding a client id whose record was lost, read every page.
import { expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { app, createRef, setup } from "./helpers.js";

it("listOwned and the client-id scan follow `startKey` across pages", async () => {
  const { fake, provider, make } = await setup({ maxRows: 2 });
  try {
    const refs = [];
    for (let i = 0; i < 4; i++) refs.push(await createRef(provider, [{ id: "echo", usagePlans: [] }]));
    fake.addForeignApp({ developer: "partner@example.com", name: "partner-app" });
    const owned = await provider.listOwned();
    expect(owned.map((o) => o.nativeId).sort()).toEqual(refs.map((r) => r.nativeId).sort());
    expect(fake.requests.filter((r) => r.path.startsWith("/v1/organizations/fake-org/apps?")).length).toBeGreaterThanOrEqual(3);

    const cc = make({}, "apigee-test", "CLIENT_CREDENTIALS");
    const credentialId = randomUUID();
    const created = await cc.create({ credentialId, credentialType: "CLIENT_CREDENTIALS", app, apis: [{ id: "echo", usagePlans: [] }] });
    // the store lost the record: the revoke by client id alone scans the pages for it
    expect(await cc.revoke({ credentialId: "", credentialType: "CLIENT_CREDENTIALS", nativeId: created.nativeId, resources: {}, app })).toBe("revoked");
    expect(fake.apps().some((a) => a.credentials.some((c) => c.consumerKey === created.nativeId))).toBe(false);
  } finally {
    await fake.close();
  }
});
