// update: REMOVED deletes, a rename is PATCHed with If-Match (412 retried), drift is repaired.
import { describe, expect, it } from "vitest";
import { createRef, noneChanges, subsOf, typedError, useFake } from "./helpers.js";

const before = [
  { id: "orders", usagePlans: ["gold", "silver"] },
  { id: "echo-api", usagePlans: [] },
];

const t = useFake();

describe("update", () => {
  it("REMOVED plans and APIs lose their subscriptions; the rest stay untouched", async () => {
    const ref = await createRef(t.provider, before);
    const after = [{ id: "orders", usagePlans: ["gold"] }];
    const writesBefore = t.fake.requests.length;
    const res = await t.provider.update({
      ...ref,
      previous: before,
      desired: after,
      changes: [
        {
          id: "orders",
          action: "NONE",
          usagePlans: [
            { id: "gold", action: "NONE" },
            { id: "silver", action: "REMOVED" },
          ],
        },
        { id: "echo-api", action: "REMOVED", usagePlans: [] },
      ],
    });
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.scope)).toEqual(["/products/gold"]);
    expect(
      t.fake.requests
        .slice(writesBefore)
        .filter((r) => r.method !== "GET" && r.method !== "POST")
        .map((r) => r.method),
    ).toEqual(["DELETE", "DELETE"]);
    // Nothing added: the key is not read (listSecrets is a POST, an ARM write).
    expect(t.fake.requests.slice(writesBefore).filter((r) => r.method === "POST")).toEqual([]);
    expect((res.resources.subscriptions as Array<{ sid: string }>).map((s) => s.sid)).toEqual([
      `${ref.nativeId}-p-gold`,
    ]);
  });

  it("reads the key (one listSecrets) only when a subscription is added with it", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const ref = await createRef(t.provider, apis);
    const listSecrets = () =>
      t.fake.requests.filter((r) => r.method === "POST" && r.path.endsWith("/listSecrets")).length;
    const start = listSecrets();
    await t.provider.update({ ...ref, previous: apis, desired: apis, changes: noneChanges(apis) });
    expect(listSecrets()).toBe(start);
    const desired = [{ id: "orders", usagePlans: ["gold", "silver"] }];
    await t.provider.update({
      ...ref,
      previous: apis,
      desired,
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
    expect(listSecrets()).toBe(start + 1);
    const [gold, silver] = subsOf(t.fake, ref.nativeId);
    expect(silver!.primaryKey).toBe(gold!.primaryKey);
  });

  it("a rename PATCHes every displayName with the stored ETag", async () => {
    const ref = await createRef(t.provider, before);
    const renamed = { ...ref.app, appName: "Orders App v2" };
    const res = await t.provider.update({
      ...ref,
      app: renamed,
      previous: before,
      desired: before,
      changes: noneChanges(before),
      previousAppName: ref.app.appName,
    });
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.displayName)).toEqual(
      Array(3).fill("Orders App v2 (dev@example.com)"),
    );
    const patches = t.fake.requests.filter((r) => r.method === "PATCH");
    expect(patches).toHaveLength(3);
    expect(patches.every((p) => p.status === 200 && p.ifMatch !== "*")).toBe(true);
    // the new ETags are stored
    const stored = new Map(
      (res.resources.subscriptions as Array<{ sid: string; etag: string }>).map((s) => [s.sid, s.etag]),
    );
    for (const s of subsOf(t.fake, ref.nativeId)) expect(stored.get(s.sid)).toBe(s.etag);
  });

  it("a rename racing an edit elsewhere (412) re-reads the ETag and retries once", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const ref = await createRef(t.provider, apis);
    t.fake.touchSubscription(`${ref.nativeId}-p-gold`, { displayName: "edited in the portal" });
    await t.provider.update({
      ...ref,
      app: { ...ref.app, appName: "Renamed" },
      previous: apis,
      desired: apis,
      changes: noneChanges(apis),
    });
    expect(t.fake.getSubscription(`${ref.nativeId}-p-gold`)!.displayName).toBe("Renamed (dev@example.com)");
    expect(
      t.fake.requests.filter((r) => r.method === "PATCH" || r.method === "HEAD").map((r) => `${r.method} ${r.status}`),
    ).toEqual(["PATCH 412", "HEAD 200", "PATCH 200"]);
  });

  it("an ADDED product that does not exist is a 422; the update's other additions stay (reported) until core's inverse update removes them", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const desired = [{ id: "orders", usagePlans: ["gold", "silver", "platinum"] }];
    const ref = await createRef(t.provider, apis);
    const err = await typedError(
      t.provider.update({
        ...ref,
        previous: apis,
        desired,
        changes: [
          {
            id: "orders",
            action: "NONE",
            usagePlans: [
              { id: "gold", action: "NONE" },
              { id: "silver", action: "ADDED" },
              { id: "platinum", action: "ADDED" },
            ],
          },
        ],
      }),
    );
    expect(err.status).toBe(422);
    expect(err.message).toContain("product platinum does not exist");
    expect(err.outcomeUnknown).toBe(false);
    expect(t.fake.requests.filter((r) => r.method === "DELETE")).toEqual([]);
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.scope)).toEqual(["/products/gold", "/products/silver"]);
    expect((err.partial!.resources.subscriptions as Array<{ scope: string }>).map((s) => s.scope).sort()).toEqual([
      "/products/gold",
      "/products/silver",
    ]);
    // core's inverse update (desired → previous)
    await t.provider.update({
      ...ref,
      previous: desired,
      desired: apis,
      changes: [
        {
          id: "orders",
          action: "NONE",
          usagePlans: [
            { id: "gold", action: "NONE" },
            { id: "silver", action: "REMOVED" },
            { id: "platinum", action: "REMOVED" },
          ],
        },
      ],
    });
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.scope)).toEqual(["/products/gold"]);
  });

  it("a plan swap adds before it removes: the new product's PUT failing (403) leaves the old product's subscription active", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const ref = await createRef(t.provider, apis);
    t.fake.inject({ status: 403, method: "PUT", path: "-p-silver" });
    const err = await typedError(
      t.make({ maxRetries: 0 }).update({
        ...ref,
        previous: apis,
        desired: [{ id: "orders", usagePlans: ["silver"] }],
        changes: [
          {
            id: "orders",
            action: "NONE",
            usagePlans: [
              { id: "gold", action: "REMOVED" },
              { id: "silver", action: "ADDED" },
            ],
          },
        ],
      }),
    );
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/refused creating subscription .*-p-silver/);
    expect(err.outcomeUnknown).toBe(false);
    expect(subsOf(t.fake, ref.nativeId).map((s) => [s.scope, s.state])).toEqual([["/products/gold", "active"]]);
    expect(t.fake.requests.filter((r) => r.method === "DELETE")).toEqual([]);
  });

  it("productMap and apiMap translate portal ids to APIM names", async () => {
    await t.restart(
      { products: ["Gold-Tier"], apis: ["orders-v2"] },
      { productMap: { "1el57v": "Gold-Tier" }, apiMap: { a1b2c3d4e5: "orders-v2" } },
    );
    const ref = await createRef(t.provider, [
      { id: "f6g7h8i9j0", usagePlans: ["1el57v"] },
      { id: "a1b2c3d4e5", usagePlans: [] },
    ]);
    expect(
      subsOf(t.fake, ref.nativeId)
        .map((s) => s.scope)
        .sort(),
    ).toEqual(["/apis/orders-v2", "/products/Gold-Tier"]);
  });
});
