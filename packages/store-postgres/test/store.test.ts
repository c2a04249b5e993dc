import { createHash, randomUUID } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import pg from "pg";
import { storeConformance } from "@credhook/provider-testkit";
import { openPostgresStore, PostgresCredentialStore } from "../src/index.js";

const url = inject("databaseUrl");
/** A fresh schema per store: tests never see each other's rows. */
const schema = () => `t_${randomUUID().replace(/-/g, "").slice(0, 16)}`;

describe("store conformance (PostgreSQL)", () => {
  storeConformance(it, () => openPostgresStore({ url, schema: schema() }));
});

describe("PostgreSQL store", () => {
  it("several instances starting at once on an empty database migrate it once, and all work", async () => {
    const s = schema();
    const stores = await Promise.all([1, 2, 3, 4].map(() => openPostgresStore({ url, schema: s })));
    try {
      for (const store of stores) expect(await store.appliedMigrations()).toEqual(["0001_credentials"]);
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

  it("an app's lock is held across instances and dies with the instance's session (no stale lock after a crash)", async () => {
    const s = schema();
    const a = await openPostgresStore({ url, schema: s });
    const b = await openPostgresStore({ url, schema: s });
    let release = () => {};
    try {
      const held = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const running = a.locks.run("slug:app", async () => {
        entered();
        await held;
      });
      await inside;
      expect(await b.locks.tryRun("slug:app", async () => 1)).toEqual({ ran: false }); // another instance holds it
      expect(await b.locks.tryRun("slug:other", async () => 2)).toEqual({ ran: true, value: 2 });
      // The instance dies: the session holding its lock ends (as after kill -9). Only that session: other test
      // files share this PostgreSQL server, and their instances hold advisory locks of their own.
      // The key as the store derives it: the first 8 bytes of SHA-256(schema NUL key), signed; PostgreSQL shows a
      // bigint advisory key as classid (high 32 bits) and objid (low 32 bits) with objsubid 1.
      const key = createHash("sha256").update(`${s}\u0000slug:app`).digest().readBigInt64BE(0).toString();
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      const { rowCount } = await admin.query(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND ((classid::bigint << 32) | objid::bigint) = $1::bigint",
        [key],
      );
      await admin.end();
      // With a timeout, pg_terminate_backend returns once the session has ended (its locks released), not
      // when the signal is sent: without one, the check below raced the dying session (PostgreSQL 14+).
      expect(rowCount).toBe(1);
      expect(await b.locks.tryRun("slug:app", async () => 3)).toEqual({ ran: true, value: 3 });
      release();
      await running.catch(() => undefined); // its unlock fails on the dead session; the lock is already gone
    } finally {
      release(); // a failed expectation must not leave the lock's holder (and so a.close()) waiting
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
    expect(() => new PostgresCredentialStore({ url, schema: 'x"; DROP TABLE y; --' })).toThrow(/store\.postgres\.schema must match/);
  });
});

describe("shared call slots (cloud quotas across instances)", () => {
  it("slots of one key are spaced across instances: at most 5 starts in any sliding second at a 210 ms interval", async () => {
    const s = schema();
    const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore({ url, schema: s })));
    try {
      const t0 = Date.now();
      // Each caller's slot: when its reservation came back plus the wait it was given (the time it may start).
      // Not when its timer fired: a busy machine fires timers late and bunched, which says nothing of the slots.
      const slots = await Promise.all(
        Array.from({ length: 15 }, async (_, i) => {
          const wait = await stores[i % 3]!.rateSlots.reserve("aws:123:us-east-1:CreateApiKey", 210);
          return Date.now() - t0 + wait;
        }),
      );
      slots.sort((a, b) => a - b);
      // 5 slots span 5 × 210 = 1050 ms. A slot is measured from when its reservation came back, so two
      // round trips that differ by tens of ms shift it: the 150 ms below 1050 is room for that on a busy
      // machine (CI on 2 shared cores once measured 988). Slots that were not spaced would be ~0 ms apart.
      for (let i = 5; i < slots.length; i++) expect(slots[i]! - slots[i - 5]!).toBeGreaterThanOrEqual(900);
      expect(slots[14]!).toBeLessThan(14 * 210 + 600); // no more waiting than the spacing needs
      expect(await stores[0]!.rateSlots.reserve("another-key", 210)).toBe(0); // keys are independent
    } finally {
      await Promise.all(stores.map((x) => x.close()));
    }
  });

  it("a key with a burst is one token bucket for every instance: `burst` slots at once after an idle period, then one per interval", async () => {
    const s = schema();
    const stores = await Promise.all([1, 2, 3].map(() => openPostgresStore({ url, schema: s })));
    try {
      // 200 ms interval (5/s), burst 4: the first 4 reservations from three instances start now.
      const waits = await Promise.all(Array.from({ length: 4 }, (_, i) => stores[i % 3]!.rateSlots.reserve("azure|sub|writes", 200, 4)));
      expect(waits).toEqual([0, 0, 0, 0]);
      // The bucket is empty: the next ones start one interval apart (less the time the reservations took).
      const next = [await stores[1]!.rateSlots.reserve("azure|sub|writes", 200, 4), await stores[2]!.rateSlots.reserve("azure|sub|writes", 200, 4)];
      expect(next[0]).toBeGreaterThan(100);
      expect(next[0]).toBeLessThanOrEqual(200);
      expect(next[1]! - next[0]!).toBeGreaterThan(100);
      expect(next[1]! - next[0]!).toBeLessThanOrEqual(200);
      // Burst 1 (the default) is plain spacing: the second reservation waits an interval.
      expect(await stores[0]!.rateSlots.reserve("spaced", 200)).toBe(0);
      expect(await stores[0]!.rateSlots.reserve("spaced", 200)).toBeGreaterThan(100);
    } finally {
      await Promise.all(stores.map((x) => x.close()));
    }
  });
});
