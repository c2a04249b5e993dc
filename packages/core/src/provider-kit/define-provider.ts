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
import type { ErrorObject } from "ajv";
import type { FromSchema, JSONSchema } from "json-schema-to-ts";
import type { CredentialType } from "../contract.js";
import { ConfigError } from "../errors.js";
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
   * The credential types a gateway of this provider may issue (`credentialType:` in YAML). Another
   * is refused before {@link create} runs, with the {@link problems}, in one ConfigError naming
   * `gateways.<name>.credentialType`. Absent: every type reaches `create` (core still refuses a
   * type the provider's `capabilities.credentialTypes` lacks, once it is built).
   */
  readonly credentialTypes?: readonly CredentialType[];
  /**
   * What is wrong with options a JSON Schema cannot check (a rule across two options, a URL that
   * must parse, limits the gateway refuses), before {@link create} runs: one message per problem,
   * each naming its YAML path (`context.configPath` and the option, e.g.
   * `gateways.kong.options.plans.gold: …`); empty when there is none. They are thrown in one
   * ConfigError, each prefixed `[provider-<type>]`. Checks that need I/O (a file that must
   * exist) stay in `create`.
   * @param options the options, defaults applied
   */
  problems?(options: R, context: ProviderContext): string[];
  /**
   * Builds the provider for one gateway from options that are schema-valid (when core
   * loads them), have every schema default applied, and have none of the {@link problems}.
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
   * Resolves `options` ({@link resolveOptions}: the schema's defaults applied to a copy, unless
   * core's registry already resolved them), refuses a credential type outside the definition's
   * `credentialTypes` and the definition's `problems` in one ConfigError, then calls the
   * definition's `create` (synchronously: what it throws or returns comes back as it is).
   * @throws ConfigError the credential type or a problem, each message `[provider-<type>] <YAML path>: …`,
   *   synchronously (before an async `create` would run)
   */
  create(options: O, context: ProviderContext): P | Promise<P>;
}

/**
 * A factory's `create` typed as what it is for a synchronous provider `P`, for callers that build
 * one gateway's provider without core's loading (tests): options as written, and of the context
 * only the gateway's name, YAML path, credential type and logger (a provider that needs its state
 * or the shared rate slots takes `ProviderContext`). `export const createKongProvider =
 * factory.create as DirectCreate<KongProviderOptions, KongProvider>`.
 */
export type DirectCreate<O, P extends Provider> = (
  options: O,
  context: Pick<ProviderContext, "gateway" | "configPath" | "credentialType" | "logger">,
) => P;

/** What {@link resolveOptions} answers. */
export interface ResolvedOptions<R> {
  /** A copy of the options with every `default` of the schema applied (and, with `coerceTypes`, types coerced). */
  options: R;
  /** What the schema refuses in them (ajv's errors, for `formatConfigErrors`); empty when they are valid. */
  errors: ErrorObject[];
}

/** Options {@link resolveOptions} made, and the schema they were resolved against: they are not resolved again. */
const resolvedAgainst = new WeakMap<object, object>();

/**
 * The one place credhook applies an options schema's defaults: a provider's or a store's
 * `options`, checked against its schema (ajv, `useDefaults`: a default fills an absent option,
 * and a nested one fills an object that is present or has a default itself, `default: {}`).
 * Core's registry resolves every gateway's and the store's options with it as it loads the YAML —
 * the path `credhook check-config` and `credhook serve` share — and {@link defineProvider}'s
 * `create` with it for a caller that passes options as written; options it made are handed
 * back as they are, so that the defaults are applied once on any path.
 * @param schema the options schema (draft 2020-12)
 * @param options the options as written (`undefined`: `{}`); not modified (a store's may be a string)
 * @param settings `coerceTypes`: turn strings into the schema's types as YAML and `${VAR}` need (core's loading) @default false
 * @returns the options with defaults applied, and the schema's errors (the options are returned even when invalid, for the caller to refuse)
 */
export function resolveOptions<R = unknown>(
  schema: object,
  options: unknown,
  settings: { coerceTypes?: boolean } = {},
): ResolvedOptions<R> {
  if (typeof options === "object" && options !== null && resolvedAgainst.get(options) === schema)
    return { options: options as R, errors: [] };
  const validate = compileSchema(schema, { coerceTypes: settings.coerceTypes ?? false, useDefaults: true });
  const copy: unknown = structuredClone(options === undefined ? {} : options);
  const valid = validate(copy);
  if (typeof copy === "object" && copy !== null) resolvedAgainst.set(copy, schema);
  return { options: copy as R, errors: valid ? [] : [...(validate.errors ?? [])] };
}

/**
 * A copy of `options` with every `default` of `schema` applied ({@link resolveOptions}, which core's
 * registry applies when it loads YAML). The options are not checked: invalid options come back with
 * what defaults apply, for the caller to refuse.
 * @param schema a provider's options schema
 * @param options the options as given; not modified
 */
export function applyOptionDefaults<S extends OptionsSchema, O = OptionsOf<S>, R = ResolvedOptionsOf<S>>(
  schema: S,
  options: O,
): R {
  return resolveOptions<R>(schema as object, options ?? {}).options;
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
  const { type, optionsSchema, credentialTypes } = definition;
  return {
    type,
    optionsSchema: optionsSchema as S & Record<string, unknown>,
    create(options, context) {
      const resolved = resolveOptions<R>(optionsSchema as object, options ?? {}).options;
      const problems = [
        ...(credentialTypes && !credentialTypes.includes(context.credentialType)
          ? [
              `${context.configPath.replace(/\.options$/, "")}.credentialType: provider '${type}' issues ${credentialTypes.join(" and ")} credentials only, not ${context.credentialType}`,
            ]
          : []),
        ...(definition.problems?.(resolved, context) ?? []),
      ];
      if (problems.length > 0) throw new ConfigError(problems.map((m) => `[provider-${type}] ${m}`));
      return definition.create(resolved, context);
    },
  };
}
