/**
 * `defineProvider()`: a provider's options written once, as a JSON Schema, and typed
 * from it. The schema (draft 2020-12, written `as const`, with a `description` and a
 * `default` on every option) is what core validates `gateways.<name>.options` with,
 * what `pnpm schema` puts into webhook.config.schema.json for editors, and, through
 * json-schema-to-ts's `FromSchema`, the TypeScript type of the options: no
 * hand-written options interface to keep in step with it.
 *
 * json-schema-to-ts rather than TypeBox: the schema stays a plain JSON Schema literal
 * that ajv and the generated webhook.config.schema.json consume unchanged, and a
 * provider package needs no schema-builder runtime dependency.
 * https://github.com/ThomasAribart/json-schema-to-ts
 */
import type { FromSchema, JSONSchema } from "json-schema-to-ts";
import type { Provider, ProviderContext, ProviderFactory } from "../provider.js";
import { compileSchema } from "../validation.js";

/** A provider's options schema: a JSON Schema object (not a boolean schema), written `as const`. */
export type OptionsSchema = Exclude<JSONSchema, boolean>;

/**
 * The options as written in YAML (or passed by a caller): every option with a
 * `default` is optional.
 */
export type OptionsOf<S extends OptionsSchema> = FromSchema<S, { keepDefaultedPropertiesOptional: true }>;

/**
 * The options with every `default` of the schema applied (what a {@link ProviderDefinition.create}
 * receives): an option with a default is always present. Nested defaults apply where
 * their object is present or has a default itself (`default: {}`), as with ajv's `useDefaults`.
 */
export type ResolvedOptionsOf<S extends OptionsSchema> = FromSchema<S>;

/**
 * What a provider package passes to {@link defineProvider}; `R` is the options type
 * `create` receives ({@link ResolvedOptionsOf} the schema).
 */
export interface ProviderDefinition<S extends OptionsSchema, R, P extends Provider = Provider> {
  /** Short type name (`aws`, `azure`, `gcp`, `local`, or the third party's), as in `provider:` in YAML. */
  readonly type: string;
  /** JSON Schema (draft 2020-12) of the gateway's `options` block, `as const`; its `description`s are the options' documentation. */
  readonly optionsSchema: S;
  /**
   * Builds the provider for one gateway from options that are schema-valid (when core
   * loads them) and have every schema default applied.
   * @throws ConfigError options that are valid in shape but not usable (name the option)
   */
  create(options: R, context: ProviderContext): P | Promise<P>;
}

/**
 * The factory {@link defineProvider} returns: a {@link ProviderFactory} whose options
 * type `O` ({@link OptionsOf} the schema) comes from the schema.
 */
export interface DefinedProviderFactory<S extends OptionsSchema, O, P extends Provider = Provider>
  extends ProviderFactory<O> {
  /** The schema as given (its literal type kept). */
  readonly optionsSchema: S & Record<string, unknown>;
  /**
   * Applies the schema's defaults to a copy of `options`, then calls the definition's
   * `create` (synchronously: what it throws or returns comes back as it is).
   */
  create(options: O, context: ProviderContext): P | Promise<P>;
}

/**
 * A copy of `options` with every `default` of `schema` applied (ajv `useDefaults`, the
 * same rule core's registry applies when it loads YAML). The options are not checked:
 * invalid options come back with what defaults apply, for the caller to refuse.
 * @param schema a provider's options schema
 * @param options the options as given; not modified
 */
export function applyOptionDefaults<S extends OptionsSchema, O = OptionsOf<S>, R = ResolvedOptionsOf<S>>(
  schema: S,
  options: O,
): R {
  const apply = compileSchema(schema as object, { useDefaults: true });
  const copy: unknown = structuredClone(options ?? {});
  apply(copy);
  return copy as R;
}

/**
 * Defines a provider package's factory (its default export) from its options schema and
 * a `create` that receives options typed from that schema, defaults applied. The type
 * parameters after `S` are computed from it; leave them out.
 *
 * ```ts
 * const optionsSchema = {
 *   type: "object", additionalProperties: false, required: ["region"],
 *   properties: {
 *     region: { type: "string", description: "Region, e.g. `eu-west-1`." },
 *     timeoutMs: { type: "integer", minimum: 1, default: 5000, description: "Time-out of one call (ms)." },
 *   },
 * } as const;
 * export default defineProvider({
 *   type: "acme", optionsSchema,
 *   create: (options, context) => new AcmeProvider(options.region, options.timeoutMs, context), // timeoutMs: number
 * });
 * ```
 */
export function defineProvider<
  const S extends OptionsSchema,
  P extends Provider = Provider,
  O = OptionsOf<S>,
  R = ResolvedOptionsOf<S>,
>(definition: ProviderDefinition<S, R, P>): DefinedProviderFactory<S, O, P> {
  return {
    type: definition.type,
    optionsSchema: definition.optionsSchema as S & Record<string, unknown>,
    create(options, context) {
      return definition.create(applyOptionDefaults<S, O, R>(definition.optionsSchema, options), context);
    },
  };
}
