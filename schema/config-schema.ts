/**
 * The JSON Schema of `webhook.config.yaml` for editors (yaml-language-server and any
 * JSON Schema tool), generated from the schemas credhook itself validates with: core's
 * `configSchema`, each built-in provider's `optionsSchema` (the packages
 * {@link BUILTIN_PROVIDERS} names), each built-in store's and the embedded gateway's.
 * `pnpm schema` writes it to packages/server/config/webhook.config.schema.json; a test fails when that
 * file is stale and proves that `credhook check-config` and the schema agree.
 *
 * It describes the file as written, before interpolation: wherever a value must not be
 * a free string (a number, a boolean, an enum, a pattern), a string holding `${…}`
 * (`${VAR}`, `${VAR:-default}`, `${file:PATH}`) is accepted too, since credhook
 * replaces it before it checks the value.
 */
import { BUILTIN_PROVIDERS, BUILTIN_STORES, configSchema } from "../packages/core/src/index.js";
import type { ProviderFactory } from "../packages/core/src/entry/provider.js";
import type { StoreFactory } from "../packages/core/src/entry/store.js";
import { embeddedGatewaySchema } from "../packages/gateway/src/index.js";
import { importProviderModule } from "../packages/server/src/index.js";

/** A JSON Schema object (any keyword). */
type Schema = Record<string, unknown>;

/** JSON Schema dialect of every credhook schema (ajv's Ajv2020). */
const DIALECT = "https://json-schema.org/draft/2020-12/schema";

/** A string that credhook interpolates before it validates the value. */
const INTERPOLATED: Schema = {
  type: "string",
  pattern: "\\$\\{",
  description: "${VAR}, ${VAR:-default} or ${file:PATH}: replaced when credhook loads the file, then checked",
};

/** Keywords whose value is one schema. */
const ONE = ["additionalProperties", "items", "not", "if", "then", "else", "contains"];
/** Keywords whose value is a list of schemas. */
const LIST = ["oneOf", "anyOf", "allOf", "prefixItems"];
/** Keywords whose value maps names to schemas. */
const MAP = ["properties", "patternProperties", "$defs"];
/** Keywords that describe a value (kept on the outside when a scalar is wrapped). */
const ANNOTATIONS = ["description", "default", "title", "examples", "deprecated"];

/** True when a schema constrains a scalar in a way an interpolated string would fail. */
function rejectsInterpolation(s: Schema): boolean {
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
  if (types.some((t) => t === "object" || t === "array")) return false;
  if (s.enum !== undefined || s.const !== undefined) return true;
  if (types.some((t) => t !== "string")) return true;
  return types.includes("string") && (s.pattern !== undefined || s.format !== undefined);
}

/**
 * A copy of `schema` that also accepts `${…}` strings where credhook interpolates, without
 * nested `$schema` keywords (one dialect at the root).
 */
export function interpolable(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(schema as Schema)) {
    if (k === "$schema") continue;
    if (ONE.includes(k) && k !== "if") out[k] = interpolable(v);
    else if (LIST.includes(k)) out[k] = (v as unknown[]).map(interpolable);
    else if (MAP.includes(k))
      out[k] = Object.fromEntries(Object.entries(v as Schema).map(([n, s]) => [n, interpolable(s)]));
    else out[k] = v;
  }
  if (!rejectsInterpolation(out)) return out;
  const outer: Schema = {};
  for (const k of ANNOTATIONS) {
    if (k in out) {
      outer[k] = out[k];
      delete out[k];
    }
  }
  return { ...outer, anyOf: [out, INTERPOLATED] };
}

/** The factory a package default-exports (as core's registry reads it). */
async function factoryOf(pkg: string): Promise<ProviderFactory | StoreFactory> {
  const mod = (await importProviderModule(pkg)) as { default?: unknown };
  return (mod.default ?? mod) as ProviderFactory | StoreFactory;
}

/**
 * Builds the schema of `webhook.config.yaml`: core's config schema with, for a gateway whose
 * `provider:` is a built-in (short name or package name), that provider's options schema under
 * `options`; each built-in store's options under `store`; the embedded gateway's schema.
 * @returns a JSON Schema (draft 2020-12), ready for JSON.stringify
 */
export async function buildConfigSchema(): Promise<Schema> {
  const root = structuredClone(configSchema) as unknown as Schema & { properties: Record<string, Schema> };
  const props = root.properties;

  const gatewayEntry = props.gateways!.additionalProperties as Schema & { properties: Record<string, Schema> };
  const names = Object.keys(BUILTIN_PROVIDERS);
  gatewayEntry.properties.provider = {
    description: `a built-in provider (${names.join(", ")}) or the npm package of a third-party one`,
    anyOf: [{ enum: [...names, ...Object.values(BUILTIN_PROVIDERS)] }, { type: "string", minLength: 1 }],
  };
  const cases: Schema[] = [];
  for (const [name, pkg] of Object.entries(BUILTIN_PROVIDERS)) {
    const factory = await factoryOf(pkg);
    cases.push({
      if: { required: ["provider"], properties: { provider: { enum: [name, pkg] } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, never awaited
      then: { properties: { options: { description: `options of ${pkg}`, ...(factory.optionsSchema as Schema) } } },
    });
  }
  gatewayEntry.allOf = cases;

  const stores: Record<string, unknown> = {};
  for (const [name, pkg] of Object.entries(BUILTIN_STORES)) {
    stores[name] = { description: `options of ${pkg}`, ...((await factoryOf(pkg)).optionsSchema as Schema) };
  }
  props.store = { ...props.store, properties: stores };
  props.embeddedGateway = {
    ...embeddedGatewaySchema,
    description: "the embedded gateway's endpoints (key check, OAuth, plan limits) for provider: local",
  };

  return {
    $schema: DIALECT,
    title: "credhook webhook.config.yaml",
    description:
      "Generated by `pnpm schema` (schema/config-schema.ts) from the schemas credhook validates with; do not edit.",
    ...(interpolable(root) as Schema),
  };
}
