/**
 * Which tier each test file runs in (vitest.shared.ts builds its projects from these lists; the
 * conventions test packages/server/test/test-tiers.test.ts holds every file to them).
 *
 * - `pnpm test` (projects `unit` and `unit-isolated`): unit, conformance and in-process HTTP
 *   tests — every file not listed below. No child process, no PostgreSQL, no proxy, no minutes
 *   of real time: about 100 s on 2 cores after a fresh install (measured while other work shared the machine).
 * - `pnpm test:e2e` (project `e2e`): {@link E2E_FILES} — files that start processes (`credhook
 *   serve`, `demo`, NGINX, Caddy, promtool, Prometheus, bash/curl), use the run's PostgreSQL server, or hold a
 *   real outage of a minute.
 * - `pnpm test:packaging` (project `packaging`): {@link PACKAGING_FILES}, beside the e2e tier: it
 *   compiles, packs and npm-installs (about 45 s quiet, 3–4 minutes under `test:stress`), runs an install
 *   on Node 20 that must fail, and says
 *   nothing about behaviour under time, so the stress mode leaves it out; CI runs it on both Node versions.
 *
 * A new test file lands in `pnpm test` unless it is listed here; one that starts a process or
 * uses PostgreSQL and is not listed fails test-tiers.test.ts.
 * Paths relative to the repository root.
 */

/** The end-to-end tier (`pnpm test:e2e`). */
export const E2E_FILES = [
  // start credhook (serve, demo, check-config, reconcile) as a process of its own
  "packages/server/test/apply.test.ts",
  "packages/server/test/apply-figures.test.ts",
  "packages/server/test/cli-output.test.ts",
  "packages/server/test/config.test.ts",
  "packages/server/test/conventions.test.ts",
  "packages/server/test/crash-reconcile.test.ts",
  "packages/server/test/demo.test.ts",
  "packages/server/test/dev-source-provider.test.ts",
  "packages/server/test/events-outbox.test.ts",
  "packages/server/test/failures.test.ts",
  "packages/server/test/gateway-drift.test.ts",
  "packages/server/test/list-pages.test.ts",
  "packages/server/test/never-orphan.test.ts",
  "packages/server/test/process-leaks.test.ts",
  "packages/server/test/shutdown.test.ts",
  "packages/server/test/sqlite-single-server.test.ts",
  "packages/server/test/version.test.ts",
  // several credhook processes on the run's PostgreSQL server (and its restarts)
  "packages/server/test/db-restarts.test.ts",
  "packages/server/test/lost-lock.test.ts",
  "packages/server/test/replicas.test.ts",
  // the run's PostgreSQL server, in process
  "packages/server/test/deploy.test.ts",
  "packages/server/test/embedded-gateway-replicas.test.ts",
  "packages/server/test/inspect-postgres.test.ts",
  "packages/server/test/expiry-postgres.test.ts",
  "packages/server/test/lambda.test.ts",
  "packages/server/test/store-outage.test.ts",
  "packages/store-postgres/test/store.test.ts",
  // other programs: NGINX, Caddy, promtool and Prometheus, bash + curl, the Lambda bundle (esbuild, zip), a tmpfs mount, `pnpm postgres`
  "packages/server/test/caddy.test.ts",
  "packages/server/test/nginx.test.ts",
  "packages/server/test/observability.test.ts",
  "packages/server/test/readme-gateway.test.ts",
  "packages/server/test/lambda-bundle.test.ts",
  "packages/server/test/sqlite-disk-full.test.ts",
  "packages/server/test/postgres-command.test.ts",
  // a real 60 s cloud outage
  "packages/server/test/circuit-breaker.test.ts",
];

/**
 * The packaging check (`pnpm test:packaging`): pack every package, npm-install the tarballs, run them; and the
 * workspace's install on a Node.js older than `engines.node` (Node 20 from npm), which must fail at once, naming the fix.
 */
export const PACKAGING_FILES = [
  "packages/server/test/packed-install.test.ts",
  "packages/server/test/node-version.test.ts",
];

/** Files that patch what the whole process shares (OpenTelemetry patches `node:http`), run in a module graph of their own. */
export const ISOLATED_FILES = ["packages/server/test/tracing.test.ts", "packages/server/test/tracing-sdk.test.ts"];
