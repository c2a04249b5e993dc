import { defineConfig } from "vitest/config";

// Tests run against the TypeScript sources of every workspace package: the
// "dev-source" export condition points each @credhook/* package at src/index.ts.
export default defineConfig({
  resolve: { conditions: ["dev-source"] },
  ssr: { resolve: { conditions: ["dev-source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ["default", "./scripts/summary-reporter.ts"],
  },
});
