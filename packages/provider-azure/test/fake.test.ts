// The APIM fake, driven by the unmodified @azure/arm-apimanagement client.
import type { ApiManagementClient } from "@azure/arm-apimanagement";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildArmClient, staticTokenCredential } from "../src/client.js";
import { startApimFake, type ApimFake, type ApimFakeOptions } from "@credhook/fakes/azure";
import { ManualClock } from "@credhook/fakes/clock";

let fake: ApimFake;
let client: ApiManagementClient;
/** The fake's clock: its buckets refill and its held requests land only when a test advances it. */
let clock: ManualClock;

async function start(options: ApimFakeOptions = {}, maxRetries = 0): Promise<void> {
  clock = new ManualClock();
  fake = await startApimFake({
    products: ["gold", "silver", { id: "one-per-user", subscriptionsLimit: 1 }],
    apis: ["orders"],
    clock,
    ...options,
  });
  client = buildArmClient({
    subscriptionId: fake.subscriptionId,
    endpoint: fake.url,
    credential: staticTokenCredential("fake"),
    maxRetries,
    maxRetryAfterS: 10,
  });
}

async function status(p: Promise<unknown>): Promise<number | undefined> {
  try {
    await p;
    return 0;
  } catch (err) {
    return (err as { statusCode?: number }).statusCode;
  }
}

const sub = (scope: string, extra: Record<string, unknown> = {}) => ({
  scope,
  displayName: "App (dev@example.com)",
  ...extra,
});

describe("APIM fake", () => {
  beforeEach(async () => {
    await start();
  });
  afterEach(async () => {
    await fake.close();
  });

  it("PUT creates (201) then replaces (200), each time with a new ETag", async () => {
    const a = await client.subscription.createOrUpdate(
      fake.resourceGroup,
      fake.serviceName,
      "s1",
      sub("/products/gold", { primaryKey: "k".repeat(40), state: "active" }),
    );
    const b = await client.subscription.createOrUpdate(
      fake.resourceGroup,
      fake.serviceName,
      "s1",
      sub("/products/gold", { primaryKey: "k".repeat(40), state: "active" }),
    );
    expect(fake.requests.filter((r) => r.method === "PUT").map((r) => r.status)).toEqual([201, 200]);
    expect(a.eTag).toMatch(/^".+"$/);
    expect(b.eTag).not.toBe(a.eTag);
    expect(a.scope).toBe(
      `/subscriptions/${fake.subscriptionId}/resourceGroups/${fake.resourceGroup}/providers/Microsoft.ApiManagement/service/${fake.serviceName}/products/gold`,
    );
  });

  it("GET never returns keys; listSecrets does", async () => {
    await client.subscription.createOrUpdate(
      fake.resourceGroup,
      fake.serviceName,
      "s1",
      sub("/apis/orders", { primaryKey: "p".repeat(30), state: "active" }),
    );
    const got = await client.subscription.get(fake.resourceGroup, fake.serviceName, "s1");
    expect(got.primaryKey).toBeUndefined();
    expect(got.state).toBe("active");
    const secrets = await client.subscription.listSecrets(fake.resourceGroup, fake.serviceName, "s1");
    expect(secrets.primaryKey).toBe("p".repeat(30));
    expect(secrets.secondaryKey).toMatch(/^[0-9a-f]{32}$/);
  });

  it("a subscription created without state starts submitted", async () => {
    await client.subscription.createOrUpdate(fake.resourceGroup, fake.serviceName, "s1", sub("/products/gold"));
    expect(fake.getSubscription("s1")?.state).toBe("submitted");
  });

  it("PATCH and DELETE need a matching If-Match: a stale ETag is 412, * passes", async () => {
    const created = await client.subscription.createOrUpdate(
      fake.resourceGroup,
      fake.serviceName,
      "s1",
      sub("/products/gold", { state: "active" }),
    );
    fake.touchSubscription("s1", { displayName: "changed elsewhere" });
    expect(
      await status(
        client.subscription.update(fake.resourceGroup, fake.serviceName, "s1", created.eTag!, { displayName: "x" }),
      ),
    ).toBe(412);
    expect(await status(client.subscription.delete(fake.resourceGroup, fake.serviceName, "s1", created.eTag!))).toBe(
      412,
    );
    const fresh = await client.subscription.getEntityTag(fake.resourceGroup, fake.serviceName, "s1");
    const patched = await client.subscription.update(fake.resourceGroup, fake.serviceName, "s1", fresh.eTag!, {
      state: "cancelled",
    });
    expect(patched.state).toBe("cancelled");
    await client.subscription.delete(fake.resourceGroup, fake.serviceName, "s1", "*");
    expect(fake.getSubscription("s1")).toBeUndefined();
    // deleting again: 204, which the SDK treats as success
    await client.subscription.delete(fake.resourceGroup, fake.serviceName, "s1", "*");
    expect(fake.requests.filter((r) => r.method === "DELETE").map((r) => r.status)).toEqual([412, 200, 204]);
    expect(fake.requests.filter((r) => r.method === "DELETE").every((r) => r.ifMatch !== undefined)).toBe(true);
  });

  it("a scope naming a missing product or API is a 400 ValidationError on scope", async () => {
    const err = await client.subscription
      .createOrUpdate(fake.resourceGroup, fake.serviceName, "s1", sub("/products/platinum"))
      .then(
        () => undefined,
        (e: unknown) => e as { statusCode: number; code: string; details?: unknown },
      );
    expect(err?.statusCode).toBe(400);
    expect(err?.code).toBe("ValidationError");
    expect(JSON.stringify(err?.details)).toContain("platinum");
    expect(
      await status(client.subscription.createOrUpdate(fake.resourceGroup, fake.serviceName, "s2", sub("/apis/nope"))),
    ).toBe(400);
    expect(
      await status(client.subscription.createOrUpdate(fake.resourceGroup, fake.serviceName, "s3", sub("/bogus"))),
    ).toBe(400);
    expect(fake.listSubscriptions()).toEqual([]);
  });

  it("products and APIs read back; unknown ones are 404", async () => {
    expect((await client.product.get(fake.resourceGroup, fake.serviceName, "gold")).displayName).toBe("gold");
    expect(await status(client.product.get(fake.resourceGroup, fake.serviceName, "platinum"))).toBe(404);
    expect((await client.api.get(fake.resourceGroup, fake.serviceName, "orders")).name).toBe("orders");
    expect(await status(client.api.get(fake.resourceGroup, fake.serviceName, "nope"))).toBe(404);
    expect((await client.apiManagementService.get(fake.resourceGroup, fake.serviceName)).provisioningState).toBe(
      "Succeeded",
    );
    expect(await status(client.apiManagementService.get("other-rg", fake.serviceName))).toBe(404);
  });

  it("lists with an OData filter and follows nextLink pages", async () => {
    await fake.close();
    await start({ pageSize: 2 });
    for (const sid of ["app1-a", "app1-b", "app1-c", "app2-a"]) {
      await client.subscription.createOrUpdate(fake.resourceGroup, fake.serviceName, sid, sub("/products/gold"));
    }
    const names: string[] = [];
    for await (const s of client.subscription.list(fake.resourceGroup, fake.serviceName, {
      filter: "startswith(name,'app1-')",
    }))
      names.push(s.name!);
    expect(names).toEqual(["app1-a", "app1-b", "app1-c"]);
    expect(fake.requests.filter((r) => r.method === "GET" && r.path === "/subscriptions").length).toBe(2);
  });

  it("finds users by e-mail and creates them", async () => {
    await client.user.createOrUpdate(fake.resourceGroup, fake.serviceName, "u1", {
      email: "dev@example.com",
      firstName: "dev",
      lastName: "example",
    });
    const found: string[] = [];
    for await (const u of client.user.listByService(fake.resourceGroup, fake.serviceName, {
      filter: "email eq 'DEV@example.com'",
    }))
      found.push(u.name!);
    expect(found).toEqual(["u1"]);
    expect(
      await status(
        client.user.createOrUpdate(fake.resourceGroup, fake.serviceName, "u2", {
          email: "dev@example.com",
          firstName: "a",
          lastName: "b",
        }),
      ),
    ).toBe(409);
  });

  it("a product's subscriptionsLimit caps one user's subscriptions", async () => {
    await client.user.createOrUpdate(fake.resourceGroup, fake.serviceName, "u1", {
      email: "dev@example.com",
      firstName: "dev",
      lastName: "example",
    });
    await client.subscription.createOrUpdate(
      fake.resourceGroup,
      fake.serviceName,
      "s1",
      sub("/products/one-per-user", { ownerId: "/users/u1", state: "active" }),
    );
    const err = await client.subscription
      .createOrUpdate(
        fake.resourceGroup,
        fake.serviceName,
        "s2",
        sub("/products/one-per-user", { ownerId: "/users/u1", state: "active" }),
      )
      .then(
        () => undefined,
        (e: unknown) => e as { statusCode: number; message: string },
      );
    expect(err?.statusCode).toBe(400);
    expect(err?.message).toMatch(/Subscriptions limit reached/);
  });

  it("shares one key across subscriptions unless told to refuse duplicates", async () => {
    const key = "Shared".repeat(8);
    await client.subscription.createOrUpdate(
      fake.resourceGroup,
      fake.serviceName,
      "s1",
      sub("/products/gold", { primaryKey: key }),
    );
    await client.subscription.createOrUpdate(
      fake.resourceGroup,
      fake.serviceName,
      "s2",
      sub("/products/silver", { primaryKey: key }),
    );
    expect(fake.listSubscriptions().map((s) => s.primaryKey)).toEqual([key, key]);
    fake.setRejectDuplicateKeys(true);
    expect(
      await status(
        client.subscription.createOrUpdate(
          fake.resourceGroup,
          fake.serviceName,
          "s3",
          sub("/apis/orders", { primaryKey: key }),
        ),
      ),
    ).toBe(400);
  });

  it("injected faults: a 429 with Retry-After is retried by the SDK; a 500 surfaces once the SDK's retries are spent", async () => {
    await fake.close();
    await start({}, 2);
    fake.inject({ status: 429, retryAfterS: 0, method: "GET", path: "/products/gold" });
    expect((await client.product.get(fake.resourceGroup, fake.serviceName, "gold")).name).toBe("gold");
    expect(fake.requests.map((r) => r.status)).toEqual([429, 200]);
    fake.inject({ status: 500, times: 10 });
    expect(await status(client.product.get(fake.resourceGroup, fake.serviceName, "gold"))).toBe(500);
    expect(fake.requests.slice(2).map((r) => r.status)).toEqual([500, 500, 500]);
    fake.clearFaults();
    expect((await client.product.get(fake.resourceGroup, fake.serviceName, "gold")).name).toBe("gold");
  });

  it("ARM write throttling: an exhausted bucket answers 429 with the Retry-After of its refill, and refills with time", async () => {
    await fake.close();
    await start({ throttle: { writes: { capacity: 2, refillPerSecond: 0.5 } } });
    const put = (sid: string) =>
      client.subscription.createOrUpdate(fake.resourceGroup, fake.serviceName, sid, sub("/products/gold")).then(
        () => undefined,
        (e: unknown) =>
          e as { statusCode: number; code: string; response?: { headers: { get(n: string): string | undefined } } },
      );
    expect(await put("s1")).toBeUndefined();
    expect(await put("s2")).toBeUndefined();
    const err = await put("s3");
    expect(err?.statusCode).toBe(429);
    expect(err?.code).toBe("SubscriptionRequestsThrottled");
    expect(err?.response?.headers.get("retry-after")).toBe("2"); // one token at 0.5/s
    // reads have their own bucket
    expect((await client.subscription.get(fake.resourceGroup, fake.serviceName, "s1")).name).toBe("s1");
    await clock.advance(1000); // half a token
    expect((await put("s3"))?.response?.headers.get("retry-after")).toBe("1");
    await clock.advance(1000); // a whole one
    expect(await put("s3")).toBeUndefined();
    expect(await put("s4")).toMatchObject({ statusCode: 429 });
    fake.resetThrottle();
    expect(await put("s4")).toBeUndefined();
  });

  it("refuses requests without a bearer token or api-version", async () => {
    const path = `/subscriptions/${fake.subscriptionId}/resourceGroups/${fake.resourceGroup}/providers/Microsoft.ApiManagement/service/${fake.serviceName}`;
    const noAuth = await fetch(`${fake.url}${path}?api-version=2024-05-01`);
    expect(noAuth.status).toBe(401);
    const noVersion = await fetch(`${fake.url}${path}`, { headers: { authorization: "Bearer x" } });
    expect(noVersion.status).toBe(400);
    expect(((await noVersion.json()) as { error: { code: string } }).error.code).toBe("MissingApiVersionParameter");
  });

  it("a PUT held by delayMs lands after the client gave up (ARM does not cancel it); idle() waits for it", async () => {
    fake.inject({ delayMs: 300, method: "PUT" });
    const aborted = await client.subscription
      .createOrUpdate(fake.resourceGroup, fake.serviceName, "late", sub("/products/gold", { state: "active" }), {
        abortSignal: AbortSignal.timeout(50),
      })
      .then(
        () => "answered",
        (e: unknown) => (e as Error).name,
      );
    expect(aborted).toBe("AbortError");
    expect(fake.getSubscription("late")).toBeUndefined(); // held on the fake's clock, however slow the machine
    await clock.whenSleeping();
    await clock.advance(300);
    await fake.idle();
    expect(fake.getSubscription("late")?.state).toBe("active");
    expect(fake.requests.find((r) => r.method === "PUT")?.status).toBe(201);
  });

  it("afterApply: the write is applied, then the fault's status is answered", async () => {
    fake.inject({ status: 500, afterApply: true, method: "DELETE" });
    await client.subscription.createOrUpdate(fake.resourceGroup, fake.serviceName, "s1", sub("/products/gold"));
    expect(await status(client.subscription.delete(fake.resourceGroup, fake.serviceName, "s1", "*"))).toBe(500);
    expect(fake.getSubscription("s1")).toBeUndefined();
    expect(fake.requests.find((r) => r.method === "DELETE")).toMatchObject({ status: 500, appliedStatus: 200 });
  });

  it("faults on reads, listSecrets included, with ARM's codes and messages", async () => {
    await client.subscription.createOrUpdate(fake.resourceGroup, fake.serviceName, "s1", sub("/products/gold"));
    fake.inject({ status: 403, method: "POST", path: "/listSecrets" });
    const err = await client.subscription.listSecrets(fake.resourceGroup, fake.serviceName, "s1").then(
      () => undefined,
      (e: unknown) => e as { statusCode: number; code: string; message: string },
    );
    expect(err).toMatchObject({ statusCode: 403, code: "AuthorizationFailed" });
    expect(err?.message).toContain("'Microsoft.ApiManagement/service/subscriptions/listSecrets/action'");
    fake.inject({ status: 500, method: "GET", times: Infinity });
    expect(await status(client.subscription.get(fake.resourceGroup, fake.serviceName, "s1"))).toBe(500);
    expect(await status(client.subscription.get(fake.resourceGroup, fake.serviceName, "s1"))).toBe(500);
    fake.clearFaults();
    expect(await status(client.subscription.get(fake.resourceGroup, fake.serviceName, "s1"))).toBe(0);
  });

  it("addForeignSubscription makes a subscription as someone else would: no request, any id, listed like the rest", async () => {
    const made = fake.addForeignSubscription({ scope: "/apis/orders", primaryKey: "HandMadeKey".repeat(3) });
    expect(made).toMatchObject({
      sid: expect.stringMatching(/^manual-[0-9a-f]{12}$/),
      scope: "/apis/orders",
      state: "active",
      displayName: "Created by hand",
    });
    expect(fake.requests).toEqual([]);
    const listed: string[] = [];
    for await (const s of client.subscription.list(fake.resourceGroup, fake.serviceName, {
      filter: "startswith(name,'manual-')",
    }))
      listed.push(s.name!);
    expect(listed).toEqual([made.sid]);
    expect(fake.requests[0]!.filter).toBe("startswith(name,'manual-')");
    expect(() => fake.addForeignSubscription({ scope: "/products/nope" })).toThrow(/Product 'nope' not found/);
  });
});
