/**
 * The seeder of `pnpm bench --scale` (scripts/bench-scale-seed.ts) writes a SQLite store that credhook reads as its
 * own: the counts the triggers keep match what was seeded, an app is found by its slug, the embedded provider's key
 * index points at each credential's state (the key's digest only), and an expiry pass finds the marks as the seeded
 * pass of a day ago left them — it writes only the credentials that came due since, so the benchmark's pass measures
 * a pass of a running deployment, not a first one. A serve start on it is an ordinary restart — the embedded provider's
 * indexes are marked complete (no credential read at start, `findByCredential` by its `cid:` entry) and serve's drift
 * count waits until after ready — and `forgetStarts` makes it the first start after an upgrade again.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CredhookConfig, findCredentials, silentLogger } from "@credhook/core";
import type { ProviderStateStore } from "@credhook/core/provider";
import type { CredentialStore } from "@credhook/core/store";
import localProvider from "@credhook/provider-local";
import { openSqliteStore, type SqliteCredentialStore } from "@credhook/store-sqlite";
import {
  forgetStarts,
  SCALE_EXPIRY,
  SCALE_GATEWAY,
  seedSqlite,
  seededApp,
  type SeedSummary,
} from "../../../scripts/bench-scale-seed.js";
import { loadConfigFile } from "../src/config.js";
import { watchDrift } from "../src/drift-check.js";
import { createLogger } from "../src/logging.js";
import { type CredhookRuntime, createRuntime } from "../src/runtime.js";

const COUNT = 2000;
const BACKLOG = 300;

describe("the scale benchmark's seeder, on SQLite", () => {
  const dir = mkdtempSync(join(tmpdir(), "credhook-seed-"));
  const path = join(dir, "credhook.db");
  let seeded: SeedSummary;
  let store: SqliteCredentialStore;

  beforeAll(async () => {
    seeded = await seedSqlite(path, { count: COUNT, backlog: BACKLOG });
    store = await openSqliteStore({ path });
  });
  afterAll(() => store?.close());

  it("the store counts what was seeded: every record active, the backlog pending, the other events delivered", async () => {
    expect(seeded).toMatchObject({ credentials: COUNT, pending: BACKLOG, stateRows: 3 * COUNT + 4 });
    expect(await store.counts()).toEqual({
      byStatus: { pending: 0, active: COUNT, revoking: 0, abandoned: 0 },
      unsettled: 0,
    });
    expect(await store.outbox.counts()).toEqual({ pending: BACKLOG, delivered: seeded.events - BACKLOG, dead: 0 });
    expect((await store.list()).length).toBe(COUNT);
  });

  it("an app is found by its slug, and the embedded provider's key index points at its state, which keeps the key's digest only", async () => {
    const [rec, ...more] = await findCredentials(store, { app: seededApp(7).appSlug });
    expect(more).toEqual([]);
    const state = store.stateFor(SCALE_GATEWAY);
    const cred = (await state.get(`cred:${rec!.publicId}`)) as { credentialId: string; secretHash: string };
    expect(cred.credentialId).toBe(rec!.id);
    expect(cred.secretHash).toMatch(/^[0-9a-f]{64}$/);
    expect(rec!.keyFingerprint).toBe(`sha256:${cred.secretHash.slice(0, 32)}`);
    expect(await state.get(`key:${cred.secretHash}`)).toEqual({ nativeId: rec!.publicId });
  });

  /** A config of the seeded store: its gateway with the seeded expiry policy. @returns the file's path */
  function configFile(): string {
    const file = join(dir, "webhook.config.yaml");
    writeFileSync(
      file,
      `server: { auth: { users: [ { username: portal, password: "seed-test-password-1" } ] } }
store: { sqlite: ${JSON.stringify(path)} }
dataDir: ${JSON.stringify(dir)}
gateways:
  ${SCALE_GATEWAY}: { provider: local, credentialType: API_KEY, expiry: ${JSON.stringify(SCALE_EXPIRY)} }
routes: [ { default: ${SCALE_GATEWAY} } ]
`,
    );
    return file;
  }

  /**
   * What serve's start does on the store, seen from outside: how many credentials the embedded provider's key-index
   * pass indexes (its state's listings counted), and whether serve's drift count walks the records before it is
   * ready (the walk held until a turn of the event loop after `watchDrift` could have answered).
   */
  async function startOn(runtime: CredhookRuntime, config: CredhookConfig) {
    const state = runtime.store.stateFor(SCALE_GATEWAY);
    let listings = 0;
    const counted: ProviderStateStore = {
      ...state,
      get: (key) => state.get(key),
      put: (key, value) => state.put(key, value),
      delete: (key) => state.delete(key),
      list: (prefix) => (listings++, state.list(prefix)),
      listPage: (prefix, page) => (listings++, state.listPage!(prefix, page)),
    } as ProviderStateStore;
    const provider = await localProvider.create(
      {},
      {
        gateway: SCALE_GATEWAY,
        configPath: "gateways.local.options",
        credentialType: "API_KEY",
        logger: silentLogger,
        state: counted,
      },
    );
    const indexed = await (provider as unknown as { ensureKeyIndex(): Promise<number> }).ensureKeyIndex();
    const atIndex = listings;
    const [rec] = await findCredentials(runtime.store, { app: seededApp(11).appSlug });
    const found = await provider.findByCredential!({
      credentialId: rec!.id,
      credentialType: "API_KEY",
      app: rec!.app,
      apis: [],
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const held = {
      stateFor: (g: string) => runtime.store.stateFor(g),
      listPage: async (o: Parameters<CredentialStore["listPage"]>[0]) => {
        await gate;
        return runtime.store.listPage(o);
      },
    } as unknown as CredentialStore;
    let ioTurn = false;
    let ioBeforeCount: boolean | undefined;
    const started = watchDrift(
      { store: held, orchestrator: runtime.orchestrator, logger: createLogger("silent") },
      config,
      () => {
        ioBeforeCount ??= ioTurn;
      },
    );
    const turn = new Promise<"walked before ready">((r) => setImmediate(() => r("walked before ready")));
    const first = await Promise.race([started.then(() => "ready" as const), turn]);
    // A turn of the event loop (where a request's I/O is handled) asked for as the walk goes on.
    setImmediate(() => {
      ioTurn = true;
    });
    release();
    await (await started)();
    return {
      indexed,
      listingsAtIndex: atIndex,
      found: found.map((f) => f.nativeId),
      drift: first,
      ioBeforeCount,
      publicId: rec!.publicId,
    };
  }

  it("a serve start on it is an ordinary restart, and the first after an upgrade once forgetStarts took the marks away", async () => {
    await store.close();
    const config = await loadConfigFile(configFile());
    const startOnce = async () => {
      const runtime = await createRuntime(config, { logger: createLogger("silent") });
      try {
        return await startOn(runtime, config);
      } finally {
        await runtime.close();
      }
    };
    try {
      let start = await startOnce();
      // Nothing indexed, no listing of the state: the credential found by its one cid: entry; the count after ready,
      // letting the event loop serve between its pages (SQLite answers at once: its walk must not hold requests off).
      expect(start).toMatchObject({ indexed: 0, listingsAtIndex: 0, drift: "ready", ioBeforeCount: true });
      expect(start.found).toEqual([start.publicId]);

      expect(await forgetStarts({ sqlite: path })).toBe(COUNT + 3);
      start = await startOnce();
      expect(start).toMatchObject({ indexed: COUNT, drift: "walked before ready" });
      expect(start.listingsAtIndex).toBeGreaterThan(0);
      expect(start.found).toEqual([start.publicId]);
    } finally {
      store = await openSqliteStore({ path });
    }
  });

  it("an expiry pass writes only the credentials due since the seeded pass (a warning or an expiry each), and the next one nothing", async () => {
    const file = configFile();
    const before = new Map((await store.list()).map((r) => [r.id, r.updatedAt]));
    await store.close();
    const runtime = await createRuntime(await loadConfigFile(file), { logger: createLogger("silent") });
    try {
      const pass = await runtime.orchestrator.expiryPass();
      // Creation times span 91 days: about 1/91 of the credentials reached their warning, and as many their expiry, in the last day.
      expect(pass.warned).toBeGreaterThan(COUNT / 91 - 5);
      expect(pass.expired).toBeGreaterThan(COUNT / 91 - 5);
      const written = (await runtime.store.list()).filter((r) => r.updatedAt !== before.get(r.id));
      expect(written.length).toBe(pass.warned + pass.expired);
      expect(await runtime.orchestrator.expiryPass()).toMatchObject({ warned: 0, expired: 0, failed: 0 });
    } finally {
      await runtime.close();
      store = await openSqliteStore({ path });
    }
  });
});
