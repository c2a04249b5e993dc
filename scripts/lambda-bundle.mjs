#!/usr/bin/env node
// The AWS Lambda zip of credhook: one esbuild bundle of the handler (@credhook/server/lambda)
// with only the providers a config uses and the PostgreSQL store — no SQLite store, so no
// native addon for any platform, no node_modules.
//
//   pnpm lambda:bundle [--config FILE] [--providers aws,local] [--out FILE] [--work DIR]
//
//   --config     the webhook.config.yaml to run (shipped in the zip, CREDHOOK_CONFIG points at it);
//                default: the file `credhook serve` would read here (the server's one lookup,
//                findConfigFile in packages/server/src/config.ts): $CREDHOOK_CONFIG, else
//                ./webhook.config.yaml (or .yml) in the working directory, else the embedded
//                default with `store: { postgres: "${DATABASE_URL}" }`. Under `pnpm lambda:bundle`
//                the working directory is the repository's root (pnpm runs scripts there).
//   --providers  the provider packages to bundle (built-in names local, aws, azure, gcp, kong, apigee, or package
//                names); default: those the config's gateways name
//   --out        the zip (default ./credhook-lambda.zip); --work: where the unzipped files are
//                written first (default ./lambda)
//
// The zip: index.mjs (handler: index.handler, and index.reconcileHandler for a schedule),
// bundle/credhook.mjs (minified, with its third-party licences in bundle/credhook.mjs.LEGAL.txt; the
// providers' and the store's options validators compiled ahead of time, as core's own are),
// webhook.config.yaml, and the two data files the code reads beside itself (the contract's
// OpenAPI document, the embedded default config). index.mjs and the printed lines name the config
// shipped (its path, and how it was found). Prints the zip's size; the Lambda limits are
// 50 MB zipped for a direct upload, 250 MB unzipped
// (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { zipSync } from "fflate";
import { parseDocument } from "yaml";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SERVER = join(ROOT, "packages", "server");
/**
 * What the bundle reads from credhook's own TypeScript sources (loaded as `credhook` loads them: the
 * CLI below registers the hooks first; vitest needs none): the server's config lookup and core's
 * built-in provider names and packages.
 */
async function sources() {
  const [{ findConfigFile, EMBEDDED_CONFIG_FILE }, { BUILTIN_PROVIDERS }] = await Promise.all([
    import("../packages/server/src/config.ts"),
    import("../packages/core/src/registry.ts"),
  ]);
  return { findConfigFile, EMBEDDED_CONFIG_FILE, BUILTIN_PROVIDERS };
}

/** The one store a Lambda bundle carries: executions environments share nothing but it. */
const STORE = "@credhook/store-postgres";

/** How each source of findConfigFile reads in the printed lines. */
const SOURCES = {
  argument: "--config",
  CREDHOOK_CONFIG: "$CREDHOOK_CONFIG",
  "working directory": "found in the working directory",
};

/**
 * The config to ship, looked up as `credhook serve` does (findConfigFile: `file`, `$CREDHOOK_CONFIG`,
 * `./webhook.config.yaml`), else the embedded default on PostgreSQL; the lookup is {@link sources}'.
 * @returns its text, and `shipped`: what it is, for index.mjs and the printed lines
 * @throws when the file cannot be read, or names a store other than PostgreSQL (the message names the file)
 */
function configToShip(file, { findConfigFile, EMBEDDED_CONFIG_FILE }) {
  const found = findConfigFile(file);
  if (!found) {
    const doc = parseDocument(readFileSync(EMBEDDED_CONFIG_FILE, "utf8"));
    doc.set("store", doc.createNode({ postgres: "${DATABASE_URL}" }));
    return {
      text: doc.toString(),
      shipped: `the embedded default (${relative(ROOT, EMBEDDED_CONFIG_FILE)}) with store: { postgres: "\${DATABASE_URL}" }: no --config, no $CREDHOOK_CONFIG, no webhook.config.yaml in ${process.cwd()}`,
    };
  }
  const shipped = `${found.path} (${SOURCES[found.source]})`;
  let text;
  try {
    text = readFileSync(found.path, "utf8");
  } catch (err) {
    throw new Error(`cannot read the config ${shipped}: ${err.code === "ENOENT" ? "no such file" : err.message}`);
  }
  const store = parseDocument(text).toJS()?.store;
  if (!store || typeof store !== "object" || !("postgres" in store)) {
    throw new Error(
      `${shipped}: the Lambda bundle carries only the PostgreSQL store; set store: { postgres: "\${DATABASE_URL}" } there, or pass --config FILE (SQLite in one execution environment's /tmp would lose its records)`,
    );
  }
  return { text, shipped };
}

/** The provider packages `text`'s gateways name (a built-in name as its package, by `builtin`). */
function providersOf(text, builtin) {
  const gateways = parseDocument(text).toJS()?.gateways ?? {};
  return [...new Set(Object.values(gateways).map((g) => builtin[g.provider] ?? g.provider))];
}

/** Total size in bytes and number of files under `dir`. */
function tally(dir) {
  let bytes = 0;
  let files = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    files++;
    bytes += statSync(join(e.parentPath, e.name)).size;
  }
  return { bytes, files };
}

/** Every file under `dir` as `{ "rel/path": bytes }`, for the zip. */
function filesOf(dir) {
  const out = {};
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out[relative(dir, join(e.parentPath, e.name))] = readFileSync(join(e.parentPath, e.name));
  }
  return out;
}

/**
 * The options validators of `packages` compiled ahead of time (schema/option-validators.ts, run with tsx):
 * the bundle registers them with core's addPrecompiledValidators, so that a cold start compiles no
 * provider's or store's options schema (ajv's first compile in a process costs tens of ms).
 * @returns `{ key, code }` per package and option set
 */
export function precompiledOptionValidators(packages) {
  const json = execFileSync(
    process.execPath,
    ["--import", "tsx", "--conditions=dev-source", join(ROOT, "schema", "option-validators.ts"), ...packages],
    { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(json);
}

/** An esbuild plugin serving `credhook-precompiled:<i>` as `modules[i].code`, resolved from core (ajv's run-time helpers). */
function precompiledPlugin(modules) {
  return {
    name: "credhook-precompiled",
    setup(b) {
      b.onResolve({ filter: /^credhook-precompiled:\d+$/ }, (args) => ({
        path: args.path,
        namespace: "credhook-precompiled",
      }));
      b.onLoad({ filter: /.*/, namespace: "credhook-precompiled" }, (args) => ({
        contents: modules[Number(args.path.split(":")[1])].code,
        resolveDir: join(ROOT, "packages", "core"),
        loader: "js",
      }));
    },
  };
}

/**
 * Builds the bundle into `work` and zips it to `out`.
 * @returns the zip's path and size, the unzipped size and file count, the providers bundled and the config shipped
 */
export async function bundleLambda({ config, providers, out = "credhook-lambda.zip", work = "lambda" } = {}) {
  out = resolve(out);
  work = resolve(work);
  const server = await sources();
  const { text, shipped } = configToShip(config, server);
  const builtin = server.BUILTIN_PROVIDERS;
  const packages = providers ? providers.map((p) => builtin[p] ?? p) : providersOf(text, builtin);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, "bundle"), { recursive: true });
  const version = JSON.parse(readFileSync(join(SERVER, "package.json"), "utf8")).version;
  const precompiled = precompiledOptionValidators([...packages, STORE]);
  // The entry: a loader per bundled package (importProviderModule asks them first), their options
  // validators compiled ahead of time, then the handlers.
  const entry = [
    `import { bundledModules } from "./src/modules.ts";`,
    `import { addPrecompiledValidators } from "@credhook/core";`,
    ...precompiled.map((_, i) => `import precompiled${i} from "credhook-precompiled:${i}";`),
    ...[...packages, STORE].map((p) => `bundledModules.set(${JSON.stringify(p)}, () => import(${JSON.stringify(p)}));`),
    `addPrecompiledValidators({ ${precompiled.map((m, i) => `${JSON.stringify(m.key)}: precompiled${i}`).join(", ")} });`,
    `export { handler, reconcileHandler } from "./src/lambda.ts";`,
  ].join("\n");
  await build({
    stdin: { contents: entry, resolveDir: SERVER, sourcefile: "lambda-entry.ts", loader: "ts" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    minify: true,
    // The sources themselves (the "dev-source" condition), so no tsc build is needed first.
    conditions: ["dev-source"],
    mainFields: ["module", "main"],
    outfile: join(work, "bundle", "credhook.mjs"),
    legalComments: "external",
    define: { CREDHOOK_BUNDLED_VERSION: JSON.stringify(version) },
    // Never loaded on Lambda: pg's optional native binding and its Cloudflare Workers socket, and
    // TypeScript, which cosmiconfig requires only to read a webhook.config.ts (3.6 MB of the bundle).
    external: ["pg-native", "cloudflare:sockets", "typescript"],
    // CommonJS dependencies inside an ES module bundle call require() for Node's built-ins.
    banner: {
      js: 'import { createRequire as __credhookRequire } from "node:module"; const require = __credhookRequire(import.meta.url);',
    },
    plugins: [precompiledPlugin(precompiled)],
    logLevel: "warning",
  });
  // Read beside the code at run time: ../openapi/… (core's contract validator) and ../config/… (the embedded default).
  cpSync(join(ROOT, "packages", "core", "openapi"), join(work, "openapi"), { recursive: true });
  mkdirSync(join(work, "config"));
  cpSync(join(SERVER, "config", "webhook.config.yaml"), join(work, "config", "webhook.config.yaml"));
  writeFileSync(join(work, "webhook.config.yaml"), text);
  writeFileSync(
    join(work, "index.mjs"),
    `// credhook ${version} for AWS Lambda: handler index.handler (API Gateway, function URL), index.reconcileHandler (a schedule).\n` +
      `// Its configuration: webhook.config.yaml beside this file, unless CREDHOOK_CONFIG names another.\n` +
      `// webhook.config.yaml is ${shipped.replace(/\n/g, " ")}.\n` +
      `process.env.CREDHOOK_CONFIG ||= "webhook.config.yaml";\n` +
      `export { handler, reconcileHandler } from "./bundle/credhook.mjs";\n`,
  );
  const unzipped = tally(work);
  const zip = zipSync(filesOf(work), { level: 9 });
  writeFileSync(out, zip);
  return {
    out,
    bytes: zip.length,
    unzippedBytes: unzipped.bytes,
    files: unzipped.files,
    providers: packages,
    config: shipped,
    work,
  };
}

const MB = (n) => `${(n / 1e6).toFixed(2)} MB`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      config: { type: "string" },
      providers: { type: "string" },
      out: { type: "string" },
      work: { type: "string" },
    },
  });
  try {
    const { loadSources } = await import("../packages/server/bin/dev-source-hook.mjs");
    await loadSources();
    const r = await bundleLambda({ ...values, providers: values.providers?.split(",").filter(Boolean) });
    process.stdout.write(
      `${r.out}: ${MB(r.bytes)} zipped (${r.bytes} bytes; direct upload limit 50 MB), ${MB(r.unzippedBytes)} unzipped in ${r.files} files (limit 250 MB)\n` +
        `  config: ${r.config}\n` +
        `  providers: ${r.providers.join(", ")}; store: ${STORE}\n` +
        `  handler: index.handler (and index.reconcileHandler for a schedule); runtime nodejs22.x or nodejs24.x\n`,
    );
  } catch (err) {
    process.stderr.write(`lambda-bundle: ${err.message}\n`);
    process.exit(1);
  }
}
