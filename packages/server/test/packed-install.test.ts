// The package operators install, exercised as they would: the workspace packed
// (`pnpm -r pack` of a copy of the sources with no dist/, as on a fresh clone: each
// package's prepack script builds it), the tarballs installed with npm into an empty folder
// (scripts/pack.mjs, the same steps the Dockerfile runs), and `credhook` started from
// another empty folder. Slow (about a minute): it packs and installs.
//
// No dependency install script runs: better-sqlite3 13 loads the Node-API addon it ships
// prebuilt in its package (prebuilds/<platform>-<arch>.node), so nothing is downloaded
// or compiled — the SQLite store working from the installed folder proves it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { execFileTracked } from "./children.js";
import { spawnCredhook } from "./helpers.js";

/** scripts/pack.mjs: the same steps the Dockerfile runs. */
const PACK_SCRIPT = fileURLToPath(new URL("../../../scripts/pack.mjs", import.meta.url));
/** docs/deploy.md ("A package operators install", linked from the README). */
const DEPLOY_DOC = fileURLToPath(new URL("../../../docs/deploy.md", import.meta.url));
const PASSWORD = "packed-install-password";

let work: string;
let credhook: string;
/** npm's environment as an operator has it: none of the npm_* variables `pnpm test` sets for its own scripts. */
let npmEnv: Record<string, string | undefined>;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "credhook-packed-"));
  const packs = join(work, "packs");
  await execFileTracked(process.execPath, [PACK_SCRIPT, "pack", packs], { maxBuffer: 64 * 1024 * 1024 });
  npmEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k))),
    npm_config_prefer_offline: "true",
  };
  const installed = await execFileTracked(process.execPath, [PACK_SCRIPT, "install", packs, join(work, "install")], {
    env: npmEnv,
    maxBuffer: 64 * 1024 * 1024,
  });
  credhook = installed.stdout.trim();
}, 180_000);

// The install is thousands of files: removing them takes tens of seconds on a busy machine.
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
}, 180_000);

/** Starts the installed `credhook serve` (or `command`) in `cwd` with a clean environment (no repository around). */
const serve = (cwd: string, command = credhook) =>
  spawnCredhook([command, "serve"], {
    cwd,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME!,
      PORT: "0",
      CREDHOOK_GATEWAY_PORT: "0",
      CREDHOOK_PASSWORD: PASSWORD,
    },
  });

describe("the packed install", () => {
  it("installs a credhook command with better-sqlite3's prebuilt addon and no install script run, without the test fakes", () => {
    const nm = join(work, "install", "node_modules");
    expect(existsSync(credhook)).toBe(true);
    // the addon better-sqlite3 ships prebuilt, and no build of one (no install script ran)
    expect(existsSync(join(nm, "better-sqlite3", "prebuilds", `${process.platform}-${process.arch}.node`))).toBe(true);
    expect(existsSync(join(nm, "better-sqlite3", "build"))).toBe(false);
    // runtime only: no testkit (the fakes' helper), no TypeScript toolchain
    for (const dev of ["@credhook/provider-testkit", "@credhook/fakes", "tsx", "typescript", "vitest"])
      expect(existsSync(join(nm, dev)), dev).toBe(false);
    // the cloud providers ship no fake of their cloud
    for (const cloud of ["aws", "azure", "gcp", "kong", "apigee"]) {
      const pkg = join(nm, "@credhook", `provider-${cloud}`);
      expect(existsSync(join(pkg, "dist", "index.js")), cloud).toBe(true);
      expect(existsSync(join(pkg, "dist", "fake")) || existsSync(join(pkg, "src", "fake")), cloud).toBe(false);
    }
    expect(existsSync(join(nm, "@credhook", "server", "dist", "cli.js"))).toBe(true);
    // the embedded gateway, a package of its own the server depends on
    expect(existsSync(join(nm, "@credhook", "gateway", "dist", "index.js"))).toBe(true);
  });

  it("`credhook serve` from an empty folder serves the embedded default: /livez and /readyz 204 without credentials, the contract's calls with them, the embedded gateway's key check on its own port", async () => {
    const cwd = join(work, "empty");
    mkdirSync(cwd);
    const cli = serve(cwd);
    const url = await cli.listening();
    const out = cli.output;
    try {
      expect((await fetch(`${url}/livez`)).status).toBe(204);
      expect((await fetch(`${url}/readyz`)).status).toBe(204);
      const auth = {
        authorization: `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`,
        "content-type": "application/json",
      };
      const created = await fetch(`${url}/v1/createCredentials`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ appName: "Packed", developer: "ops@example.com", apis: [{ id: "5aba4csvd4" }] }),
      });
      expect(created.status).toBe(200);
      const { apiKey } = (await created.json()) as { apiKey: string };
      expect(apiKey).toMatch(/^credhook[0-9A-Za-z]{46}$/);
      expect((await fetch(`${url}/v1/health`, { headers: auth })).status).toBe(204);
      // @credhook/gateway, started from the embedded default's embeddedGateway: block: an unknown key is 401, the
      // live one 403 until a path rule names its API (keyCheck.apis is empty in the shipped config)
      const gateway = /"embeddedGateway":"(http:\/\/[^"]+)"/.exec(out())![1]!;
      expect((await fetch(`${gateway}/check`, { headers: { "x-api-key": "nope" } })).status).toBe(401);
      expect((await fetch(`${gateway}/check`, { headers: { "x-api-key": apiKey } })).status).toBe(403);
      expect(out()).toContain("serving the embedded default");
      expect(existsSync(join(cwd, "data", "credhook.db"))).toBe(true);
    } finally {
      expect((await cli.stop()).code).toBe(0);
    }
    expect(out()).not.toContain(PASSWORD);
  });

  it("`credhook init` writes the commented starter, which `check-config` accepts; `credhook demo` says it needs the repository", () => {
    const cwd = join(work, "init");
    mkdirSync(cwd);
    const env = { PATH: process.env.PATH!, HOME: process.env.HOME! };
    execFileSync(credhook, ["init"], { cwd, env });
    const written = readFileSync(join(cwd, "webhook.config.yaml"), "utf8");
    const shipped = join(work, "install", "node_modules", "@credhook", "server", "config");
    // The shipped starter, with its editor schema line pointing at the installed schema from where it was written.
    const schemaLine = /^# yaml-language-server: \$schema=(\S+)$/m;
    const schemaPath = schemaLine.exec(written)?.[1] ?? "";
    expect(resolve(cwd, schemaPath)).toBe(join(shipped, "webhook.config.schema.json"));
    expect(JSON.parse(readFileSync(resolve(cwd, schemaPath), "utf8"))).toMatchObject({
      $schema: expect.stringContaining("json-schema.org"),
    });
    expect(written.replace(schemaLine, "")).toBe(
      readFileSync(join(shipped, "webhook.config.yaml"), "utf8").replace(schemaLine, ""),
    );
    expect(written).toContain("# credhook configuration.");
    let again: { status?: number; stderr?: string } = {};
    try {
      execFileSync(credhook, ["init"], { cwd, env, encoding: "utf8", stdio: "pipe" });
    } catch (err) {
      again = err as { status?: number; stderr?: string };
    }
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("exists already; pass --force to overwrite it");
    const check = execFileSync(credhook, ["check-config"], { cwd, env, encoding: "utf8" });
    expect(check).toContain(`config: ${join(cwd, "webhook.config.yaml")}`);
    expect(check).toContain("configuration is valid");
    let demo: { status?: number; stderr?: string } = {};
    try {
      execFileSync(credhook, ["demo", "--port", "0"], { cwd, env, encoding: "utf8", stdio: "pipe" });
    } catch (err) {
      demo = err as { status?: number; stderr?: string };
    }
    expect(demo.status).toBe(1);
    expect(demo.stderr).toContain("credhook demo runs the cloud fakes and examples/multi-cloud.yaml of the repository");
  });
});

describe("docs/deploy.md's global install line", () => {
  /** docs/deploy.md's `npm install -g …` line, exactly as written. */
  const line = () => {
    const found = readFileSync(DEPLOY_DOC, "utf8")
      .split("\n")
      .filter((l) => l.startsWith("npm install -g "));
    expect(found).toHaveLength(1);
    return found[0]!;
  };

  it("names the server and every @credhook package it depends on at run time, and nothing else", async () => {
    const { runtimeTarballs } = (await import(PACK_SCRIPT)) as { runtimeTarballs: (dir: string) => string[] };
    const braces = /\.\/packs\/credhook-\{([^}]+)\}-(\S+)\.tgz/.exec(line());
    const named = braces![1]!.split(",").map((p) => `credhook-${p}-${braces![2]}.tgz`);
    const needed = runtimeTarballs(join(work, "packs")).map((f) => f.slice(f.lastIndexOf("/") + 1));
    expect(named.sort()).toEqual(needed.sort());
  });

  it("run as written (bash, in the folder holding ./packs, npm's global prefix an empty folder) installs a `credhook` that serves", async () => {
    const prefix = join(work, "global");
    mkdirSync(prefix);
    const run = spawnSync("bash", ["-c", line()], {
      cwd: work,
      env: { ...npmEnv, npm_config_prefix: prefix },
      encoding: "utf8",
      timeout: 170_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const cwd = join(work, "global-serve");
    mkdirSync(cwd);
    const cli = serve(cwd, join(prefix, "bin", "credhook"));
    try {
      const url = await cli.listening();
      expect((await fetch(`${url}/readyz`)).status).toBe(204);
    } finally {
      expect((await cli.stop()).code).toBe(0);
    }
  }, 180_000);
});

describe("an installed package without its build", () => {
  it("stops with a message naming the missing build instead of reaching for a development tool (esbuild, tsx)", () => {
    const dist = join(work, "install", "node_modules", "@credhook", "server", "dist");
    renameSync(dist, `${dist}.away`);
    try {
      const env = { PATH: process.env.PATH!, HOME: process.env.HOME!, CREDHOOK_FROM_SOURCE: "1" };
      const run = spawnSync(credhook, ["serve"], { cwd: work, env, encoding: "utf8" });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain("has no build (dist/cli.js is missing)");
      expect(run.stderr).not.toMatch(/esbuild|tsx/);
    } finally {
      renameSync(`${dist}.away`, dist);
    }
  });
});
