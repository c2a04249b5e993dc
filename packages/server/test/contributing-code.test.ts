/**
 * CONTRIBUTING.md's provider code is compiled: its two TypeScript blocks ("Adding a provider")
 * are the files of examples/provider/, which `pnpm typecheck` (tsconfig.check.json) compiles.
 * A block edited without its file, or the example dropped from the typecheck, fails here.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../../${path}`, import.meta.url)), "utf8");

it("CONTRIBUTING's TypeScript blocks equal examples/provider's files, which the typecheck compiles", () => {
  const blocks = [...read("CONTRIBUTING.md").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  expect(blocks).toEqual([read("examples/provider/src/index.ts"), read("examples/provider/test/conformance.test.ts")]);
  const check = read("tsconfig.check.json");
  expect(check).toMatch(/"include": \[[^\]]*"examples\/provider"/);
});
