/**
 * Validation of request bodies against the contract's OpenAPI 3.1 document
 * (`openapi/credential-webhook.openapi.yaml`), compiled once with ajv (JSON
 * Schema 2020-12) + ajv-formats, and turning ajv errors into one readable line
 * each (`body/apis/0/id must be string`).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { parse as parseYaml } from "yaml";
import { ValidationError } from "./errors.js";
import type { CreateCredentialsRequest, RevokeCredentialsRequest, UpdateCredentialsRequest } from "./contract.js";

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
 */
export function createAjv(options: { coerceTypes?: boolean; useDefaults?: boolean; optimize?: boolean } = {}): Ajv2020 {
  const ajv = new Ajv2020({
    code: { optimize: options.optimize ?? true },
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

/** One ajv instance per option set; each keeps the validator of every schema object it compiled. */
const shared = new Map<string, Ajv2020>();

/**
 * `schema` compiled by a shared ajv instance set up like {@link createAjv}, once per schema
 * object and option set (ajv keeps a compiled schema by its object and returns the same
 * validator for it again): compiling takes milliseconds to tens of milliseconds (the config
 * schema 30–60 ms), far more than a validation, and start-up, `check-config` and every
 * provider's option defaults compile the same schemas again.
 * Callers must not mutate `schema` after the first call (its validator is kept).
 * @param schema a JSON Schema (2020-12) object without an `$id` shared with another object
 * @throws Error (from ajv) when the schema itself is invalid
 */
export function compileSchema<T = unknown>(schema: object, options: CompileOptions = {}): ValidateFunction<T> {
  const key = `${options.coerceTypes ?? false}/${options.useDefaults ?? false}/${options.optimize ?? false}`;
  let ajv = shared.get(key);
  if (!ajv) {
    ajv = createAjv({ ...options, optimize: options.optimize ?? false });
    shared.set(key, ajv);
  }
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
 */
export function formatAjvErrors(errors: ErrorObject[] | null | undefined, locate: (instancePath: string) => string): string[] {
  const lines = (errors ?? []).filter((e) => e.keyword !== "if" && e.keyword !== "oneOf" && e.keyword !== "anyOf").map((e) => formatAjvError(e, locate(e.instancePath)));
  return [...new Set(lines)];
}

/** Compiled validators of the three request bodies. */
export interface ContractValidator {
  /**
   * Checks a create body. Unknown fields are kept.
   * @throws ValidationError (400) listing every problem, each rooted at `body`
   */
  createRequest(body: unknown): CreateCredentialsRequest;
  /** @throws ValidationError (400) */
  updateRequest(body: unknown): UpdateCredentialsRequest;
  /** @throws ValidationError (400) */
  revokeRequest(body: unknown): RevokeCredentialsRequest;
}

let contractValidator: ContractValidator | undefined;

/** The contract's request validators, compiled on the first call and shared after it (they keep no state). */
export function compileContractValidator(): ContractValidator {
  contractValidator ??= buildContractValidator();
  return contractValidator;
}

function buildContractValidator(): ContractValidator {
  const ajv = createAjv();
  // OpenAPI keeps schemas under components/schemas; JSON Schema under $defs. Re-root the refs.
  const schemas = (openApiDocument().components as { schemas: Record<string, unknown> }).schemas;
  const defs = JSON.parse(JSON.stringify(schemas).replaceAll('"#/components/schemas/', '"#/$defs/')) as Record<string, unknown>;
  ajv.addSchema({ $id: "credhook:contract", $defs: defs });
  const compile = <T>(name: string) => {
    const fn = ajv.getSchema(`credhook:contract#/$defs/${name}`) as ValidateFunction | undefined;
    if (!fn) throw new Error(`OpenAPI document lacks components.schemas.${name}`);
    return (body: unknown): T => {
      if (body === null || typeof body !== "object" || Array.isArray(body)) {
        throw new ValidationError(["body must be a JSON object"]);
      }
      if (!fn(body)) throw new ValidationError(formatAjvErrors(fn.errors, (path) => `body${path}`));
      return body as T;
    };
  };
  return {
    createRequest: compile<CreateCredentialsRequest>("CreateCredentialsRequest"),
    updateRequest: compile<UpdateCredentialsRequest>("UpdateCredentialsRequest"),
    revokeRequest: compile<RevokeCredentialsRequest>("RevokeCredentialsRequest"),
  };
}
