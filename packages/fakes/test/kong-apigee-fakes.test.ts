// The Kong and Apigee fakes answer as their public API references document (status codes, error shapes, paging).
import { describe, expect, it } from "vitest";
import { startApigeeFake } from "../src/apigee/index.js";
import { ManualClock } from "../src/clock.js";
import { startKongFake } from "../src/kong/index.js";

const send = async (url: string, method: string, body?: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, headers: res.headers };
};

describe("Kong Admin API fake", () => {
  it("409 unique violations in Kong's shape, offset paging, tag filters, 204 deletes with cascade", async () => {
    const kong = await startKongFake();
    try {
      const c = await send(`${kong.url}/consumers`, "POST", { username: "a", tags: ["t1", "t2"] });
      expect(c.status).toBe(201);
      expect((await send(`${kong.url}/consumers`, "POST", { username: "a" })).json).toEqual({
        code: 5,
        name: "unique constraint violation",
        message: "UNIQUE violation detected on '{username=\"a\"}'",
        fields: { username: "a" },
      });
      expect((await send(`${kong.url}/consumers/${c.json.id}/key-auth`, "POST", { key: "k1" })).status).toBe(201);
      expect((await send(`${kong.url}/consumers/${c.json.id}/key-auth`, "POST", { key: "k1" })).status).toBe(409);
      for (const u of ["b", "c"]) await send(`${kong.url}/consumers`, "POST", { username: u, tags: ["t1"] });
      const first = await send(`${kong.url}/consumers?size=2`, "GET");
      expect([first.json.data.length, typeof first.json.offset, first.json.next]).toEqual([
        2,
        "string",
        `/consumers?size=2&offset=${first.json.offset}`,
      ]);
      const second = await send(`${kong.url}/consumers?size=2&offset=${first.json.offset}`, "GET");
      expect([second.json.data.length, second.json.next, second.json.offset]).toEqual([1, null, undefined]);
      expect(
        (await send(`${kong.url}/consumers?tags=t1,t2`, "GET")).json.data.map((x: { username: string }) => x.username),
      ).toEqual(["a"]);
      expect((await send(`${kong.url}/consumers?tags=t2/t1`, "GET")).json.data).toHaveLength(3);
      expect((await send(`${kong.url}/consumers?tags=t1,t2/t3`, "GET")).status).toBe(400);
      expect((await send(`${kong.url}/consumers?size=1001`, "GET")).json).toMatchObject({
        code: 9,
        name: "invalid size",
      });
      expect((await send(`${kong.url}/consumers`, "POST", { username: "x", tags: ["a,b"] })).json).toMatchObject({
        code: 2,
        name: "schema violation",
      });
      expect((await send(`${kong.url}/consumers/${c.json.id}`, "DELETE")).status).toBe(204);
      expect(kong.keyAuths()).toEqual([]);
      expect((await send(`${kong.url}/consumers/${c.json.id}`, "DELETE")).status).toBe(204);
      expect((await send(`${kong.url}/consumers/${c.json.id}`, "GET")).json).toEqual({ message: "Not found" });
    } finally {
      await kong.close();
    }
  });

  it("a rate-limiting plugin out of Kong's period order is refused on create and on PATCH with Kong's schema violation; in order it is accepted", async () => {
    const kong = await startKongFake();
    try {
      const c = await send(`${kong.url}/consumers`, "POST", { username: "a" });
      const plugins = `${kong.url}/consumers/${c.json.id}/plugins`;
      const refused = (upper: string, v2: string, lower: string, v1: string) => {
        const text = `The limit for ${upper}(${v2}) cannot be lower than the limit for ${lower}(${v1})`;
        return {
          code: 2,
          name: "schema violation",
          message: `schema violation (config: ${text})`,
          fields: { config: text },
        };
      };
      const bad = await send(plugins, "POST", { name: "rate-limiting", config: { minute: 100, hour: 50 } });
      expect([bad.status, bad.json]).toEqual([400, refused("hour", "50.0", "minute", "100.0")]);
      expect(kong.plugins()).toEqual([]);
      // equal limits are in order; unset windows (null) are not compared
      const ok = await send(plugins, "POST", {
        name: "rate-limiting",
        config: { second: 5, minute: 5, hour: null, year: 9 },
      });
      expect(ok.status).toBe(201);
      // a PATCH is checked on the merged config: second 50 over the stored minute 5
      const patched = await send(`${kong.url}/plugins/${ok.json.id}`, "PATCH", { config: { second: 50 } });
      expect([patched.status, patched.json]).toEqual([400, refused("minute", "5.0", "second", "50.0")]);
      expect(kong.plugins()[0]!.config).toMatchObject({ second: 5, minute: 5, year: 9 });
    } finally {
      await kong.close();
    }
  });

  it("RBAC: a missing or wrong Kong-Admin-Token is 401, a denied endpoint 403; Konnect's path and bearer token", async () => {
    const kong = await startKongFake({ adminToken: "t", denied: [{ method: "DELETE", path: "/consumers" }] });
    const konnect = await startKongFake({ basePath: "/v2/control-planes/cp1/core-entities", bearerToken: "kpat" });
    try {
      expect((await send(`${kong.url}/consumers`, "GET")).status).toBe(401);
      expect((await send(`${kong.url}/consumers`, "GET", undefined, { "kong-admin-token": "t" })).status).toBe(200);
      expect((await send(`${kong.url}/consumers/x`, "DELETE", undefined, { "kong-admin-token": "t" })).json).toEqual({
        message: "you do not have permissions to delete this resource",
      });
      expect(konnect.url).toMatch(/\/v2\/control-planes\/cp1\/core-entities$/);
      expect((await send(`${konnect.url}/consumers`, "GET", undefined, { authorization: "Bearer kpat" })).status).toBe(
        200,
      );
      expect((await send(`${konnect.url}/consumers`, "GET")).status).toBe(401);
    } finally {
      await kong.close();
      await konnect.close();
    }
  });

  it("Konnect's rate limit counts on the fake's clock: 429 with the seconds until the window frees, open again once it has; held requests and created_at follow the clock", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const kong = await startKongFake({ clock, throttle: { requests: 2, windowMs: 2000 } });
    try {
      const made = await send(`${kong.url}/consumers`, "POST", { username: "a" });
      expect(made.json.created_at).toBe(Date.UTC(2026, 0, 1) / 1000);
      await clock.advance(500);
      expect((await send(`${kong.url}/consumers`, "GET")).status).toBe(200);
      const refused = await send(`${kong.url}/consumers`, "GET");
      expect([refused.status, refused.headers.get("retry-after")]).toEqual([429, "2"]); // 1.5 s, rounded up
      await clock.advance(1499); // 1 ms before the first request leaves the window
      expect((await send(`${kong.url}/consumers`, "GET")).headers.get("retry-after")).toBe("1");
      await clock.advance(1);
      expect((await send(`${kong.url}/consumers`, "GET")).status).toBe(200);

      await clock.advance(2000); // the window is empty again
      kong.setLatency(300);
      const held = send(`${kong.url}/consumers/a`, "GET");
      await clock.whenSleeping();
      let answered = false;
      void held.then(() => (answered = true));
      await clock.advance(299);
      expect(answered).toBe(false);
      await clock.advance(1);
      expect((await held).json.username).toBe("a");
    } finally {
      await kong.close();
    }
  });
});

describe("Apigee management API fake", () => {
  it("an app gets a generated key; keys.create imports one without products; Google error shapes", async () => {
    const apigee = await startApigeeFake({ apiProducts: ["p1"] });
    const auth = { authorization: "Bearer x" };
    const org = `${apigee.url}/v1/organizations/fake-org`;
    try {
      expect((await send(org, "GET")).json.error).toMatchObject({ code: 401, status: "UNAUTHENTICATED" });
      expect(
        (
          await send(
            `${org}/developers`,
            "POST",
            { email: "d@example.com", firstName: "D", lastName: "E", userName: "d" },
            auth,
          )
        ).status,
      ).toBe(200);
      expect((await send(`${org}/developers`, "POST", { email: "d@example.com" }, auth)).json.error.status).toBe(
        "ALREADY_EXISTS",
      );
      const app = await send(
        `${org}/developers/d%40example.com/apps`,
        "POST",
        { name: "a1", apiProducts: ["p1"] },
        auth,
      );
      expect(app.json.credentials).toEqual([
        expect.objectContaining({ status: "approved", apiProducts: [{ apiproduct: "p1", status: "approved" }] }),
      ]);
      const keys = `${org}/developers/d%40example.com/apps/a1/keys`;
      expect((await send(keys, "POST", { consumerKey: "has.dot", consumerSecret: "s" }, auth)).json.error.status).toBe(
        "INVALID_ARGUMENT",
      );
      expect(
        (await send(keys, "POST", { consumerKey: "Imported_key-1", consumerSecret: "s" }, auth)).json,
      ).toMatchObject({ consumerKey: "Imported_key-1", apiProducts: [] });
      expect(
        (await send(keys, "POST", { consumerKey: "Imported_key-1", consumerSecret: "s" }, auth)).json.error,
      ).toMatchObject({ code: 409, status: "ALREADY_EXISTS" });
      expect((await send(`${keys}/Imported_key-1`, "POST", { apiProducts: ["nope"] }, auth)).json.error.status).toBe(
        "INVALID_ARGUMENT",
      );
      expect((await send(`${org}/apps/${app.json.appId}`, "GET", undefined, auth)).json).toMatchObject({
        developerEmail: "d@example.com",
        name: "a1",
      });
      expect(
        (
          await send(`${org}/apps?filter=consumerKey%3DImported_key-1&expand=true`, "GET", undefined, auth)
        ).json.app.map((a: { name: string }) => a.name),
      ).toEqual(["a1"]);
      expect((await send(`${org}/developers/d%40example.com/apps/a1`, "DELETE", undefined, auth)).status).toBe(200);
      expect(
        (await send(`${org}/developers/d%40example.com/apps/a1`, "DELETE", undefined, auth)).json.error.status,
      ).toBe("NOT_FOUND");
    } finally {
      await apigee.close();
    }
  });

  it("IAM: a denied permission is 403 PERMISSION_DENIED naming it; the quota is 429 RESOURCE_EXHAUSTED", async () => {
    const clock = new ManualClock();
    const apigee = await startApigeeFake({
      clock,
      denied: ["apigee.developers.create"],
      throttle: { requests: 2, windowMs: 60_000 },
    });
    const auth = { authorization: "Bearer x" };
    const org = `${apigee.url}/v1/organizations/fake-org`;
    try {
      expect((await send(`${org}/developers`, "POST", { email: "d@example.com" }, auth)).json.error.message).toMatch(
        /^Permission 'apigee.developers.create' denied/,
      );
      expect((await send(org, "GET", undefined, auth)).status).toBe(200);
      expect((await send(org, "GET", undefined, auth)).json.error).toMatchObject({
        code: 429,
        status: "RESOURCE_EXHAUSTED",
      });
      await clock.advance(60_000); // the window has passed the first request
      expect((await send(org, "GET", undefined, auth)).status).toBe(200);
    } finally {
      await apigee.close();
    }
  });
});
