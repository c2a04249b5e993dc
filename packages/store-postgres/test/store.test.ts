import { randomUUID } from "node:crypto";
import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import { credentialEvent } from "@credhook/core";
import { assertFenceHeld, PAGE_SCAN_ROWS, runFenced, statePageBounds } from "@credhook/core/store";
import { LockLost, StoreUnavailable } from "@credhook/core/errors";
import { storeConformance } from "@credhook/provider-testkit";
import { asStoreError } from "../src/errors.js";
import { openPostgresStore, PostgresCredentialStore } from "../src/index.js";
import * as queries from "../src/queries.js";
import { terminateLockSession as terminateSession } from "./lock-sessions.js";

const url = inject("databaseUrl");
/** A fresh schema per store: tests never see each other's rows. */
/** Polls `check` every 50 ms until it is truthy, or fails after `ms`. */
async function until(what: string, check: () => Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const schema = () => `t_${randomUUID().replace(/-/g, "").slice(0, 16)}`;
/** A pending record `id` of the app `appKey`. */
const record = (id: string, appKey: string) => ({
  id,
  credentialType: "API_KEY" as const,
  appKey,
  app: { appName: "X", developer: "d" },
  publicId: id,
  status: "pending" as const,
  apis: [],
  bindings: [],
  createdAt: "2026-01-01T00:00:00.000Z",
  updatedAt: "2026-01-01T00:00:00.000Z",
});

describe("store conformance (PostgreSQL)", () => {
  storeConformance(it, () => openPostgresStore({ url, schema: schema() }));
});

describe("PostgreSQL store", () => {
  it("several instances starting at once on an empty database migrate it once, and all work", async () => {
    const s = schema();
    const stores = await Promise.all([1, 2, 3, 4].map(() => openPostgresStore({ url, schema: s })));
    try {
      for (const store of stores)
        expect(await store.appliedMigrations()).toEqual([
          "0001_credentials",
          "0002_app_leases",
          "0003_events",
          "0004_events_partial_indexes",
          "0005_credentials_fingerprint",
          "0006_hot_reads",
          "0007_provider_state_key_order",
        ]);
      const id = randomUUID();
      await stores[0]!.insert({
        id,
        credentialType: "API_KEY",
        appKey: "slug:x",
        app: { appName: "X", developer: "d" },
        publicId: "k",
        status: "active",
        apis: [],
        bindings: [],
        createdAt: "2026-01-01T00:00:00.000Z",
        updatedAt: "2026-01-01T00:00:00.000Z",
      });
      expect((await stores[3]!.get(id))?.publicId).toBe("k");
    } finally {
      await Promise.all(stores.map((x) => x.close()));
    }
  });

  const terminateLockSession = (s: string, key: string) => terminateSession(url, s, key);

  it("a holder whose lock session ends is fenced: it cannot write, and no other instance gets the app until it has stopped", async () => {
    const s = schema();
    const a = await openPostgresStore({ url, schema: s });
    const b = await openPostgresStore({ url, schema: s });
    let release = () => {};
    try {
      const held = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const id = randomUUID();
      const running = a.locks.run("slug:app", async () => {
        await a.insert(record(id, "slug:app"));
        entered();
        await held;
        // After the session ended: the fence refuses before any write, and the store refuses the save.
        expect(() => assertFenceHeld()).toThrow(LockLost);
        await expect(a.save({ ...record(id, "slug:app"), status: "active" })).rejects.toBeInstanceOf(LockLost);
        return "stopped";
      });
      await inside;
      expect(await b.locks.tryRun("slug:app", async () => 1)).toEqual({ ran: false }); // another instance holds it
      expect(await b.locks.tryRun("slug:other", async () => 2)).toEqual({ ran: true, value: 2 });
      expect(await terminateLockSession(s, "slug:app")).toBe(1);
      // The advisory lock is free now, but a's lease is not: a may still be writing, so b must not act.
      expect(await b.locks.tryRun("slug:app", async () => 3)).toEqual({ ran: false });
      release();
      expect(await running).toBe("stopped");
      // a stopped and gave its lease back: b takes the app at once, and finds a's record as a left it.
      expect(await b.locks.tryRun("slug:app", async () => (await b.get(id))?.status)).toEqual({
        ran: true,
        value: "pending",
      });
    } finally {
      release(); // a failed expectation must not leave the lock's holder (and so a.close()) waiting
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("a dead instance's lock goes with its session and its lease runs out (no stale lock after a crash); its late writes are refused by the fencing token", async () => {
    const s = schema();
    const a = await openPostgresStore({ url, schema: s, leaseTtlMs: 1000 });
    const b = await openPostgresStore({ url, schema: s, leaseTtlMs: 1000 });
    let release = () => {};
    try {
      const held = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const id = randomUUID();
      await b.insert(record(id, "slug:app"));
      let late: unknown;
      const running = a.locks.run("slug:app", async () => {
        entered();
        await held;
        // A write the dead instance had in flight (no fence check first), after b took over: the token refuses it.
        late = await a.save({ ...record(id, "slug:app"), status: "active" }).catch((err: unknown) => err);
      });
      await inside;
      // The instance "dies": its lock session ends, and its lease is no longer renewed (its query pool is gone).
      const heartbeatless = (a as unknown as { pool: { query: unknown } }).pool;
      const query = heartbeatless.query;
      heartbeatless.query = () => Promise.reject(new Error("instance dead"));
      expect(await terminateLockSession(s, "slug:app")).toBe(1);
      // The lease (1 s) runs out on the database's clock; how soon b sees that is the machine's figure too: a generous
      // bound (a lease that never ran out still fails), no margin.
      await until(
        "b to get the app once a's lease ran out",
        async () => (await b.locks.tryRun("slug:app", async () => true)).ran,
        30_000,
      );
      heartbeatless.query = query;
      await b.locks.run("slug:app", async () => {
        release();
        await running.catch(() => undefined);
      });
      // a's save came after b's holding began: b's token holds the lease now (or held it), a's does not.
      expect(late).toBeInstanceOf(LockLost);
      expect((await b.get(id))?.status).toBe("pending");
      // The token itself: a write under a holding whose token no longer holds the lease is refused by the store.
      const stale = { key: "slug:app", token: "0", assertHeld: () => undefined };
      await expect(
        runFenced(stale, () => b.save({ ...record(id, "slug:app"), status: "active" })),
      ).rejects.toBeInstanceOf(LockLost);
      await expect(runFenced(stale, () => b.delete(id))).rejects.toBeInstanceOf(LockLost);
      expect((await b.get(id))?.status).toBe("pending");
    } finally {
      release();
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("waits for a lock another instance holds, then runs", async () => {
    const s = schema();
    const a = await openPostgresStore({ url, schema: s });
    const b = await openPostgresStore({ url, schema: s });
    try {
      const order: string[] = [];
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const first = a.locks.run("slug:app", async () => {
        order.push("a start");
        entered();
        await new Promise((r) => setTimeout(r, 200));
        order.push("a end");
      });
      await inside; // a holds the lock (waited for, not slept: a busy machine delays it)
      await b.locks.run("slug:app", async () => void order.push("b"));
      await first;
      expect(order).toEqual(["a start", "a end", "b"]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("refuses a schema name it cannot quote safely, naming the option", () => {
    expect(() => new PostgresCredentialStore({ url, schema: 'x"; DROP TABLE y; --' })).toThrow(
      /store\.postgres\.schema must match/,
    );
  });
});

describe("PostgreSQL hot reads", () => {
  /** A client on schema `s`. */
  const connect = async (s: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`SET search_path TO "${s}"`);
    return client;
  };

  /** The nodes of an `EXPLAIN (FORMAT JSON)` plan: type, relation and index of each, depth first. */
  type PlanNode = { "Node Type": string; "Relation Name"?: string; "Index Name"?: string; Plans?: PlanNode[] };
  const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

  it("every hot read takes its index (EXPLAIN over 20,000 analysed rows): records by id, the claim, events by app, state and time, counts, unsettled and list pages, the expiry walk", async () => {
    const s = schema();
    const store = await openPostgresStore({ url, schema: s });
    const client = await connect(s);
    try {
      // 20,000 records (1 in 250 pending or abandoned, 1 in 1,000 unsettled, 100 developers, 3 gateways) and 20,000
      // events (the last 50 pending, 1 in 1,000 dead) of 5,000 apps: enough that a scan costs the planner more than an index.
      await client.query(`
        INSERT INTO credentials (id, credential_type, app_key, public_id, status, record, created_at, updated_at)
        SELECT 'id-' || i, 'API_KEY', 'slug:d/app-' || i, 'k-' || i,
          CASE WHEN i % 250 = 0 THEN 'pending' WHEN i % 250 = 1 THEN 'abandoned' ELSE 'active' END,
          jsonb_build_object('id', 'id-' || i, 'app', jsonb_build_object('appName', 'App ' || i, 'appSlug', 'app-' || i,
            'developer', 'd' || (i % 100)), 'bindings', jsonb_build_array(jsonb_build_object('gateway', 'g' || (i % 3))),
            'apis', '[]'::jsonb)
            || CASE WHEN i % 1000 = 0 THEN jsonb_build_object('unsettled', jsonb_build_object('settleUntil', lpad(i::text, 8, '0')))
               ELSE '{}'::jsonb END,
          lpad(i::text, 8, '0'), lpad(i::text, 8, '0')
        FROM generate_series(1, 20000) i`);
      await client.query(`
        INSERT INTO events (id, subject, app_slug, app_name, type, time, event, next_attempt_at, status)
        SELECT 'e-' || i, 'slug:d/app-' || (i % 5000), 'app-' || (i % 5000), 'App ' || (i % 5000), 'credential.created',
          lpad(i::text, 8, '0'), '{}'::jsonb, lpad(i::text, 8, '0'),
          CASE WHEN i > 19950 THEN 'pending' WHEN i % 1000 = 0 THEN 'dead' ELSE 'delivered' END
        FROM generate_series(1, 20000) i`);
      // 20,000 provider-state keys of a gateway (credentials, their key index entries) beside another gateway's.
      await client.query(`
        INSERT INTO provider_state (gateway, key, value)
        SELECT g, k || lpad(i::text, 8, '0'), '{}'::jsonb
        FROM generate_series(1, 5000) i, (VALUES ('local'), ('other')) AS gs(g), (VALUES ('cred:'), ('key:')) AS ks(k)`);
      await client.query("ANALYZE credentials");
      await client.query("ANALYZE events");
      await client.query("ANALYZE provider_state");
      const cursor = { position: "00010000", id: "id-10000" };
      // Each read, and the indexes its plan must use (`a|b`: one of them).
      const cases: Array<[string, { text: string; values: unknown[] }, string[]]> = [
        [
          "records by id (getMany: reconcile's page of a listing)",
          { text: queries.GET_MANY_SQL, values: [["id-7", "id-8", "id-7", "id-unknown"]] },
          ["credentials_pkey"],
        ],
        ["the claim", { text: queries.CLAIM_SQL, values: ["h", "00020001", "00020100", 64] }, ["events_pending"]],
        [
          "events by app",
          queries.eventsListQuery({ app: "app-7" }),
          ["events_subject", "events_app_slug", "events_app_name"],
        ],
        [
          "a credential's newest event (list, inspect)",
          queries.eventsListQuery({ app: "app-7", credentialId: "id-7", limit: 1 }),
          ["events_subject", "events_app_slug", "events_app_name"],
        ],
        [
          "a page's newest events, one per credential (newestEvents: list, inspect)",
          {
            text: queries.NEWEST_EVENTS_SQL,
            values: [
              ["slug:d/app-7", "slug:d/app-8"],
              ["id-7", "id-8"],
            ],
          },
          ["events_subject"],
        ],
        ["pending events", queries.eventsListQuery({ status: "pending" }), ["events_pending"]],
        ["dead events", queries.eventsListQuery({ status: "dead" }), ["events_dead"]],
        ["events since a time", queries.eventsListQuery({ since: "00019990" }), ["events_time"]],
        ["requeueDead", queries.requeueDeadQuery("t", undefined), ["events_dead"]],
        ["settleUnsent, a batch", { text: queries.SETTLE_UNSENT_SQL, values: ["00020001", 200] }, ["events_pending"]],
        ["prune, a batch", { text: queries.PRUNE_SQL, values: ["00000500", 500] }, ["events_time"]],
        ["requeueDead of an app", queries.requeueDeadQuery("t", "app-7"), ["events_dead"]],
        ["counts", { text: queries.COUNTS_SQL, values: [] }, ["credentials_unsettled"]],
        [
          "the unfinished count",
          { text: queries.COUNT_UNFINISHED_SQL, values: ["00019000"] },
          ["credentials_unfinished"],
        ],
        [
          "listAbandoned (/metrics)",
          { text: queries.LIST_ABANDONED_SQL, values: [] },
          ["credentials_unfinished|credentials_status_created"],
        ],
        [
          "listUnfinished (/metrics)",
          { text: queries.LIST_UNFINISHED_SQL, values: ["00019000"] },
          ["credentials_unfinished"],
        ],
        ["listUnsettled", { text: queries.LIST_UNSETTLED_SQL, values: [] }, ["credentials_unsettled"]],
        ["the first unsettled page", queries.unsettledPageQuery(undefined, undefined, 100), ["credentials_unsettled"]],
        ["a due unsettled page", queries.unsettledPageQuery(cursor, "00015000", 100), ["credentials_unsettled"]],
        ["the first list page", queries.listPageQuery({}, undefined, 100, 100), ["credentials_created"]],
        ["a list page", queries.listPageQuery({}, cursor, 100, 100), ["credentials_created"]],
        [
          "a list page of a state",
          queries.listPageQuery({ status: "abandoned" }, cursor, 100, 100),
          ["credentials_status_created"],
        ],
        // Nearly every record is active: walking the creation index and skipping the others costs the planner as little.
        [
          "the expiry walk",
          queries.listPageQuery({ status: "active", createdBefore: "00015000" }, cursor, 500, 500),
          ["credentials_status_created|credentials_created"],
        ],
        [
          "a list page of an app",
          queries.listPageQuery({ app: "app-7" }, undefined, 100, 100),
          ["credentials_app_status", "credentials_app_slug", "credentials_app_name"],
        ],
        [
          "a list page by developer and gateway",
          queries.listPageQuery({ developer: "d7", gateway: "g1" }, cursor, 100, PAGE_SCAN_ROWS),
          ["credentials_created"],
        ],
        // A provider's state a page at a time: one range of the primary key (gateway, key), in its order.
        [
          "the first provider-state page",
          queries.statePageQuery("local", statePageBounds("cred:", { limit: 500 })),
          ["provider_state_pkey"],
        ],
        [
          "a provider-state page",
          queries.statePageQuery("local", statePageBounds("cred:", { after: "cred:00002500", limit: 500 })),
          ["provider_state_pkey"],
        ],
        [
          "a page of a gateway's every state key",
          queries.statePageQuery("local", statePageBounds("", { after: "cred:00004000", limit: 500 })),
          ["provider_state_pkey"],
        ],
      ];
      for (const [what, query, indexes] of cases) {
        const { rows } = await client.query<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
          `EXPLAIN (FORMAT JSON) ${query.text}`,
          query.values,
        );
        const nodes = nodesOf(rows[0]!["QUERY PLAN"][0]!.Plan);
        const used = nodes.flatMap((n) => (n["Index Name"] ? [n["Index Name"]] : []));
        const shown = JSON.stringify(nodes.map((n) => [n["Node Type"], n["Relation Name"], n["Index Name"]]));
        for (const index of indexes)
          expect(
            used.some((u) => index.split("|").includes(u)),
            `${what}: ${index} in ${shown}`,
          ).toBe(true);
        expect(
          nodes.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] !== "store_counts"),
          `${what}: no table scan in ${shown}`,
        ).toEqual([]);
        if (query.text.includes("provider_state"))
          expect(
            nodes.filter((n) => n["Node Type"] === "Sort"),
            `${what}: the rows in the index's order, no sort, in ${shown}`,
          ).toEqual([]);
      }
    } finally {
      await client.end();
      await store.close();
    }
  });

  it("migrations 0006 and 0007 on a store that holds data: 0006 counts its records and events, then the triggers keep the counts; 0007 pages its provider state", async () => {
    const s = schema();
    const first = await openPostgresStore({ url, schema: s });
    const rec = (n: number, status: "pending" | "active" | "abandoned") => ({
      ...record(`r${n}-${randomUUID()}`, `slug:app-${n}`),
      status,
    });
    const records = [rec(1, "pending"), rec(2, "active"), rec(3, "abandoned")];
    for (const r of records) await first.insert(r, [credentialEvent("credential.created", r, r.createdAt)]);
    for (const key of ["cred:b", "cred;", "cred:a", "key:a"]) await first.stateFor("local").put(key, key);
    await first.close();
    // The schema as migration 0005 left it: what 0006 made is gone, the provider-state key in the database's
    // default collation again (0007), the records, events and state stay.
    const client = await connect(s);
    await client.query(`DROP FUNCTION store_count_credentials() CASCADE; DROP FUNCTION store_count_events() CASCADE;
      DROP TABLE store_counts; DROP INDEX credentials_created, credentials_status_created, credentials_unsettled,
      credentials_app_slug, credentials_app_name, events_subject, events_app_slug, events_app_name;
      ALTER TABLE provider_state ALTER COLUMN key TYPE TEXT COLLATE "default";
      DELETE FROM kysely_migration WHERE name IN ('0006_hot_reads', '0007_provider_state_key_order')`);
    await client.end();
    const again = await openPostgresStore({ url, schema: s });
    try {
      expect((await again.appliedMigrations()).slice(-2)).toEqual(["0006_hot_reads", "0007_provider_state_key_order"]);
      expect(await again.stateFor("local").listPage!("cred:", { limit: 10 })).toEqual({
        entries: [
          { key: "cred:a", value: "cred:a" },
          { key: "cred:b", value: "cred:b" },
        ],
      });
      expect((await again.counts()).byStatus).toEqual({ pending: 1, active: 1, revoking: 0, abandoned: 1 });
      expect(await again.outbox.counts()).toEqual({ pending: 3, delivered: 0, dead: 0 });
      await again.save({ ...records[0]!, status: "active" });
      await again.outbox.settleUnsent("2026-01-02T00:00:00.000Z");
      expect((await again.counts()).byStatus).toEqual({ pending: 0, active: 2, revoking: 0, abandoned: 1 });
      expect(await again.outbox.counts()).toEqual({ pending: 0, delivered: 3, dead: 0 });
    } finally {
      await again.close();
    }
  });
});

describe("shared call slots (cloud quotas across instances)", () => {
  it("slots of one key are spaced across instances: at most 5 starts in any sliding second at a 210 ms interval", async () => {
    const s = schema();
    const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore({ url, schema: s })));
    try {
      // Each reservation: the wait it was given, and when it was sent and answered (this process's clock). Its slot
      // (the time it may start, on the database's clock) lies between sent + wait and received + wait: a busy machine
      // widens that interval (round trips, late timers), it never moves the slot out of it.
      const reservations = await Promise.all(
        Array.from({ length: 15 }, async (_, i) => {
          const sent = performance.now();
          const wait = await stores[i % 3]!.rateSlots.reserve("aws:123:us-east-1:CreateApiKey", 210);
          return { wait, earliest: sent + wait, latest: performance.now() + wait };
        }),
      );
      // Slots are 210 ms apart, so any 6 of them span at least 5 × 210 ms: for 6 consecutive reservations (by the
      // earliest their slot can be), the latest the last can start minus the earliest the first can start is that
      // much at least (1 ms for rounding). Slots that were not spaced would be a round trip apart.
      reservations.sort((x, y) => x.earliest - y.earliest);
      for (let i = 5; i < reservations.length; i++) {
        const six = reservations.slice(i - 5, i + 1);
        expect(Math.max(...six.map((r) => r.latest)) - Math.min(...six.map((r) => r.earliest))).toBeGreaterThanOrEqual(
          5 * 210 - 1,
        );
      }
      // No more waiting than the spacing needs: the k-th reservation the database served waits at most k intervals
      // from the time the first one was made, so the k-th smallest wait is at most k × 210 ms plus how far apart the
      // database read its clock for them (each read lies within its round trip: at most the whole burst's span).
      const span =
        Math.max(...reservations.map((r) => r.latest - r.wait)) -
        Math.min(...reservations.map((r) => r.earliest - r.wait));
      const waits = reservations.map((r) => r.wait).sort((x, y) => x - y);
      for (const [k, w] of waits.entries()) expect(w).toBeLessThanOrEqual(k * 210 + span + 1);
      expect(await stores[0]!.rateSlots.reserve("another-key", 210)).toBe(0); // keys are independent
    } finally {
      await Promise.all(stores.map((x) => x.close()));
    }
  });

  it("a key with a burst is one token bucket for every instance: `burst` slots at once after an idle period, then one per interval", async () => {
    const s = schema();
    const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore({ url, schema: s })));
    /** A reservation with when it was sent and when its answer came back (ms, this process's clock). */
    const timed = async (store: (typeof stores)[number], key: string, burst?: number) => {
      const sent = performance.now();
      const wait = await store.rateSlots.reserve(key, 200, burst);
      return { wait, sent, received: performance.now() };
    };
    /**
     * The wait the k-th reservation after a burst must get, on the database's clock (GCRA): k intervals
     * after the burst, less the time that passed since. That time is only known to lie between two
     * figures of this process's clock (round trips), so the wait must lie between the two bounds —
     * on a quiet machine close to k × 200, on a busy one lower (down to 0), never outside.
     */
    const expectSpaced = (
      r: { wait: number; sent: number; received: number },
      k: number,
      burst: { sent: number; received: number },
    ) => {
      expect(r.wait).toBeGreaterThanOrEqual(Math.max(0, k * 200 - (r.received - burst.sent)) - 1);
      expect(r.wait).toBeLessThanOrEqual(Math.max(0, k * 200 - (r.sent - burst.received)) + 1);
    };
    try {
      // 200 ms interval (5/s), burst 4: the first 4 reservations from three instances start now.
      const sent = performance.now();
      const waits = await Promise.all(
        Array.from({ length: 4 }, (_, i) => stores[i % 3]!.rateSlots.reserve("azure|sub|writes", 200, 4)),
      );
      const burst = { sent, received: performance.now() };
      expect(waits).toEqual([0, 0, 0, 0]);
      // The bucket is empty: the next ones start one interval apart, counted from the burst.
      expectSpaced(await timed(stores[1]!, "azure|sub|writes", 4), 1, burst);
      expectSpaced(await timed(stores[2]!, "azure|sub|writes", 4), 2, burst);
      // Burst 1 (the default) is plain spacing: the second reservation waits an interval from the first.
      const first = await timed(stores[0]!, "spaced");
      expect(first.wait).toBe(0);
      expectSpaced(await timed(stores[0]!, "spaced"), 1, first);
    } finally {
      await Promise.all(stores.map((x) => x.close()));
    }
  });
});

describe("PostgreSQL failures as the store's typed errors", () => {
  it("an unreachable, starting, failing-over or exhausted database is StoreUnavailable naming store.postgres; a bug or a constraint is not", () => {
    const typed = (err: unknown) => asStoreError(err, "a query") as StoreUnavailable;
    expect(
      typed(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })).messages,
    ).toEqual([
      "the credential store is unavailable",
      "store.postgres: a query failed: connection refused (ECONNREFUSED)",
    ]);
    expect(typed(Object.assign(new Error("the database system is starting up"), { code: "57P03" })).messages[1]).toBe(
      "store.postgres: a query failed: the database system is starting up (57P03)",
    );
    for (const code of ["57P01", "08006", "53300", "25006", "40001"])
      expect(typed(Object.assign(new Error("x"), { code }))).toBeInstanceOf(StoreUnavailable);
    expect(typed(new Error("Connection terminated unexpectedly"))).toBeInstanceOf(StoreUnavailable);
    expect(typed(new Error("timeout exceeded when trying to connect"))).toBeInstanceOf(StoreUnavailable);
    expect(typed(new AggregateError([Object.assign(new Error("refused"), { code: "ECONNREFUSED" })]))).toBeInstanceOf(
      StoreUnavailable,
    );
    const unique = Object.assign(new Error("duplicate key"), { code: "23505" });
    expect(asStoreError(unique, "a query")).toBe(unique);
    const syntax = Object.assign(new Error("syntax error"), { code: "42601" });
    expect(asStoreError(syntax, "a query")).toBe(syntax);
    expect(
      typed(Object.assign(new Error("could not connect to postgres://u:secret@db/x"), { code: "08001" })).messages[1],
    ).not.toContain("secret");
  });
});
