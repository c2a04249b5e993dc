// The embedded provider in bounded memory (issue 35): reconcile reads its credentials a page of state at a time,
// and findByCredential reads a credential's index entries, never every key — on the SQLite store of the embedded
// default config, whose state's `list` (every key of a prefix at once) fails here, so that only pages can be used.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { createRouter, Orchestrator, silentLogger } from "@credhook/core";
import type { ProviderStateStore } from "@credhook/core/provider";
import { memoryStateStore } from "@credhook/provider-testkit";
import { openSqliteStore, type SqliteCredentialStore } from "@credhook/store-sqlite";
import localProviderFactory, { type LocalProvider, localCredentialReader } from "../src/index.js";

/** What a test's state saw: the prefix and size of each page read (and `before()` when it was asked for, if set). */
interface StateReads {
  pages: Array<{ prefix: string; limit: number; entries: number; before?: number }>;
  before?: () => number;
}

/** `state` whose `list` throws (a read of every key), with each `listPage` call recorded in `reads`. */
function pagesOnly(state: ProviderStateStore, reads: StateReads): ProviderStateStore {
  const listPage = state.listPage!.bind(state);
  return {
    ...state,
    list: async (prefix) => {
      throw new Error(`state.list('${prefix}') read every key of a prefix at once`);
    },
    listPage: async (prefix, query) => {
      const before = reads.before?.();
      const page = await listPage(prefix, query);
      reads.pages.push({
        prefix,
        limit: query.limit,
        entries: page.entries.length,
        ...(before !== undefined ? { before } : {}),
      });
      return page;
    },
  };
}

/** A `provider: local` gateway named `local` (API keys, default options) on `state`. */
const localProvider = async (state: ProviderStateStore) =>
  (await localProviderFactory.create(
    {},
    { gateway: "local", configPath: "gateways.local.options", credentialType: "API_KEY", logger: silentLogger, state },
  )) as LocalProvider;

const app = (n: number) => ({ appName: `App ${n}`, developer: "d@example.com" });

describe("the embedded provider's state a page at a time", () => {
  let store: SqliteCredentialStore;
  let orch: Orchestrator;
  afterEach(async () => {
    await orch?.close();
    await store?.close();
  });

  /** An orchestrator with one `provider: local` gateway on a SQLite store, its state read in pages only. */
  const setup = async (wrap: (state: ProviderStateStore) => ProviderStateStore) => {
    store = await openSqliteStore({ path: join(mkdtempSync(join(tmpdir(), "credhook-local-")), "credhook.db") });
    const state = wrap(store.stateFor("local"));
    const provider = await localProvider(state);
    orch = new Orchestrator({
      gateways: new Map([["local", { name: "local", providerType: "local", credentialType: "API_KEY", provider }]]),
      router: createRouter([{ default: "local" }]),
      store,
      abandonSettleMs: 0,
      compensationAttempts: 1,
    });
    return provider;
  };

  it("reconcile finds an orphan beyond the first page of 500 keys, reading the gateway's credentials in pages only", async () => {
    const reads: StateReads = { pages: [] };
    const provider = await setup((s) => pagesOnly(s, reads));
    for (let i = 0; i < 510; i += 30)
      await Promise.all(Array.from({ length: 30 }, (_, j) => orch.create({ ...app(i + j), apis: [{ id: "orders" }] })));
    // Made on the gateway with no record (the 511th key in key order: native ids grow with time).
    const ghost = await provider.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app: app(0),
      apis: [],
    });
    reads.pages.length = 0;
    // Reconcile reads each listed credential's record by id (a page's at once: getMany): count them, to see when
    // each page was read.
    let recordReads = 0;
    const get = store.get.bind(store);
    store.get = (id) => ((recordReads += 1), get(id));
    const getMany = store.getMany.bind(store);
    store.getMany = (ids) => ((recordReads += ids.length), getMany(ids));
    reads.before = () => recordReads;
    const report = await orch.reconcile({ dryRun: true, olderThanMs: 0 });
    expect(report.unlistable).toEqual([]); // a read of every key would have failed the listing
    expect(report.orphans.map((o) => [o.gateway, o.nativeId])).toEqual([["local", ghost.nativeId]]);
    expect(report.garbage).toEqual([]);
    // Two pages of the credentials, 500 then the 11 after them, the second read once the first page's 500 records
    // had been read: a page at a time, never the listing held whole.
    expect(reads.pages.filter((p) => p.prefix === "cred:")).toEqual([
      { prefix: "cred:", limit: 500, entries: 500, before: 0 },
      { prefix: "cred:", limit: 500, entries: 11, before: 500 },
    ]);
  });

  it("a create whose state write landed but whose answer was lost is found by its credential-id entry and rolled back", async () => {
    const reads: StateReads = { pages: [] };
    let loseAnswer = false;
    const provider = await setup((s) => {
      const paged = pagesOnly(s, reads);
      const write = paged.write!.bind(paged);
      return {
        ...paged,
        write: async (changes) => {
          await write(changes);
          if (loseAnswer && changes.some((c) => c.key.startsWith("cred:"))) {
            loseAnswer = false;
            throw new Error("the store's answer was lost after its commit");
          }
        },
      };
    });
    for (let i = 0; i < 5; i++) await orch.create({ ...app(i), apis: [{ id: "orders" }] });
    expect(await localCredentialReader(provider)!.ensureKeyIndex()).toBe(0); // every credential indexed as made
    reads.pages.length = 0;
    loseAnswer = true;
    await expect(orch.create({ ...app(9), apis: [{ id: "orders" }] })).rejects.toThrow();
    // The search read the failed credential's index entries only (its one entry), never the gateway's credentials.
    expect(reads.pages.length).toBeGreaterThan(0);
    for (const p of reads.pages) expect(p.prefix).toMatch(/^cid:[0-9a-f-]{36}:$/);
    expect(reads.pages[0]!.entries).toBe(1);
    // Nothing of the failed create is left on the gateway: the search found it and core revoked it.
    const left = (await provider.listOwned()).map((r) => r.credentialId);
    expect(left).toHaveLength(5);
    const records = await store.list();
    expect(new Set(left)).toEqual(new Set(records.filter((r) => r.status === "active").map((r) => r.id)));
  });
});

describe("findByCredential on a store written before the credential-id index", () => {
  it("reads every credential a page at a time until ensureKeyIndex's pass indexes them once, then the index only", async () => {
    const reads: StateReads = { pages: [] };
    const state = pagesOnly(memoryStateStore(), reads);
    const provider = await localProvider(state);
    const credentialId = randomUUID();
    const made = await provider.create({ credentialId, credentialType: "API_KEY", app: app(1), apis: [] });
    await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app: app(2), apis: [] });
    // As a version before the index left it: no credential-id entry, no mark of a complete index.
    await state.delete(`cid:${credentialId}:${made.nativeId}`);
    const old = await localProvider(state);
    const found = [
      { nativeId: made.nativeId, credentialId, live: true, description: "API_KEY of d@example.com/App 1" },
    ];
    expect(await old.findByCredential({ credentialId, credentialType: "API_KEY", app: app(1), apis: [] })).toEqual(
      found,
    );
    expect(reads.pages.map((p) => p.prefix)).toEqual(["cred:"]);
    expect(await old.ensureKeyIndex()).toBe(1); // the one credential without its entry
    expect(await old.ensureKeyIndex()).toBe(0);
    reads.pages.length = 0;
    expect(await old.findByCredential({ credentialId, credentialType: "API_KEY", app: app(1), apis: [] })).toEqual(
      found,
    );
    expect(reads.pages).toEqual([{ prefix: `cid:${credentialId}:`, limit: 500, entries: 1 }]);
    // A revoke removes the entry with the credential.
    await old.revoke({ credentialId, credentialType: "API_KEY", nativeId: made.nativeId, resources: {}, app: app(1) });
    expect(await state.listPage!("cid:", { limit: 10 })).toMatchObject({ entries: [{ value: true }] });
    expect(await old.findByCredential({ credentialId, credentialType: "API_KEY", app: app(1), apis: [] })).toEqual([]);
  });

  it("after the index is complete, a credential an older instance wrote without its entry (a rolling upgrade) is still found, by a paged read", async () => {
    const reads: StateReads = { pages: [] };
    const state = pagesOnly(memoryStateStore(), reads);
    const provider = await localProvider(state);
    await provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app: app(2), apis: [] });
    expect(await provider.ensureKeyIndex()).toBe(0); // marks the index complete
    // An instance of the version before the index, sharing the store, creates a credential: no `cid:` entry.
    const credentialId = randomUUID();
    const made = await provider.create({ credentialId, credentialType: "API_KEY", app: app(1), apis: [] });
    await state.delete(`cid:${credentialId}:${made.nativeId}`);
    reads.pages.length = 0;
    expect(await provider.findByCredential({ credentialId, credentialType: "API_KEY", app: app(1), apis: [] })).toEqual(
      [{ nativeId: made.nativeId, credentialId, live: true, description: "API_KEY of d@example.com/App 1" }],
    );
    expect(reads.pages.map((p) => p.prefix)).toEqual([`cid:${credentialId}:`, "cred:"]);
  });

  it("the key index alone (what the gateway builds before it serves) leaves the credential-id pass to the background; a stopped pass marks nothing", async () => {
    const reads: StateReads = { pages: [] };
    const state = pagesOnly(memoryStateStore(), reads);
    const provider = await localProvider(state);
    const credentialId = randomUUID();
    const made = await provider.create({ credentialId, credentialType: "API_KEY", app: app(1), apis: [] });
    // As the version before the credential-id index left the store: the key index complete, no `cid:` entry.
    await state.delete(`cid:${credentialId}:${made.nativeId}`);
    await state.put("meta:key-index-complete", true);
    const upgraded = await localProvider(state);
    reads.pages.length = 0;
    expect(await upgraded.ensureKeyIndex({ credentialIds: false })).toBe(0);
    expect(reads.pages).toEqual([]); // the key index is complete: no credential read before serving
    const stopped = new AbortController();
    stopped.abort();
    expect(await upgraded.ensureKeyIndex({ keys: false, signal: stopped.signal })).toBe(0);
    expect(await state.get("meta:credential-index-complete")).toBeUndefined();
    const search = { credentialId, credentialType: "API_KEY" as const, app: app(1), apis: [] };
    expect((await upgraded.findByCredential(search)).map((r) => r.nativeId)).toEqual([made.nativeId]); // by the scan
    expect(await upgraded.ensureKeyIndex({ keys: false })).toBe(1);
    expect(await state.get("meta:credential-index-complete")).toBe(true);
    reads.pages.length = 0;
    expect((await upgraded.findByCredential(search)).map((r) => r.nativeId)).toEqual([made.nativeId]);
    expect(reads.pages.map((p) => p.prefix)).toEqual([`cid:${credentialId}:`]);
  });
});
