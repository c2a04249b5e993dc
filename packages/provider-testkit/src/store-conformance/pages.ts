/**
 * The paged reads (`listPage`, `listUnsettledPage`): every record exactly once across a walk's pages and in order,
 * also while records are written; the filters; the page size's bounds and the cursor's checks.
 */
import { randomUUID } from "node:crypto";
import { ValidationError } from "@credhook/core/errors";
import type { CredentialPage, CredentialRecord, CredentialStore } from "@credhook/core/store";
import { expectEqual, expectRejects, fail, type StoreCase, type StoreSuite } from "./harness.js";

/** The paged-read tests, in their order. */
export const pageTests: StoreCase[] = [
  {
    name: "listPage walks every record once, oldest createdAt first (ties by id), in pages of the limit; the last page has no next",
    check: walksEveryRecordOnce,
  },
  {
    name: "listPage while records are written: each record there throughout comes once; one inserted ahead of the cursor comes, one deleted ahead does not",
    check: walksWhileWritten,
  },
  {
    name: "listPage filters by state, app (key, slug or name), developer, gateway (a binding or an API) and creation time, and combined",
    check: filtersPages,
  },
  {
    name: "listPage and listUnsettledPage refuse a limit out of 1…1000 and a cursor they did not return (ValidationError)",
    check: refusesBadPageArguments,
  },
  {
    name: "listUnsettledPage walks the records with unsettled gateways by settle time, only the due ones with dueAt",
    check: walksUnsettled,
  },
];

/** A record of the suite's developer on an app of its own (apps hold one live record per type). */
const own = (s: StoreSuite, over: Partial<CredentialRecord> = {}): CredentialRecord => {
  const slug = `${s.app.slice(5)}-${randomUUID().slice(0, 8)}`;
  return s.rec({
    appKey: `slug:d@example.com/${slug}`,
    app: { appName: `App ${slug}`, developer: "d@example.com", appSlug: slug },
    ...over,
  });
};

/** Every page of `read` from the start, with the cursor each returned. */
async function walk(
  read: (after: string | undefined) => Promise<CredentialPage>,
  maxPages = 100,
): Promise<CredentialPage[]> {
  const pages: CredentialPage[] = [];
  let after: string | undefined;
  do {
    const page = await read(after);
    pages.push(page);
    after = page.next;
    if (pages.length > maxPages) fail(`a walk did not end after ${maxPages} pages`);
  } while (after !== undefined);
  return pages;
}

/** The ids of every record of `pages`, in order. */
const idsOf = (pages: CredentialPage[]) => pages.flatMap((p) => p.records.map((r) => r.id));

/** Byte order of (createdAt, id), the walk's order. */
const byCreated = (a: CredentialRecord, b: CredentialRecord) =>
  Buffer.compare(Buffer.from(`${a.createdAt}\u0000${a.id}`), Buffer.from(`${b.createdAt}\u0000${b.id}`));

/** An ISO 8601 time on 2026-01-01 plus `n` minutes. */
const at = (n: number) => new Date(Date.parse("2026-01-01T00:00:00.000Z") + n * 60_000).toISOString();

/** listPage walks every record once, oldest createdAt first (ties by id), in pages of the limit; the last page has no next. */
async function walksEveryRecordOnce(s: StoreSuite, store: CredentialStore): Promise<void> {
  // Three records share one creation time: their order is their ids'.
  const records = [5, 1, 3, 3, 9, 3, 0, 7, 2, 8, 4].map((n) => own(s, { createdAt: at(n) }));
  for (const r of records) await store.insert(r);
  const expected = [...records].sort(byCreated).map((r) => r.id);
  const pages = await walk((after) => store.listPage({ limit: 3, ...(after ? { after } : {}) }));
  expectEqual(
    pages.map((p) => p.records.length),
    [3, 3, 3, 2],
    "the page sizes of a walk of 11 records by 3",
  );
  expectEqual(idsOf(pages), expected, "the records of the walk, in order");
  expectEqual(pages[0]!.records[0], [...records].sort(byCreated)[0], "a record read back unchanged");
  const whole = await store.listPage();
  expectEqual(
    [whole.records.map((r) => r.id), whole.next],
    [expected, undefined],
    "one page of the default size (100)",
  );
  const exact = await walk((after) => store.listPage({ limit: 11, ...(after ? { after } : {}) }));
  expectEqual(exact.length, 1, "a walk whose limit equals the records: one page, no next");
  expectEqual(await store.listPage({ status: "revoking" }), { records: [] }, "an empty page");
}

/** listPage while records are written: each record there throughout comes once; one inserted ahead of the cursor comes, one deleted ahead does not. */
async function walksWhileWritten(s: StoreSuite, store: CredentialStore): Promise<void> {
  const r = Array.from({ length: 9 }, (_, i) => own(s, { createdAt: at(10 * (i + 1)) }));
  for (const x of r) await store.insert(x);
  const first = await store.listPage({ limit: 3 });
  expectEqual(
    first.records.map((x) => x.id),
    [r[0]!.id, r[1]!.id, r[2]!.id],
    "the first page",
  );
  if (!first.next) fail("the first page of nine records by three has no next");
  // Behind the cursor: a save and an insert older than it; ahead of it: a delete, an insert, a save.
  await store.save({ ...r[1]!, status: "revoking", updatedAt: at(1000) });
  await store.insert(own(s, { createdAt: at(0) }));
  await store.delete(r[4]!.id);
  const added = own(s, { createdAt: at(65) });
  await store.insert(added);
  const saved = { ...r[6]!, status: "pending" as const, updatedAt: at(1000) };
  await store.save(saved);
  const rest = await walk((after) => store.listPage({ limit: 2, after: after ?? first.next }));
  expectEqual(
    idsOf(rest),
    [r[3]!.id, r[5]!.id, added.id, r[6]!.id, r[7]!.id, r[8]!.id],
    "the rest of the walk: the records ahead of the cursor as they are now, each once",
  );
  expectEqual(
    rest.flatMap((p) => p.records).find((x) => x.id === saved.id),
    saved,
    "a record saved ahead of the cursor, as saved",
  );
}

/** listPage filters by state, app (key, slug or name), developer, gateway (a binding or an API) and creation time, and combined. */
async function filtersPages(s: StoreSuite, store: CredentialStore): Promise<void> {
  const a = own(s, { createdAt: at(1) });
  const other = own(s, {
    createdAt: at(2),
    app: { appName: "Other", developer: "e@example.com", appSlug: `${s.app.slice(5)}-other` },
    appKey: `slug:e@example.com/${s.app.slice(5)}-other`,
    status: "pending",
  });
  // An app without a slug: found by its name; on gateway "g2" by an API only (no binding there yet).
  const named = own(s, {
    createdAt: at(3),
    app: { appName: `Named ${s.app}`, developer: "e@example.com" },
    appKey: `app:e@example.com/Named ${s.app}`,
    apis: [{ id: "b", gateway: "g2", usagePlans: [] }],
    bindings: [],
  });
  const a2 = own(s, { createdAt: at(4), appKey: a.appKey, app: a.app, credentialType: "CLIENT_CREDENTIALS" });
  const abandoned = own(s, { createdAt: at(5), appKey: a.appKey, app: a.app, status: "abandoned" });
  for (const x of [abandoned, named, a2, other, a]) await store.insert(x);
  const ids = async (query: Parameters<CredentialStore["listPage"]>[0]) =>
    idsOf(await walk((after) => store.listPage({ ...query, limit: 2, ...(after ? { after } : {}) })));
  const cases: Array<[string, Parameters<CredentialStore["listPage"]>[0], CredentialRecord[]]> = [
    ["state active", { status: "active" }, [a, named, a2]],
    ["state pending", { status: "pending" }, [other]],
    ["app by key", { app: a.appKey }, [a, a2, abandoned]],
    ["app by slug", { app: a.app.appSlug! }, [a, a2, abandoned]],
    ["app by name", { app: named.app.appName }, [named]],
    ["app by a name no app has", { app: "nobody" }, []],
    ["developer", { developer: "e@example.com" }, [other, named]],
    ["gateway of the bindings", { gateway: "local" }, [a, other, a2, abandoned]],
    ["gateway of an API only", { gateway: "g2" }, [named]],
    ["created before", { createdBefore: at(3) }, [a, other]],
    ["state and app", { status: "active", app: a.app.appSlug! }, [a, a2]],
    ["state, app and created before", { status: "active", app: a.appKey, createdBefore: at(4) }, [a]],
    ["developer and gateway", { developer: "d@example.com", gateway: "local" }, [a, a2, abandoned]],
    ["developer and state", { developer: "e@example.com", status: "active" }, [named]],
  ];
  for (const [what, query, expected] of cases)
    expectEqual(
      await ids(query),
      expected.map((x) => x.id),
      `listPage by ${what}`,
    );
}

/** listPage and listUnsettledPage refuse a limit out of 1…1000 and a cursor they did not return (ValidationError). */
async function refusesBadPageArguments(s: StoreSuite, store: CredentialStore): Promise<void> {
  await store.insert(own(s, { createdAt: at(1) }));
  await store.insert(own(s, { createdAt: at(2) }));
  for (const limit of [0, 1001, 2.5, -1])
    await expectRejects(store.listPage({ limit }), ValidationError, `listPage with limit ${limit}`);
  await expectRejects(store.listUnsettledPage({ limit: 0 }), ValidationError, "listUnsettledPage with limit 0");
  const { next } = await store.listPage({ limit: 1 });
  if (!next) fail("a page of one of two records has no next");
  expectEqual((await store.listPage({ limit: 1000 })).records.length, 2, "a page of the largest limit");
  for (const after of ["not a cursor", "", Buffer.from('["c",1,2]').toString("base64url")])
    await expectRejects(store.listPage({ after }), ValidationError, `listPage after '${after}'`);
  await expectRejects(
    store.listUnsettledPage({ after: next }),
    ValidationError,
    "listUnsettledPage after a listPage cursor",
  );
}

/** listUnsettledPage walks the records with unsettled gateways by settle time, only the due ones with dueAt. */
async function walksUnsettled(s: StoreSuite, store: CredentialStore): Promise<void> {
  const unsettled = (minute: number) =>
    own(s, {
      unsettled: {
        gateways: [{ gateway: "local", attempted: [{ id: "a", usagePlans: ["p3"] }] }],
        settleUntil: at(minute),
        attempts: 0,
      },
    });
  const u = [30, 10, 50, 20, 40].map(unsettled);
  for (const x of [...u, own(s), own(s)]) await store.insert(x);
  const order = [u[1]!, u[3]!, u[0]!, u[4]!, u[2]!];
  const first = await store.listUnsettledPage({ limit: 2 });
  expectEqual(first.records, [order[0], order[1]], "the first page: the earliest settle times, as written");
  // Settled ahead of the cursor: no longer listed.
  const { unsettled: _gone, ...settled } = order[2]!;
  await store.save(settled);
  const rest = await walk((after) => store.listUnsettledPage({ limit: 2, after: after ?? first.next }));
  expectEqual(idsOf(rest), [order[3]!.id, order[4]!.id], "the rest of the walk, without the record settled meanwhile");
  expectEqual(
    idsOf(await walk((after) => store.listUnsettledPage({ dueAt: at(40), limit: 1, ...(after ? { after } : {}) }))),
    [order[0]!.id, order[1]!.id, order[3]!.id],
    "the records due at a time (settleUntil at or before it)",
  );
}
