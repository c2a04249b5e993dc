/**
 * The store conformance suite (keyv's `storeTestSuite` idea): every
 * {@link CredentialStore} — the built-in SQLite and PostgreSQL stores and a
 * third party's — runs the same cases against a real database.
 */
import { randomUUID } from "node:crypto";
import { Conflict, NotFound } from "@credhook/core/errors";
import { credentialEvent, type CredentialEventType } from "@credhook/core";
import type { CredentialRecord, CredentialStore, EventOutbox } from "@credhook/core/store";
import type { ConformanceTest } from "./conformance.js";

/** Options of {@link storeConformance}. */
export interface StoreConformanceOptions {
  /** Prefix of every test name. @default "store conformance" */
  name?: string;
}

function fail(message: string): never {
  throw new Error(`store conformance: ${message}`);
}

/** JSON with object keys sorted: a store may keep a record's keys in another order (PostgreSQL's JSONB does). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function expectEqual(actual: unknown, expected: unknown, what: string): void {
  const a = canonical(actual);
  const e = canonical(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

async function expectRejects(
  promise: Promise<unknown>,
  type: new (...args: never[]) => Error,
  what: string,
): Promise<void> {
  try {
    await promise;
  } catch (err) {
    if (!(err instanceof type)) fail(`${what}: expected ${type.name}, got ${String(err)}`);
    return;
  }
  fail(`${what}: expected ${type.name}, but it succeeded`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Registers the store conformance tests with `test`.
 * @param test vitest's `it`
 * @param factory opens a fresh, migrated, empty store; called once per test (closed by the suite)
 */
export function storeConformance(
  test: ConformanceTest,
  factory: () => Promise<CredentialStore>,
  options: StoreConformanceOptions = {},
): void {
  const prefix = options.name ?? "store conformance";
  const t = (name: string, fn: (store: CredentialStore) => Promise<void>) =>
    test(`${prefix}: ${name}`, async () => {
      const store = await factory();
      try {
        await fn(store);
      } finally {
        await store.close();
      }
    });
  const app = `slug:${randomUUID().slice(0, 8)}`;
  const rec = (over: Partial<CredentialRecord> = {}): CredentialRecord => ({
    id: randomUUID(),
    credentialType: "API_KEY",
    appKey: app,
    app: { appName: "Conformance — ünïcode ‘quotes’", developer: "d@example.com", appSlug: app.slice(5) },
    publicId: `k${randomUUID().slice(0, 8)}`,
    status: "active",
    apis: [{ id: "a", gateway: "local", usagePlans: ["p1", "p2"] }],
    bindings: [{ gateway: "local", nativeId: "n1", resources: { etag: 'W/"1"', nested: { list: [1, true, null] } } }],
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    ...over,
  });

  t("inserts and reads a record back unchanged, by id, public id and app key", async (store) => {
    const r = rec();
    await store.insert(r);
    expectEqual(await store.get(r.id), r, "get");
    expectEqual(await store.findByPublicId("API_KEY", r.publicId), r, "findByPublicId");
    expectEqual(
      await store.findByPublicId("CLIENT_CREDENTIALS", r.publicId),
      undefined,
      "findByPublicId of the other type",
    );
    expectEqual(await store.findByPublicId("API_KEY", ""), undefined, "findByPublicId of an empty id");
    expectEqual(await store.findByAppKey(app, "API_KEY"), r, "findByAppKey");
    expectEqual(await store.get(randomUUID()), undefined, "get of an unknown id");
  });

  t("one live credential per app and type: insert and save of a second are Conflicts", async (store) => {
    const r = rec();
    await store.insert(r);
    await expectRejects(store.insert(rec()), Conflict, "insert of a second live credential of the app");
    await expectRejects(
      store.insert({ ...rec(), id: r.id, appKey: "slug:other" }),
      Conflict,
      "insert of a duplicate id",
    );
    const other = rec({ appKey: "slug:other-app" });
    await store.insert(other);
    await expectRejects(
      store.save({ ...other, appKey: app }),
      Conflict,
      "save moving a credential onto an app that has one",
    );
    await store.insert(rec({ credentialType: "CLIENT_CREDENTIALS" })); // another type is another credential
  });

  t("save replaces a record; save of an unknown id is NotFound; delete reports whether it existed", async (store) => {
    const r = rec();
    await store.insert(r);
    const changed = { ...r, status: "pending" as const, apis: [], updatedAt: "2026-01-02T00:00:00.000Z" };
    await store.save(changed);
    expectEqual(await store.get(r.id), changed, "get after save");
    await expectRejects(store.save(rec()), NotFound, "save of an unknown id");
    if (!(await store.delete(r.id))) fail("delete of an existing record returned false");
    if (await store.delete(r.id)) fail("delete of a deleted record returned true");
    expectEqual(await store.list(), [], "list after delete");
  });

  t(
    "insert and save keep the record as it was when called: changing it before the write settles changes nothing stored",
    async (store) => {
      const r = rec();
      const inserted = structuredClone(r);
      const insert = store.insert(r);
      r.status = "pending";
      r.apis[0]!.usagePlans.push("changed-after-insert");
      await insert;
      expectEqual(await store.get(r.id), inserted, "get after an insert whose record changed before it settled");
      const saved = structuredClone(r);
      const save = store.save(r);
      r.bindings = [];
      r.updatedAt = "2026-02-02T00:00:00.000Z";
      await save;
      expectEqual(await store.get(r.id), saved, "get after a save whose record changed before it settled");
    },
  );

  t(
    "findApp (when implemented) reads the app's live record of a type and its abandoned ones of any type, oldest first",
    async (store) => {
      if (!store.findApp) return;
      const appKey = `slug:${randomUUID().slice(0, 8)}`;
      expectEqual(await store.findApp(appKey, "API_KEY"), { live: undefined, abandoned: [] }, "an app with no record");
      const live = rec({ appKey });
      const otherType = rec({ appKey, credentialType: "CLIENT_CREDENTIALS" });
      const later = rec({ appKey, status: "abandoned", updatedAt: "2026-01-03T00:00:00.000Z" });
      const earlier = rec({
        appKey,
        status: "abandoned",
        credentialType: "CLIENT_CREDENTIALS",
        updatedAt: "2026-01-02T00:00:00.000Z",
      });
      for (const r of [live, otherType, later, earlier, rec({ appKey: `${appKey}-other`, status: "abandoned" })])
        await store.insert(r);
      expectEqual(await store.findApp(appKey, "API_KEY"), { live, abandoned: [earlier, later] }, "findApp of API_KEY");
      expectEqual(
        await store.findApp(appKey, "CLIENT_CREDENTIALS"),
        { live: otherType, abandoned: [earlier, later] },
        "findApp of CLIENT_CREDENTIALS",
      );
    },
  );

  t("abandoned records live beside the app's live one, found only by listAbandoned", async (store) => {
    const gaveUp = (n: number) =>
      rec({
        publicId: "",
        status: "abandoned",
        bindings: [],
        updatedAt: `2026-01-0${n}T00:00:00.000Z`,
        abandoned: {
          at: "2026-01-01T00:00:00.000Z",
          reason: "timeout",
          uncertain: ["local"],
          settleUntil: "2026-01-01T00:05:00.000Z",
          attempts: 0,
        },
      });
    const a1 = gaveUp(2);
    const a2 = gaveUp(3);
    await store.insert(a2);
    await store.insert(a1);
    const live = rec();
    await store.insert(live);
    expectEqual(await store.findByAppKey(app, "API_KEY"), live, "findByAppKey with abandoned records around");
    expectEqual(await store.listAbandoned(app), [a1, a2], "listAbandoned(app), oldest first");
    expectEqual(
      (await store.listAbandoned()).map((r) => r.id),
      [a1.id, a2.id],
      "listAbandoned()",
    );
    expectEqual(await store.listAbandoned("slug:nobody"), [], "listAbandoned of another app");
  });

  t("finds records by their key's fingerprint, oldest first (where the store offers it)", async (store) => {
    if (!store.findByFingerprint) return; // optional: the server then filters list()
    const fp = `sha256:${"ab".repeat(16)}`;
    const older = rec({ appKey: `${app}-fp1`, keyFingerprint: fp, createdAt: "2026-01-01T00:00:00.000Z" });
    const newer = rec({ appKey: `${app}-fp2`, keyFingerprint: fp, createdAt: "2026-01-02T00:00:00.000Z" });
    const other = rec({ appKey: `${app}-fp3`, keyFingerprint: `sha256:${"cd".repeat(16)}` });
    for (const r of [newer, other, older, rec({ appKey: `${app}-fp4` })]) await store.insert(r);
    expectEqual(
      (await store.findByFingerprint(fp)).map((r) => r.id),
      [older.id, newer.id],
      "the two records with that fingerprint, oldest first",
    );
    expectEqual(await store.findByFingerprint(`sha256:${"00".repeat(16)}`), [], "an unknown fingerprint");
    await store.delete(older.id);
    expectEqual(
      (await store.findByFingerprint(fp)).map((r) => r.id),
      [newer.id],
      "after a delete",
    );
  });

  t("lists unfinished records older than a time, and counts the recent ones", async (store) => {
    const pending = rec({ status: "pending", updatedAt: "2026-01-02T00:00:00.000Z" });
    const revoking = rec({ appKey: "slug:r", status: "revoking", updatedAt: "2026-01-03T00:00:00.000Z" });
    await store.insert(revoking);
    await store.insert(pending);
    await store.insert(rec({ appKey: "slug:a", status: "active", updatedAt: "2026-01-01T00:00:00.000Z" }));
    await store.insert(rec({ appKey: "slug:x", status: "abandoned", updatedAt: "2026-01-01T00:00:00.000Z" }));
    expectEqual(
      await store.listUnfinished("2026-02-01T00:00:00.000Z"),
      [pending, revoking],
      "listUnfinished, oldest first",
    );
    expectEqual(await store.listUnfinished("2026-01-02T12:00:00.000Z"), [pending], "listUnfinished before a time");
    expectEqual(await store.countUnfinishedSince("2026-01-02T12:00:00.000Z"), 1, "countUnfinishedSince");
    expectEqual(await store.countUnfinishedSince("2026-02-01T00:00:00.000Z"), 0, "countUnfinishedSince after all");
  });

  t("keeps provider state per gateway: get, put (replace), delete, list by prefix in key order", async (store) => {
    const g1 = store.stateFor("g1");
    await g1.put("cred:b", { a: 1 });
    await g1.put("cred:a", [1, "x", null]);
    await g1.put("cred:b", { a: 2 }); // replaces
    await g1.put("cre%d_", true); // LIKE wildcards are plain characters in a prefix
    await g1.put("other", "v");
    await store.stateFor("g2").put("cred:a", "g2's");
    expectEqual(await g1.get("cred:b"), { a: 2 }, "get after replace");
    expectEqual(await g1.get("missing"), undefined, "get of a missing key");
    expectEqual(
      await g1.list("cred:"),
      [
        { key: "cred:a", value: [1, "x", null] },
        { key: "cred:b", value: { a: 2 } },
      ],
      "list('cred:')",
    );
    expectEqual(
      (await g1.list("cre%")).map((e) => e.key),
      ["cre%d_"],
      "list('cre%')",
    );
    expectEqual(await store.stateFor("g2").get("cred:a"), "g2's", "another gateway's namespace");
    if (!(await g1.delete("cred:a"))) fail("delete of an existing key returned false");
    if (await g1.delete("cred:a")) fail("delete of a deleted key returned true");
    expectEqual(await g1.get("cred:a"), undefined, "get after delete");
  });

  t(
    "writes several provider-state changes at once (write, when implemented): puts replace, deletes remove, in one namespace",
    async (store) => {
      const g1 = store.stateFor("g1");
      if (!g1.write) return;
      await g1.put("key:old", { nativeId: "n0" });
      await g1.put("cred:n0", { v: 0 });
      await store.stateFor("g2").put("cred:n0", "g2's");
      await g1.write([
        { key: "key:old", delete: true },
        { key: "cred:n0", delete: true },
        { key: "key:new", value: { nativeId: "n1" } },
        { key: "cred:n1", value: { v: 1, list: [true, null, "ü"] } },
        { key: "stamp", value: "s1" },
      ]);
      expectEqual(
        await g1.list(""),
        [
          { key: "cred:n1", value: { v: 1, list: [true, null, "ü"] } },
          { key: "key:new", value: { nativeId: "n1" } },
          { key: "stamp", value: "s1" },
        ],
        "g1 after the write",
      );
      await g1.write([{ key: "stamp", value: "s2" }]); // replaces
      expectEqual(await g1.get("stamp"), "s2", "a put of an existing key replaces it");
      await g1.write([]);
      expectEqual(await store.stateFor("g2").get("cred:n0"), "g2's", "another gateway's namespace is untouched");
    },
  );

  t(
    "lists the records with unsettled gateways (when it implements listUnsettled), with the field as written",
    async (store) => {
      if (!store.listUnsettled) return;
      await store.init();
      const calm = rec();
      const unsettled = rec({
        appKey: `${app}-u`,
        unsettled: {
          gateways: [{ gateway: "local", attempted: [{ id: "a", usagePlans: ["p3"] }] }],
          settleUntil: "2026-01-01T00:05:00.000Z",
          attempts: 0,
        },
      });
      await store.insert(calm);
      await store.insert(unsettled);
      const mine = (await store.listUnsettled()).filter((r) => r.id === calm.id || r.id === unsettled.id);
      expectEqual(mine, [unsettled], "listUnsettled");
      const { unsettled: _gone, ...settled } = unsettled;
      await store.save(settled);
      if ((await store.listUnsettled()).some((r) => r.id === unsettled.id))
        fail("listUnsettled still lists a record saved without the field");
    },
  );
  t("health resolves on an open store", async (store) => {
    await store.health();
  });

  t("locks serialise one key and let other keys run in parallel; tryRun skips a held key", async (store) => {
    if (!store.locks) return; // a single-instance store without locks: core serialises in process
    const locks = store.locks;
    const order: string[] = [];
    const job = (key: string, name: string, ms: number) =>
      locks.run(key, async () => {
        order.push(`start ${name}`);
        await sleep(ms);
        order.push(`end ${name}`);
        return name;
      });
    const first = job("app-1", "a1", 150);
    await sleep(40);
    const busy: { ran: boolean } | undefined = await locks.tryRun("app-1", async () => "x");
    const results = await Promise.all([first, job("app-1", "a2", 1), job("app-2", "b", 5)]);
    expectEqual(results, ["a1", "a2", "b"], "results");
    if (order.indexOf("end a1") > order.indexOf("start a2")) fail(`same key overlapped: ${order.join(", ")}`);
    if (order.indexOf("start b") > order.indexOf("end a1"))
      fail(`different keys did not run in parallel: ${order.join(", ")}`);
    if (busy?.ran !== false) fail("tryRun ran while the key was held");
    expectEqual(await locks.tryRun("app-1", async () => 7), { ran: true, value: 7 }, "tryRun of a free key");
    await expectRejects(
      locks.run("app-3", async () => Promise.reject(new NotFound("boom"))),
      NotFound,
      "an error inside run",
    );
    expectEqual(
      await locks.tryRun("app-3", async () => 1),
      { ran: true, value: 1 },
      "tryRun after an error released the key",
    );
  });

  // The event outbox (events.ts): a store without one skips these.
  const withOutbox = (name: string, fn: (store: CredentialStore, outbox: EventOutbox) => Promise<void>) =>
    t(`outbox: ${name}`, async (store) => {
      if (store.outbox) await fn(store, store.outbox);
    });
  const ev = (type: CredentialEventType, r: CredentialRecord, time = "2026-01-01T00:00:00.000Z") =>
    credentialEvent(type, r, time);
  const T0 = "2026-01-01T00:00:00.000Z";
  const later = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();
  const ids = (events: Array<{ event: { id: string } }>) => events.map((e) => e.event.id);

  withOutbox("events are committed with their record write, never without it", async (store, outbox) => {
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
  });

  withOutbox("lists the events of a key's fingerprint, also once its record is gone", async (store, outbox) => {
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
  });

  withOutbox("claims each app's oldest pending event, once, until it is settled", async (store, outbox) => {
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
    if (
      await outbox.settle(a2.id, "h2", { status: "delivered", attempts: 1, nextAttemptAt: later(600), sinksDone: [] })
    )
      fail("settle after the claim was taken over returned true");
  });

  withOutbox("a dead event no longer holds back its app; pruning keeps pending events", async (store, outbox) => {
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
  });

  withOutbox(
    "a dead event made pending again is due at once, its accepting sinks kept; only the app's named",
    async (store, outbox) => {
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
    },
  );

  withOutbox("with no sink, one write settles every pending event no live claim holds", async (store, outbox) => {
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
  });
}
