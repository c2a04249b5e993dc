import { randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { assertFenceHeld, runFenced } from "@credhook/core/store";
import { LockLost, StoreUnavailable } from "@credhook/core/errors";
import { storeConformance } from "@credhook/provider-testkit";
import { asStoreError } from "../src/errors.js";
import { openPostgresStore, PostgresCredentialStore } from "../src/index.js";
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
