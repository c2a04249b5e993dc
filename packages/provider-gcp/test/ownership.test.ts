import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ProviderCredentialRef } from "@credhook/core/provider";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { ANNOTATIONS, keyIdFor } from "../src/mapping.js";
import { GATEWAY, makeProvider, rejection, rpcsSince } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Owned App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: ["gold"] }];
const noop = apis.map((a) => ({
  id: a.id,
  action: "NONE" as const,
  usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
}));
const ref = (nativeId: string, credentialId = ""): ProviderCredentialRef => ({
  credentialId,
  credentialType: "API_KEY",
  nativeId,
  resources: {},
  app,
});

describe("ownership: credhook's mark is the gateway and credential-id annotations", () => {
  it("every created key carries the mark of its gateway and credential", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    expect(fake.key(cred.nativeId)!.annotations).toMatchObject({
      [ANNOTATIONS.gateway]: GATEWAY,
      [ANNOTATIONS.credentialId]: credentialId,
    });
    await provider.close();
  });

  it("a key someone else made in the project survives revoke (with and without a credential id) and update, untouched", async () => {
    const provider = await makeProvider(fake);
    const foreign = fake.createForeignKey({
      keyId: "made-by-hand",
      restrictions: { apiTargets: [{ service: "maps.googleapis.com" }] },
    });
    const mark = fake.requests().length;
    expect(await provider.revoke(ref("made-by-hand"))).toBe("not-owned");
    expect(await provider.revoke(ref("made-by-hand", randomUUID()))).toBe("not-owned");
    expect(
      await rejection(provider.update({ ...ref("made-by-hand"), previous: apis, desired: apis, changes: noop })),
    ).toMatchObject({ status: 404 });
    expect(await rejection(provider.readSecret(ref("made-by-hand")))).toMatchObject({ status: 404 });
    expect(rpcsSince(fake, mark).every((r) => r === "GetKey")).toBe(true);
    expect(fake.key("made-by-hand")).toEqual(foreign);
    await provider.close();
  });

  it("a key with only a credential-id annotation (another tool using the same key name) is not this gateway's", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    fake.createForeignKey({ keyId: "half-marked", annotations: { [ANNOTATIONS.credentialId]: credentialId } });
    expect(await provider.revoke(ref("half-marked", credentialId))).toBe("not-owned");
    expect(await provider.revoke(ref("half-marked"))).toBe("not-owned");
    expect(fake.key("half-marked")!.deleteTime).toBeUndefined();
    await provider.close();
  });

  it("another gateway on the same project never revokes, updates, reads or finds this gateway's key", async () => {
    const provider = await makeProvider(fake);
    const other = await makeProvider(fake, {}, "API_KEY", "gcp-other");
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    const before = fake.key(cred.nativeId);
    expect(await other.revoke(ref(cred.nativeId))).toBe("not-owned");
    expect(await other.revoke(ref(cred.nativeId, credentialId))).toBe("not-owned");
    expect(await other.revoke(ref("", credentialId))).toBe("not-owned");
    expect(
      await rejection(other.update({ ...ref(cred.nativeId), previous: apis, desired: [], changes: [] })),
    ).toMatchObject({ status: 404 });
    expect(await other.findByCredential({ credentialId, credentialType: "API_KEY", app, apis })).toEqual([]);
    expect(fake.key(cred.nativeId)).toEqual(before);
    await other.close();
    await provider.close();
  });

  it("a revoke naming another credential id is 'not-owned'; an unknown-id revoke ('' credential id) acts on the gateway's mark", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    expect(await provider.revoke(ref(cred.nativeId, randomUUID()))).toBe("not-owned");
    expect(fake.key(cred.nativeId)!.deleteTime).toBeUndefined();
    expect(await provider.revoke(ref(cred.nativeId))).toBe("revoked");
    expect(await provider.revoke(ref(cred.nativeId))).toBe("gone");
    expect(await provider.revoke(ref("never-existed"))).toBe("gone");
    expect(await provider.revoke(ref(""))).toBe("gone");
    await provider.close();
  });
});

describe("findByCredential", () => {
  it("is one getKey of the keyId derived from the credential id: the live, marked key, or nothing", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const search = { credentialId, credentialType: "API_KEY" as const, app, apis };
    expect(await provider.findByCredential(search)).toEqual([]);
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    const mark = fake.requests().length;
    const found = await provider.findByCredential(search);
    expect(rpcsSince(fake, mark)).toEqual(["GetKey"]);
    expect(found).toEqual([
      { nativeId: cred.nativeId, credentialId, description: expect.stringContaining("Owned App (dev@example.com)") },
    ]);
    await provider.revoke(ref(cred.nativeId, credentialId));
    expect(await provider.findByCredential(search)).toEqual([]);
    expect(await provider.findByCredential({ ...search, credentialId: "" })).toEqual([]);
    await provider.close();
  });

  it("does not return a key at the derived keyId that lacks the mark", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    fake.createForeignKey({ keyId: keyIdFor(credentialId, "credhook-") });
    expect(await provider.findByCredential({ credentialId, credentialType: "API_KEY", app, apis })).toEqual([]);
    await provider.close();
  });
});

describe("adopt (credhook adopt)", () => {
  it("puts credhook's mark on a foreign key with an annotations-only update, keeping its restrictions and other annotations; then it is managed", async () => {
    const provider = await makeProvider(fake);
    const foreign = fake.createForeignKey({
      keyId: "legacy-key",
      annotations: { "team/owner": "payments" },
      restrictions: { apiTargets: [{ service: "maps.googleapis.com" }] },
    });
    const credentialId = randomUUID();
    const mark = fake.requests().length;
    const res = await provider.adopt({ ...ref("legacy-key", credentialId), apis });
    expect(rpcsSince(fake, mark).filter((r) => r !== "GetOperation")).toEqual(["GetKey", "UpdateKey"]);
    const patch = fake
      .requests()
      .slice(mark)
      .find((r) => r.rpc === "UpdateKey")!;
    expect(new URL(patch.url, "http://x").searchParams.get("updateMask")).toBe("annotations");
    const key = fake.key("legacy-key")!;
    expect(key.annotations).toMatchObject({
      "team/owner": "payments",
      [ANNOTATIONS.gateway]: GATEWAY,
      [ANNOTATIONS.credentialId]: credentialId,
    });
    expect(key.restrictions).toEqual(foreign.restrictions);
    expect(key.keyString).toBe(foreign.keyString);
    expect(res.resources).toEqual({
      keyName: "projects/fake-project/locations/global/keys/legacy-key",
      uid: foreign.uid,
    });
    // adopted: revoke now acts on it
    expect(await provider.revoke(ref("legacy-key", credentialId))).toBe("revoked");
    await provider.close();
  });

  it("adopting a key that already carries this credential's mark writes nothing", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    const mark = fake.requests().length;
    await provider.adopt({ ...ref(cred.nativeId, credentialId), apis });
    expect(rpcsSince(fake, mark)).toEqual(["GetKey"]);
    await provider.close();
  });

  it("refuses (409) a key with another gateway's or another credential's mark, and 404s a missing or deleted key", async () => {
    const provider = await makeProvider(fake);
    const other = await makeProvider(fake, {}, "API_KEY", "gcp-other");
    const theirs = await other.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis });
    const before = fake.key(theirs.nativeId);
    const err = await rejection(provider.adopt({ ...ref(theirs.nativeId, randomUUID()), apis }));
    expect(err).toMatchObject({ status: 409, code: "CONFLICT" });
    expect((err as Error).message).toContain("gateway 'gcp-other'");
    expect(fake.key(theirs.nativeId)).toEqual(before);

    const mine = await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis });
    expect(await rejection(provider.adopt({ ...ref(mine.nativeId, randomUUID()), apis }))).toMatchObject({
      status: 409,
    });

    expect(await rejection(provider.adopt({ ...ref("no-such-key", randomUUID()), apis }))).toMatchObject({
      status: 404,
    });
    await provider.revoke(ref(mine.nativeId));
    expect(await rejection(provider.adopt({ ...ref(mine.nativeId, randomUUID()), apis }))).toMatchObject({
      status: 404,
    });
    await other.close();
    await provider.close();
  });
});
