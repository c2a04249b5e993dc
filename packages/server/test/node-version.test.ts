// The install on a Node.js older than credhook's `engines.node` fails at once and names the fix
// (.pnpmfile.cjs, beside engine-strict in .npmrc), instead of passing with a warning per package and
// leaving a `credhook` that refuses to start. Run as an operator would: the README's install line
// (`npx --yes pnpm@10 install`) under Node 20 (from npm, as CI gets Node 22 and 24) in a copy of the
// workspace's manifests. And `credhook` itself on Node 20, where an npm install of the packed packages
// only warns (EBADENGINE): it stops before loading anything, naming the same fix.
// In the packaging tier: it fetches Node 20 once (then npx's cache has it).
import { afterAll, beforeAll, expect, it } from "vitest";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { execFileTracked } from "./children.js";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
/** What pnpm reads of the workspace before it installs anything. */
const MANIFESTS = ["package.json", "pnpm-workspace.yaml", "pnpm-lock.yaml", ".npmrc", ".pnpmfile.cjs", ".nvmrc"];

/** npm's and pnpm's environment as an operator's shell has it: none of the npm_* variables `pnpm test` sets. */
const operatorEnv = (path: string): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(npm_|pnpm_)/i.test(k))),
  PATH: path,
});

let copy: string;
let node20: string;
beforeAll(async () => {
  copy = mkdtempSync(join(tmpdir(), "credhook-node20-"));
  for (const file of MANIFESTS) cpSync(join(REPO, file), join(copy, file));
  for (const pkg of readdirSync(join(REPO, "packages"))) {
    mkdirSync(join(copy, "packages", pkg), { recursive: true });
    cpSync(join(REPO, "packages", pkg, "package.json"), join(copy, "packages", pkg, "package.json"));
  }
  const { stdout } = await execFileTracked("npx", ["--yes", "node@20", "-p", "process.execPath"], {
    cwd: tmpdir(),
    env: operatorEnv(process.env.PATH!),
  });
  node20 = stdout.trim();
}, 180_000);
afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

/** The README's line that puts Node 22 from npm first on PATH for the current shell. */
const readmePathLine = () => {
  const line = /`(export PATH=[^`]+)`/.exec(readFileSync(join(REPO, "README.md"), "utf8"))?.[1];
  expect(line, "the README's PATH line").toBeDefined();
  return line!;
};

it("`npx --yes pnpm@10 install` under Node 20 fails before installing anything, with the README's PATH line as the fix", async () => {
  const path = [dirname(node20), process.env.PATH].join(delimiter);
  const run = await execFileTracked("npx", ["--yes", "pnpm@10", "install"], { cwd: copy, env: operatorEnv(path) }).then(
    () => undefined,
    (err: { code?: number; stdout: string; stderr: string }) => err,
  );
  expect(run, "the install passed on Node 20").toBeDefined();
  expect(run!.code).toBe(1);
  const pathLine = readmePathLine();
  const { engines } = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { engines: { node: string } };
  expect(run!.stderr).toContain(`credhook needs Node.js ${engines.node} (22 or 24); this is Node.js v20.`);
  expect(run!.stderr).toContain(`\n  ${pathLine}\n`);
  expect(run!.stderr).toContain("nvm install && nvm use");
  expect(readFileSync(join(REPO, ".nvmrc"), "utf8").trim()).toBe("22");
  expect(existsSync(join(copy, "node_modules")), "node_modules written").toBe(false);
}, 120_000);

it("`credhook` started on Node 20 (an npm install of the packed packages there only warns) stops at once, naming the fix", async () => {
  // bin/credhook.mjs checks the version before it loads anything: the same file the packages install.
  const cli = join(REPO, "packages", "server", "bin", "credhook.mjs");
  const run = await execFileTracked(node20, [cli, "--version"], { env: operatorEnv(process.env.PATH!) }).then(
    () => undefined,
    (err: { code?: number; stderr: string }) => err,
  );
  expect(run, "credhook ran on Node 20").toBeDefined();
  expect(run!.code).toBe(1);
  expect(run!.stderr).toContain("credhook needs Node.js 22 or later; this is Node.js v20.");
  expect(run!.stderr).toContain(`\n  ${readmePathLine()}\n`);
});
