/** Running many provider calls at once and collecting every outcome. */

/**
 * Runs `fn` on every item, at most `concurrency` at once, and resolves with
 * every outcome in the items' order (like `Promise.allSettled`); never rejects.
 *
 * @param items the inputs
 * @param fn the call for one item
 * @param concurrency most calls in flight at once (≥ 1); default: all at once
 * @returns one `PromiseSettledResult` per item, same order
 */
export async function settleAll<T, R>(
  items: readonly T[],
  fn: (item: T, index: number) => Promise<R>,
  concurrency = Number.POSITIVE_INFINITY,
): Promise<Array<PromiseSettledResult<R>>> {
  const out: Array<PromiseSettledResult<R>> = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        out[i] = { status: "fulfilled", value: await fn(items[i]!, i) };
      } catch (reason) {
        out[i] = { status: "rejected", reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, concurrency), items.length) }, worker));
  return out;
}

/** The rejection reasons of `results`, in order. */
export function rejectionsOf(results: ReadonlyArray<PromiseSettledResult<unknown>>): unknown[] {
  return results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => r.reason);
}
