/**
 * Options validators compiled ahead of time (what the Lambda bundle registers): compileSchema answers
 * with them for a schema of the same text and option set, and they validate as a validator compiled
 * at run time does.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { OPTIONS_COMPILE_SETS, precompileSchema } from "../../../schema/validators.js";
import { addPrecompiledValidators, compileSchema, createAjv, precompiledKey } from "../src/index.js";

// Beside core's sources, so that the module resolves ajv's run-time helpers as core does.
const dir = mkdtempSync(join(fileURLToPath(new URL(".", import.meta.url)), ".precompiled-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const optionsSchema = {
  type: "object",
  additionalProperties: false,
  required: ["region"],
  properties: {
    region: { type: "string", minLength: 1, maxLength: 32, pattern: "^[a-z0-9-]+$" },
    maxRetries: { type: "integer", minimum: 0, maximum: 10, default: 3 },
    limits: { type: "object", default: {}, properties: { rate: { type: "number", minimum: 0, default: 10 } } },
    mode: { enum: ["fast", "safe"], default: "safe" },
  },
};
const samples: unknown[] = [
  { region: "us-east-1" },
  { region: "eu-west-1", maxRetries: "4", limits: { rate: "2.5" } },
  { region: "", maxRetries: 11, mode: "x", extra: 1 },
  { maxRetries: "many" },
];

async function load(code: string, name: string): Promise<unknown> {
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, code);
  return ((await import(pathToFileURL(file).href)) as { default: unknown }).default;
}

describe("options validators compiled ahead of time", () => {
  it("are returned by compileSchema for the same schema text and option set, and validate as run-time ones do", async () => {
    for (const [i, options] of OPTIONS_COMPILE_SETS.entries()) {
      const { key, code } = precompileSchema(structuredClone(optionsSchema), options);
      expect(key).toBe(precompiledKey(optionsSchema, options));
      const fn = await load(code, `v${i}`);
      addPrecompiledValidators({ [key]: fn });
      const schema = structuredClone(optionsSchema);
      const validate = compileSchema(schema, options);
      expect(validate).toBe(fn);
      const runtime = createAjv({ ...options, optimize: false }).compile(structuredClone(optionsSchema));
      for (const sample of samples) {
        const [a, b] = [structuredClone(sample), structuredClone(sample)];
        expect(validate(a)).toBe(runtime(b));
        expect(a).toEqual(b);
        expect(validate.errors ?? null).toEqual(runtime.errors ?? null);
      }
    }
  });

  it("are not used for another schema text or another option set", async () => {
    const { key, code } = precompileSchema(structuredClone(optionsSchema), { coerceTypes: true, useDefaults: true });
    const fn = await load(code, "other");
    addPrecompiledValidators({ [key]: fn });
    expect(compileSchema(structuredClone(optionsSchema), { coerceTypes: true })).not.toBe(fn);
    const changed = structuredClone(optionsSchema);
    changed.properties.maxRetries.maximum = 20;
    const validate = compileSchema(changed, { coerceTypes: true, useDefaults: true });
    expect(validate).not.toBe(fn);
    expect(validate({ region: "x", maxRetries: 15 })).toBe(true);
  });
});
