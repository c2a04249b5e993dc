import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { ManualClock } from "@credhook/fakes/clock";
import { googleErrorOf, httpStatusOf, rawClient } from "./fake-client.js";

let fake: ApiKeysFake;
let client: ReturnType<typeof rawClient>;
/** The fake's clock: quotas' windows pass and delayed operations land only when a test advances it. */
const clock = new ManualClock();
const parent = "projects/fake-project/locations/global";
const nameOf = (id: string) => `${parent}/keys/${id}`;

beforeAll(async () => {
  fake = await startApiKeysFake({ clock });
  client = rawClient(fake);
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
beforeEach(() => fake.control.reset());

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

async function create(keyId: string, extra: Record<string, unknown> = {}) {
  const [op] = await client.createKey({
    parent,
    keyId,
    key: { displayName: keyId, restrictions: { apiTargets: [{ service: "orders.example.cloud.goog" }] }, ...extra },
  });
  const [key] = await op.promise();
  return key;
}

describe("API Keys fake, driven by the unmodified client", () => {
  it("creates a key through an operation that is not done on the first poll", async () => {
    const [op] = await client.createKey({
      parent,
      keyId: "orders-app",
      key: {
        displayName: "Orders app",
        restrictions: { apiTargets: [{ service: "orders.example.cloud.goog", methods: ["Get*"] }] },
        annotations: { app: "orders" },
      },
    });
    expect(op.done).toBe(false);
    const [key] = await op.promise();
    expect(key.name).toBe("projects/123456789012/locations/global/keys/orders-app");
    expect(key.restrictions?.apiTargets).toEqual([{ service: "orders.example.cloud.goog", methods: ["Get*"] }]);
    expect(key.annotations).toEqual({ app: "orders" });
    const polls = fake.requests().filter((r) => r.rpc === "GetOperation");
    expect(polls.length).toBe(2);
    const [got] = await client.getKey({ name: nameOf("orders-app") });
    expect(got.keyString ?? "").toBe("");
    const [{ keyString }] = await client.getKeyString({ name: nameOf("orders-app") });
    expect(keyString).toMatch(/^AIza[A-Za-z0-9_-]{35}$/);
    expect(keyString).toBe(fake.key("orders-app")?.keyString);
  });

  it("answers 409 ALREADY_EXISTS for a taken keyId and 400 for invalid keyIds and long display names", async () => {
    await create("taken");
    const dup = await rejection(client.createKey({ parent, keyId: "taken", key: {} }));
    expect(httpStatusOf(dup)).toBe(409);
    expect(googleErrorOf(dup).status).toBe("ALREADY_EXISTS");
    for (const bad of ["Upper", "1starts-with-digit", "ends-with-dash-", "0f8fad5b-d9cb-469f-a165-70867728950e"]) {
      const err = await rejection(client.createKey({ parent, keyId: bad, key: {} }));
      expect(googleErrorOf(err).status, bad).toBe("INVALID_ARGUMENT");
    }
    const long = await rejection(
      client.createKey({ parent, keyId: "long-name", key: { displayName: "x".repeat(64) } }),
    );
    expect(googleErrorOf(long).status).toBe("INVALID_ARGUMENT");
    expect(fake.keys().map((k) => k.keyId)).toEqual(["taken"]);
  });

  it("lists keys in pages and hides soft-deleted ones unless showDeleted", async () => {
    for (const id of ["k-a", "k-b", "k-c"]) await create(id);
    const [op] = await client.deleteKey({ name: nameOf("k-b") });
    await op.promise();
    const [page1, next] = await client.listKeys({ parent, pageSize: 1 }, { autoPaginate: false });
    expect(page1.map((k) => k.name?.split("/").pop())).toEqual(["k-a"]);
    expect(next?.pageToken).toBeTruthy();
    const [all] = await client.listKeys({ parent });
    expect(all.map((k) => k.name?.split("/").pop())).toEqual(["k-a", "k-c"]);
    const [withDeleted] = await client.listKeys({ parent, showDeleted: true });
    expect(withDeleted.map((k) => k.name?.split("/").pop())).toEqual(["k-a", "k-b", "k-c"]);
    expect(withDeleted.every((k) => !k.keyString)).toBe(true);
  });

  it("updates only the fields of the update mask and rejects a stale etag with 409 ABORTED", async () => {
    const created = await create("upd", { annotations: { keep: "me" } });
    const [op] = await client.updateKey({
      key: {
        name: nameOf("upd"),
        displayName: "renamed",
        restrictions: { apiTargets: [{ service: "a.example.cloud.goog" }, { service: "b.example.cloud.goog" }] },
        annotations: {},
      },
      updateMask: { paths: ["restrictions"] },
    });
    const [updated] = await op.promise();
    expect(updated.displayName).toBe("upd");
    expect(updated.annotations).toEqual({ keep: "me" });
    expect(updated.restrictions?.apiTargets?.map((t) => t.service)).toEqual([
      "a.example.cloud.goog",
      "b.example.cloud.goog",
    ]);
    const stale = await rejection(
      client.updateKey({
        key: { name: nameOf("upd"), displayName: "x", etag: created.etag },
        updateMask: { paths: ["displayName"] },
      }),
    );
    expect(googleErrorOf(stale).status).toBe("ABORTED");
    const badMask = await rejection(
      client.updateKey({ key: { name: nameOf("upd"), uid: "x" }, updateMask: { paths: ["uid"] } }),
    );
    expect(googleErrorOf(badMask).status).toBe("INVALID_ARGUMENT");
  });

  it("soft-deletes: the key stays readable with deleteTime, its string and a second delete are 404, undelete restores it", async () => {
    await create("gone");
    const [op] = await client.deleteKey({ name: nameOf("gone") });
    const [deleted] = await op.promise();
    expect(deleted.deleteTime).toBeTruthy();
    const [got] = await client.getKey({ name: nameOf("gone") });
    expect(got.deleteTime).toBeTruthy();
    expect(httpStatusOf(await rejection(client.getKeyString({ name: nameOf("gone") })))).toBe(404);
    expect(httpStatusOf(await rejection(client.deleteKey({ name: nameOf("gone") })))).toBe(404);
    expect(googleErrorOf(await rejection(client.createKey({ parent, keyId: "gone", key: {} }))).status).toBe(
      "ALREADY_EXISTS",
    );
    const [uop] = await client.undeleteKey({ name: nameOf("gone") });
    const [restored] = await uop.promise();
    expect(restored.deleteTime ?? null).toBeNull();
    const [again] = await client.deleteKey({ name: nameOf("gone") });
    await again.promise();
    fake.control.purge("gone");
    expect(httpStatusOf(await rejection(client.getKey({ name: nameOf("gone") })))).toBe(404);
  });

  it("answers 404 for an unknown key, 403 for another project and 401 without a Bearer token", async () => {
    const missing = await rejection(client.getKey({ name: nameOf("nope") }));
    expect(httpStatusOf(missing)).toBe(404);
    expect(googleErrorOf(missing).status).toBe("NOT_FOUND");
    const other = await rejection(client.getKey({ name: "projects/other/locations/global/keys/x" }));
    expect(googleErrorOf(other).status).toBe("PERMISSION_DENIED");
    const res = await fetch(`${fake.url}/v2/${parent}/keys`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe("UNAUTHENTICATED");
  });

  it("enforces the per-minute write quota with 429 RESOURCE_EXHAUSTED, over a sliding minute", async () => {
    fake.control.setQuotas({ writesPerMinute: 2 });
    await create("q-1");
    await create("q-2");
    const err = await rejection(client.createKey({ parent, keyId: "q-3", key: {} }));
    expect(httpStatusOf(err)).toBe(429);
    expect(googleErrorOf(err).status).toBe("RESOURCE_EXHAUSTED");
    // reads have their own quota
    await client.getKey({ name: nameOf("q-1") });
    expect(fake.key("q-3")).toBeUndefined();
    await clock.advance(60_000); // the two writes have left the window
    await create("q-3");
    expect(fake.key("q-3")).toBeDefined();
  });

  it("injects 429 with Retry-After and RetryInfo, and 5xx on chosen RPCs only", async () => {
    await create("f-1");
    fake.control.fail({ status: 429, retryAfterS: 7, rpcs: ["GetKey"] });
    const throttled = await rejection(client.getKey({ name: nameOf("f-1") }));
    expect(httpStatusOf(throttled)).toBe(429);
    expect((throttled as { response?: { headers: Headers } }).response?.headers.get("retry-after")).toBe("7");
    expect(googleErrorOf(throttled).details).toEqual([
      { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "7s" },
    ]);
    await client.getKey({ name: nameOf("f-1") });

    fake.control.fail({ status: 503, rpcs: ["GetKeyString"], times: 2 });
    await client.getKey({ name: nameOf("f-1") });
    expect(httpStatusOf(await rejection(client.getKeyString({ name: nameOf("f-1") })))).toBe(503);
    expect(googleErrorOf(await rejection(client.getKeyString({ name: nameOf("f-1") }))).status).toBe("UNAVAILABLE");
    await client.getKeyString({ name: nameOf("f-1") });
  });

  it("holds operations undone while asked to", async () => {
    fake.control.holdOperations(true);
    const [op] = await client.createKey({ parent, keyId: "held", key: {} });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${fake.url}/v2/${op.name}`, { headers: { authorization: "Bearer t" } });
      expect(((await res.json()) as { done: boolean }).done).toBe(false);
    }
    fake.control.holdOperations(false);
    // released: the one "not done" poll it was created with, then done
    const first = await fetch(`${fake.url}/v2/${op.name}`, { headers: { authorization: "Bearer t" } });
    expect(((await first.json()) as { done: boolean }).done).toBe(false);
    const res = await fetch(`${fake.url}/v2/${op.name}`, { headers: { authorization: "Bearer t" } });
    const body = (await res.json()) as { done: boolean; response: { "@type": string; name: string } };
    expect(body.done).toBe(true);
    expect(body.response["@type"]).toBe("type.googleapis.com/google.api.apikeys.v2.Key");
  });

  it("answers a finished create with the Key and its keyString (Google's create result); get and list never carry it", async () => {
    const [op] = await client.createKey({ parent, keyId: "with-string", key: {} });
    const [key] = await op.promise();
    expect(key.keyString).toBe(fake.key("with-string")!.keyString);
    expect(key.keyString).toMatch(/^AIza[A-Za-z0-9_-]{35}$/);
    const [got] = await client.getKey({ name: nameOf("with-string") });
    expect(got.keyString ?? "").toBe("");
    fake.control.setKeyStringInCreateResult(false);
    const [op2] = await client.createKey({ parent, keyId: "without-string", key: {} });
    const [key2] = await op2.promise();
    expect(key2.keyString ?? "").toBe("");
  });

  it("counts operation polls and getKeyString against the read quota", async () => {
    fake.control.setQuotas({ readsPerMinute: 1 });
    const [op] = await client.createKey({ parent, keyId: "polled", key: {} });
    const first = await fetch(`${fake.url}/v2/${op.name}`, { headers: { authorization: "Bearer t" } });
    expect(first.status).toBe(200);
    const second = await fetch(`${fake.url}/v2/${op.name}`, { headers: { authorization: "Bearer t" } });
    expect(second.status).toBe(429);
    expect(((await second.json()) as { error: { status: string } }).error.status).toBe("RESOURCE_EXHAUSTED");
    expect(httpStatusOf(await rejection(client.getKeyString({ name: nameOf("polled") })))).toBe(429);
  });

  it("fail({ afterApply }) applies the write, then answers the error", async () => {
    fake.control.fail({ status: 500, rpcs: ["CreateKey"], afterApply: true });
    const err = await rejection(client.createKey({ parent, keyId: "applied", key: {} }));
    expect(httpStatusOf(err)).toBe(500);
    expect(fake.key("applied")).toBeDefined();
    expect(googleErrorOf(await rejection(client.createKey({ parent, keyId: "applied", key: {} }))).status).toBe(
      "ALREADY_EXISTS",
    );
  });

  it("fail({ every }) fails every n-th matching request, up to times; 403 at any call", async () => {
    await create("every");
    fake.control.fail({ status: 403, rpcs: ["GetKey"], every: 2, times: 2 });
    const answers: Array<number | undefined> = [];
    for (let i = 0; i < 6; i++)
      answers.push(
        await client.getKey({ name: nameOf("every") }).then(
          () => 200,
          (e: unknown) => httpStatusOf(e),
        ),
      );
    expect(answers).toEqual([200, 403, 200, 403, 200, 200]);
  });

  it("delayOperations: the write is accepted at once and lands later, whether or not anyone polls; its keyId is reserved meanwhile", async () => {
    fake.control.delayOperations(300);
    const [op] = await client.createKey({ parent, keyId: "late", key: {} });
    expect(fake.key("late")).toBeUndefined();
    expect(httpStatusOf(await rejection(client.getKey({ name: nameOf("late") })))).toBe(404);
    expect(googleErrorOf(await rejection(client.createKey({ parent, keyId: "late", key: {} }))).status).toBe(
      "ALREADY_EXISTS",
    );
    const poll = await fetch(`${fake.url}/v2/${op.name}`, { headers: { authorization: "Bearer t" } });
    expect(((await poll.json()) as { done: boolean }).done).toBe(false);
    await clock.advance(299);
    expect(fake.key("late")).toBeUndefined(); // however long the requests above took
    await clock.advance(1);
    expect(fake.key("late")).toBeDefined();
    const [key] = await op.promise();
    expect(key.name).toBe("projects/123456789012/locations/global/keys/late");
  });

  it("createForeignKey makes a key without credhook annotations, outside the request log and quotas", async () => {
    const made = fake.createForeignKey({ keyId: "by-hand" });
    expect(made.annotations).toEqual({});
    expect(fake.requests()).toEqual([]);
    const [got] = await client.getKey({ name: nameOf("by-hand") });
    expect(got.etag).toBe(made.etag);
    expect(() => fake.createForeignKey({ keyId: "by-hand" })).toThrow(/taken/);
  });
});
