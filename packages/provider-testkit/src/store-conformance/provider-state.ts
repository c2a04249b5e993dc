/** Provider state: each gateway's key–value namespace (`stateFor`), and several changes written at once (`write`). */
import { ValidationError } from "@credhook/core/errors";
import type { CredentialStore } from "@credhook/core/store";
import { expectEqual, expectRejects, fail, type StoreCase, type StoreSuite } from "./harness.js";

/** The provider-state tests, in their order. */
export const providerStateTests: StoreCase[] = [
  {
    name: "keeps provider state per gateway: get, put (replace), delete, list by prefix in key order",
    check: statePerGateway,
  },
  {
    name: "writes several provider-state changes at once (write, when implemented): puts replace, deletes remove, in one namespace",
    check: stateWrittenAtOnce,
  },
  {
    name: "pages provider state by prefix in UTF-8 byte order (listPage, when implemented): each key once, no key outside the prefix, no empty last page",
    check: statePaged,
  },
];

/** Keeps provider state per gateway: get, put (replace), delete, list by prefix in key order. */
async function statePerGateway(_s: StoreSuite, store: CredentialStore): Promise<void> {
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
}

/** Writes several provider-state changes at once (write, when implemented): puts replace, deletes remove, in one namespace. */
async function stateWrittenAtOnce(_s: StoreSuite, store: CredentialStore): Promise<void> {
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
}

/**
 * Pages provider state by prefix in UTF-8 byte order (listPage, when implemented): each key once, no key outside the
 * prefix (the key after its range, another gateway's), `next` only while more follow, a cursor honoured, a limit
 * out of 1…1000 refused.
 */
async function statePaged(_s: StoreSuite, store: CredentialStore): Promise<void> {
  const g1 = store.stateFor("g1");
  if (!g1.listPage) return;
  // In UTF-8 byte order: z (7a) < é (c3 a9) < Ａ (ef bc a1) < 😀 (f0 9f 98 80); UTF-16 would put 😀 (d83d) before Ａ.
  const inside = ["cred:a", "cred:b", "cred:c", "cred:d", "cred:z", "cred:é", "cred:Ａ", "cred:😀"];
  // Around the prefix: before it, a shorter key, and the first keys after its range (`;` follows `:`).
  for (const key of ["cre", "cred", "cred;", "cred;a", "key:x", ...[...inside].reverse()]) await g1.put(key, { key });
  await store.stateFor("g2").put("cred:b2", "g2's");
  const pages: Array<{ keys: string[]; next: string | undefined }> = [];
  let after: string | undefined;
  do {
    const page = await g1.listPage("cred:", { limit: 3, ...(after !== undefined ? { after } : {}) });
    pages.push({ keys: page.entries.map((e) => e.key), next: page.next });
    for (const e of page.entries) expectEqual(e.value, { key: e.key }, `the value of ${e.key}`);
    after = page.next;
    if (pages.length > 10) fail("listPage('cred:') never ends: a page's next leads back");
  } while (after !== undefined);
  expectEqual(
    pages,
    [
      { keys: inside.slice(0, 3), next: "cred:c" },
      { keys: inside.slice(3, 6), next: "cred:é" },
      { keys: inside.slice(6), next: undefined },
    ],
    "listPage('cred:') pages of 3",
  );
  expectEqual(
    (await g1.listPage("cred:", { limit: 8 })).next,
    undefined,
    "a page that holds the prefix's last key has no next",
  );
  expectEqual(
    (await g1.listPage("cred:", { after: "cred:c", limit: 2 })).entries.map((e) => e.key),
    ["cred:d", "cred:z"],
    "listPage('cred:') after cred:c",
  );
  expectEqual(
    (await g1.listPage("cred:", { after: "a", limit: 1 })).entries.map((e) => e.key),
    ["cred:a"],
    "a cursor before the prefix starts at its first key",
  );
  expectEqual(
    (await g1.listPage("", { limit: 1000 })).entries.map((e) => e.key),
    ["cre", "cred", ...inside, "cred;", "cred;a", "key:x"],
    "listPage('') lists the gateway's every key",
  );
  expectEqual((await g1.listPage("none:", { limit: 5 })).entries, [], "a prefix without keys");
  for (const limit of [0, 1001, 1.5])
    await expectRejects(g1.listPage("cred:", { limit }), ValidationError, `state listPage with limit ${limit}`);
}
