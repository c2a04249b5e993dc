import type { JsonValue, ProviderStateStore } from "@credhook/core";

/** A throw-away in-memory provider state store (for `check-config`, which must not touch the real store). */
export function memoryState(): ProviderStateStore {
  const m = new Map<string, JsonValue>();
  return {
    get: async (k) => m.get(k),
    put: async (k, v) => void m.set(k, v),
    delete: async (k) => m.delete(k),
    list: async (p) => [...m].filter(([k]) => k.startsWith(p)).map(([key, value]) => ({ key, value })),
  };
}
