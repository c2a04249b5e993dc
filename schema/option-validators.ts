/**
 * `tsx --conditions=dev-source schema/option-validators.ts PKG…`: prints, as JSON, the options
 * validators of the given provider and store packages compiled ahead of time (ajv standalone code,
 * see validators.ts `precompileSchema`), for each option set core compiles them with — what the
 * Lambda bundle (scripts/lambda-bundle.mjs) registers with `addPrecompiledValidators` so that its
 * cold start compiles no schema.
 */
import type { ProviderFactory } from "../packages/core/src/entry/provider.js";
import type { StoreFactory } from "../packages/core/src/entry/store.js";
import { importProviderModule } from "../packages/server/src/index.js";
import { OPTIONS_COMPILE_SETS, type PrecompiledModule, precompileSchema } from "./validators.js";

const out: PrecompiledModule[] = [];
for (const pkg of process.argv.slice(2)) {
  const mod = (await importProviderModule(pkg)) as { default?: unknown };
  const factory = (mod.default ?? mod) as ProviderFactory | StoreFactory;
  for (const options of OPTIONS_COMPILE_SETS) out.push(precompileSchema(factory.optionsSchema as object, options));
}
process.stdout.write(JSON.stringify(out));
