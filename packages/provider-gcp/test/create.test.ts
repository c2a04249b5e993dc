import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isCredhookError } from "@credhook/core/errors";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { ANNOTATIONS, keyIdFor } from "../src/mapping.js";
import { GATEWAY, makeProvider, rejection, rpcsSince } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Orders Portal App", developer: "dev@example.com", appSlug: "590d83b5c05f" };

describe("create", () => {
  it("creates one key with a deterministic keyId, restricted to the app's services, and returns its key string", async () => {
    const provider = await makeProvider(fake, {
      services: { orders: "orders-abc.apigateway.fake-project.cloud.goog" },
    });
    const credentialId = randomUUID();
    const cred = await provider.create({
      credentialId,
      credentialType: "API_KEY",
      app,
      apis: [
        { id: "orders", usagePlans: ["gold"] },
        { id: "billing", usagePlans: [] },
      ],
    });
    expect(cred.nativeId).toBe(keyIdFor(credentialId, "credhook-"));
    expect(cred.nativeId).toMatch(/^credhook-[a-z2-7]{26}$/);
    const key = fake.key(cred.nativeId)!;
    expect(fake.keys()).toHaveLength(1);
    expect(cred.apiKey).toBe(key.keyString);
    expect(key.restrictions.apiTargets).toEqual([
      { service: "billing.apigateway.fake-project.cloud.goog" },
      { service: "orders-abc.apigateway.fake-project.cloud.goog" },
    ]);
    expect(key.displayName).toBe("Orders Portal App (dev@example.com)");
    expect(key.annotations).toMatchObject({
      [ANNOTATIONS.credentialId]: credentialId,
      [ANNOTATIONS.gateway]: GATEWAY,
      [ANNOTATIONS.app]: app.appName,
      [ANNOTATIONS.developer]: app.developer,
      [ANNOTATIONS.appSlug]: app.appSlug,
    });
    expect(JSON.parse(key.annotations[ANNOTATIONS.usagePlans]!)).toEqual({ billing: [], orders: ["gold"] });
    expect(JSON.stringify(cred.resources)).not.toContain(cred.apiKey!);
    expect(cred.resources).toEqual({
      keyName: `projects/fake-project/locations/global/keys/${cred.nativeId}`,
      uid: key.uid,
    });
    // createKey, polls until done; the key string comes from the finished operation's Key: no getKeyString
    expect(rpcsSince(fake, 0)).toEqual(["CreateKey", "GetOperation", "GetOperation"]);
    await provider.close();
  });

  it("reads the key string with getKeyString only when the create operation's Key lacks it", async () => {
    const provider = await makeProvider(fake);
    fake.control.setKeyStringInCreateResult(false);
    const cred = await provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app,
      apis: [{ id: "orders", usagePlans: [] }],
    });
    expect(cred.apiKey).toBe(fake.key(cred.nativeId)!.keyString);
    expect(rpcsSince(fake, 0)).toEqual(["CreateKey", "GetOperation", "GetOperation", "GetKeyString"]);
    await provider.close();
  });

  it("maps usage plans to apiTargets[].methods when a plan map is configured", async () => {
    const provider = await makeProvider(fake, {
      usagePlans: { read: ["GetOrder", "List*"], write: ["CreateOrder"], all: [] },
    });
    const a = await provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app,
      apis: [
        { id: "orders", usagePlans: ["read", "write"] },
        { id: "stock", usagePlans: ["all", "read"] },
      ],
    });
    expect(fake.key(a.nativeId)!.restrictions.apiTargets).toEqual([
      { service: "orders.apigateway.fake-project.cloud.goog", methods: ["CreateOrder", "GetOrder", "List*"] },
      { service: "stock.apigateway.fake-project.cloud.goog" },
    ]);
    await provider.close();
  });

  it("shortens a long display name to Google's 63 characters", async () => {
    const provider = await makeProvider(fake);
    const long = {
      appName: "A very long application name that goes on and on beyond every limit",
      developer: "someone.with.a.long.address@example.com",
    };
    const cred = await provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app: long,
      apis: [{ id: "orders", usagePlans: [] }],
    });
    const name = fake.key(cred.nativeId)!.displayName;
    expect([...name].length).toBeLessThanOrEqual(63);
    expect(name.startsWith("A very long application name")).toBe(true);
    await provider.close();
  });

  it("refuses an API key value from core with a typed 500 (a core bug), before any call", async () => {
    const provider = await makeProvider(fake);
    const err = await rejection(
      provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis: [{ id: "orders", usagePlans: [] }],
        apiKeyValue: "SecretValueFromCore1234567890",
      }),
    );
    expect(isCredhookError(err)).toBe(true);
    expect(err).toMatchObject({ status: 500, code: "INTERNAL" });
    expect((err as Error).message).toContain("importsApiKeyValue");
    expect((err as Error).message).not.toContain("SecretValueFromCore");
    expect(fake.requests()).toEqual([]);
    await provider.close();
  });

  it("answers 422 for an API id no option maps to a service, and calls nothing", async () => {
    const provider = await makeProvider(fake, {
      serviceTemplate: undefined,
      services: { orders: "orders.example.cloud.goog" },
    });
    const err = await rejection(
      provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis: [{ id: "unmapped", usagePlans: [] }],
      }),
    );
    expect(err).toMatchObject({ status: 422, code: "INVALID_REFERENCE" });
    expect((err as Error).message).toBe("[gateway gcp-test] API 'unmapped' is not mapped to a Google service");
    expect(fake.requests()).toEqual([]);
    await provider.close();
  });

  it("declares API_KEY only, no value import, and secret read-back", async () => {
    const provider = await makeProvider(fake);
    expect(provider.capabilities).toEqual({
      credentialTypes: ["API_KEY"],
      importsApiKeyValue: false,
      readsBackSecret: true,
      generatedApiKeyFormat: {
        characters: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        length: 39,
      },
    });
    await provider.close();
  });
});
