/**
 * Validation of request bodies against the contract's OpenAPI 3.1 document
 * (`openapi/credential-webhook.openapi.yaml`) and of schemas given at run time, with ajv
 * (JSON Schema 2020-12) + ajv-formats, turning ajv errors into one readable line each
 * (`body/apis/0/id must be string`).
 *
 * The contract's request validators (and the configuration's, in config.ts) are compiled ahead of
 * time: `pnpm schema` writes ajv's standalone code for them (`*.validators.generated.ts`, see
 * schema/validators.ts) from {@link contractDefs} and {@link createAjv}, and a test fails while
 * that code is stale. A process therefore neither reads the OpenAPI document nor compiles ajv's
 * meta-schema for them — most of what a cold start spent (about 100 ms of it).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { parse as parseYaml } from "yaml";
import {
  CreateCredentialsRequest,
  RevokeCredentialsRequest,
  UpdateCredentialsRequest,
} from "./contract.validators.generated.js";
import { validateMetaSchema } from "./meta-schema.validators.generated.js";
import { ValidationError } from "./errors.js";
import type {
  CreateCredentialsRequest as CreateBody,
  RevokeCredentialsRequest as RevokeBody,
  UpdateCredentialsRequest as UpdateBody,
} from "./contract.js";

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

/** Absolute path of the shipped OpenAPI document. */
export const OPENAPI_PATH = fileURLToPath(new URL("../openapi/credential-webhook.openapi.yaml", import.meta.url));

let cachedDocument: Record<string, unknown> | undefined;

/** The contract's OpenAPI 3.1 document, parsed (read once). */
export function openApiDocument(): Record<string, unknown> {
  cachedDocument ??= parseYaml(readFileSync(OPENAPI_PATH, "utf8")) as Record<string, unknown>;
  return cachedDocument;
}

/**
 * A new ajv instance set up the way credhook validates: 2020-12, all errors, formats, OpenAPI's `example` keyword known.
 * `optimize: false` skips ajv's optimisation of the generated code: compiling the config schema takes about half
 * the time (30 ms instead of 60), validating a little longer; right for a schema that validates once.
 * `validateSchema: false` leaves checking a schema against its meta-schema to the caller (as {@link compileSchema} does).
 * `standalone: true` keeps each validator's source for ajv's standalone code generator, as ES module code
 * (what `pnpm schema` precompiles with).
 */
export function createAjv(
  options: {
    coerceTypes?: boolean;
    useDefaults?: boolean;
    optimize?: boolean;
    standalone?: boolean;
    validateSchema?: boolean;
  } = {},
): Ajv2020 {
  const ajv = new Ajv2020({
    validateSchema: options.validateSchema ?? true,
    code: { optimize: options.optimize ?? true, ...(options.standalone ? { source: true, esm: true } : {}) },
    allErrors: true,
    strict: true,
    strictRequired: false,
    strictTypes: false,
    allowUnionTypes: true,
    coerceTypes: options.coerceTypes ?? false,
    useDefaults: options.useDefaults ?? false,
  });
  addFormats(ajv);
  ajv.addKeyword({ keyword: "example" });
  return ajv;
}

/**
 * How {@link compileSchema} validates: `coerceTypes` and `useDefaults` as in ajv's options (both default false);
 * `optimize` as in {@link createAjv} (default false: these schemas validate config and options, once or a few times).
 */
export interface CompileOptions {
  coerceTypes?: boolean;
  useDefaults?: boolean;
  optimize?: boolean;
}

/** The meta-schema (dialect) of every schema credhook compiles: JSON Schema 2020-12, ajv's Ajv2020 default. */
export const META_SCHEMA_ID = "https://json-schema.org/draft/2020-12/schema";

/** One ajv instance per option set; each keeps the validator of every schema object it compiled. */
const shared = new Map<string, Ajv2020>();

/** Schema objects {@link compileSchema} has checked against their meta-schema (each is checked once). */
const checkedSchemas = new WeakSet<object>();

/**
 * Checks `schema` against its meta-schema as ajv's `validateSchema` option does before compiling, with the same
 * error; a 2020-12 schema (no `$schema`, or that dialect's) with the meta-schema validator `pnpm schema`
 * precompiled (meta-schema.validators.generated.ts): ajv would compile the meta-schema first, 20–60 ms per instance.
 * @throws Error `schema is invalid: data/… must …` (ajv's text)
 */
function checkSchema(ajv: Ajv2020, schema: object): void {
  if (checkedSchemas.has(schema)) return;
  const dialect = (schema as { $schema?: unknown }).$schema;
  if (dialect !== undefined && dialect !== META_SCHEMA_ID) {
    ajv.validateSchema(schema, true);
  } else {
    const validate = validateMetaSchema as unknown as ValidateFunction;
    if (!validate(schema)) throw new Error(`schema is invalid: ${ajv.errorsText(validate.errors)}`);
  }
  checkedSchemas.add(schema);
}

/** The option set of `options` as a string: `coerceTypes/useDefaults/optimize`, each as {@link compileSchema} defaults it. */
function optionSet(options: CompileOptions): string {
  return `${options.coerceTypes ?? false}/${options.useDefaults ?? false}/${options.optimize ?? false}`;
}

/** Validators compiled ahead of time, by {@link precompiledKey}. */
const precompiled = new Map<string, ValidateFunction>();

/** Per option set, what {@link compileSchema} found for each schema object in {@link precompiled} (undefined: nothing). */
const precompiledFound = new Map<string, WeakMap<object, ValidateFunction | undefined>>();

/**
 * The key of a validator compiled ahead of time for `schema` with `options`: a SHA-256 (base64url) of
 * the option set and the schema's JSON text. Two schema objects with the same text compile to the same code.
 */
export function precompiledKey(schema: object, options: CompileOptions = {}): string {
  return createHash("sha256")
    .update(`${optionSet(options)}\n${JSON.stringify(schema)}`)
    .digest("base64url");
}

/**
 * Makes {@link compileSchema} answer with `validators` instead of compiling: each is ajv's standalone code
 * of a schema compiled with {@link createAjv}'s options (meta-schema checked), under its {@link precompiledKey}.
 * The Lambda bundle (scripts/lambda-bundle.mjs) registers its providers' and store's options validators so.
 * @param validators key → validate function (ajv standalone)
 */
export function addPrecompiledValidators(validators: Record<string, unknown>): void {
  for (const [key, fn] of Object.entries(validators)) precompiled.set(key, fn as ValidateFunction);
  precompiledFound.clear();
}

/** The validator compiled ahead of time for `schema` with `options`, if one was registered. */
function findPrecompiled(schema: object, options: CompileOptions): ValidateFunction | undefined {
  if (precompiled.size === 0) return undefined;
  const set = optionSet(options);
  let found = precompiledFound.get(set);
  if (!found) precompiledFound.set(set, (found = new WeakMap()));
  if (!found.has(schema)) found.set(schema, precompiled.get(precompiledKey(schema, options)));
  return found.get(schema);
}

/**
 * `schema` compiled by a shared ajv instance set up like {@link createAjv}, once per schema
 * object and option set (ajv keeps a compiled schema by its object and returns the same
 * validator for it again): compiling takes milliseconds to tens of milliseconds (the config
 * schema 30–60 ms), far more than a validation, and start-up, `check-config` and every
 * provider's option defaults compile the same schemas again. The schema is checked against its
 * meta-schema first, as ajv does, but by a validator compiled ahead of time (see `checkSchema`).
 * A validator registered with {@link addPrecompiledValidators} for the same schema text and
 * options is returned without compiling.
 * Callers must not mutate `schema` after the first call (its validator is kept).
 * @param schema a JSON Schema (2020-12) object without an `$id` shared with another object
 * @throws Error (from ajv) when the schema itself is invalid
 */
export function compileSchema<T = unknown>(schema: object, options: CompileOptions = {}): ValidateFunction<T> {
  const ready = findPrecompiled(schema, options);
  if (ready) return ready as ValidateFunction<T>;
  const key = optionSet(options);
  let ajv = shared.get(key);
  if (!ajv) {
    ajv = createAjv({ ...options, optimize: options.optimize ?? false, validateSchema: false });
    shared.set(key, ajv);
  }
  checkSchema(ajv, schema);
  return ajv.compile<T>(schema);
}

/** Renders one ajv error as `<where> <what>`; `where` is the already-rendered location (e.g. `body/apis/0/id`). */
export function formatAjvError(err: ErrorObject, where: string): string {
  switch (err.keyword) {
    case "required":
      return `${where} must have required property '${String(err.params.missingProperty)}'`;
    case "enum":
      return `${where} must be one of: ${(err.params.allowedValues as unknown[]).map(String).join(", ")}`;
    case "additionalProperties":
      return `${where} must not have property '${String(err.params.additionalProperty)}'`;
    default:
      return `${where} ${err.message ?? "is invalid"}`;
  }
}

/**
 * Readable, de-duplicated messages for a failed validation, one per problem;
 * `if`/`oneOf`/`anyOf` wrapper errors are dropped (their causes are listed).
 * @param locate renders an ajv instance path (`/apis/0/id`) as the message's location
 * @param hint the text appended to one error's message (a suggestion such as ` (did you mean 'port'?)`); none by default
 */
export function formatAjvErrors(
  errors: ErrorObject[] | null | undefined,
  locate: (instancePath: string) => string,
  hint: (err: ErrorObject) => string = () => "",
): string[] {
  const lines = (errors ?? [])
    .filter((e) => e.keyword !== "if" && e.keyword !== "oneOf" && e.keyword !== "anyOf")
    .map((e) => formatAjvError(e, locate(e.instancePath)) + hint(e));
  return [...new Set(lines)];
}

/** Compiled validators of the three request bodies. */
export interface ContractValidator {
  /**
   * Checks a create body. Unknown fields are kept.
   * @throws ValidationError (400) listing every problem, each rooted at `body`
   */
  createRequest(body: unknown): CreateBody;
  /** @throws ValidationError (400) */
  updateRequest(body: unknown): UpdateBody;
  /** @throws ValidationError (400) */
  revokeRequest(body: unknown): RevokeBody;
}

/** The request bodies the contract validates, by their name under the OpenAPI document's `components.schemas`. */
export const CONTRACT_REQUESTS = [
  "CreateCredentialsRequest",
  "UpdateCredentialsRequest",
  "RevokeCredentialsRequest",
] as const;

/** The `$id` under which {@link contractDefs} are compiled: a request's schema is `credhook:contract#/$defs/<name>`. */
export const contractSchemaId = "credhook:contract";

/**
 * The OpenAPI document's `components.schemas` as JSON Schema `$defs` (OpenAPI keeps schemas under
 * components/schemas, JSON Schema under $defs: every `$ref` is re-rooted), what the contract's
 * validators are compiled from under {@link contractSchemaId}.
 */
export function contractDefs(): Record<string, unknown> {
  const schemas = (openApiDocument().components as { schemas: Record<string, unknown> }).schemas;
  return JSON.parse(JSON.stringify(schemas).replaceAll('"#/components/schemas/', '"#/$defs/')) as Record<
    string,
    unknown
  >;
}

let contractValidator: ContractValidator | undefined;

/**
 * The contract's request validators, shared (they keep no state). They are the ones `pnpm schema`
 * compiled ahead of time from {@link contractDefs} with {@link createAjv}'s options: the same code,
 * the same errors, without compiling at run time.
 */
export function compileContractValidator(): ContractValidator {
  contractValidator ??= buildContractValidator();
  return contractValidator;
}

function buildContractValidator(): ContractValidator {
  const compile = <T>(precompiled: unknown) => {
    const fn = precompiled as ValidateFunction;
    return (body: unknown): T => {
      if (body === null || typeof body !== "object" || Array.isArray(body)) {
        throw new ValidationError(["body must be a JSON object"]);
      }
      if (!fn(body)) throw new ValidationError(formatAjvErrors(fn.errors, (path) => `body${path}`));
      return body as T;
    };
  };
  return {
    createRequest: compile<CreateBody>(CreateCredentialsRequest),
    updateRequest: compile<UpdateBody>(UpdateCredentialsRequest),
    revokeRequest: compile<RevokeBody>(RevokeCredentialsRequest),
  };
}
