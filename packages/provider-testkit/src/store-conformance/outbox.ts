/**
 * The event outbox (`events.ts`), on a store that has one: events committed with their record write, each app's
 * oldest pending event claimed once until settled, dead events, settling what no sink wants, and redelivery.
 */
import { randomUUID } from "node:crypto";
import { Conflict, NotFound } from "@credhook/core/errors";
import type { CredentialStore, EventOutbox } from "@credhook/core/store";
import { T0, ev, expectEqual, expectRejects, fail, ids, later, type OutboxCase, type StoreSuite } from "./harness.js";

/** The outbox tests, in their order. */
export const outboxTests: OutboxCase[] = [
  { name: "events are committed with their record write, never without it", check: eventsCommittedWithRecord },
  { name: "lists the events of a key's fingerprint, also once its record is gone", check: listsEventsByFingerprint },
  { name: "lists a credential's newest event from its app's events", check: listsNewestEventOfCredential },
  { name: "claims each app's oldest pending event, once, until it is settled", check: claimsOldestPendingPerApp },
  {
    name: "settles a batch in one call: each event only while its holder holds the claim",
    check: settlesBatchOfClaims,
  },
  { name: "a dead event no longer holds back its app; pruning keeps pending events", check: deadEventReleasesItsApp },
  { name: "with no sink, one write settles every pending event no live claim holds", check: settlesUnsentAtOnce },
  {
    name: "settles unsent and prunes old events a batch at a time: at most `limit` a call, prune oldest first",
    check: settlesAndPrunesInBatches,
  },
  {
    name: "a dead event made pending again is due at once, its accepting sinks kept; only the app's named",
    check: requeuesDeadEvents,
  },
];

/** Events are committed with their record write, never without it. */
async function eventsCommittedWithRecord(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  const { app, rec } = s;
  const r = rec();
  const created = ev("credential.created", r);
  await store.insert(r, [created]);
  const updated = ev("credential.updated", r);
  await store.save({ ...r, status: "active" }, [updated]);
  // Writes that change nothing write no event.
  await expectRejects(store.save(rec(), [ev("credential.updated", rec())]), NotFound, "save of an unknown id");
  await expectRejects(store.insert(rec(), [ev("credential.created", rec())]), Conflict, "a second live credential");
  if (await store.delete(randomUUID(), [ev("credential.revoked", rec())])) fail("delete of an unknown id");
  const revoked = ev("credential.revoked", r);
  if (!(await store.delete(r.id, [revoked]))) fail("delete of the record returned false");
  const listed = await outbox.list();
  expectEqual(ids(listed), [created.id, updated.id, revoked.id], "events listed, oldest first");
  expectEqual(listed[0]!.event, created, "the event read back unchanged");
  expectEqual(
    listed.map((e) => [e.status, e.attempts, e.sinksDone]),
    [
      ["pending", 0, []],
      ["pending", 0, []],
      ["pending", 0, []],
    ],
    "new events are pending",
  );
  expectEqual(await outbox.counts(), { pending: 3, delivered: 0, dead: 0 }, "counts");
  expectEqual(ids(await outbox.list({ app: app.slice(5) })), ids(listed), "list by the app's slug");
  expectEqual(ids(await outbox.list({ app: "slug:nobody" })), [], "list of another app");
  expectEqual(ids(await outbox.list({ limit: 1 })), [revoked.id], "list with a limit: the newest");
}

/** Lists the events of a key's fingerprint (`EventFilter.fingerprint`), also once its record is gone. */
async function listsEventsByFingerprint(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  const { app, rec } = s;
  const fp = `sha256:${"ef".repeat(16)}`;
  const r = rec({ appKey: `${app}-fp`, keyFingerprint: fp });
  const created = ev("credential.created", r);
  await store.insert(r, [created]);
  const other = rec({ appKey: `${app}-fp-other`, keyFingerprint: `sha256:${"01".repeat(16)}` });
  await store.insert(other, [ev("credential.created", other)]);
  const revoked = ev("credential.revoked", r);
  await store.delete(r.id, [revoked]);
  expectEqual(ids(await outbox.list({ fingerprint: fp })), [created.id, revoked.id], "the key's events");
  expectEqual(ids(await outbox.list({ fingerprint: `sha256:${"23".repeat(16)}` })), [], "an unknown key's");
}

/**
 * Lists a credential's newest event from its app's events (`EventFilter.credentialId` with `app` and `limit: 1`), and
 * with `newestEvents` (optional: skipped by a store without it) those of several credentials at once.
 */
async function listsNewestEventOfCredential(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  const { app, rec } = s;
  const appKey = `${app}-newest`;
  const key = rec({ appKey });
  const client = rec({ appKey, credentialType: "CLIENT_CREDENTIALS" });
  await store.insert(key, [ev("credential.created", key)]);
  await store.insert(client, [ev("credential.created", client)]);
  const updated = ev("credential.updated", key, later(1));
  await store.save(key, [updated]);
  const clientUpdated = ev("credential.updated", client, later(2));
  await store.save(client, [clientUpdated]);
  const newest = (credentialId: string) => outbox.list({ app: appKey, credentialId, limit: 1 });
  expectEqual(ids(await newest(key.id)), [updated.id], "the key's newest event, though its app's is the client's");
  expectEqual(ids(await newest(client.id)), [clientUpdated.id], "the client's newest event");
  expectEqual(ids(await newest(randomUUID())), [], "an unknown credential's");
  // `newestEvents` (optional: skipped by a store without it): the same answers for a page of credentials at once.
  if (!outbox.newestEvents) return;
  const other = rec({ appKey: `${app}-newest-other` });
  const otherCreated = ev("credential.created", other, later(3));
  await store.insert(other, [otherCreated]);
  const unknown = randomUUID();
  const page = await outbox.newestEvents([
    { credentialId: key.id, appKey },
    { credentialId: other.id, appKey: other.appKey },
    { credentialId: unknown, appKey },
    { credentialId: client.id, appKey },
  ]);
  expectEqual(
    [...page.entries()].map(([id, e]) => [id, e.event.id]).sort(),
    [
      [key.id, updated.id],
      [client.id, clientUpdated.id],
      [other.id, otherCreated.id],
    ].sort(),
    "each credential's newest event, by its id; none for an unknown credential",
  );
  expectEqual((await outbox.newestEvents([])).size, 0, "an empty page");
}

/** Claims each app's oldest pending event, once, until it is settled. */
async function claimsOldestPendingPerApp(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  const { rec } = s;
  const a = rec();
  const b = rec({ appKey: "slug:other-app", publicId: `k${randomUUID().slice(0, 8)}` });
  const a1 = ev("credential.created", a);
  const b1 = ev("credential.created", b);
  await store.insert(a, [a1]);
  await store.insert(b, [b1]);
  const a2 = ev("credential.updated", a);
  await store.save(a, [a2]);
  const first = await outbox.claim(later(1), later(61), "h1", 10);
  expectEqual(ids(first), [a1.id, b1.id], "the first claim: each app's oldest");
  expectEqual(ids(await outbox.claim(later(2), later(62), "h2", 10)), [], "a second holder while the leases run");
  if (await outbox.settle(a1.id, "h2", { status: "delivered", attempts: 1, nextAttemptAt: later(2), sinksDone: [] }))
    fail("settle by a holder that does not hold the claim returned true");
  const ok = await outbox.settle(a1.id, "h1", {
    status: "delivered",
    attempts: 1,
    nextAttemptAt: later(2),
    sinksDone: ["http://sink"],
    settledAt: later(2),
  });
  if (!ok) fail("settle by the holder returned false");
  expectEqual(
    ids(await outbox.claim(later(3), later(500), "h2", 10)),
    [a2.id],
    "the app's next event, after the first",
  );
  // b1 fails and waits for its next attempt; its lease ran out meanwhile
  await outbox.settle(b1.id, "h1", {
    status: "pending",
    attempts: 1,
    nextAttemptAt: later(100),
    sinksDone: [],
    lastError: "HTTP 500",
  });
  expectEqual(ids(await outbox.claim(later(99), later(160), "h3", 10)), [], "before its next attempt");
  const again = await outbox.claim(later(100), later(160), "h3", 10);
  expectEqual(ids(again), [b1.id], "at its next attempt");
  expectEqual([again[0]!.attempts, again[0]!.lastError], [1, "HTTP 500"], "attempts and the last error");
  // A lease that ran out is claimed by another holder; the first can no longer settle it.
  expectEqual(ids(await outbox.claim(later(600), later(660), "h4", 10)), [b1.id, a2.id], "expired leases");
  if (await outbox.settle(a2.id, "h2", { status: "delivered", attempts: 1, nextAttemptAt: later(600), sinksDone: [] }))
    fail("settle after the claim was taken over returned true");
}

/**
 * `settleAll` (optional: skipped by a store without it) settles a batch in one call: the claims the holder holds,
 * each with its own state, and not one another holder took over (its id is missing from the answer).
 */
async function settlesBatchOfClaims(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  if (!outbox.settleAll) return;
  const { rec } = s;
  const apps = ["a", "b", "c"].map((x) => rec({ appKey: `slug:batch-${x}`, publicId: `k${randomUUID().slice(0, 8)}` }));
  const events = apps.map((r) => ev("credential.created", r));
  for (const [i, r] of apps.entries()) await store.insert(r, [events[i]!]);
  const [a, b, c] = events.map((e) => e.id) as [string, string, string];
  expectEqual(ids(await outbox.claim(later(1), later(61), "h1", 2)), [a, b], "h1 claims two");
  expectEqual(ids(await outbox.claim(later(2), later(62), "h2", 10)), [c], "h2 claims the third");
  const settled = await outbox.settleAll("h1", [
    { id: a, status: "delivered", attempts: 1, nextAttemptAt: later(3), sinksDone: ["s"], settledAt: later(3) },
    { id: b, status: "pending", attempts: 1, nextAttemptAt: later(100), sinksDone: [], lastError: "HTTP 503" },
    { id: c, status: "delivered", attempts: 1, nextAttemptAt: later(3), sinksDone: ["s"], settledAt: later(3) },
  ]);
  expectEqual([...settled].sort(), [a, b].sort(), "the holder's claims settled, not h2's");
  const state = async (id: string) => {
    const e = (await outbox.list()).find((x) => x.event.id === id)!;
    return [e.status, e.attempts, e.sinksDone, e.lastError ?? null];
  };
  expectEqual(await state(a), ["delivered", 1, ["s"], null], "the delivered one");
  expectEqual(await state(b), ["pending", 1, [], "HTTP 503"], "the one to retry");
  expectEqual(await state(c), ["pending", 0, [], null], "h2's claim, untouched");
  expectEqual(
    ids(await outbox.claim(later(99), later(160), "h3", 10)),
    [c],
    "before b's next attempt: c, its lease run out",
  );
  expectEqual(ids(await outbox.claim(later(100), later(160), "h3", 10)), [b], "b released, due at its next attempt");
  expectEqual(await outbox.settleAll("h1", []), [], "an empty batch");
}

/** A dead event no longer holds back its app; pruning keeps pending events. */
async function deadEventReleasesItsApp(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  const { rec } = s;
  const a = rec();
  const a1 = ev("credential.created", a, T0);
  const a2 = ev("credential.updated", a, later(10));
  await store.insert(a, [a1]);
  await store.save(a, [a2]);
  await outbox.claim(later(20), later(80), "h", 10);
  await outbox.settle(a1.id, "h", {
    status: "dead",
    attempts: 5,
    nextAttemptAt: later(20),
    sinksDone: [],
    lastError: "HTTP 410",
    settledAt: later(20),
  });
  expectEqual(ids(await outbox.claim(later(21), later(81), "h", 10)), [a2.id], "the next event after a dead one");
  expectEqual(ids(await outbox.list({ status: "dead" })), [a1.id], "dead events listed");
  expectEqual(ids(await outbox.list({ since: later(5) })), [a2.id], "events since a time");
  expectEqual(await outbox.prune(later(30)), 1, "pruned: the dead event only (the other is pending)");
  expectEqual(ids(await outbox.list()), [a2.id], "left after pruning");
  const d = ev("credential.drift_found", a, later(40));
  await outbox.append([d]);
  expectEqual(ids(await outbox.list()), [a2.id, d.id], "appended without a record write");
}

/** With no sink, one write settles every pending event no live claim holds. */
async function settlesUnsentAtOnce(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  const { rec } = s;
  const a = rec();
  const b = rec({ appKey: `slug:unsent-${randomUUID().slice(0, 8)}` });
  const a1 = ev("credential.created", a, T0);
  const a2 = ev("credential.updated", a, later(1));
  const b1 = ev("credential.created", b, later(2));
  await store.insert(a, [a1]);
  await store.save(a, [a2]);
  await store.insert(b, [b1]);
  expectEqual(ids(await outbox.claim(later(3), later(100), "h", 1)), [a1.id], "one event under a running claim");
  expectEqual(await outbox.settleUnsent(later(10)), 2, "settled: the two that no claim holds");
  expectEqual(ids(await outbox.list({ status: "delivered" })), [a2.id, b1.id], "delivered");
  expectEqual(ids(await outbox.list({ status: "pending" })), [a1.id], "the claimed one left to its holder");
  expectEqual(await outbox.settleUnsent(later(200)), 1, "once its lease ran out");
  expectEqual((await outbox.counts()).pending ?? 0, 0, "nothing pending");
}

/** `settleUnsent` and `prune` with a `limit`: at most that many a call, the rest by the calls that follow; prune oldest first. */
async function settlesAndPrunesInBatches(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  const { app, rec } = s;
  const created: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = rec({ appKey: `${app}-batch-${i}` });
    const e = ev("credential.created", r, later(i));
    await store.insert(r, [e]);
    created.push(e.id);
  }
  const settled: number[] = [];
  for (let i = 0; i < 4; i++) settled.push(await outbox.settleUnsent(later(10), 2));
  expectEqual(settled, [2, 2, 1, 0], "settled two a call, then the last one, then none");
  expectEqual((await outbox.counts()).pending ?? 0, 0, "nothing pending");
  const pruned: number[] = [];
  for (let i = 0; i < 3; i++) pruned.push(await outbox.prune(later(3), 2));
  expectEqual(pruned, [2, 1, 0], "pruned the three older than the cut, two a call");
  expectEqual(ids(await outbox.list()), created.slice(3), "the oldest went, the newer two are kept");
}

/** A dead event made pending again is due at once, its accepting sinks kept; only the app's named. */
async function requeuesDeadEvents(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void> {
  const { app, rec } = s;
  const a = rec();
  const b = rec({ appKey: `${app}-b`, app: { ...a.app, appSlug: `${app.slice(5)}-b` } });
  const a1 = ev("credential.created", a, T0);
  const b1 = ev("credential.created", b, T0);
  await store.insert(a, [a1]);
  await store.insert(b, [b1]);
  await outbox.claim(later(1), later(61), "h", 10);
  for (const e of [a1, b1]) {
    await outbox.settle(e.id, "h", {
      status: "dead",
      attempts: 5,
      nextAttemptAt: later(1),
      sinksDone: ["audit"],
      lastError: "HTTP 500",
      settledAt: later(1),
    });
  }
  expectEqual(await outbox.requeueDead(later(100), a.app.appSlug), 1, "requeued: the named app's dead event");
  const [again] = await outbox.list({ app: a.appKey });
  expectEqual(
    [again?.status, again?.attempts, again?.nextAttemptAt, again?.sinksDone, again?.settledAt],
    ["pending", 0, later(100), ["audit"], undefined],
    "the requeued event",
  );
  expectEqual(ids(await outbox.claim(later(100), later(160), "h", 10)), [a1.id], "claimed again");
  expectEqual((await outbox.list({ app: b.appKey }))[0]?.status, "dead", "the other app's event stays dead");
  expectEqual(await outbox.requeueDead(later(101)), 1, "requeued without a filter: the other one");
}
