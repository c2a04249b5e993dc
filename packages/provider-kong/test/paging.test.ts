// Kong lists page by an opaque `offset`: listOwned and findByCredential read every page.
import { expect, it } from "vitest";
import { createRef, setup } from "./helpers.js";

it("listOwned follows `offset` across pages and returns only this gateway's consumers", async () => {
  const { fake, provider, make } = await setup({ maxPageSize: 2 });
  try {
    const refs = [];
    for (let i = 0; i < 5; i++) refs.push(await createRef(provider, [{ id: "echo", usagePlans: [] }]));
    fake.addForeignConsumer({ username: "someone-else", tags: ["credhook"] });
    await createRef(make({}, "kong-other"), [{ id: "echo", usagePlans: [] }]);
    const owned = await provider.listOwned();
    expect(owned.map((o) => o.nativeId).sort()).toEqual(refs.map((r) => r.nativeId).sort());
    expect(owned.map((o) => o.credentialId).sort()).toEqual(refs.map((r) => r.credentialId).sort());
    const pages = fake.requests.filter(
      (r) => r.path.startsWith("/consumers?") && r.path.includes("tags=credhook-gw%3Akong-test"),
    );
    expect(pages.length).toBe(3);
    expect(pages.slice(1).every((r) => /offset=/.test(r.path))).toBe(true);
  } finally {
    await fake.close();
  }
});
