// docs/deploy.md's one-command PostgreSQL for trying several instances (`pnpm postgres`), run as
// written, and the tests' PostgreSQL server (scripts/embedded-postgres.ts) where an earlier run left debris.
import { expect, it } from "vitest";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { spawnTracked } from "./children.js";
import { restartablePort, until } from "./helpers.js";
import { startEmbeddedPostgres } from "../../../scripts/embedded-postgres.ts";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

/** Connects to `url`, runs `SELECT 1 AS one` and disconnects: the rows. */
async function selectOne(url: string): Promise<Array<{ one: number }>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ one: number }>("SELECT 1 AS one")).rows;
  } finally {
    await client.end();
  }
}

it("`npx --yes pnpm@10 postgres` prints a DATABASE_URL that a client connects to, and stops on SIGTERM", async () => {
  const lines = readFileSync(`${REPO}docs/deploy.md`, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("npx --yes pnpm@10 postgres"));
  expect(lines).toEqual(["npx --yes pnpm@10 postgres"]);
  const child = spawnTracked("bash", ["-c", `exec ${lines[0]}`], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += String(d)));
  child.stderr!.on("data", (d) => (out += String(d)));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  try {
    const url = await until("the DATABASE_URL line", () => /export DATABASE_URL=(\S+)/.exec(out)?.[1], 90_000);
    expect(await selectOne(url)).toEqual([{ one: 1 }]);
  } finally {
    process.kill(-child.pid!, "SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
  }
  expect(out).toContain("Ctrl-C stops it and removes the database");
}, 120_000);

it("the tests' PostgreSQL starts where a server killed in an earlier run left a Unix-socket lock file in /tmp naming a live process", async () => {
  // What a `kill -9` of a server leaves: /tmp/.s.PGSQL.<port>.lock, its pid now another process's
  // (here pid 1, always alive). A server with its socket in /tmp cannot take that file over and
  // refuses to start ("lock file … already exists", or, when it may not remove the file, "could not
  // remove old lock file"); the tests' server listens on TCP only and starts.
  const port = await restartablePort();
  const lock = `/tmp/.s.PGSQL.${port}.lock`;
  writeFileSync(lock, `1\n/tmp/an-earlier-run/data\n1795648024\n${port}\n/tmp\n`);
  try {
    const server = await startEmbeddedPostgres({ port });
    try {
      expect(await selectOne(server.url)).toEqual([{ one: 1 }]);
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(lock, { force: true });
  }
}, 90_000);
