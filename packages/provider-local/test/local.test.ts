import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { silentLogger } from "@credhook/core";
import { hashSecret } from "@credhook/core/provider-kit";
import { memoryStateStore, ScriptedProvider } from "@credhook/provider-testkit";
import localProviderFactory, {
  type LocalProvider,
  type LocalProviderOptions,
  localCredentialReader,
} from "../src/index.js";
import { newNativeId } from "../src/native-id.js";

const make = async (options: LocalProviderOptions = {}) => {
  const state = memoryStateStore();
  const provider = (await localProviderFactory.create(options, {
    gateway: "local",
    configPath: "gateways.local.options",
    credentialType: "API_KEY",
    logger: silentLogger,
    state,
  })) as LocalProvider;
  return { provider, state };
};
const app = { appName: "A", developer: "d@example.com" };

describe("provider-local", () => {
  it("native ids are 24 characters, lower-case base 36 after their prefix, unique, and sort by the time they were made", async () => {
    const first = newNativeId("lk");
    await new Promise((r) => setTimeout(r, 2));
    const ids = Array.from({ length: 1000 }, () => newNativeId("lk"));
    for (const id of [first, ...ids]) expect(id).toMatch(/^lk[0-9a-z]{22}$/);
    expect(newNativeId("lc")).toMatch(/^lc[0-9a-z]{22}$/);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id > first).toBe(true);
    expect(Number.parseInt(first.slice(2, 11), 36)).toBeLessThanOrEqual(Date.now());
  });

  it("keeps only a SHA-256 digest of the secret, and verifies presented keys in constant time", async () => {
    const { provider, state } = await make();
    const cred = await provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app,
      apis: [{ id: "a", usagePlans: ["p"] }],
    });
    expect(cred.apiKey).toMatch(/^[0-9A-Za-z]{40}$/);
    const stored = JSON.stringify(await state.list(""));
    expect(stored).not.toContain(cred.apiKey!);
    expect(stored).toMatch(/"secretHash":"[0-9a-f]{64}"/);
    expect(await provider.verify(cred.nativeId, cred.apiKey!)).toEqual([{ id: "a", usagePlans: ["p"] }]);
    // One character changed (a key that already ends in x gets a y: 1 key in 62 does).
    const wrong = `${cred.apiKey!.slice(0, -1)}${cred.apiKey!.endsWith("x") ? "y" : "x"}`;
    expect(await provider.verify(cred.nativeId, wrong)).toBeUndefined();
  });

  it("honours secretLength and an imported value", async () => {
    const { provider } = await make({ secretLength: 64 });
    const gen = await provider.create({
      credentialId: randomUUID(),
      credentialType: "CLIENT_CREDENTIALS",
      app,
      apis: [],
    });
    expect(gen.clientSecret).toHaveLength(64);
    const imported = await provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app,
      apis: [],
      apiKeyValue: "ImportedValue0123456789abcdefghij",
    });
    expect(imported.apiKey).toBe("ImportedValue0123456789abcdefghij");
  });

  it("an imported value already in use is a Conflict; one core generated (apiKeyValueGenerated) is not looked up", async () => {
    const { provider, state } = await make();
    const value = "SharedValue0123456789abcdefghijklmn";
    await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [], apiKeyValue: value });
    await expect(
      provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [], apiKeyValue: value }),
    ).rejects.toThrow(/exists already/);
    const reads: string[] = [];
    const get = state.get.bind(state);
    state.get = (key) => (reads.push(key), get(key));
    await provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app,
      apis: [],
      apiKeyValue: "GeneratedByCore0123456789abcdefghijklm",
      apiKeyValueGenerated: true,
    });
    expect(reads.filter((k) => k.startsWith("key:"))).toEqual([]);
  });

  it("revokeMode: disable keeps the credential disabled instead of deleting it", async () => {
    const { provider, state } = await make({ revokeMode: "disable" });
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis: [] });
    const ref = {
      credentialId,
      credentialType: "API_KEY" as const,
      nativeId: cred.nativeId,
      resources: cred.resources,
      app,
    };
    expect(await provider.revoke({ ...ref, credentialId: randomUUID() })).toBe("not-owned");
    expect(await provider.verify(cred.nativeId, cred.apiKey!)).toBeTruthy();
    expect(await provider.revoke(ref)).toBe("revoked");
    expect(await state.get(`cred:${cred.nativeId}`)).toMatchObject({ enabled: false, secretHash: "" }); // the digest goes too
    expect(await provider.verify(cred.nativeId, cred.apiKey!)).toBeUndefined();
    expect(await provider.revoke(ref)).toBe("gone");
  });

  it("rotateSecret replaces the secret: the old one stops working", async () => {
    const { provider } = await make();
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis: [] });
    const ref = {
      credentialId,
      credentialType: "API_KEY" as const,
      nativeId: cred.nativeId,
      resources: cred.resources,
      app,
    };
    await expect(provider.rotateSecret({ ...ref, credentialId: randomUUID() })).rejects.toMatchObject({ status: 404 });
    const rotated = await provider.rotateSecret(ref);
    expect(rotated.apiKey).not.toBe(cred.apiKey);
    expect(await provider.verify(cred.nativeId, cred.apiKey!)).toBeUndefined();
    expect(await provider.verify(cred.nativeId, rotated.apiKey!)).toBeTruthy();
  });

  it("rejects unknown APIs when the gateway lists its APIs", async () => {
    const { provider } = await make({ apis: ["known"] });
    await expect(
      provider.create({
        credentialId: randomUUID(),
        credentialType: "API_KEY",
        app,
        apis: [{ id: "unknown", usagePlans: [] }],
      }),
    ).rejects.toMatchObject({
      status: 422,
      messages: ["[gateway local] API 'unknown' does not exist"],
    });
  });

  it("rejects duplicate plan ids in the options", async () => {
    await expect(make({ usagePlans: ["a", { id: "a", rate: { perSecond: 1 } }] })).rejects.toMatchObject({
      messages: [expect.stringContaining("gateways.local.options.usagePlans[1].id 'a' is listed twice")],
    });
  });
});

describe("the embedded gateway's reader (localCredentialReader)", () => {
  it("is the provider of a provider: local gateway, and nothing for any other provider", async () => {
    const { provider } = await make();
    expect(localCredentialReader(provider)).toBe(provider);
    expect(localCredentialReader(new ScriptedProvider())).toBeUndefined();
  });

  it("finds a key by its digest through the index; keys created before the index are indexed by ensureKeyIndex", async () => {
    const { provider, state } = await make();
    const p = localCredentialReader(provider)!;
    const cred = await provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app,
      apis: [{ id: "orders", usagePlans: ["gold"] }],
    });
    expect(await p.findByKeyDigest(hashSecret(cred.apiKey!))).toMatchObject({
      nativeId: cred.nativeId,
      enabled: true,
      apis: [{ id: "orders", usagePlans: ["gold"] }],
    });
    expect(await state.get(`key:${hashSecret(cred.apiKey!)}`)).toEqual({ nativeId: cred.nativeId });

    // As an older version left it: a credential without an index entry, and no mark of a complete index.
    await state.put("cred:lkold", {
      credentialType: "API_KEY",
      credentialId: "c",
      secretHash: hashSecret("old-key"),
      enabled: true,
      apis: [],
      appName: "Old",
      developer: "d",
      createdAt: "",
      updatedAt: "",
    });
    expect(await p.findByKeyDigest(hashSecret("old-key"))).toBeUndefined();
    expect(await p.ensureKeyIndex()).toBe(1);
    expect(await p.findByKeyDigest(hashSecret("old-key"))).toMatchObject({ nativeId: "lkold", appName: "Old" });
    expect(await p.ensureKeyIndex()).toBe(0);
  });

  it("ensureKeyIndex reads the keys once per store: once the indexes are complete, a start reads no key", async () => {
    const { provider, state } = await make();
    const p = localCredentialReader(provider)!;
    await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [] });
    expect(await p.ensureKeyIndex()).toBe(0); // the first pass: every key already indexed, the index marked complete
    const listed: string[] = [];
    const list = state.list.bind(state);
    const listPage = state.listPage!.bind(state);
    state.list = (prefix) => {
      listed.push(prefix);
      return list(prefix);
    };
    state.listPage = (prefix, query) => {
      listed.push(prefix);
      return listPage(prefix, query);
    };
    // A key only an older version's write could leave unindexed is not looked for again: the pass lists nothing.
    await state.put("cred:lkold", { credentialType: "API_KEY", secretHash: hashSecret("old-key") } as never);
    expect(await p.ensureKeyIndex()).toBe(0);
    expect(listed).toEqual([]);
  });

  it("a stale index entry never grants: the credential's digest must match", async () => {
    const { provider, state } = await make();
    const p = localCredentialReader(provider)!;
    const cred = await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [] });
    await state.put(`key:${hashSecret("other")}`, { nativeId: cred.nativeId });
    expect(await p.findByKeyDigest(hashSecret("other"))).toBeUndefined();
  });
});
