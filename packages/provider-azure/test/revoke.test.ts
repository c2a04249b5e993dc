// revoke: deletes every subscription with If-Match; twice is fine; disable mode cancels instead.
import { describe, expect, it } from "vitest";
import { createRef, noneChanges, subsOf, typedError, useFake } from "./helpers.js";

const apis = [
  { id: "orders", usagePlans: ["gold", "silver"] },
  { id: "echo-api", usagePlans: [] },
];

const t = useFake();

describe("revoke", () => {
  it("deletes every subscription with its stored ETag as If-Match, and a second revoke succeeds with nothing to do", async () => {
    const ref = await createRef(t.provider, apis);
    const etags = new Map(subsOf(t.fake, ref.nativeId).map((s) => [s.sid, s.etag]));
    await t.provider.revoke(ref);
    expect(subsOf(t.fake, ref.nativeId)).toEqual([]);
    const deletes = t.fake.requests.filter((r) => r.method === "DELETE");
    expect(deletes).toHaveLength(3);
    for (const d of deletes) expect(d.ifMatch).toBe(etags.get(decodeURIComponent(d.path.split("/")[2]!)));
    const before = t.fake.requests.length;
    await t.provider.revoke(ref);
    expect(t.fake.requests.slice(before).map((r) => r.method)).toEqual(["GET"]);
  });

  it("finds the subscriptions from the native id alone when the store lost the resources", async () => {
    const ref = await createRef(t.provider, apis);
    await t.provider.revoke({ ...ref, resources: {} });
    expect(subsOf(t.fake, ref.nativeId)).toEqual([]);
    expect(t.fake.requests.filter((r) => r.method === "DELETE").every((r) => r.ifMatch === "*")).toBe(true);
  });

  it("a subscription changed outside credhook (412 on its old ETag) is still deleted", async () => {
    const ref = await createRef(t.provider, apis);
    t.fake.touchSubscription(`${ref.nativeId}-p-gold`, { displayName: "edited in the portal" });
    await t.provider.revoke(ref);
    expect(subsOf(t.fake, ref.nativeId)).toEqual([]);
    expect(
      t.fake.requests
        .filter((r) => r.method === "DELETE")
        .map((r) => r.status)
        .sort(),
    ).toEqual([200, 200, 200, 412]);
  });

  it("a subscription already deleted (404 on DELETE) counts as revoked", async () => {
    const ref = await createRef(t.provider, apis);
    t.fake.inject({ status: 404, method: "DELETE", path: "-p-gold" });
    await t.provider.revoke(ref);
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.sid)).toEqual([`${ref.nativeId}-p-gold`]);
    await t.provider.revoke(ref);
    expect(subsOf(t.fake, ref.nativeId)).toEqual([]);
  });

  it("revokeMode disable sets every subscription cancelled; then update and readSecret say NotFound", async () => {
    const disabling = t.make({ revokeMode: "disable" });
    const ref = await createRef(disabling, apis);
    await disabling.revoke(ref);
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.state)).toEqual(["cancelled", "cancelled", "cancelled"]);
    expect(
      t.fake.requests.filter((r) => r.method === "PATCH").every((r) => r.ifMatch !== undefined && r.ifMatch !== "*"),
    ).toBe(true);
    const before = t.fake.requests.length;
    await disabling.revoke(ref);
    expect(t.fake.requests.slice(before).map((r) => r.method)).toEqual(["GET"]);
    expect(
      (await typedError(disabling.update({ ...ref, previous: apis, desired: apis, changes: noneChanges(apis) })))
        .status,
    ).toBe(404);
    expect((await typedError(disabling.readSecret(ref))).status).toBe(404);
  });

  it("revokeMode disable: a 412 on the stored ETag is retried with the current one", async () => {
    const disabling = t.make({ revokeMode: "disable" });
    const ref = await createRef(disabling, [{ id: "orders", usagePlans: ["gold"] }]);
    t.fake.touchSubscription(`${ref.nativeId}-p-gold`);
    const current = t.fake.getSubscription(`${ref.nativeId}-p-gold`)!.etag;
    await disabling.revoke(ref);
    expect(t.fake.getSubscription(`${ref.nativeId}-p-gold`)!.state).toBe("cancelled");
    expect(t.fake.requests.filter((r) => r.method === "PATCH").map((r) => [r.status, r.ifMatch === current])).toEqual([
      [412, false],
      [200, true],
    ]);
  });

  it("leaves other credentials' subscriptions alone", async () => {
    const a = await createRef(t.provider, apis);
    const b = await createRef(t.provider, apis);
    await t.provider.revoke(a);
    expect(subsOf(t.fake, b.nativeId)).toHaveLength(3);
  });
});
