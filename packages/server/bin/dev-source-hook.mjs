// How `credhook` runs the TypeScript sources of a workspace checkout (never an installed package,
// which runs its dist/ build):
// - the "dev-source" export condition, so that sibling @credhook/* packages resolve to src/;
// - a relative `./x.js` import from a .ts file resolves to `./x.ts` when that file exists (the
//   sources import what tsc will emit);
// - each .ts file is transpiled by esbuild (types stripped, no type check: that is `pnpm
//   typecheck`), with an inline source map so that stack traces name the .ts lines, and the
//   result kept in node_modules/.cache/credhook-dev-source for the next start (and V8's compiled
//   code of the dependencies in node_modules/.cache/credhook-compile).
// The hooks are synchronous and run in the thread that loads the modules (Node's
// module.registerHooks, Node 22.15+): a multi-cloud `credhook check-config` takes about 1.3 s of
// CPU instead of 2.3 s through tsx's asynchronous hooks, which answer each of the ~2,000 module
// resolutions from a separate thread. On an older Node 22, or in a process started with an ESM
// loader of its own (e.g. under tsx), `registerDevSource` returns false and the caller uses tsx. https://nodejs.org/api/module.html#moduleregisterhooksoptions
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import * as nodeModule from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const require = nodeModule.createRequire(import.meta.url);

/**
 * Where transpiled files are kept between runs (the workspace's node_modules/.cache), one file
 * per source text: a start after the first transpiles only what changed. Entries are never
 * removed (a few KiB per edit); deleting the folder is always safe.
 */
const CACHE_DIR = fileURLToPath(new URL("../../../node_modules/.cache/credhook-dev-source/", import.meta.url));

/** esbuild's transform options; they and esbuild's version are part of each cache key. */
const TRANSFORM = { loader: "ts", format: "esm", target: "node22", sourcemap: "inline", sourcesContent: false };

let esbuild;
/** esbuild's version (part of each cache key), read on the first transpile. */
let esbuildVersion;

/**
 * The JavaScript of the TypeScript file `file`: from the cache when this text was transpiled
 * before, else transpiled by esbuild now (and cached; a cache that cannot be written is skipped).
 */
function transpile(file) {
  const source = readFileSync(file, "utf8");
  esbuildVersion ??= JSON.parse(readFileSync(require.resolve("esbuild/package.json"), "utf8")).version;
  const key = createHash("sha256")
    .update(`${esbuildVersion}\0${JSON.stringify(TRANSFORM)}\0${file}\0${source}`)
    .digest("hex")
    .slice(0, 40);
  const cached = join(CACHE_DIR, `${key}.js`);
  if (existsSync(cached)) return readFileSync(cached, "utf8");
  esbuild ??= require("esbuild");
  const { code } = esbuild.transformSync(source, { ...TRANSFORM, sourcefile: file });
  try {
    mkdirSync(CACHE_DIR, { recursive: true });
    const partial = `${cached}.${process.pid}.partial`;
    writeFileSync(partial, code);
    renameSync(partial, cached); // whole or absent, also with several processes starting at once
  } catch {
    // read-only or full: run without a cache
  }
  return code;
}

/** `context` with the "dev-source" export condition added (when it lacks it). */
function withDevSource(context) {
  return context.conditions.includes("dev-source")
    ? context
    : { ...context, conditions: [...context.conditions, "dev-source"] };
}

/** Whether `specifier`, imported from `parentURL`, is a relative `.js` import written in a .ts file. */
function isRelativeJsFromTs(specifier, parentURL) {
  return (
    (specifier.startsWith("./") || specifier.startsWith("../")) &&
    specifier.endsWith(".js") &&
    parentURL?.endsWith(".ts") === true
  );
}

/**
 * Whether this process was started with an ESM loader of its own (`--import`, `--loader`,
 * `--experimental-loader`, on the command line or in NODE_OPTIONS, as `tsx` and `node --import
 * tsx` do): its asynchronous hooks then resolve imports without the synchronous ones' "dev-source"
 * condition (seen on Node 22.23), so the sources would load their siblings' dist/ builds.
 */
function hasLoaderFlags() {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)];
  return flags.some((f) => /^--(import|loader|experimental-loader)\b/.test(f));
}

/**
 * Installs the hooks above in this thread.
 * @returns false (installing nothing) when this Node has no module.registerHooks, or when the
 *   process has an ESM loader of its own (see hasLoaderFlags): the caller then uses tsx.
 */
export function registerDevSource() {
  if (typeof nodeModule.registerHooks !== "function" || hasLoaderFlags()) return false;
  process.setSourceMapsEnabled(true);
  // V8's compiled code of the dependencies (the cloud SDKs are thousands of modules) kept for the next start:
  // a multi-cloud `check-config` 1.5 s -> 1.3 s of CPU. https://nodejs.org/api/module.html#moduleenablecompilecachecachedir
  nodeModule.enableCompileCache?.(
    fileURLToPath(new URL("../../../node_modules/.cache/credhook-compile/", import.meta.url)),
  );
  nodeModule.registerHooks({
    resolve(specifier, context, nextResolve) {
      if (isRelativeJsFromTs(specifier, context.parentURL)) {
        const ts = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
        if (existsSync(fileURLToPath(ts))) return { url: ts.href, format: "module", shortCircuit: true };
      }
      return nextResolve(specifier, withDevSource(context));
    },
    load(url, context, nextLoad) {
      if (!url.startsWith("file:") || !url.endsWith(".ts")) return nextLoad(url, context);
      return { format: "module", source: transpile(fileURLToPath(url)), shortCircuit: true };
    },
  });
  return true;
}

/**
 * Makes this process load the workspace's TypeScript sources, as `credhook` runs them (and
 * scripts/lambda-bundle.mjs, to read the server's config lookup): the synchronous hooks above,
 * else (a Node 22 before 22.15, or a process with an ESM loader of its own) tsx with the
 * asynchronous form of the "dev-source" condition below on Node's hooks thread.
 */
export async function loadSources() {
  if (registerDevSource()) return;
  nodeModule.register(new URL("./dev-source-hook.mjs", import.meta.url));
  const { register: registerTsx } = await import("tsx/esm/api");
  registerTsx();
}

/**
 * The asynchronous form of the "dev-source" condition, for `module.register` (Node's
 * hooks thread) beside tsx on a Node 22 without module.registerHooks.
 */
export async function resolve(specifier, context, nextResolve) {
  return nextResolve(specifier, withDevSource(context));
}
