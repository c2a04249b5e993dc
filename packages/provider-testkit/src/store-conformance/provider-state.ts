/** Provider state: each gateway's key–value namespace (`stateFor`), and several changes written at once (`write`). */
import type { CredentialStore } from "@credhook/core/store";
import { expectEqual, fail, type StoreCase, type StoreSuite } from "./harness.js";

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
