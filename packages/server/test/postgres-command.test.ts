// docs/deploy.md's one-command PostgreSQL for trying several instances (`pnpm postgres`), run as written.
import { expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { spawnTracked } from "./children.js";
import { until } from "./helpers.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));

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
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      expect((await client.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end();
    }
  } finally {
    process.kill(-child.pid!, "SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
  }
  expect(out).toContain("Ctrl-C stops it and removes the database");
}, 120_000);
