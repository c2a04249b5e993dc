/**
 * The precompiled validators of the contract's request bodies and of the configuration,
 * generated as ajv "standalone" code (https://ajv.js.org/standalone.html) from the very
 * schemas and ajv options core would otherwise compile at run time (`contractDefs()` and
 * `createAjv()` in packages/core/src/validation.ts, `configSchema` in config.ts). Compiling
 * them costs a cold start about 100 ms (ajv's meta-schema, the contract's schemas, the
 * config schema) and reading the OpenAPI document; loading the generated module, well under 1 ms.
 * `pnpm schema` writes them to packages/core/src/*.validators.generated.ts (checked in); a
 * test in packages/core fails while they are stale.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { type CompileOptions, configSchema, createAjv, precompiledKey } from "../packages/core/src/index.js";
import { CONTRACT_REQUESTS, contractDefs, contractSchemaId, META_SCHEMA_ID } from "../packages/core/src/validation.js";

/** ajv's standalone code generator, the one of core's own ajv (a dependency of core, not of the root). */
const standaloneCode = createRequire(fileURLToPath(new URL("../packages/core/package.json", import.meta.url)))(
  "ajv/dist/standalone",
).default as (ajv: ReturnType<typeof createAjv>, refs: Record<string, string>) => string;

/** Where the contract's request validators are committed. */
export const CONTRACT_VALIDATORS_FILE = fileURLToPath(
  new URL("../packages/core/src/contract.validators.generated.ts", import.meta.url),
);
/** Where the validator of JSON Schema 2020-12's meta-schema (a schema's own check) is committed. */
export const META_SCHEMA_VALIDATOR_FILE = fileURLToPath(
  new URL("../packages/core/src/meta-schema.validators.generated.ts", import.meta.url),
);
/** Where the configuration's validator is committed. */
export const CONFIG_VALIDATOR_FILE = fileURLToPath(
  new URL("../packages/core/src/config.validators.generated.ts", import.meta.url),
);

/** First lines of a generated file. */
const header = (what: string) => `/**
 * GENERATED FILE, DO NOT EDIT. ${what},
 * compiled ahead of time by ajv's standalone code generator (schema/validators.ts) with the
 * options of core's createAjv(). To regenerate after
 * changing the schema, its options or ajv, run \`pnpm schema\` from the repository root;
 * packages/core/test/validators-generated.test.ts fails while this file is stale.
 */
// @ts-nocheck: ajv's generated JavaScript, untyped; biome.json leaves *.validators.generated.ts unlinted.
`;

/**
 * ajv's standalone code as an ES module: ajv refers to its run-time helpers (and ajv-formats'
 * formats) with `require("…")`, which an ES module lacks; each becomes that CommonJS module's
 * `module.exports`, imported. Loaders differ in what a CommonJS module's namespace holds: Node puts
 * `module.exports` under `default`; esbuild, tsx and vitest spread an `__esModule` module's exports
 * into it. Both are told apart by `__esModule`, which ajv's compiled modules set.
 */
function asEsModule(code: string): string {
  const imports = new Map<string, string>();
  const body = code.replace(/require\("([^"]+)"\)/g, (_, spec: string) => {
    const file = spec.endsWith(".js") ? spec : `${spec}.js`;
    if (!imports.has(file)) imports.set(file, `cjs${imports.size}`);
    return imports.get(file)!;
  });
  const lines = [...imports].map(
    ([file, name]) =>
      `import * as ${name}_ from ${JSON.stringify(file)};\nconst ${name} = ${name}_.default?.__esModule ? ${name}_.default : ${name}_;`,
  );
  return `${lines.join("\n")}${lines.length ? "\n" : ""}${body.replace(/^"use strict";\n?/, "")}\n`;
}

/** Standalone code of `refs` (export name → schema id) compiled by `ajv`. */
function moduleOf(ajv: ReturnType<typeof createAjv>, refs: Record<string, string>): string {
  return asEsModule(standaloneCode(ajv, refs));
}

/**
 * The option sets core's `resolveOptions` compiles a package's `optionsSchema` with: the registry's (loading YAML,
 * types coerced) and a direct caller's (a factory's `create` given options as written, `applyOptionDefaults`).
 */
export const OPTIONS_COMPILE_SETS: CompileOptions[] = [{ coerceTypes: true, useDefaults: true }, { useDefaults: true }];

/** A validator compiled ahead of time: its key for core's `addPrecompiledValidators` and an ES module whose default export it is. */
export interface PrecompiledModule {
  key: string;
  code: string;
}

/**
 * `schema` compiled with `options` as core's `compileSchema` would (same ajv options, the meta-schema
 * checked by ajv), as an ES module; for `addPrecompiledValidators` under `precompiledKey(schema, options)`.
 */
export function precompileSchema(schema: object, options: CompileOptions): PrecompiledModule {
  const ajv = createAjv({ ...options, optimize: options.optimize ?? false, standalone: true });
  const validate = ajv.compile(schema);
  return {
    key: precompiledKey(schema, options),
    code: asEsModule((standaloneCode as unknown as (a: unknown, v: unknown) => string)(ajv, validate)),
  };
}

/** The text of {@link CONTRACT_VALIDATORS_FILE}: one export per request body schema (`CreateCredentialsRequest`, …). */
export function buildContractValidators(): string {
  const ajv = createAjv({ standalone: true });
  ajv.addSchema({ $id: contractSchemaId, $defs: contractDefs() });
  const refs = Object.fromEntries(CONTRACT_REQUESTS.map((name) => [name, `${contractSchemaId}#/$defs/${name}`]));
  return (
    header(
      "The contract's request body validators\n * (packages/core/openapi/credential-webhook.openapi.yaml, components.schemas)",
    ) + moduleOf(ajv, refs)
  );
}

/** The text of {@link CONFIG_VALIDATOR_FILE}: `validateConfigSchema`, with `coerceTypes` and `useDefaults` as validateConfig() needs. */
export function buildConfigValidator(): string {
  const ajv = createAjv({ standalone: true, coerceTypes: true, useDefaults: true });
  ajv.addSchema(configSchema as object, "credhook:config");
  return (
    header("The validator of webhook.config.yaml\n * (core's configSchema in packages/core/src/config.ts)") +
    moduleOf(ajv, { validateConfigSchema: "credhook:config" })
  );
}

/**
 * The text of {@link META_SCHEMA_VALIDATOR_FILE}: `validateMetaSchema`, JSON Schema 2020-12's meta-schema
 * (ajv's copy, with ajv-formats' formats) as createAjv()'s instances check a schema before compiling it.
 */
export function buildMetaSchemaValidator(): string {
  const ajv = createAjv({ standalone: true });
  return (
    header(
      "The validator of JSON Schema 2020-12's meta-schema\n * (what ajv checks every schema with before compiling it)",
    ) + moduleOf(ajv, { validateMetaSchema: META_SCHEMA_ID })
  );
}
