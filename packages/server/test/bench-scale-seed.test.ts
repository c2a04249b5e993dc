/**
 * The seeder of `pnpm bench --scale` (scripts/bench-scale-seed.ts) writes a SQLite store that credhook reads as its
 * own: the counts the triggers keep match what was seeded, an app is found by its slug, the embedded provider's key
 * index points at each credential's state (the key's digest only), and an expiry pass finds the marks as the seeded
 * pass of a day ago left them — it writes only the credentials that came due since, so the benchmark's pass measures
 * a pass of a running deployment, not a first one.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findCredentials } from "@credhook/core";
import { openSqliteStore, type SqliteCredentialStore } from "@credhook/store-sqlite";
import {
  SCALE_EXPIRY,
  SCALE_GATEWAY,
  seedSqlite,
  seededApp,
  type SeedSummary,
} from "../../../scripts/bench-scale-seed.js";
import { loadConfigFile } from "../src/config.js";
import { createLogger } from "../src/logging.js";
import { createRuntime } from "../src/runtime.js";

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
    expect(seeded).toMatchObject({ credentials: COUNT, pending: BACKLOG, stateRows: 2 * COUNT + 1 });
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

  it("an expiry pass writes only the credentials due since the seeded pass (a warning or an expiry each), and the next one nothing", async () => {
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
