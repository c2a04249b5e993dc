/**
 * Why the SQLite store refuses Node.js >= 24.19 (see the README, "Supported runtimes"):
 * better-sqlite3 < 13 derives its Database and Statement from `node::ObjectWrap`, whose
 * destructor, from Node 24.19, calls `RemoveEnvironmentCleanupHook`; when V8 collects a
 * statement outside JavaScript (an idle-time GC task, no context entered) that call
 * aborts the process: `Assertion failed: (env) != nullptr`, exit code 134.
 *
 * This script leaves statements to the GC, then idles. Run it with the better-sqlite3 to
 * check, built for the Node under test, e.g. in a scratch folder:
 *   N=$(npx -y node@24 -p process.execPath)
 *   PATH=$(dirname $N):$PATH npm_config_nodedir=<Node 24 headers> npm install better-sqlite3@12.11.1 --foreground-scripts
 *   $N node24-gc-abort.mjs      # 12.11.1 on 24.21.0: aborts (exit 134); on Node 20/22: "survived"
 * Prints "survived <node> <better-sqlite3>" and exits 0 when nothing aborted.
 */
import { createRequire } from "node:module";

const require = createRequire(`${process.cwd()}/`);
const Database = require("better-sqlite3");
const { version } = require("better-sqlite3/package.json");
const db = new Database(":memory:");
db.exec("create table t(a)");
let round = 0;
function burst() {
  for (let i = 0; i < 20000; i++) db.prepare("insert into t values (?)").run(i); // statements left to the GC
  db.exec("delete from t");
  const junk = [];
  for (let i = 0; i < 200000; i++) junk.push({ i }); // heap growth: V8's memory reducer collects once idle
  if (++round < 6) setTimeout(burst, 4000);
  else setTimeout(() => console.log("survived", process.version, version), 8000);
}
burst();
