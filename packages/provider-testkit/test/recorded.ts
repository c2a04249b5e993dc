/**
 * Runs the conformance suite outside vitest's collection, for the testkit's own tests: a
 * recording `test` function keeps each registered test, and {@link run} runs one with a
 * context whose `skip` records its note (and throws, as vitest's does).
 */
import type { ConformanceTest, ConformanceTestContext } from "@credhook/provider-testkit";

/** One test the suite registered. */
export interface Registered {
  name: string;
  fn: (ctx: ConformanceTestContext) => Promise<void>;
}

/** A `test` function for `providerConformance` that records what it registers into the returned list. */
export function recorder(): { test: ConformanceTest; registered: Registered[] } {
  const registered: Registered[] = [];
  return { test: (name, fn) => registered.push({ name, fn }), registered };
}

/** Runs one registered test: `{}` when it passed, `{ skipped }` with the skip's note, `{ error }` when it failed. */
export async function run(test: Registered | undefined): Promise<{ skipped?: string; error?: unknown }> {
  if (!test) throw new Error("test not registered");
  const marker = new Error("skip");
  let skipped: string | undefined;
  try {
    await test.fn({
      skip: (note?: string) => {
        skipped = note ?? "";
        throw marker;
      },
    });
  } catch (err) {
    if (err !== marker) return { error: err };
  }
  return skipped === undefined ? {} : { skipped };
}

/** The first registered test whose name contains `part`. */
export const named = (r: Registered[], part: string) => r.find((t) => t.name.includes(part));
