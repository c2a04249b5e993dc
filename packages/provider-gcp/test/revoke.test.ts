import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { rawClient } from "./fake-client.js";
import { makeProvider, rejection, rpcsSince } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Revoke App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];

describe("revoke", () => {
  it("soft-deletes the key once; revoking twice succeeds without a second delete", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    const ref = {
      credentialId,
      credentialType: "API_KEY" as const,
      nativeId: cred.nativeId,
      resources: cred.resources,
      app,
    };
    const mark = fake.requests().length;
    await provider.revoke(ref);
    expect(fake.key(cred.nativeId)!.deleteTime).toBeTruthy();
    await provider.revoke(ref);
    expect(rpcsSince(fake, mark).filter((r) => r !== "GetOperation")).toEqual(["GetKey", "DeleteKey", "GetKey"]);
    expect(await rejection(provider.readSecret(ref))).toMatchObject({ status: 404 });
    await provider.close();
  });

  it("a key purged for good, or never created, is success", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    const ref = {
      credentialId,
      credentialType: "API_KEY" as const,
      nativeId: cred.nativeId,
      resources: cred.resources,
      app,
    };
    await provider.revoke(ref);
    fake.control.purge(cred.nativeId);
    await provider.revoke(ref);
    await provider.revoke({ ...ref, nativeId: "never-created" });
    await provider.revoke({ ...ref, nativeId: "NOT/a/key" });
    await provider.close();
  });

  it("leaves alone a key credhook does not manage (core revokes unknown ids on every gateway)", async () => {
    const provider = await makeProvider(fake);
    const client = rawClient(fake);
    const [op] = await client.createKey({
      parent: "projects/fake-project/locations/global",
      keyId: "a1b2c3d4e5",
      key: { displayName: "hand-made" },
    });
    await op.promise();
    await client.close();
    await provider.revoke({ credentialId: "", credentialType: "API_KEY", nativeId: "a1b2c3d4e5", resources: {}, app });
    expect(fake.key("a1b2c3d4e5")!.deleteTime).toBeUndefined();
    await provider.close();
  });

  it("with no native id (a create that failed before returning one) finds the key by its credential id", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    await provider.revoke({ credentialId, credentialType: "API_KEY", nativeId: "", resources: {}, app });
    expect(fake.key(cred.nativeId)!.deleteTime).toBeTruthy();
    await provider.close();
  });

  it("revokes by the request's id alone (no credential id, store lost)", async () => {
    const provider = await makeProvider(fake);
    const cred = await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis });
    await provider.revoke({ credentialId: "", credentialType: "API_KEY", nativeId: cred.nativeId, resources: {}, app });
    expect(fake.key(cred.nativeId)!.deleteTime).toBeTruthy();
    await provider.close();
  });
});
