/**
 * Records: written and read back unchanged, one live credential per app and type, save and delete, each write
 * taking the record as it was when called, and every way the store finds records (by id, public id, app key,
 * fingerprint; an app's abandoned ones; the unfinished and the unsettled).
 */
import { randomUUID } from "node:crypto";
import { Conflict, NotFound } from "@credhook/core/errors";
import type { CredentialStore } from "@credhook/core/store";
import type { ConformanceTestContext } from "../conformance/options.js";
import { expectEqual, expectRejects, fail, skip, type StoreCase, type StoreSuite } from "./harness.js";

/** The record tests, in their order. */
export const recordTests: StoreCase[] = [
  { name: "inserts and reads a record back unchanged, by id, public id and app key", check: insertAndReadBack },
  {
    name: "getMany (when implemented) reads several records by id in one call, each as get reads it: an unknown id absent, a duplicate once, none for an empty list",
    check: getsManyById,
  },
  {
    name: "one live credential per app and type: insert and save of a second are Conflicts",
    check: oneLiveCredentialPerApp,
  },
  {
    name: "save replaces a record; save of an unknown id is NotFound; delete reports whether it existed",
    check: saveAndDelete,
  },
  {
    name: "insert and save keep the record as it was when called: changing it before the write settles changes nothing stored",
    check: writesTakeTheRecordAsCalled,
  },
  {
    name: "findApp (when implemented) reads the app's live record of a type and its abandoned ones of any type, oldest first",
    check: findAppReadsLiveAndAbandoned,
  },
  { name: "abandoned records live beside the app's live one, found only by listAbandoned", check: abandonedBesideLive },
  {
    name: "finds records by their key's fingerprint, oldest first (where the store offers it)",
    check: findsByFingerprint,
  },
  { name: "lists unfinished records older than a time, and counts the recent ones", check: listsUnfinished },
  {
    name: "lists the records with unsettled gateways (when it implements listUnsettled), with the field as written",
    check: listsUnsettled,
  },
];

/** Inserts and reads a record back unchanged, by id, public id and app key. */
async function insertAndReadBack(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { app, rec } = s;
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
}

/**
 * `getMany` (optional: skipped by a store without it) reads several records by id in one call, each equal to what
 * `get` reads: an unknown id is absent, a duplicate id answered once, an empty list an empty map, a record not asked
 * for left out, a saved record read as saved.
 */
async function getsManyById(s: StoreSuite, store: CredentialStore, ctx: ConformanceTestContext): Promise<void> {
  if (!store.getMany) skip(ctx, "the store has no getMany (optional): core reads a batch with one get per id");
  const { app, rec } = s;
  const one = rec({ appKey: `${app}-many-1` });
  const two = rec({ appKey: `${app}-many-2` });
  const notAsked = rec({ appKey: `${app}-many-3` });
  const abandoned = rec({ appKey: one.appKey, status: "abandoned", publicId: "" });
  for (const r of [one, two, notAsked, abandoned]) await store.insert(r);
  const saved = { ...two, apis: [], updatedAt: "2026-01-02T00:00:00.000Z" };
  await store.save(saved);
  const unknown = randomUUID();
  const found = await store.getMany([two.id, unknown, one.id, abandoned.id, two.id]);
  if (!(found instanceof Map)) fail(`getMany returned ${String(found)}, not a Map`);
  expectEqual(
    [...found.keys()].sort(),
    [one.id, two.id, abandoned.id].sort(),
    "the ids asked for that have a record, each once: none for an unknown id, none not asked for",
  );
  for (const r of [one, saved, abandoned]) {
    expectEqual(found.get(r.id), await store.get(r.id), `getMany's record ${r.id} against get's`);
    expectEqual(found.get(r.id), r, `getMany's record ${r.id} as written`);
  }
  expectEqual([...(await store.getMany([unknown])).keys()], [], "an unknown id alone");
  expectEqual([...(await store.getMany([])).keys()], [], "an empty list");
}

/** One live credential per app and type: insert and save of a second are Conflicts. */
async function oneLiveCredentialPerApp(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { app, rec } = s;
  const r = rec();
  await store.insert(r);
  await expectRejects(store.insert(rec()), Conflict, "insert of a second live credential of the app");
  await expectRejects(store.insert({ ...rec(), id: r.id, appKey: "slug:other" }), Conflict, "insert of a duplicate id");
  const other = rec({ appKey: "slug:other-app" });
  await store.insert(other);
  await expectRejects(
    store.save({ ...other, appKey: app }),
    Conflict,
    "save moving a credential onto an app that has one",
  );
  await store.insert(rec({ credentialType: "CLIENT_CREDENTIALS" })); // another type is another credential
}

/** Save replaces a record; save of an unknown id is NotFound; delete reports whether it existed. */
async function saveAndDelete(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { rec } = s;
  const r = rec();
  await store.insert(r);
  const changed = { ...r, status: "pending" as const, apis: [], updatedAt: "2026-01-02T00:00:00.000Z" };
  await store.save(changed);
  expectEqual(await store.get(r.id), changed, "get after save");
  await expectRejects(store.save(rec()), NotFound, "save of an unknown id");
  if (!(await store.delete(r.id))) fail("delete of an existing record returned false");
  if (await store.delete(r.id)) fail("delete of a deleted record returned true");
  expectEqual(await store.list(), [], "list after delete");
}

/** Insert and save keep the record as it was when called: changing it before the write settles changes nothing stored. */
async function writesTakeTheRecordAsCalled(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { rec } = s;
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
}

/** findApp (when implemented) reads the app's live record of a type and its abandoned ones of any type, oldest first. */
async function findAppReadsLiveAndAbandoned(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { rec } = s;
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
}

/** Abandoned records live beside the app's live one, found only by listAbandoned. */
async function abandonedBesideLive(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { app, rec } = s;
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
}

/** Finds records by their key's fingerprint, oldest first (where the store offers it). */
async function findsByFingerprint(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { app, rec } = s;
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
}

/** Lists unfinished records older than a time, and counts the recent ones. */
async function listsUnfinished(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { rec } = s;
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
}

/** Lists the records with unsettled gateways (when it implements listUnsettled), with the field as written. */
async function listsUnsettled(s: StoreSuite, store: CredentialStore): Promise<void> {
  const { app, rec } = s;
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
}
