// The Lambda zip of `pnpm lambda:bundle`: one esbuild bundle with the providers the config uses
// and the PostgreSQL store, no native addon; unzipped into an empty task root and started cold in a
// fresh process the way Lambda's Node.js runtime does (import index.mjs, invoke handler), it answers.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startAwsFake, type AwsFake } from "@credhook/fakes/aws";
import { buildLambdaZip, coldStart, unzipTo } from "../../../scripts/lambda-cold-start.ts";

const BUNDLE_SCRIPT = fileURLToPath(new URL("../../../scripts/lambda-bundle.mjs", import.meta.url));
const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const PASSWORD = "lambda-bundle-password";
let work: string;
let aws: AwsFake;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "credhook-lambda-bundle-"));
  aws = await startAwsFake();
});
afterAll(async () => {
  await aws?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const awsConfig = (schema: string) => `server:
  auth:
    users:
      - { username: portal, password: "\${CREDHOOK_PASSWORD}" }
store: { postgres: { url: "\${DATABASE_URL}", schema: ${schema} } }
gateways:
  aws-us:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "\${AWS_ENDPOINT}", credentials: { accessKeyId: fake, secretAccessKey: fake } }
routes:
  - default: aws-us
`;

/** This process's environment without `name` (the operator's shell, where it is unset). */
const envWithout = (name: string): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== name));

describe("the Lambda bundle", () => {
  it("with the AWS provider: a zip under 10 MB, no native addon, no node_modules; cold in a fresh process it answers GET /v1/health 204", async () => {
    const config = join(work, "aws.yaml");
    writeFileSync(config, awsConfig(`lambda_${randomBytes(4).toString("hex")}`));
    const zip = join(work, "aws.zip");
    const printed = buildLambdaZip(config, zip, join(work, "build"));
    expect(printed).toMatch(/aws\.zip: \d+\.\d\d MB zipped/);
    expect(printed).toContain("providers: @credhook/provider-aws; store: @credhook/store-postgres");
    expect(statSync(zip).size).toBeLessThanOrEqual(10e6);
    const root = unzipTo(zip, join(work, "task"));
    const files = readdirSync(root, { recursive: true }).map(String);
    expect(files).toEqual(expect.arrayContaining(["index.mjs", "webhook.config.yaml", join("bundle", "credhook.mjs")]));
    expect(files.filter((f) => f.endsWith(".node") || f.includes("node_modules"))).toEqual([]);
    const bundle = readFileSync(join(root, "bundle", "credhook.mjs"), "utf8");
    expect(bundle).not.toContain("better_sqlite3.node");
    expect(bundle).not.toContain("@azure/arm-apimanagement");
    const run = await coldStart(
      root,
      { DATABASE_URL: inject("databaseUrl"), CREDHOOK_PASSWORD: PASSWORD, AWS_ENDPOINT: aws.url },
      PASSWORD,
    );
    expect(run.status, run.body).toBe(204);
  }, 120_000);

  it("docs/deploy.md's line, run as written from the repository, writes ./credhook-lambda.zip with the AWS provider and prints its size", () => {
    const line = readFileSync(join(REPO, "docs", "deploy.md"), "utf8")
      .split("\n")
      .filter((l) => l.startsWith("npx --yes pnpm@10 lambda:bundle"));
    expect(line).toHaveLength(1);
    try {
      const run = spawnSync("bash", ["-c", line[0]!], { cwd: REPO, encoding: "utf8", timeout: 120_000 });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/credhook-lambda\.zip: \d+\.\d\d MB zipped/);
      expect(run.stdout).toContain("providers: @credhook/provider-aws; store: @credhook/store-postgres");
      expect(statSync(join(REPO, "credhook-lambda.zip")).size).toBeLessThanOrEqual(10e6);
      expect(readFileSync(join(REPO, "lambda", "webhook.config.yaml"), "utf8")).toBe(
        readFileSync(join(REPO, "examples", "lambda", "webhook.config.yaml"), "utf8"),
      );
    } finally {
      rmSync(join(REPO, "credhook-lambda.zip"), { force: true });
      rmSync(join(REPO, "lambda"), { recursive: true, force: true });
    }
  }, 120_000);

  it("without --config, ships the webhook.config.yaml of the working directory, as `credhook serve` there reads it, and names it", () => {
    const dir = join(work, "cwd");
    mkdirSync(dir);
    const text = `# the operator's file\n${awsConfig("lambda_cwd")}`;
    writeFileSync(join(dir, "webhook.config.yaml"), text);
    const run = spawnSync(process.execPath, [BUNDLE_SCRIPT], {
      cwd: dir,
      env: envWithout("CREDHOOK_CONFIG"),
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    const file = join(dir, "webhook.config.yaml");
    expect(run.stdout).toContain(`config: ${file} (found in the working directory)`);
    expect(run.stdout).toContain("providers: @credhook/provider-aws; store: @credhook/store-postgres");
    const root = unzipTo(join(dir, "credhook-lambda.zip"), join(dir, "task"));
    expect(readFileSync(join(root, "webhook.config.yaml"), "utf8")).toBe(text);
    expect(readFileSync(join(root, "index.mjs"), "utf8")).toContain(
      `// webhook.config.yaml is ${file} (found in the working directory).`,
    );
  }, 120_000);

  it("looks the config up as `credhook serve` does: --config, then $CREDHOOK_CONFIG, then the working directory's", () => {
    // Three configs the bundle refuses (SQLite) before it builds anything: the refusal names the one it took.
    const dir = join(work, "lookup");
    mkdirSync(dir);
    const sqlite = awsConfig("x").replace(/^store: .*$/m, "store: { sqlite: /tmp/credhook.db }");
    for (const name of ["webhook.config.yaml", "from-env.yaml", "from-flag.yaml"])
      writeFileSync(join(dir, name), sqlite);
    const refusal = (args: string[], env: NodeJS.ProcessEnv) => {
      const run = spawnSync(process.execPath, [BUNDLE_SCRIPT, ...args], { cwd: dir, env, encoding: "utf8" });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain("the Lambda bundle carries only the PostgreSQL store");
      return run.stderr.split(": the Lambda bundle")[0];
    };
    const base = envWithout("CREDHOOK_CONFIG");
    expect(refusal([], base)).toBe(
      `lambda-bundle: ${join(dir, "webhook.config.yaml")} (found in the working directory)`,
    );
    expect(refusal([], { ...base, CREDHOOK_CONFIG: "from-env.yaml" })).toBe(
      `lambda-bundle: ${join(dir, "from-env.yaml")} ($CREDHOOK_CONFIG)`,
    );
    expect(refusal(["--config", "from-flag.yaml"], { ...base, CREDHOOK_CONFIG: "from-env.yaml" })).toBe(
      `lambda-bundle: ${join(dir, "from-flag.yaml")} (--config)`,
    );
  });

  it("refuses a config whose store is not PostgreSQL, saying why", () => {
    const config = join(work, "sqlite.yaml");
    writeFileSync(config, awsConfig("x").replace(/^store: .*$/m, "store: { sqlite: /tmp/credhook.db }"));
    const run = spawnSync(
      process.execPath,
      [BUNDLE_SCRIPT, "--config", config, "--out", join(work, "no.zip"), "--work", join(work, "no")],
      { encoding: "utf8" },
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("the Lambda bundle carries only the PostgreSQL store");
  });
});
