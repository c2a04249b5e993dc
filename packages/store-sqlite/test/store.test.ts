import { describe, expect, it } from "vitest";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Conflict, NotFound, type CredentialRecord } from "@credhook/core";
import { openSqliteStore } from "../src/index.js";

const rec = (over: Partial<CredentialRecord> = {}): CredentialRecord => ({
  id: crypto.randomUUID(),
  credentialType: "API_KEY",
  appKey: "slug:app1",
  app: { appName: "App", developer: "d@example.com", appSlug: "app1" },
  publicId: "k1",
  status: "active",
  apis: [{ id: "a", gateway: "local", usagePlans: ["p"] }],
  bindings: [{ gateway: "local", nativeId: "k1", resources: { etag: "1" } }],
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
  ...over,
});

describe("SqliteCredentialStore", () => {
  const path = () => join(mkdtempSync(join(tmpdir(), "credhook-store-")), "sub", "credhook.db");

  it("creates the file 0600 in a 0700 directory, in WAL mode, migrated once", async () => {
    const p = path();
    const store = await openSqliteStore({ path: p });
    expect(statSync(p).mode & 0o777).toBe(0o600);
    expect(statSync(join(p, "..")).mode & 0o777).toBe(0o700);
    expect(store.schemaVersion()).toBe(1);
    await store.init(); // idempotent
    await store.close();
    const db = new Database(p, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.prepare("SELECT COUNT(*) AS n FROM schema_migrations").get()).toEqual({ n: 1 });
    db.close();
  });

  it("inserts, finds by public id and app key, saves, lists unfinished, deletes", async () => {
    const store = await openSqliteStore({ path: path() });
    const r = rec();
    await store.insert(r);
    expect(await store.get(r.id)).toEqual(r);
    expect(await store.findByPublicId("API_KEY", "k1")).toEqual(r);
    expect(await store.findByPublicId("CLIENT_CREDENTIALS", "k1")).toBeUndefined();
    expect(await store.findByAppKey("slug:app1", "API_KEY")).toEqual(r);
    await expect(store.insert(rec())).rejects.toBeInstanceOf(Conflict); // same app + type
    const pending = { ...r, status: "pending" as const, updatedAt: "2026-01-02T00:00:00.000Z" };
    await store.save(pending);
    expect(await store.listUnfinished("2026-01-03T00:00:00.000Z")).toEqual([pending]);
    expect(await store.listUnfinished("2026-01-01T12:00:00.000Z")).toEqual([]);
    await expect(store.save(rec({ id: "missing" }))).rejects.toBeInstanceOf(NotFound);
    const other = rec({ appKey: "slug:other", publicId: "k2" });
    await store.insert(other);
    await expect(store.save({ ...other, appKey: "slug:app1" })).rejects.toBeInstanceOf(Conflict); // one credential per app and type
    await store.delete(other.id);
    expect(await store.delete(r.id)).toBe(true);
    expect(await store.delete(r.id)).toBe(false);
    expect(await store.list()).toEqual([]);
    await store.close();
  });

  it("keeps provider state per gateway, survives a reopen", async () => {
    const p = path();
    let store = await openSqliteStore({ path: p });
    await store.stateFor("g1").put("cred:1", { a: 1 });
    await store.stateFor("g1").put("cred:2", { a: 2 });
    await store.stateFor("g1").put("other", true);
    await store.stateFor("g2").put("cred:1", "x");
    await store.close();
    store = await openSqliteStore({ path: p });
    expect(await store.stateFor("g1").get("cred:1")).toEqual({ a: 1 });
    expect((await store.stateFor("g1").list("cred:")).map((e) => e.key)).toEqual(["cred:1", "cred:2"]);
    expect(await store.stateFor("g2").get("cred:1")).toBe("x");
    expect(await store.stateFor("g1").delete("cred:1")).toBe(true);
    expect(await store.stateFor("g1").get("cred:1")).toBeUndefined();
    await store.close();
  });
});
