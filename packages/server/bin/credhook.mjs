#!/usr/bin/env node
// The `credhook` command. Runs the compiled CLI (dist/, written by `pnpm build`) when it
// exists; in a workspace checkout only while that build is current: every package has a
// dist/*.js at least as new as each of its src/*.ts (or a build that saw it since). Otherwise it runs the TypeScript sources (transpiled by esbuild as they load, see dev-source-hook.mjs; through tsx on a Node 22 before 22.15),
// with the "dev-source" export condition so sibling @credhook/* packages resolve to src/,
// and when a dist/ exists but is stale it says so on stderr (one line), so that a build
// left behind never runs in place of the code being edited.
// CREDHOOK_FROM_SOURCE=1 forces the sources (in a workspace checkout; an installed package
// never loads a development tool and stops with a message when it has no dist/).
// credhook needs Node.js 22 or later (the SQLite store's driver, better-sqlite3 13, is
// built on Node-API 10): on an older Node it stops here with a message, before anything
// loads a native addon that would crash, and names the fix (an `npm install` of the packages on
// such a Node only warns, EBADENGINE, unless npm's engine-strict is set).
const [nodeMajor] = process.versions.node.split(".").map(Number);
if (nodeMajor < 22) {
  process.stderr.write(
    `credhook needs Node.js 22 or later; this is Node.js ${process.version} (Node 20 reached end of life in April 2026).\n` +
      "Install Node.js 22 or 24, or put Node 22 from npm first on PATH for this shell:\n\n" +
      '  export PATH="$(dirname "$(npx --yes node@22 -p process.execPath)")":$PATH\n',
  );
  process.exit(1);
}
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";

// CREDHOOK_MEMORY=lean: V8's --optimize-for-size, set before anything else loads (it is not allowed in
// NODE_OPTIONS): a young generation of about 1 MiB per semi-space instead of 16 MiB, and an old
// generation grown less eagerly between full collections. Measured with `pnpm bench --lean` (README,
// "Benchmark"): RSS after load 100–130 MiB instead of 190–240 MiB, for about 1.5× the CPU time per
// request (more garbage collection). Unset: V8's defaults. https://nodejs.org/api/v8.html#v8setflagsfromstringflags
// Any other value is a mistake worth stopping for (a typo would otherwise run with the defaults unnoticed).
const memoryMode = process.env.CREDHOOK_MEMORY ?? "";
if (!["", "default", "lean"].includes(memoryMode)) {
  process.stderr.write(`CREDHOOK_MEMORY must be 'lean' or 'default' (got '${memoryMode}')\n`);
  process.exit(1);
}
if (memoryMode === "lean") setFlagsFromString("--optimize-for-size");

const serverDir = fileURLToPath(new URL("..", import.meta.url));
const built = new URL("../dist/cli.js", import.meta.url);

/**
 * Whether this is a workspace checkout (a pnpm-workspace.yaml two levels up) rather than an
 * installed package. An installed package runs its dist/ build and nothing else: the sources
 * need esbuild or tsx, development dependencies it does not have.
 */
const inWorkspace = existsSync(join(serverDir, "..", "..", "pnpm-workspace.yaml"));

/**
 * The package folders whose dist/ the compiled CLI loads, in a workspace checkout: every
 * packages/* with a src/. None in an installed package: there dist/ is the build that was
 * packed (file times say nothing).
 */
function packageDirs() {
  const workspace = join(serverDir, "..", "..");
  if (!inWorkspace) return [];
  const packages = join(workspace, "packages");
  return readdirSync(packages)
    .map((name) => join(packages, name))
    .filter((dir) => existsSync(join(dir, "src")));
}

/** Every .ts file (not .d.ts) under `dir`, as paths relative to it. */
function sources(dir, sub = "") {
  return readdirSync(join(dir, sub), { withFileTypes: true }).flatMap((e) => {
    const path = join(sub, e.name);
    if (e.isDirectory()) return sources(dir, path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Modification time of `path` in ms, or 0 when it does not exist. */
function mtimeMs(path) {
  return existsSync(path) ? statSync(path).mtimeMs : 0;
}

/**
 * The first source file newer than its compiled output (or without one), as a path
 * relative to the workspace, or undefined when every dist/ is current. A file that
 * `tsc -b` found unchanged keeps its old output but the package's tsconfig.tsbuildinfo,
 * rewritten on every build, records that the build saw it.
 */
function staleSource() {
  for (const dir of packageDirs()) {
    const src = join(dir, "src");
    const buildInfo = mtimeMs(join(dir, "tsconfig.tsbuildinfo"));
    for (const file of sources(src)) {
      const out = join(dir, "dist", file.replace(/\.ts$/, ".js"));
      if (!existsSync(out) || Math.max(mtimeMs(out), buildInfo) < mtimeMs(join(src, file))) {
        return relative(join(serverDir, "..", ".."), join(src, file));
      }
    }
  }
  return undefined;
}

if (!inWorkspace && !existsSync(built)) {
  process.stderr.write(
    "credhook: this installed @credhook/server has no build (dist/cli.js is missing): it was packed without one. " +
      "Pack it with `pnpm pack` or `pnpm -r pack` (each package's prepack script runs `tsc -b`), or install a published release.\n",
  );
  process.exit(1);
}
const fromDist = existsSync(built) && !(inWorkspace && process.env.CREDHOOK_FROM_SOURCE);
const stale = fromDist ? staleSource() : undefined;
let cli;
if (fromDist && stale === undefined) {
  cli = await import(built.href);
} else {
  if (stale !== undefined) {
    process.stderr.write(
      `credhook: dist/ is older than ${stale}: running the TypeScript sources (\`pnpm build\` refreshes dist/)\n`,
    );
  }
  const { loadSources } = await import("./dev-source-hook.mjs");
  await loadSources();
  cli = await import(new URL("../src/cli.ts", import.meta.url).href);
}
await cli.main(process.argv);
