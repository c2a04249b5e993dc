/** writeState: one atomic write where the provider-state store has one, else the changes one by one, in order. */
import { expect, it } from "vitest";
import { memoryStateStore } from "../src/entry/provider-kit.js";
import { writeState } from "../src/entry/provider.js";
import type { ProviderStateStore } from "../src/entry/store.js";

const changes = [
  { key: "key:old", delete: true as const },
  { key: "cred:a", value: { v: 1 } },
  { key: "stamp", value: "s1" },
];

it("uses the store's own write when it has one", async () => {
  const state = memoryStateStore();
  await state.put("key:old", "x");
  const calls: unknown[] = [];
  const write = state.write!;
  await writeState({ ...state, write: (c) => (calls.push(c), write(c)) }, changes);
  expect(calls).toEqual([changes]);
  expect(await state.list("")).toEqual([
    { key: "cred:a", value: { v: 1 } },
    { key: "stamp", value: "s1" },
  ]);
});

it("applies the changes one by one, in their order, on a store without write (a third party's)", async () => {
  const inner = memoryStateStore();
  await inner.put("key:old", "x");
  const log: string[] = [];
  const thirdParty: ProviderStateStore = {
    get: (k) => inner.get(k),
    list: (p) => inner.list(p),
    put: async (k, v) => void (log.push(`put ${k}`), await inner.put(k, v)),
    delete: async (k) => (log.push(`delete ${k}`), inner.delete(k)),
  };
  await writeState(thirdParty, changes);
  expect(log).toEqual(["delete key:old", "put cred:a", "put stamp"]);
  expect(await inner.get("stamp")).toBe("s1");
  expect(await inner.get("key:old")).toBeUndefined();
});
