import { describe, expect, it } from "vitest";
import { ManualClock, systemClock } from "../src/clock.js";

describe("ManualClock", () => {
  it("resolves no sleep before its time, and each one in due-time order (ties in start order) with now() at its due time", async () => {
    const clock = new ManualClock(1_000);
    const woke: Array<[string, number]> = [];
    const nap = (name: string, ms: number) => clock.sleep(ms).then(() => woke.push([name, clock.now()]));
    const all = Promise.all([nap("c", 30), nap("a", 10), nap("b", 20), nap("b2", 20)]);
    expect(clock.pending).toBe(4);

    await clock.advance(9);
    expect(woke).toEqual([]);
    expect(clock.now()).toBe(1_009);

    await clock.advance(1);
    expect(woke).toEqual([["a", 1_010]]);

    await clock.advance(100);
    await all;
    expect(woke).toEqual([
      ["a", 1_010],
      ["b", 1_020],
      ["b2", 1_020],
      ["c", 1_030],
    ]);
    expect(clock.now()).toBe(1_110);
    expect(clock.pending).toBe(0);
  });

  it("a sleep begun by a woken one and due within the same advance resolves in that advance, at its own time", async () => {
    const clock = new ManualClock(0);
    const woke: number[] = [];
    void clock.sleep(10).then(async () => {
      woke.push(clock.now());
      await clock.sleep(15);
      woke.push(clock.now());
    });
    await clock.advance(30);
    expect(woke).toEqual([10, 25]);
    expect(clock.now()).toBe(30);
  });

  it("whenSleeping waits until the fake sleeps; an aborted sleep rejects and no longer counts", async () => {
    const clock = new ManualClock(0);
    const sleeping = clock.whenSleeping(2);
    let ready = false;
    void sleeping.then(() => (ready = true));
    const abort = new AbortController();
    const first = clock.sleep(50, abort.signal);
    await Promise.resolve();
    expect(ready).toBe(false);
    const second = clock.sleep(50);
    await sleeping;
    abort.abort();
    await expect(first).rejects.toMatchObject({ name: "AbortError" });
    expect(clock.pending).toBe(1);
    await clock.advance(50);
    await expect(second).resolves.toBeUndefined();
  });

  it("a sleep of 0 ms resolves without an advance; a negative advance is refused", async () => {
    const clock = new ManualClock(0);
    await expect(clock.sleep(0)).resolves.toBeUndefined();
    await expect(clock.advance(-1)).rejects.toThrow(RangeError);
  });
});

describe("systemClock", () => {
  it("reads epoch milliseconds that never go back; an aborted sleep rejects", async () => {
    const a = systemClock.now();
    expect(Math.abs(a - Date.now())).toBeLessThan(60_000); // the same epoch as Date.now (not a timing check)
    expect(systemClock.now()).toBeGreaterThanOrEqual(a);
    const abort = new AbortController();
    const nap = systemClock.sleep(60_000, abort.signal);
    abort.abort();
    await expect(nap).rejects.toMatchObject({ name: "AbortError" });
  });
});
