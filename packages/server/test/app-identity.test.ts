/**
 * App identities through the HTTP interface: apps without a slug never collide
 * across developers, a replayed create matches only the same developer, and a
 * revoked key's digest does not stay in the store file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { hashSecret } from "@credhook/core/provider-kit";
import { LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(LOCAL_YAML);
});
afterAll(() => s.close());

type Created = { apiKeyId: string; apiKey: string };
const create = async (body: Record<string, unknown>) => {
  const r = await s.call("/v1/createCredentials", { apis: [{ id: "5aba4csvd4" }], ...body });
  expect(r.status).toBe(200);
  return r.json as Created;
};
/** The digest the embedded provider keeps for a key id. */
const digestOf = async (apiKeyId: string) =>
  ((await s.credhook.store.stateFor("local").get(`cred:${apiKeyId}`)) as { secretHash?: string } | undefined)
    ?.secretHash;

describe("app identity", () => {
  it("developer 'D' + app 'x/Y' and developer 'D/x' + app 'Y' are two apps: each gets its own credential, neither key is rotated", async () => {
    const first = await create({ developer: "D", appName: "x/Y" });
    const second = await create({ developer: "D/x", appName: "Y" });
    expect(second.apiKeyId).not.toBe(first.apiKeyId);
    expect(await digestOf(first.apiKeyId)).toBe(hashSecret(first.apiKey)); // the first key still works
    expect(await digestOf(second.apiKeyId)).toBe(hashSecret(second.apiKey));
    // Each one's replay finds its own.
    expect((await create({ developer: "D", appName: "x/Y" })).apiKeyId).toBe(first.apiKeyId);
    expect((await create({ developer: "D/x", appName: "Y" })).apiKeyId).toBe(second.apiKeyId);
  });

  it("a replayed create matches only the same developer, even with the same appSlug", async () => {
    const mine = await create({ developer: "owner@example.com", appName: "Shared", appSlug: "0a1b2c3d4e5f" });
    const theirs = await create({ developer: "intruder@example.com", appName: "Shared", appSlug: "0a1b2c3d4e5f" });
    expect(theirs.apiKeyId).not.toBe(mine.apiKeyId);
    expect(theirs.apiKey).not.toBe(mine.apiKey);
    expect(await digestOf(mine.apiKeyId)).toBe(hashSecret(mine.apiKey)); // not rotated by the other developer's call
    expect(
      (await create({ developer: "owner@example.com", appName: "Shared", appSlug: "0a1b2c3d4e5f" })).apiKeyId,
    ).toBe(mine.apiKeyId);
  });
});

describe("the store file", () => {
  it("a revoked key's digest is not left in the SQLite file", async () => {
    const db = join(s.dir, "credhook.db");
    const fileBytes = () =>
      [db, `${db}-wal`]
        .filter(existsSync)
        .map((f) => readFileSync(f).toString("latin1"))
        .join("");
    const keys = await Promise.all(
      Array.from({ length: 5 }, (_, i) => create({ developer: "gone@example.com", appName: `Revoked ${i}` })),
    );
    const digests = keys.map((k) => hashSecret(k.apiKey));
    const before = fileBytes();
    expect(digests.every((d) => before.includes(d))).toBe(true); // they are there while the keys live
    for (const k of keys)
      expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: k.apiKeyId })).status).toBe(
        204,
      );
    await s.close(); // checkpoints the WAL into the file
    const after = fileBytes();
    expect(after.length).toBeGreaterThan(0);
    for (const d of digests) expect(after.includes(d), d).toBe(false);
    s = await startTestServer(LOCAL_YAML); // for afterAll
  });
});
