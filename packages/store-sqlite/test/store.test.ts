import { describe, expect, it, vi } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { appKeyOf, type CredentialRecord } from "@credhook/core/store";
import { credentialEvent, silentLogger } from "@credhook/core";
import { Conflict, NotFound, StoreUnavailable } from "@credhook/core/errors";
import { hashSecret } from "@credhook/core/provider-kit";
import { storeConformance } from "@credhook/provider-testkit";
import sqliteStoreFactory, { DEFAULT_CACHE_SIZE_MIB, openSqliteStore } from "../src/index.js";
import { migrateLegacyAppKey } from "../src/legacy-app-key.js";
import * as queries from "../src/queries.js";

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

  it("a provider-state write that fails part-way applies none of its changes; the other writes of its group commit", async () => {
    const p = path();
    const store = await openSqliteStore({ path: p });
    const state = store.stateFor("local");
    const beside = state.put("beside", "committed"); // same turn: same group transaction
    const broken = state.write!([
      { key: "cred:x", value: { v: 1 } },
      { key: null as unknown as string, value: "NOT NULL fails here" },
    ]);
    await expect(broken).rejects.toThrow(/NOT NULL/);
    await beside;
    expect(await state.get("cred:x")).toBeUndefined();
    await store.close();
    const db = new Database(p, { readonly: true });
    expect(db.prepare("SELECT key, value FROM provider_state WHERE gateway = 'local'").all()).toEqual([
      { key: "beside", value: '"committed"' },
    ]);
    db.close();
  });

  it("creates the file 0600 in a 0700 directory, in WAL mode, migrated once", async () => {
    const p = path();
    const store = await openSqliteStore({ path: p });
    expect(statSync(p).mode & 0o777).toBe(0o600);
    expect(statSync(join(p, "..")).mode & 0o777).toBe(0o700);
    expect(store.schemaVersion()).toBe(8);
    await store.init(); // idempotent
    await store.close();
    const db = new Database(p, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.prepare("SELECT COUNT(*) AS n FROM schema_migrations").get()).toEqual({ n: 8 });
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

  it("migrates a version-1 database in place, keeping its records", async () => {
    const p = path();
    const store1 = await openSqliteStore({ path: p });
    const r = rec();
    await store1.insert(r);
    await store1.close();
    // Take the file back to version 1 (the schema credhook 0.1 wrote), then reopen.
    const db = new Database(p);
    db.exec(`DELETE FROM schema_migrations WHERE version > 1; DROP TABLE events; DROP TABLE store_counts;
      CREATE TABLE c1 AS SELECT * FROM credentials; DROP TABLE credentials;
      CREATE TABLE credentials (id TEXT PRIMARY KEY, credential_type TEXT NOT NULL, app_key TEXT NOT NULL, public_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending','active','revoking')), record TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      INSERT INTO credentials SELECT * FROM c1; DROP TABLE c1;
      CREATE UNIQUE INDEX credentials_app ON credentials (app_key, credential_type);`);
    db.close();
    const store2 = await openSqliteStore({ path: p });
    expect(store2.schemaVersion()).toBe(8);
    expect(await store2.get(r.id)).toEqual({ ...r, appKey: appKeyOf(r.app) }); // its identity, in the current encoding
    await store2.insert(rec({ status: "abandoned", publicId: "" })); // allowed beside the live record now
    await store2.close();
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

  it("zeroes deleted content: a deleted digest is not left in the file or its WAL", async () => {
    const p = path();
    const store = await openSqliteStore({ path: p });
    const digests = Array.from({ length: 50 }, (_, i) => hashSecret(`secret-number-${i}-${crypto.randomUUID()}`));
    for (const [i, d] of digests.entries())
      await store.stateFor("local").put(`cred:${i}`, { secretHash: d, pad: "x".repeat(500) });
    for (let i = 0; i < digests.length; i++) await store.stateFor("local").delete(`cred:${i}`);
    await store.close();
    const bytes = [p, `${p}-wal`]
      .filter((f) => existsSync(f))
      .map((f) => readFileSync(f).toString("latin1"))
      .join("");
    expect(bytes.length).toBeGreaterThan(0);
    for (const d of digests) expect(bytes.includes(d), d).toBe(false);
    const db = new Database(p);
    expect(db.pragma("secure_delete", { simple: true })).toBe(0); // a fresh connection's default: the store sets it itself
    db.close();
  });

  it("migrates version-1 app keys to the unambiguous encoding, keeping each record's identity", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-store-v1-"));
    mkdirSync(dir, { recursive: true });
    const p = join(dir, "credhook.db");
    // A store as version 1 wrote it.
    const v1 = new Database(p);
    v1.exec(`
      CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
      INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000Z');
      CREATE TABLE credentials (id TEXT PRIMARY KEY, credential_type TEXT NOT NULL, app_key TEXT NOT NULL, public_id TEXT NOT NULL,
        status TEXT NOT NULL, record TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
      CREATE UNIQUE INDEX credentials_app ON credentials (app_key, credential_type);
      CREATE INDEX credentials_public_id ON credentials (credential_type, public_id);
      CREATE INDEX credentials_unfinished ON credentials (status, updated_at);
      CREATE TABLE provider_state (gateway TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (gateway, key));
    `);
    const legacy = [
      rec({
        appKey: "slug:590d83b5c05f",
        app: { appName: "A", developer: "d@example.com", appSlug: "590d83b5c05f" },
        publicId: "k1",
      }),
      rec({ appKey: "app:D/x/Y", app: { appName: "x/Y", developer: "D" }, publicId: "k2" }),
      rec({ appKey: "app:old@example.com/App", app: { appName: "App", developer: "new@example.com" }, publicId: "k3" }),
      rec({ appKey: "app:a/b/c", app: { appName: "c", developer: "z" }, publicId: "k4" }),
    ];
    const ins = v1.prepare("INSERT INTO credentials VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    for (const r of legacy)
      ins.run(r.id, r.credentialType, r.appKey, r.publicId, r.status, JSON.stringify(r), r.createdAt, r.updatedAt);
    v1.close();

    const store = await openSqliteStore({ path: p });
    expect(store.schemaVersion()).toBe(8);
    const slug = await store.findByAppKey(
      appKeyOf({ appName: "A", developer: "d@example.com", appSlug: "590d83b5c05f" }),
      "API_KEY",
    );
    expect(slug?.publicId).toBe("k1");
    expect(slug?.appKey).toBe("slug:d@example.com/590d83b5c05f");
    // The same slug from another developer is another app.
    expect(
      await store.findByAppKey(
        appKeyOf({ appName: "A", developer: "e@example.com", appSlug: "590d83b5c05f" }),
        "API_KEY",
      ),
    ).toBeUndefined();
    // "D" + "x/Y" keeps its credential; "D/x" + "Y" no longer reaches it.
    expect((await store.findByAppKey(appKeyOf({ appName: "x/Y", developer: "D" }), "API_KEY"))?.publicId).toBe("k2");
    expect(await store.findByAppKey(appKeyOf({ appName: "Y", developer: "D/x" }), "API_KEY")).toBeUndefined();
    // A key left behind by a move to another developer keeps its old identity when it splits one way only…
    expect(
      (await store.findByAppKey(appKeyOf({ appName: "App", developer: "old@example.com" }), "API_KEY"))?.publicId,
    ).toBe("k3");
    // …and is set aside when it could mean several apps.
    expect((await store.findByPublicId("API_KEY", "k4"))?.appKey).toBe("legacy:app:a/b/c");
    await store.close();
    // Idempotent: a reopen changes nothing.
    const again = await openSqliteStore({ path: p });
    expect((await again.list()).map((r) => r.appKey).sort()).toEqual(
      ["slug:d@example.com/590d83b5c05f", "app:D/x%2FY", "app:old@example.com/App", "legacy:app:a/b/c"].sort(),
    );
    await again.close();
  });

  it("concurrent writes share one commit, and each is committed (visible to another connection) when its promise resolves", async () => {
    const p = path();
    const store = await openSqliteStore({ path: p });
    const reader = new Database(p, { readonly: true });
    const committed = () => (reader.prepare("SELECT COUNT(*) AS n FROM credentials").get() as { n: number }).n;
    // WAL frames appended so far: a 32-byte header, then per frame a 24-byte header and one page.
    const pageSize = reader.pragma("page_size", { simple: true }) as number;
    const walFrames = () => (statSync(`${p}-wal`).size - 32) / (pageSize + 24);
    const state = store.stateFor("local");
    const before = walFrames();
    const records = Array.from({ length: 20 }, (_, i) => rec({ appKey: `slug:app-${i}`, publicId: `k-${i}` }));
    const writes = records.map((r) => store.insert(r).then(() => committed()));
    // Seen when it resolves: at least as many rows as writes resolved so far.
    const seen = await Promise.all(writes);
    expect(seen.every((n) => n === 20)).toBe(true);
    await Promise.all(records.map((_r, i) => state.put(`k${i}`, { n: i })));
    expect((reader.prepare("SELECT COUNT(*) AS n FROM provider_state").get() as { n: number }).n).toBe(20);
    // 40 writes in transactions of their own would append each page they touch (row and 4 index pages
    // per insert) once per commit, well over 100 frames; a group appends each page once.
    expect(walFrames() - before).toBeLessThan(40);
    reader.close();
    await store.close();
  });

  it("a write that fails in a group (a conflict) fails alone; the others commit", async () => {
    const store = await openSqliteStore({ path: path() });
    const a = rec({ appKey: "slug:a", publicId: "ka" });
    const results = await Promise.allSettled([
      store.insert(a),
      store.insert(rec({ appKey: "slug:a", publicId: "kx" })),
      store.insert(rec({ appKey: "slug:b", publicId: "kb" })),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(Conflict);
    expect((await store.list()).map((r) => r.appKey).sort()).toEqual(["slug:a", "slug:b"]);
    await store.close();
  });

  it("an event that cannot be written undoes its record change: the group is rolled back, never committed without it", async () => {
    const p = path();
    const store = await openSqliteStore({ path: p });
    const a = rec({ appKey: "slug:a", publicId: "ka", status: "pending" });
    await store.insert(a, [credentialEvent("credential.created", a, a.createdAt)]);
    // An insert into events that fails after the record statement changed its row (SQLite undoes that
    // statement alone, as it would on a full disk that leaves the transaction open).
    const other = new Database(p);
    other.exec(`CREATE TRIGGER events_refuse BEFORE INSERT ON events WHEN NEW.type = 'credential.updated'
      BEGIN SELECT RAISE(ABORT, 'event insert refused'); END`);
    const changed = { ...a, status: "active" as const, updatedAt: "2026-01-02T00:00:00.000Z" };
    const results = await Promise.allSettled([
      store.insert(rec({ appKey: "slug:b", publicId: "kb" })), // the group's first write: rolled back too
      store.save(changed, [credentialEvent("credential.updated", changed, changed.updatedAt)]),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    for (const r of results) expect(String((r as PromiseRejectedResult).reason)).toMatch(/event insert refused/);
    const rows = () => other.prepare("SELECT id, status FROM credentials ORDER BY app_key").all();
    expect(rows()).toEqual([{ id: a.id, status: "pending" }]);
    expect(other.prepare("SELECT type FROM events").all()).toEqual([{ type: "credential.created" }]);
    // The store goes on: the next group commits the change with its event.
    other.exec("DROP TRIGGER events_refuse");
    await store.save(changed, [credentialEvent("credential.updated", changed, changed.updatedAt)]);
    expect(rows()).toEqual([{ id: a.id, status: "active" }]);
    expect(other.prepare("SELECT type FROM events ORDER BY seq").all()).toEqual([
      { type: "credential.created" },
      { type: "credential.updated" },
    ]);
    other.close();
    await store.close();
  });

  it("finds a record by its key's fingerprint through the credentials_fingerprint index, not a scan", async () => {
    const store = await openSqliteStore({ path: path() });
    const plan = (
      (store as unknown as { db: Database.Database }).db
        .prepare(
          "EXPLAIN QUERY PLAN SELECT record FROM credentials WHERE json_extract(record, '$.keyFingerprint') = ? ORDER BY created_at",
        )
        .all("sha256:x") as Array<{ detail: string }>
    ).map((r) => r.detail);
    expect(plan.join("\n")).toMatch(/USING INDEX credentials_fingerprint/);
    await store.close();
  });

  it("every hot read takes its index (EXPLAIN QUERY PLAN): a record by id, the claim, the release of a server's claims at start, events by app, state and time, counts, unsettled and list pages, the expiry walk", async () => {
    const store = await openSqliteStore({ path: path() });
    const db = (store as unknown as { db: Database.Database }).db;
    /** The plan's lines of `sql`, every parameter bound to a string. */
    const plan = (sql: string) => {
      const names = [...new Set([...sql.matchAll(/@(\w+)/g)].map((m) => m[1]!))];
      const st = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
      const rows =
        names.length > 0
          ? st.all(Object.fromEntries(names.map((n) => [n, "x"])))
          : st.all(...(sql.match(/\?/g) ?? []).map(() => "x"));
      return (rows as Array<{ detail: string }>).map((r) => r.detail);
    };
    const cases: Array<[string, string, RegExp[]]> = [
      [
        "a record by id (get; getMany once per id: reconcile's page of a listing)",
        queries.GET_SQL,
        [/^SEARCH credentials USING INDEX sqlite_autoindex_credentials_1 \(id=\?\)$/],
      ],
      [
        "the claim",
        queries.CLAIM_SQL,
        [/^SCAN events USING COVERING INDEX events_pending$/, /^SEARCH e USING INTEGER PRIMARY KEY/],
      ],
      [
        "events by app",
        queries.eventsListSql({ app: "a" }),
        [
          /USING COVERING INDEX events_subject \(subject=\?\)/,
          /events_app_slug \(app_slug=\?\)/,
          /events_app_name \(app_name=\?\)/,
        ],
      ],
      [
        "a credential's newest event (list, inspect)",
        queries.eventsListSql({ app: "a", credentialId: "c", limit: 1 }),
        [
          /USING COVERING INDEX events_subject \(subject=\?\)/,
          /events_app_slug \(app_slug=\?\)/,
          /events_app_name \(app_name=\?\)/,
        ],
      ],
      [
        "each credential's newest event (newestEvents: list, inspect)",
        queries.NEWEST_EVENT_SQL,
        [/^SEARCH events USING INDEX events_subject \(subject=\?\)$/],
      ],
      [
        "events by app since a time",
        queries.eventsListSql({ app: "a", since: "t" }),
        [/events_subject/, /events_app_slug/, /events_app_name/],
      ],
      ["pending events", queries.eventsListSql({ status: "pending" }), [/USING COVERING INDEX events_pending$/]],
      ["dead events", queries.eventsListSql({ status: "dead" }), [/USING INDEX events_dead$/]],
      [
        "events since a time",
        queries.eventsListSql({ since: "t" }),
        [/USING COVERING INDEX events_time \(time>\?\)/, /INTEGER PRIMARY KEY \(rowid>\?\)/],
      ],
      ["requeueDead", queries.requeueDeadSql(false), [/USING COVERING INDEX events_dead$/]],
      ["settleUnsent, a batch", queries.SETTLE_UNSENT_SQL, [/^SCAN events USING INDEX events_pending$/]],
      ["prune, a batch", queries.PRUNE_SQL, [/^SEARCH events USING INDEX events_time \(time<\?\)$/]],
      ["claimServer's release of the claims", queries.RELEASE_CLAIMS_SQL, [/USING INDEX events_pending$/]],
      ["requeueDead of an app", queries.requeueDeadSql(true), [/events_subject/, /events_app_slug/, /events_app_name/]],
      [
        "counts",
        queries.COUNTS_SQL,
        [/^SCAN store_counts$/, /^SCAN credentials USING COVERING INDEX credentials_unsettled$/],
      ],
      [
        "the unfinished count",
        queries.COUNT_UNFINISHED_SQL,
        [/credentials_unfinished \(status=\? AND updated_at<\?\)/],
      ],
      ["listAbandoned (/metrics)", queries.LIST_ABANDONED_SQL, [/^SEARCH credentials USING INDEX \w+ \(status=\?/]],
      [
        "listUnfinished (/metrics)",
        queries.LIST_UNFINISHED_SQL,
        [/credentials_unfinished \(status=\? AND updated_at<\?\)/],
      ],
      ["listUnsettled", queries.LIST_UNSETTLED_SQL, [/USING INDEX credentials_unsettled$/]],
      ["the first unsettled page", queries.unsettledPageSql(false, false), [/USING INDEX credentials_unsettled$/]],
      [
        "a due unsettled page",
        queries.unsettledPageSql(true, true),
        [/^SEARCH credentials USING INDEX credentials_unsettled \(<expr><\?\)$/],
      ],
      ["the first list page", queries.listPageSql({}, false), [/^SCAN credentials USING INDEX credentials_created$/]],
      [
        "a list page",
        queries.listPageSql({}, true),
        [/USING INDEX credentials_created \(\(created_at,id\)>\(\?,\?\)\)/],
      ],
      [
        "a list page of a state",
        queries.listPageSql({ status: "active" }, true),
        [/credentials_status_created \(status=\? AND \(created_at,id\)>/],
      ],
      [
        "the expiry walk",
        queries.listPageSql({ status: "active", createdBefore: "t" }, true),
        [/credentials_status_created \(status=\? AND \(created_at,id\)>\(\?,\?\) AND created_at<\?\)/],
      ],
      [
        "a list page of an app in a state",
        queries.listPageSql({ app: "a", status: "active", createdBefore: "t" }, true),
        [
          /^SEARCH credentials USING INTEGER PRIMARY KEY/,
          /credentials_app_status \(app_key=\?\)/,
          /credentials_app_slug/,
          /credentials_app_name/,
        ],
      ],
      [
        "a list page by developer and gateway",
        queries.listPageSql({ developer: "d", gateway: "g" }, true),
        [/credentials_created \(\(created_at,id\)>/],
      ],
      ["list()", "SELECT record FROM credentials ORDER BY created_at", [/USING INDEX credentials_created$/]],
    ];
    for (const [what, sql, expected] of cases) {
      const lines = plan(sql);
      for (const line of expected)
        expect(
          lines.some((l) => line.test(l)),
          `${what}: ${line} in\n${lines.join("\n")}`,
        ).toBe(true);
      // A scan of a whole table (not of an index, a subquery or json_each) fails.
      expect(
        lines.filter((l) => /^SCAN (credentials|events|e|provider_state)$/.test(l)),
        `${what}: no table scan`,
      ).toEqual([]);
    }
    // A provider's state a page at a time (from the prefix or a cursor; to the prefix's end, or none for ''): one
    // range of the primary key (gateway, key) in its order — no scan of the gateway's keys, no sort of them.
    for (const inclusive of [true, false])
      for (const bounded of [true, false])
        expect(plan(queries.statePageSql(inclusive, bounded)), `a state page (${inclusive}, ${bounded})`).toEqual([
          `SEARCH provider_state USING INDEX sqlite_autoindex_provider_state_1 (gateway=? AND key>?${bounded ? " AND key<?" : ""})`,
        ]);
    await store.close();
  });

  it("version 8 counts the records and events a store already holds, then keeps the counts as they change", async () => {
    const p = path();
    const store = await openSqliteStore({ path: p });
    const records = [
      rec({ status: "pending" }),
      rec({ appKey: "slug:b", publicId: "kb" }),
      rec({ appKey: "slug:c", publicId: "kc", status: "abandoned" }),
    ];
    for (const r of records) await store.insert(r, [credentialEvent("credential.created", r, r.createdAt)]);
    await store.close();
    // The file as version 7 left it: what version 8 made is gone, its records and events stay.
    const db = new Database(p);
    for (const statement of queries.VERSION_8_SQL) {
      const made = /^CREATE (INDEX|TRIGGER|TABLE) (\w+)/.exec(statement);
      if (made) db.exec(`DROP ${made[1]} ${made[2]}`);
    }
    db.exec("DELETE FROM schema_migrations WHERE version = 8");
    db.close();
    const again = await openSqliteStore({ path: p });
    expect(again.schemaVersion()).toBe(8);
    expect((await again.counts()).byStatus).toEqual({ pending: 1, active: 1, revoking: 0, abandoned: 1 });
    expect(await again.outbox.counts()).toEqual({ pending: 3, delivered: 0, dead: 0 });
    await again.save({ ...records[0]!, status: "active" });
    expect((await again.counts()).byStatus).toEqual({ pending: 0, active: 2, revoking: 0, abandoned: 1 });
    await again.close();
  });

  it("checkpoints the WAL while writes never pause: a group is always open when the timer fires, so the commit checkpoints once one is due", async () => {
    // Fake setInterval: the checkpoint timer fires when the writers advance time (every 100 writes), mid-load, however
    // fast or slow this machine writes; the test ends on the WAL's truncation, or fails after 5,000 writes without one.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const p = path();
      const store = await openSqliteStore({ path: p, checkpointIntervalMs: 50 });
      const state = store.stateFor("local");
      let n = 0;
      let written = 0;
      let last = 0;
      let truncated = false;
      // 16 writers, each starting its next write as soon as the last one committed: no turn of the event loop without an open group.
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (!truncated && n < 5000) {
            await state.put(`k${n++}`, { value: "x".repeat(200) });
            const size = statSync(`${p}-wal`).size;
            if (size < last) truncated = true; // truncated to nothing while the writers ran
            last = size;
            if (++written % 100 === 0) vi.advanceTimersByTime(50); // the checkpoint timer fires
          }
        }),
      );
      expect(truncated).toBe(true);
      await store.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("checkpoints the WAL after writes and truncates it: a deleted row's content is left in no WAL frame", async () => {
    // Fake setInterval: the checkpoint timer fires only when the test advances time, so no checkpoint
    // can come between the write and the read of the WAL below, however late this worker runs.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const p = path();
      const store = await openSqliteStore({ path: p, checkpointIntervalMs: 20 });
      const state = store.stateFor("local");
      const digest = "d".repeat(64);
      await state.put(`key:${digest}`, { nativeId: "lk1" });
      expect(readFileSync(`${p}-wal`, "latin1")).toContain(digest);
      await state.delete(`key:${digest}`);
      expect(readFileSync(`${p}-wal`, "latin1")).toContain(digest); // not yet checkpointed
      await vi.advanceTimersByTimeAsync(20);
      expect(statSync(`${p}-wal`).size).toBe(0);
      expect(readFileSync(p, "latin1")).not.toContain(digest); // secure_delete zeroed it in the file
      await store.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("prune checkpoints after each batch it deletes: a backlog's batches are never left to one long checkpoint", async () => {
    // Fake setInterval: the checkpoint timer never fires here, so only prune's own checkpoint can empty the WAL.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const p = path();
      const store = await openSqliteStore({ path: p, checkpointIntervalMs: 60_000 });
      const old = "2026-01-01T00:00:00.000Z";
      for (let i = 0; i < 3; i++) {
        const r = rec({ id: `old-${i}`, appKey: `slug:d/old-${i}`, publicId: `k-old-${i}` });
        await store.insert(r, [credentialEvent("credential.created", r, old)]);
      }
      expect(await store.outbox!.settleUnsent(old)).toBe(3);
      expect(statSync(`${p}-wal`).size).toBeGreaterThan(0); // the writes wait in the WAL for the timer
      expect(await store.outbox!.prune("2026-02-01T00:00:00.000Z", 2)).toBe(2);
      expect(statSync(`${p}-wal`).size).toBe(0); // copied into the file and truncated by the prune itself
      expect(await store.outbox!.prune("2026-02-01T00:00:00.000Z", 2)).toBe(1);
      await store.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("migrateLegacyAppKey reads each version-1 form", () => {
    expect(migrateLegacyAppKey("slug:s/1", { developer: "d/x" })).toBe("slug:d%2Fx/s%2F1");
    expect(migrateLegacyAppKey("app:d%/n", { developer: "d%" })).toBe("app:d%25/n");
    expect(migrateLegacyAppKey("other", { developer: "d" })).toBe("legacy:other");
  });
});

describe("store conformance (SQLite)", () => {
  storeConformance(it, () =>
    openSqliteStore({ path: join(mkdtempSync(join(tmpdir(), "credhook-conf-")), "credhook.db") }),
  );
});

describe("the page cache is bounded by store.sqlite.cacheSizeMiB, not by the file", () => {
  it("the connection runs with the configured cache (read back from SQLite), 4 MiB by default; WAL mode either way", async () => {
    const dir = mkdtempSync(join(tmpdir(), "credhook-cache-"));
    const context = { baseDir: dir, configPath: join(dir, "webhook.config.yaml"), logger: silentLogger };
    const configured = await sqliteStoreFactory.create({ path: "a.db", cacheSizeMiB: 2 }, context);
    const byDefault = await sqliteStoreFactory.create("b.db", context);
    try {
      expect((configured as Awaited<ReturnType<typeof openSqliteStore>>).connectionSettings()).toEqual({
        cacheSizeMiB: 2,
        busyTimeoutMs: 5000,
        journalMode: "wal",
      });
      expect((byDefault as Awaited<ReturnType<typeof openSqliteStore>>).connectionSettings().cacheSizeMiB).toBe(
        DEFAULT_CACHE_SIZE_MIB,
      );
      expect(DEFAULT_CACHE_SIZE_MIB).toBe(4);
    } finally {
      await configured.close();
      await byDefault.close();
    }
  });
});

describe("SQLite failures as the store's typed errors", () => {
  it("a file another process keeps locked answers StoreUnavailable naming store.sqlite (503), never a raw error; the write succeeds once it is free", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "credhook-busy-")), "credhook.db");
    const store = await openSqliteStore({ path, busyTimeoutMs: 100 });
    const other = new Database(path);
    try {
      other.exec("BEGIN EXCLUSIVE");
      const record: CredentialRecord = {
        id: "busy-1",
        credentialType: "API_KEY",
        appKey: appKeyOf({ appName: "Busy", developer: "d" }),
        app: { appName: "Busy", developer: "d" },
        publicId: "",
        status: "pending",
        apis: [],
        bindings: [],
        createdAt: "2026-01-01T00:00:00.000Z",
        updatedAt: "2026-01-01T00:00:00.000Z",
      };
      const err = (await store.insert(record).catch((e: unknown) => e)) as StoreUnavailable;
      expect(err).toBeInstanceOf(StoreUnavailable);
      expect(err.status).toBe(503);
      expect(err.messages).toEqual([
        "the credential store is unavailable",
        "store.sqlite: the database file is busy (another process holds its lock) (SQLITE_BUSY)",
      ]);
      other.exec("ROLLBACK");
      await store.insert(record);
      expect((await store.get("busy-1"))?.status).toBe("pending");
    } finally {
      other.close();
      await store.close();
    }
  });
});

it("a serving process claiming the file releases the event claims of the server before it (killed while delivering)", async () => {
  const path = join(mkdtempSync(join(tmpdir(), "credhook-sqlite-claims-")), "credhook.db");
  const first = await openSqliteStore({ path });
  await first.claimServer();
  const r = rec();
  const created = credentialEvent("credential.created", r, new Date().toISOString());
  await first.insert(r, [created]);
  const far = new Date(Date.now() + 3_600_000).toISOString();
  const now = new Date().toISOString();
  expect((await first.outbox.claim(now, far, "first", 10)).map((e) => e.event.id)).toEqual([created.id]);
  await first.close(); // as after kill -9: the claim is still in the file, its lease an hour away

  const second = await openSqliteStore({ path });
  try {
    expect(await second.outbox.claim(now, far, "reader", 10)).toEqual([]); // not serving: the claim stands
    await second.claimServer();
    expect((await second.outbox.claim(now, far, "second", 10)).map((e) => e.event.id)).toEqual([created.id]);
  } finally {
    await second.close();
  }
});
