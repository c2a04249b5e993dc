/** API_KEY create: naming, tags, imported/generated values, an unknown plan reported as partial, value clashes, retried creates. */
import { randomUUID } from "node:crypto";
import { CreateApiKeyCommand } from "@aws-sdk/client-api-gateway";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CredhookError } from "@credhook/core/errors";
import type { Provider, ProviderCredentialRef } from "@credhook/core/provider";
import type { AwsFake } from "@credhook/fakes/aws";
import { createCredential, makeProvider, sdkClients, seededFake, testApp, type Seed } from "./helpers.js";

let fake: AwsFake;
let seed: Seed;
let provider: Provider;

beforeEach(async () => {
  ({ fake, seed } = await seededFake());
  provider = await makeProvider(fake, seed, "API_KEY");
});
afterEach(async () => {
  await provider.close?.();
  await fake.close();
});

const VALUE = "CredhookImportedValue0123456789abcdefghijKLMN";

describe("API_KEY create", () => {
  it("creates one enabled key named credhook/<developer>/<appSlug>, tagged with app and developer, in every plan", async () => {
    const { cred } = await createCredential(provider, "API_KEY", [
      { id: seed.apiA, usagePlans: [seed.planA] },
      { id: seed.apiB, usagePlans: [seed.planB] },
    ]);
    const key = fake.apiGateway.keys.get(cred.nativeId)!;
    expect(key.name).toBe("credhook/dev@example.com/590d83b5c05f");
    expect(key.enabled).toBe(true);
    expect(key.description).toContain('"Orders Dashboard"');
    expect(key.tags).toMatchObject({
      "credhook:developer": "dev@example.com",
      "credhook:app": "Orders Dashboard",
      "credhook:app-slug": "590d83b5c05f",
      "credhook:gateway": "aws-test",
    });
    expect(key.tags["credhook:credential-id"]).toMatch(/^[0-9a-f-]{36}$/);
    expect(cred.apiKey).toBe(key.value);
    expect(fake.apiGateway.plansOfKey(cred.nativeId)).toEqual([seed.planA, seed.planB].sort());
    expect(cred.resources).toEqual({
      kind: "apiKey",
      region: "us-east-1",
      keyId: cred.nativeId,
      name: key.name,
      usagePlans: [seed.planA, seed.planB].sort(),
    });
  });

  it("uses the app name without a slug, and cuts the name to 1,024 characters", async () => {
    const { cred } = await createCredential(provider, "API_KEY", [], {
      app: { appName: "x".repeat(2000), developer: "d@example.com" },
    });
    const key = fake.apiGateway.keys.get(cred.nativeId)!;
    expect(key.name.startsWith("credhook/d@example.com/xxx")).toBe(true);
    expect(key.name).toHaveLength(1024);
    expect(key.tags["credhook:app"]).toHaveLength(256);
  });

  it("imports the value core hands in", async () => {
    const { cred } = await createCredential(provider, "API_KEY", [{ id: seed.apiA, usagePlans: [seed.planA] }], {
      apiKeyValue: VALUE,
    });
    expect(cred.apiKey).toBe(VALUE);
    expect(fake.apiGateway.keys.get(cred.nativeId)?.value).toBe(VALUE);
  });

  it("attaches a plan shared by two APIs once", async () => {
    fake.apiGateway.addUsagePlan({
      id: "shared",
      apiStages: [
        { apiId: "api1", stage: "prod" },
        { apiId: "api2", stage: "prod" },
      ],
    });
    const { cred } = await createCredential(provider, "API_KEY", [
      { id: "api1", usagePlans: ["shared"] },
      { id: "api2", usagePlans: ["shared"] },
    ]);
    expect(fake.apiGateway.plansOfKey(cred.nativeId)).toEqual(["shared"]);
    expect(fake.stats().calls.CreateUsagePlanKey).toBe(1);
  });

  it("an unknown usage plan is a 422 naming plan and API that reports the key it made (partial) instead of deleting it", async () => {
    const err = (await createCredential(provider, "API_KEY", [
      { id: seed.apiA, usagePlans: [seed.planA] },
      { id: seed.apiC, usagePlans: ["nope42"] },
    ]).catch((e: unknown) => e)) as CredhookError;
    expect(err).toMatchObject({
      status: 422,
      code: "INVALID_REFERENCE",
      message: `[gateway aws-test] usage plan nope42 (API ${seed.apiC}) does not exist`,
      outcomeUnknown: false,
    });
    const [keyId] = [...fake.apiGateway.keys.keys()];
    expect(err.partial).toEqual({
      nativeId: keyId,
      resources: {
        kind: "apiKey",
        region: "us-east-1",
        keyId,
        name: "credhook/dev@example.com/590d83b5c05f",
        usagePlans: [seed.planA],
      },
    });
    expect(fake.stats().calls.DeleteApiKey).toBeUndefined(); // one place compensates: core
    expect(
      await provider.revoke({
        credentialId: fake.apiGateway.keys.get(keyId!)!.tags["credhook:credential-id"]!,
        credentialType: "API_KEY",
        app: testApp,
        ...err.partial!,
      } as ProviderCredentialRef),
    ).toBe("revoked");
    expect(fake.apiGateway.keys.size).toBe(0);
    expect(fake.apiGateway.plans.get(seed.planA)?.keys.size).toBe(0);
  });

  it("two plans on one API stage are a 422 with the key as partial", async () => {
    const err = (await createCredential(provider, "API_KEY", [
      { id: seed.apiA, usagePlans: [seed.planA, seed.planA2] },
    ]).catch((e: unknown) => e)) as CredhookError;
    expect(err).toMatchObject({ status: 422, message: expect.stringContaining("same API Stage") });
    expect(err.partial?.nativeId).toBe([...fake.apiGateway.keys.keys()][0]);
  });

  it("a value owned by another key is a 409 Conflict, and the message carries no secret", async () => {
    const { apigw } = sdkClients(fake);
    await apigw.send(new CreateApiKeyCommand({ name: "someone-else", value: VALUE }));
    const err = await createCredential(provider, "API_KEY", [], { apiKeyValue: VALUE }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 409, code: "CONFLICT" });
    expect(JSON.stringify((err as { messages: string[] }).messages)).not.toContain(VALUE);
    expect(fake.apiGateway.keys.size).toBe(1);
    apigw.destroy();
  });

  it("a retried create (same credential, same value) adopts the key the first attempt left instead of failing", async () => {
    const credentialId = randomUUID();
    const apis = [{ id: seed.apiA, usagePlans: [seed.planA] }];
    const first = await provider.create({
      credentialId,
      credentialType: "API_KEY",
      app: testApp,
      apis,
      apiKeyValue: VALUE,
    });
    fake.apiGateway.detachKey(seed.planA, first.nativeId); // the first attempt died before attaching
    const again = await provider.create({
      credentialId,
      credentialType: "API_KEY",
      app: testApp,
      apis,
      apiKeyValue: VALUE,
    });
    expect(again.nativeId).toBe(first.nativeId);
    expect(again.apiKey).toBe(VALUE);
    expect(fake.apiGateway.keys.size).toBe(1);
    expect(fake.apiGateway.plansOfKey(first.nativeId)).toEqual([seed.planA]);
  });
});
