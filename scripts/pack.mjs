#!/usr/bin/env node
// The package operators install, built the one way the Dockerfile and the
// packed-install test both use:
//
//   node scripts/pack.mjs pack <packDir>
//     Packs every package with `pnpm -r pack` (workspace:* become versions) into <packDir>
//     from a staging copy of the sources — the working tree keeps no dist/. No build step
//     of its own: each package's `prepack` script (`tsc -b`) builds it, as it does for
//     `pnpm -r pack` or `pnpm -r publish` run on a fresh clone. Prints the tarballs.
//
//   node scripts/pack.mjs install <packDir> <targetDir>
//     Installs @credhook/server and the @credhook packages it depends on from those
//     tarballs into <targetDir> with npm (production dependencies only; not the
//     cloud fakes (@credhook/fakes) nor the provider testkit, which only the tests and the demo need).
//     <targetDir>/package.json allows no dependency install script: better-sqlite3 13
//     ships its Node-API addon prebuilt for Linux, macOS and Windows (x64, arm64) inside
//     its package and loads it from there, so its script (node-gyp, which would need
//     python3) is denied like protobufjs's (not needed at run time); npm runs with
//     --strict-allow-scripts, so any other install script fails the install instead
//     of being skipped silently (npm 12 skips unlisted ones by default).
//     Afterwards <targetDir>/node_modules/.bin/credhook is the command.
//
// Needs Node and npm; `pack` also needs the workspace installed (pnpm install).
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SKIP = new Set(["node_modules", "dist", ".git", "data", "coverage"]);
/** The pnpm the repository pins (package.json "packageManager", e.g. `pnpm@10.34.9`). */
const PNPM = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).packageManager;
/** Install-script policy of the installed folder (npm `allowScripts`; name-only entries). */
export const ALLOW_SCRIPTS = { "better-sqlite3": false, protobufjs: false };

/** Runs a command; its output goes to stderr (stdout is this script's result). */
const run = (cmd, args, cwd, env = process.env) =>
  execFileSync(cmd, args, { cwd, env, stdio: ["ignore", 2, "inherit"] });

/** Copies the workspace sources to a temp dir, with node_modules linked (relative pnpm links kept), and returns it. */
function stage() {
  const dir = mkdtempSync(join(tmpdir(), "credhook-stage-"));
  cpSync(ROOT, dir, {
    recursive: true,
    filter: (src) => {
      const name = src.slice(src.lastIndexOf("/") + 1);
      return !SKIP.has(name) && !name.endsWith(".tsbuildinfo");
    },
  });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  for (const pkg of readdirSync(join(ROOT, "packages"))) {
    const nm = join(ROOT, "packages", pkg, "node_modules");
    // pnpm's links are relative (../../../node_modules/.pnpm/…, ../../core): copied as they are, they resolve inside the stage.
    if (existsSync(nm))
      cpSync(nm, join(dir, "packages", pkg, "node_modules"), { recursive: true, verbatimSymlinks: true });
  }
  return dir;
}

/** Builds and packs every workspace package into `out`; returns the tarball paths. */
export function pack(out) {
  out = resolve(out);
  mkdirSync(out, { recursive: true });
  const dir = stage();
  try {
    // Each package's prepack (tsc -b) builds it; pnpm lists every packed file: kept out of the way.
    execFileSync("npx", ["--yes", PNPM, "-r", "pack", "--pack-destination", out], {
      cwd: dir,
      stdio: ["ignore", "ignore", "inherit"],
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return readdirSync(out)
    .filter((f) => f.startsWith("credhook-") && f.endsWith(".tgz"))
    .map((f) => join(out, f));
}

/** Tarballs of @credhook/server and of every @credhook package it depends on at run time. */
export function runtimeTarballs(packDir) {
  const manifests = new Map();
  for (const pkg of readdirSync(join(ROOT, "packages"))) {
    const m = JSON.parse(readFileSync(join(ROOT, "packages", pkg, "package.json"), "utf8"));
    manifests.set(m.name, m);
  }
  const wanted = new Set();
  const visit = (name) => {
    if (wanted.has(name)) return;
    wanted.add(name);
    for (const dep of Object.keys(manifests.get(name).dependencies ?? {})) if (manifests.has(dep)) visit(dep);
  };
  visit("@credhook/server");
  return [...wanted].map((name) => {
    const file = join(resolve(packDir), `${name.slice(1).replace("/", "-")}-${manifests.get(name).version}.tgz`);
    if (!existsSync(file)) throw new Error(`${file} is missing: run \`node scripts/pack.mjs pack ${packDir}\` first`);
    return file;
  });
}

/** Installs the runtime tarballs into `target` (see the header); `env` is npm's environment. */
export function install(packDir, target, env = process.env) {
  target = resolve(target);
  mkdirSync(target, { recursive: true });
  writeFileSync(
    join(target, "package.json"),
    `${JSON.stringify({ name: "credhook-install", private: true, description: "credhook, installed from its packages", allowScripts: ALLOW_SCRIPTS }, null, 2)}\n`,
  );
  run(
    "npm",
    ["install", "--omit=dev", "--no-audit", "--no-fund", "--strict-allow-scripts", ...runtimeTarballs(packDir)],
    target,
    env,
  );
  return join(target, "node_modules", ".bin", "credhook");
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, a, b] = process.argv.slice(2);
  if (command === "pack" && a) for (const f of pack(a)) process.stdout.write(`${f}\n`);
  else if (command === "install" && a && b) process.stdout.write(`${install(a, b)}\n`);
  else {
    process.stderr.write("usage: node scripts/pack.mjs pack <packDir> | install <packDir> <targetDir>\n");
    process.exit(2);
  }
}
