/**
 * The paged walk every pass and command shares (`pagesOf`, `walkPages`): one page held at a time, and the event loop
 * served between two pages even when the store answers at once (SQLite's synchronous driver).
 */
import { describe, expect, it } from "vitest";
import { type CredentialPage, type CredentialRecord, walkPages } from "../src/entry/store.js";

/** Pages of `size` records (ids "0", "1", …) up to `total`, each answered at once (an already resolved promise), as SQLite's store does. */
function immediatePages(total: number, size: number) {
  const reads: Array<string | undefined> = [];
  const read = (after: string | undefined): Promise<CredentialPage> => {
    reads.push(after);
    const from = after === undefined ? 0 : Number(after);
    const records = Array.from(
      { length: Math.min(size, total - from) },
      (_, i) => ({ id: String(from + i) }) as CredentialRecord,
    );
    const next = from + size < total ? String(from + size) : undefined;
    return Promise.resolve({ records, ...(next !== undefined ? { next } : {}) });
  };
  return { read, reads };
}

describe("walkPages: a walk of a store that answers at once", () => {
  it("reads each page after the one before was consumed, and lets the event loop turn between two pages (not before the first)", async () => {
    const { read, reads } = immediatePages(1500, 500);
    let turns = 0;
    let ticking = true;
    const tick = () => {
      turns += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const seen: Array<{ first: string; turns: number; reads: number }> = [];
    let n = 0;
    for await (const record of walkPages(read)) {
      if (n++ % 500 === 0) seen.push({ first: record.id, turns, reads: reads.length });
    }
    ticking = false;
    expect(n).toBe(1500);
    expect(seen.map((s) => s.first)).toEqual(["0", "500", "1000"]);
    // the first page at once; each later one read only once its predecessor was consumed, a turn of the loop later
    expect(seen.map((s) => s.reads)).toEqual([1, 2, 3]);
    expect(seen[0]!.turns).toBe(0);
    expect(seen[1]!.turns).toBeGreaterThan(seen[0]!.turns);
    expect(seen[2]!.turns).toBeGreaterThan(seen[1]!.turns);
  });

  it("a walk of one page reads once and never waits for the event loop", async () => {
    const { read, reads } = immediatePages(10, 500);
    const ids = [];
    for await (const record of walkPages(read)) ids.push(record.id);
    expect(ids).toHaveLength(10);
    expect(reads).toEqual([undefined]);
  });
});
