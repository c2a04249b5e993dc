/**
 * The counts `/metrics` reads (`counts`, the outbox's `counts`): equal to a real count of the records and events
 * after every kind of write — inserts, saves that change a state, deletes, event settlements, pruning, redelivery —
 * and after writes that fail and are rolled back.
 */
import { randomUUID } from "node:crypto";
import { Conflict, NotFound } from "@credhook/core/errors";
import {
  CREDENTIAL_STATUSES,
  EVENT_STATUSES,
  type CredentialRecord,
  type CredentialStore,
  type EventStatus,
} from "@credhook/core/store";
import { ev, expectEqual, expectRejects, later, type StoreCase, type StoreSuite } from "./harness.js";

/** The count tests, in their order. */
export const countTests: StoreCase[] = [
  {
    name: "counts (records by state, unsettled, unfinished) and the outbox's counts equal a real count after inserts, saves, deletes, settlements and rolled-back writes",
    check: countsFollowEveryWrite,
  },
];

/** What the store's counts must equal: the records and events read back and counted. */
async function realCounts(store: CredentialStore, unfinishedBefore: string) {
  const records = await store.list();
  const byStatus = Object.fromEntries(
    CREDENTIAL_STATUSES.map((s) => [s, records.filter((r) => r.status === s).length]),
  );
  const events = store.outbox ? await store.outbox.list({ limit: 100_000 }) : [];
  return {
    records: {
      byStatus,
      unsettled: records.filter((r) => r.unsettled).length,
      unfinished: records.filter(
        (r) => (r.status === "pending" || r.status === "revoking") && r.updatedAt < unfinishedBefore,
      ).length,
    },
    events: Object.fromEntries(EVENT_STATUSES.map((s) => [s, events.filter((e) => e.status === s).length])),
  };
}

/** Fails unless the store's counts equal {@link realCounts}; `what` names the step. */
async function expectCounts(store: CredentialStore, what: string): Promise<void> {
  const before = later(3600);
  const real = await realCounts(store, before);
  expectEqual(await store.counts(before), real.records, `counts() after ${what}`);
  if (store.outbox) expectEqual(await store.outbox.counts(), real.events, `outbox.counts() after ${what}`);
}

/** Counts (records by state, unsettled, unfinished) and the outbox's counts equal a real count after inserts, saves, deletes, settlements and rolled-back writes. */
async function countsFollowEveryWrite(s: StoreSuite, store: CredentialStore): Promise<void> {
  const app = (n: number) => `${s.app}-c${n}`;
  const r = (n: number, over: Partial<CredentialRecord> = {}) => s.rec({ appKey: app(n), ...over });
  await expectCounts(store, "nothing was written");
  const a = r(1, { status: "pending" });
  const b = r(2, { status: "pending" });
  const c = r(3, { status: "abandoned" });
  const unsettled = r(4, {
    unsettled: { gateways: [{ gateway: "local", attempted: [] }], settleUntil: later(60), attempts: 0 },
  });
  await store.insert(a, [ev("credential.created", a)]);
  await Promise.all([store.insert(b), store.insert(c, [ev("credential.abandoned", c)]), store.insert(unsettled)]);
  await expectCounts(store, "inserts");
  // Writes that fail change no count: a second live credential of an app, a save of an unknown id, and a failing
  // write in the same group as writes that commit.
  await expectRejects(
    store.insert(r(1), [ev("credential.created", a)]),
    Conflict,
    "an insert of a second live credential",
  );
  await expectRejects(store.save(r(9), [ev("credential.updated", a)]), NotFound, "a save of an unknown id");
  const results = await Promise.allSettled([
    store.save({ ...a, status: "active" }, [ev("credential.updated", a)]),
    store.save({ ...b, appKey: app(1) }, [ev("credential.updated", b)]), // a's app already has its live API key
    store.save({ ...b, status: "revoking" }),
  ]);
  expectEqual(
    results.map((x) => x.status),
    ["fulfilled", "rejected", "fulfilled"],
    "a group of writes with a conflict in its middle",
  );
  await expectCounts(store, "saves, and writes that failed");
  // The same state again (no change), a move out of unsettled, deletes with and without events.
  await store.save({ ...a, status: "active", updatedAt: later(5) });
  const { unsettled: _settled, ...settled } = unsettled;
  await store.save({ ...settled, status: "revoking" });
  await store.delete(b.id, [ev("credential.revoked", b)]);
  await store.delete(randomUUID(), [ev("credential.revoked", b)]);
  await expectCounts(store, "a save to the same state, a settled record, and deletes");
  if (!store.outbox) return;
  // Event settlements: delivered, dead, pruned, requeued, settled as unsent.
  const claimed = await store.outbox.claim(later(10), later(70), "h", 10);
  const settleAs = async (id: string, status: EventStatus) =>
    store.outbox!.settle(id, "h", {
      status,
      attempts: 1,
      nextAttemptAt: later(10),
      sinksDone: [],
      ...(status === "pending" ? {} : { settledAt: later(10) }),
    });
  for (const [i, e] of claimed.entries()) await settleAs(e.event.id, i === 0 ? "dead" : "delivered");
  await expectCounts(store, "events settled as delivered and dead");
  await store.outbox.append([ev("credential.drift_found", a)]);
  await store.outbox.requeueDead(later(20));
  await store.outbox.settleUnsent(later(20));
  await expectCounts(store, "requeued dead events and every pending one settled as unsent");
  await store.outbox.prune(later(30));
  await expectCounts(store, "pruning");
}
