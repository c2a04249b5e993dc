import { describe, expect, it } from "vitest";
import { applyChanges, groupByGateway } from "../src/orchestration/api-sets.js";
import { appKeyOf, KeyedLock } from "../src/entry/store.js";
import { randomBase62, hashSecret, verifySecretHash } from "../src/entry/provider-kit.js";

describe("applyChanges", () => {
  const current = [
    { id: "a", gateway: "g1", usagePlans: ["p1", "p2"] },
    { id: "b", gateway: "g2", usagePlans: [] },
  ];
  it("applies plan ADDED/REMOVED/NONE within an API", () => {
    const out = applyChanges(
      current,
      [
        {
          id: "a",
          action: "NONE",
          usagePlans: [
            { id: "p1", action: "REMOVED" },
            { id: "p3", action: "ADDED" },
            { id: "p2", action: "NONE" },
          ],
        },
      ],
      () => "x",
    );
    expect(out).toEqual([{ id: "a", gateway: "g1", usagePlans: ["p2", "p3"] }, current[1]]);
  });
  it("adds an API with its gateway from the route, removes a REMOVED API, keeps unmentioned ones", () => {
    const out = applyChanges(
      current,
      [
        { id: "c", action: "ADDED", usagePlans: [{ id: "q", action: "ADDED" }] },
        { id: "a", action: "REMOVED" },
      ],
      () => "g3",
    );
    expect(out).toEqual([current[1], { id: "c", gateway: "g3", usagePlans: ["q"] }]);
  });
  it("does not modify its input", () => {
    const copy = structuredClone(current);
    applyChanges(current, [{ id: "a", action: "NONE", usagePlans: [{ id: "p1", action: "REMOVED" }] }], () => "x");
    expect(current).toEqual(copy);
  });
});

describe("helpers", () => {
  it("appKeyOf prefers the slug, and always names the developer", () => {
    expect(appKeyOf({ appName: "A", developer: "d@example.com", appSlug: "590d83b5c05f" })).toBe(
      "slug:d@example.com/590d83b5c05f",
    );
    expect(appKeyOf({ appName: "My App", developer: "d@example.com" })).toBe("app:d@example.com/My App");
  });
  it("appKeyOf is unambiguous: values holding '/' or '%' never collide", () => {
    const pairs: Array<[string, string]> = [
      ["D", "x/Y"],
      ["D/x", "Y"],
      ["D%2Fx", "Y"],
      ["D", "x%2FY"],
      ["D%", "2Fx/Y"],
      ["", "/"],
      ["/", ""],
    ];
    const keys = pairs.flatMap(([developer, v]) => [
      appKeyOf({ developer, appName: v }),
      appKeyOf({ developer, appName: "n", appSlug: v }),
    ]);
    expect(new Set(keys).size).toBe(keys.length);
  });
  it("groupByGateway keeps first-seen order", () => {
    const g = groupByGateway([
      { id: "1", gateway: "b", usagePlans: [] },
      { id: "2", gateway: "a", usagePlans: ["p"] },
      { id: "3", gateway: "b", usagePlans: [] },
    ]);
    expect([...g.keys()]).toEqual(["b", "a"]);
    expect(g.get("b")!.map((x) => x.id)).toEqual(["1", "3"]);
  });
  it("randomBase62 has the asked length, only base62 characters, and no visible bias", () => {
    expect(randomBase62(40)).toMatch(/^[0-9A-Za-z]{40}$/);
    const counts = new Map<string, number>();
    const sample = randomBase62(62 * 2000);
    for (const c of sample) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // each character expected 2000 times; 5 sigma ≈ 220
    for (const n of counts.values()) expect(Math.abs(n - 2000)).toBeLessThan(250);
  });
  it("hashSecret / verifySecretHash", () => {
    const h = hashSecret("abc");
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(verifySecretHash("abc", h)).toBe(true);
    expect(verifySecretHash("abd", h)).toBe(false);
  });
  it("KeyedLock serialises one key and runs different keys in parallel", async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const job = (key: string, name: string, ms: number) =>
      lock.run(key, async () => {
        order.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, ms));
        order.push(`end ${name}`);
      });
    await Promise.all([job("k", "a1", 30), job("k", "a2", 1), job("j", "b", 5)]);
    expect(order.indexOf("end a1")).toBeLessThan(order.indexOf("start a2"));
    expect(order.indexOf("start b")).toBeLessThan(order.indexOf("end a1"));
    expect(lock.size).toBe(0);
  });
});

describe("SharedResourcePool", () => {
  it("shares one resource per key and stops it when its last user releases it", async () => {
    const { SharedResourcePool } = await import("../src/entry/provider-kit.js");
    const stopped: string[] = [];
    const pool = new SharedResourcePool<{ name: string }>(async (v) => void stopped.push(v.name));
    let made = 0;
    const a = pool.acquire("acct-1", () => ({ name: `r${++made}` }));
    const b = pool.acquire("acct-1", () => ({ name: `r${++made}` }));
    const c = pool.acquire("acct-2", () => ({ name: `r${++made}` }));
    expect(a.value).toBe(b.value);
    expect(c.value.name).toBe("r2");
    await a.release();
    await a.release(); // twice counts once
    expect(stopped).toEqual([]);
    await b.release();
    expect(stopped).toEqual(["r1"]);
    expect(pool.size).toBe(1);
    await c.release();
    expect(stopped).toEqual(["r1", "r2"]);
  });
});
