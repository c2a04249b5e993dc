import type { JsonValue, ProviderStateStore } from "./provider.js";
import { statePageBounds, statePageOf } from "./state-pages.js";
import { compareBytes } from "./store-pages.js";

/** An in-memory {@link ProviderStateStore} (values copied in and out): for provider tests, and for `check-config`, which must not touch the real store. */
export function memoryStateStore(): ProviderStateStore {
  const map = new Map<string, JsonValue>();
  return {
    async get(key) {
      const v = map.get(key);
      return v === undefined ? undefined : structuredClone(v);
    },
    async put(key, value) {
      map.set(key, structuredClone(value));
    },
    async delete(key) {
      return map.delete(key);
    },
    async write(changes) {
      const copies = changes.map((c) => ("delete" in c ? c : { key: c.key, value: structuredClone(c.value) }));
      for (const c of copies) {
        if ("delete" in c) map.delete(c.key);
        else map.set(c.key, c.value);
      }
    },
    async list(prefix) {
      return [...map.entries()]
        .filter(([k]) => k.startsWith(prefix))
        .sort(([x], [y]) => compareBytes(x, y))
        .map(([key, value]) => ({ key, value: structuredClone(value) }));
    },
    async listPage(prefix, query) {
      const bounds = statePageBounds(prefix, query);
      const rows = [...map.entries()]
        .filter(
          ([k]) =>
            k.startsWith(prefix) &&
            (bounds.inclusive ? compareBytes(k, bounds.from) >= 0 : compareBytes(k, bounds.from) > 0),
        )
        .sort(([x], [y]) => compareBytes(x, y))
        .slice(0, bounds.limit + 1)
        .map(([key, value]) => ({ key, value: structuredClone(value) }));
      return statePageOf(rows, bounds);
    },
  };
}
