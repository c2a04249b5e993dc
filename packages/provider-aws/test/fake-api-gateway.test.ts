/** The API Gateway fake, driven by the unmodified SDK: value rules, plans, pagination, faults, quotas. */
import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  DeleteUsagePlanKeyCommand,
  GetApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeyCommand,
  TagResourceCommand,
  UpdateApiKeyCommand,
} from "@aws-sdk/client-api-gateway";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AwsFake } from "@credhook/fakes/aws";
import { ManualClock } from "@credhook/fakes/clock";
import { dummyCredentials, seededFake, sdkClients, type Seed } from "./helpers.js";

let fake: AwsFake;
let seed: Seed;
let apigw: APIGatewayClient;
/** The fake's clock: quotas refill, latency and late applies end only when a test advances it. */
let clock: ManualClock;

beforeEach(async () => {
  clock = new ManualClock();
  ({ fake, seed } = await seededFake({ enforceQuotas: false, clock }));
  ({ apigw } = sdkClients(fake));
});
afterEach(async () => {
  apigw.destroy();
  await fake.close();
});

const VALUE = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";

describe("API Gateway fake: API keys", () => {
  it("creates an enabled key with an imported value and returns the value only on includeValue", async () => {
    const created = await apigw.send(
      new CreateApiKeyCommand({ name: "k1", enabled: true, value: VALUE, tags: { app: "a" } }),
    );
    expect(created.value).toBe(VALUE);
    expect(created.id).toMatch(/^[a-z0-9]{10}$/);
    expect(created.createdDate).toBeInstanceOf(Date);
    const plain = await apigw.send(new GetApiKeyCommand({ apiKey: created.id }));
    expect(plain.value).toBeUndefined();
    expect(plain.enabled).toBe(true);
    expect(plain.tags).toEqual({ app: "a" });
    const withValue = await apigw.send(new GetApiKeyCommand({ apiKey: created.id, includeValue: true }));
    expect(withValue.value).toBe(VALUE);
  });

  it("generates a 40-character value when none is given", async () => {
    const created = await apigw.send(new CreateApiKeyCommand({ name: "gen", enabled: true }));
    expect(created.value).toMatch(/^[A-Za-z0-9]{40}$/);
  });

  it("answers 409 ConflictException for a duplicate value and 400 for a short one", async () => {
    await apigw.send(new CreateApiKeyCommand({ name: "k1", value: VALUE }));
    await expect(apigw.send(new CreateApiKeyCommand({ name: "k2", value: VALUE }))).rejects.toMatchObject({
      name: "ConflictException",
      message: "API Key already exists",
      $metadata: { httpStatusCode: 409 },
    });
    await expect(apigw.send(new CreateApiKeyCommand({ name: "k3", value: "tooShort123" }))).rejects.toMatchObject({
      name: "BadRequestException",
    });
  });

  it("updates name and enabled through patch operations and rejects unknown paths", async () => {
    const { id } = await apigw.send(new CreateApiKeyCommand({ name: "old", enabled: true }));
    const updated = await apigw.send(
      new UpdateApiKeyCommand({
        apiKey: id,
        patchOperations: [
          { op: "replace", path: "/name", value: "new" },
          { op: "replace", path: "/enabled", value: "false" },
        ],
      }),
    );
    expect(updated).toMatchObject({ name: "new", enabled: false });
    await expect(
      apigw.send(
        new UpdateApiKeyCommand({ apiKey: id, patchOperations: [{ op: "replace", path: "/value", value: VALUE }] }),
      ),
    ).rejects.toMatchObject({
      name: "BadRequestException",
    });
  });

  it("tags a key by ARN", async () => {
    const { id } = await apigw.send(new CreateApiKeyCommand({ name: "t", tags: { a: "1" } }));
    await apigw.send(new TagResourceCommand({ resourceArn: fake.apiGateway.keyArn(id!), tags: { b: "2" } }));
    expect(fake.apiGateway.keys.get(id!)?.tags).toEqual({ a: "1", b: "2" });
  });

  it("paginates GetApiKeys (default limit 25) and filters by name prefix", async () => {
    for (let i = 0; i < 30; i++) await apigw.send(new CreateApiKeyCommand({ name: `${i % 2 ? "odd" : "even"}/${i}` }));
    const first = await apigw.send(new GetApiKeysCommand({}));
    expect(first.items).toHaveLength(25);
    expect(first.position).toBeDefined();
    const second = await apigw.send(new GetApiKeysCommand({ position: first.position }));
    expect(second.items).toHaveLength(5);
    expect(second.position).toBeUndefined();
    const ids = new Set([...first.items!, ...second.items!].map((k) => k.id));
    expect(ids.size).toBe(30);
    const odd = await apigw.send(new GetApiKeysCommand({ nameQuery: "odd/", limit: 500 }));
    expect(odd.items).toHaveLength(15);
    await expect(apigw.send(new GetApiKeysCommand({ limit: 501 }))).rejects.toMatchObject({
      name: "BadRequestException",
    });
  });

  it("deleting a key answers NotFound afterwards and removes it from its plans", async () => {
    const { id } = await apigw.send(new CreateApiKeyCommand({ name: "d" }));
    await apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: id, keyType: "API_KEY" }));
    await apigw.send(new DeleteApiKeyCommand({ apiKey: id }));
    expect(fake.apiGateway.plansOfKey(id!)).toEqual([]);
    await expect(apigw.send(new GetApiKeyCommand({ apiKey: id }))).rejects.toMatchObject({
      name: "NotFoundException",
      $metadata: { httpStatusCode: 404 },
    });
    await expect(apigw.send(new DeleteApiKeyCommand({ apiKey: id }))).rejects.toMatchObject({
      name: "NotFoundException",
    });
  });
});

describe("API Gateway fake: usage plan keys", () => {
  it("attaches, reads, detaches; 409 when already attached, 404 when not", async () => {
    const { id } = await apigw.send(new CreateApiKeyCommand({ name: "p" }));
    await apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: id, keyType: "API_KEY" }));
    await expect(
      apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: id, keyType: "API_KEY" })),
    ).rejects.toMatchObject({
      name: "ConflictException",
    });
    expect(await apigw.send(new GetUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: id }))).toMatchObject({
      id,
      type: "API_KEY",
    });
    await apigw.send(new DeleteUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: id }));
    await expect(
      apigw.send(new DeleteUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: id })),
    ).rejects.toMatchObject({ name: "NotFoundException" });
    await expect(apigw.send(new GetUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: id }))).rejects.toMatchObject({
      name: "NotFoundException",
    });
  });

  it("answers NotFound for an unknown plan and for an unknown key, with different messages", async () => {
    const { id } = await apigw.send(new CreateApiKeyCommand({ name: "p" }));
    await expect(
      apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: "nope00", keyId: id, keyType: "API_KEY" })),
    ).rejects.toMatchObject({
      name: "NotFoundException",
      message: "Invalid Usage Plan ID specified",
    });
    await expect(
      apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: "nokey00000", keyType: "API_KEY" })),
    ).rejects.toMatchObject({
      name: "NotFoundException",
      message: "Invalid API Key identifier specified",
    });
  });

  it("refuses a second plan on the same API stage for one key", async () => {
    const { id } = await apigw.send(new CreateApiKeyCommand({ name: "p" }));
    await apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: id, keyType: "API_KEY" }));
    await expect(
      apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: seed.planA2, keyId: id, keyType: "API_KEY" })),
    ).rejects.toMatchObject({
      name: "BadRequestException",
      message: expect.stringContaining("same API Stage"),
    });
    await apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: seed.planB, keyId: id, keyType: "API_KEY" }));
    expect(fake.apiGateway.plansOfKey(id!)).toEqual([seed.planA, seed.planB].sort());
  });
});

describe("API Gateway fake: faults and quotas", () => {
  it("injects 429 TooManyRequests with Retry-After, and the SDK retries it when allowed", async () => {
    fake.faults.throttle({ operation: "CreateApiKey", retryAfterS: 2 });
    const err = await apigw.send(new CreateApiKeyCommand({ name: "x" })).catch((e: unknown) => e);
    expect(err).toMatchObject({
      name: "TooManyRequestsException",
      retryAfterSeconds: "2",
      $metadata: { httpStatusCode: 429 },
    });
    fake.faults.throttle({ operation: "GetApiKeys", retryAfterS: 1 });
    const retrying = sdkClients(fake, 3).apigw;
    await expect(retrying.send(new GetApiKeysCommand({}))).resolves.toBeDefined();
    expect(fake.stats().calls.GetApiKeys).toBe(2);
    expect(fake.stats().throttled.GetApiKeys).toBe(1);
  });

  it("injects a 5xx on demand", async () => {
    fake.faults.serverError({ service: "apigateway", status: 503 });
    await expect(apigw.send(new GetApiKeysCommand({}))).rejects.toMatchObject({ $metadata: { httpStatusCode: 503 } });
    await expect(apigw.send(new GetApiKeysCommand({}))).resolves.toBeDefined();
  });

  it("injects latency: a client with a shorter request timeout gives up", async () => {
    fake.faults.latency(2_000, { operation: "GetApiKeys", count: 1 });
    const impatient = new APIGatewayClient({
      endpoint: fake.url,
      region: "us-east-1",
      credentials: dummyCredentials,
      maxAttempts: 1,
      requestHandler: { requestTimeout: 200, throwOnRequestTimeout: true },
    });
    await expect(impatient.send(new GetApiKeysCommand({}))).rejects.toMatchObject({ name: "TimeoutError" });
  });

  it("enforces CreateApiKey at 5 rps: of a burst of 10 calls, the 5 past the bucket's burst are refused", async () => {
    const strict = await seededFake({ clock }); // held still: the bucket does not refill however slowly the burst arrives
    const { apigw: c } = sdkClients(strict.fake);
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => c.send(new CreateApiKeyCommand({ name: `b${i}` }))),
    );
    const refused = results.filter((r) => r.status === "rejected");
    expect(refused).toHaveLength(5);
    for (const r of refused)
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        name: "TooManyRequestsException",
        $metadata: { httpStatusCode: 429 },
      });
    expect(strict.fake.stats().throttled.CreateApiKey).toBe(refused.length);
    c.destroy();
    await strict.fake.close();
  });

  it("refuses unsigned requests", async () => {
    const res = await fetch(`${fake.url}/apikeys`);
    expect(res.status).toBe(403);
    expect(res.headers.get("x-amzn-errortype")).toBe("MissingAuthenticationTokenException");
  });
});

describe("API Gateway fake: issue-9 faults and the strict quota", () => {
  it("sliding-window quota: 5 CreateApiKey calls pass, the 6th within the same second is 429 with Retry-After, and a slot frees a second after the first", async () => {
    const strict = await seededFake({ clock, apiGateway: { quotaModel: "sliding-window" } });
    const { apigw: c } = sdkClients(strict.fake);
    for (let i = 0; i < 5; i++) {
      await c.send(new CreateApiKeyCommand({ name: `s${i}` }));
      await clock.advance(100); // 5 calls over 400 ms of the fake's clock, however long they take
    }
    await expect(c.send(new CreateApiKeyCommand({ name: "s5" }))).rejects.toMatchObject({
      name: "TooManyRequestsException",
      retryAfterSeconds: "1",
      $metadata: { httpStatusCode: 429 },
    });
    await clock.advance(500); // exactly a second after the first: both ends of the window count, still refused
    await expect(c.send(new CreateApiKeyCommand({ name: "s5" }))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 429 },
    });
    await clock.advance(1);
    await c.send(new CreateApiKeyCommand({ name: "s6" }));
    expect(strict.fake.stats().throttled.CreateApiKey).toBe(2);
    c.destroy();
    await strict.fake.close();
  });

  it("lateApply: the client times out, the key appears later; failAfterApply: applied, then 500 or no answer", async () => {
    const slow = new APIGatewayClient({
      endpoint: fake.url,
      region: "us-east-1",
      credentials: dummyCredentials,
      maxAttempts: 1,
      requestHandler: { requestTimeout: 100, throwOnRequestTimeout: true },
    });
    fake.faults.lateApply(300, { operation: "CreateApiKey" });
    await expect(slow.send(new CreateApiKeyCommand({ name: "late" }))).rejects.toMatchObject({ name: "TimeoutError" });
    expect(fake.apiGateway.keys.size).toBe(0);
    await clock.whenSleeping();
    await clock.advance(299);
    expect(fake.apiGateway.keys.size).toBe(0); // not before its delay on the fake's clock
    await clock.advance(1);
    expect([...fake.apiGateway.keys.values()].map((k) => k.name)).toEqual(["late"]);
    expect(fake.stats().lateWritesPending).toBe(0);
    slow.destroy();
    fake.faults.failAfterApply({ operation: "CreateApiKey", status: 500 });
    await expect(apigw.send(new CreateApiKeyCommand({ name: "applied" }))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 500 },
    });
    fake.faults.failAfterApply({ operation: "DeleteApiKey", drop: true });
    const id = [...fake.apiGateway.keys.values()].find((k) => k.name === "applied")!.id;
    await expect(apigw.send(new DeleteApiKeyCommand({ apiKey: id }))).rejects.toBeDefined();
    expect(fake.apiGateway.keys.has(id)).toBe(false);
  });

  it("deny: 403 AccessDeniedException naming the action and resource, at any operation including reads; nothing applied", async () => {
    const key = await apigw.send(new CreateApiKeyCommand({ name: "k" }));
    fake.faults.deny({ operation: "CreateUsagePlanKey" });
    await expect(
      apigw.send(new CreateUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: key.id, keyType: "API_KEY" })),
    ).rejects.toMatchObject({
      name: "AccessDeniedException",
      $metadata: { httpStatusCode: 403 },
      message: `User: arn:aws:sts::123456789012:assumed-role/credhook/session is not authorized to perform: apigateway:POST on resource: arn:aws:apigateway:us-east-1::/usageplans/${seed.planA}/keys`,
    });
    expect(fake.apiGateway.plansOfKey(key.id!)).toEqual([]);
    fake.faults.deny({ operation: "GetApiKey" });
    await expect(apigw.send(new GetApiKeyCommand({ apiKey: key.id }))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 403 },
    });
  });

  it("createForeign: a key without credhook's tags; foreignTouched() lists it once it changes", async () => {
    const foreign = fake.createForeign("API_KEY", { usagePlanIds: [seed.planA] });
    expect(fake.apiGateway.keys.get(foreign.nativeId)!.tags).toEqual({});
    expect(fake.apiGateway.plansOfKey(foreign.nativeId)).toEqual([seed.planA]);
    expect(await foreign.exists()).toBe(true);
    await apigw.send(new DeleteUsagePlanKeyCommand({ usagePlanId: seed.planA, keyId: foreign.nativeId }));
    expect(await foreign.exists()).toBe(false);
    expect(fake.foreignTouched()).toEqual([foreign.nativeId]);
  });
});
