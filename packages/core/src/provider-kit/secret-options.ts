/**
 * Secret options: an options schema marks an option secret with JSON Schema's `writeOnly: true`
 * (draft 2020-12, meta-data vocabulary: "the value may be sent but is never returned";
 * https://json-schema.org/draft/2020-12/json-schema-validation#section-9.4). ajv accepts the
 * keyword in strict mode, json-schema-to-ts ignores it, and editors show it from the generated
 * webhook.config.schema.json. Whatever credhook prints or logs of such an option — check-config's
 * options, a provider's log lines, a provider's start-up error messages — shows {@link MASKED_OPTION}
 * instead of the value. A secret option may be of any type: an object marked `writeOnly` (e.g.
 * `headers`, whose values carry credentials) is masked whole.
 */
import type { Logger } from "../logger.js";
import { redactSecrets } from "./redact.js";

/** What a secret option's value is printed as. */
export const MASKED_OPTION = "****";

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === "object" && v !== null && !Array.isArray(v);

/** The schema a local `$ref` (`#/$defs/x`, a JSON Pointer into `root`) names; undefined for any other reference. */
function resolveRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) return undefined;
  return ref
    .slice(1)
    .split("/")
    .filter((p) => p !== "")
    .map((p) => decodeURIComponent(p).replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce<unknown>((at, p) => (isObject(at) ? at[p] : undefined), root);
}

/** JSON Schema's name of `value`'s type (`integer` for a whole number, which `number` also admits). */
function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** Whether `schema`'s `type` (when it declares one) admits `value`. */
function admits(schema: Schema, value: unknown): boolean {
  if (schema.type === undefined) return true;
  const t = typeOf(value);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types.includes(t) || (t === "integer" && types.includes("number"));
}

/**
 * The subschemas of `schema` that apply to `value`: itself and the branches of `allOf`,
 * `anyOf`, `oneOf`, `then`/`else` and a local `$ref`, recursively; a branch whose `type`
 * does not admit the value is left out. Every other branch counts: a property one branch of
 * a `oneOf` marks secret is masked whichever of the object branches the value matches.
 */
function applicable(schema: unknown, value: unknown, root: unknown, seen = new Set<unknown>()): Schema[] {
  if (!isObject(schema) || seen.has(schema) || !admits(schema, value)) return [];
  seen.add(schema);
  const out = [schema];
  for (const key of ["allOf", "anyOf", "oneOf"]) {
    const branches = schema[key];
    if (Array.isArray(branches)) for (const b of branches) out.push(...applicable(b, value, root, seen));
  }
  for (const key of ["then", "else"]) out.push(...applicable(schema[key], value, root, seen));
  if (typeof schema.$ref === "string") out.push(...applicable(resolveRef(root, schema.$ref), value, root, seen));
  return out;
}

/** The subschemas of `schemas` that apply to the object member `key` (`properties`, `patternProperties`, else `additionalProperties`). */
function memberSchemas(schemas: Schema[], key: string): Schema[] {
  return schemas.flatMap((s) => {
    const named = isObject(s.properties) ? s.properties[key] : undefined;
    const patterns = isObject(s.patternProperties)
      ? Object.entries(s.patternProperties).filter(([p]) => new RegExp(p, "u").test(key))
      : [];
    if (named !== undefined || patterns.length > 0) return [named, ...patterns.map(([, p]) => p)].filter(isObject);
    return isObject(s.additionalProperties) ? [s.additionalProperties] : [];
  });
}

/** The subschemas of `schemas` that apply to array item `index` (`prefixItems`, else `items`). */
function itemSchemas(schemas: Schema[], index: number): Schema[] {
  return schemas.flatMap((s) => {
    const prefix = Array.isArray(s.prefixItems) ? s.prefixItems[index] : undefined;
    if (isObject(prefix)) return [prefix];
    return isObject(s.items) ? [s.items] : [];
  });
}

/** Every string inside `value` (a secret option's value, for redaction from text). */
function stringsIn(value: unknown, into: string[]): void {
  if (typeof value === "string") into.push(value);
  else if (Array.isArray(value)) for (const v of value) stringsIn(v, into);
  else if (isObject(value)) for (const v of Object.values(value)) stringsIn(v, into);
}

/** `value` with every secret option masked, and the secret strings found on the way pushed onto `secrets`. */
function walk(schemas: Schema[], value: unknown, root: unknown, secrets: string[]): unknown {
  const all = schemas.flatMap((s) => applicable(s, value, root));
  if (value === undefined || all.length === 0) return value;
  if (all.some((s) => s.writeOnly === true)) {
    stringsIn(value, secrets);
    return MASKED_OPTION;
  }
  if (Array.isArray(value)) return value.map((v, i) => walk(itemSchemas(all, i), v, root, secrets));
  if (isObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, walk(memberSchemas(all, k), v, root, secrets)]),
    );
  }
  return value;
}

/**
 * A copy of `options` with the value of every option `schema` marks secret (`writeOnly: true`)
 * replaced by {@link MASKED_OPTION}, for printing (check-config) or logging.
 * @param schema an options schema (a provider's or a store's `optionsSchema`)
 * @param options the options, as written or with defaults applied; not modified
 */
export function maskSecretOptions(schema: unknown, options: unknown): unknown {
  return walk([schema as Schema], options, schema, []);
}

/**
 * Shortest string {@link secretOptionValues} returns: a shorter value inside a secret option
 * (`"on"` among secret `headers`) is no credential, and redacting it from text would garble
 * every word that contains it.
 */
export const MIN_REDACTED_LENGTH = 6;

/**
 * The strings of `options` under an option `schema` marks secret, of at least
 * {@link MIN_REDACTED_LENGTH} characters: what must be redacted from any text that may quote
 * them (log lines, error messages).
 */
export function secretOptionValues(schema: unknown, options: unknown): string[] {
  const secrets: string[] = [];
  walk([schema as Schema], options, schema, secrets);
  return [...new Set(secrets.filter((s) => s.length >= MIN_REDACTED_LENGTH))];
}

/** `value` (a log line's object) with every secret replaced in its strings, an Error's message and stack included. */
function redactDeep(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof value === "string") return redactSecrets(value, secrets);
  if (depth > 8 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) {
    const copy = Object.create(Object.getPrototypeOf(value) as object) as Error;
    for (const [k, v] of Object.entries(value)) (copy as unknown as Schema)[k] = redactDeep(v, secrets, depth + 1);
    for (const k of ["message", "stack"] as const)
      Object.defineProperty(copy, k, { value: redactSecrets(value[k] ?? "", secrets), writable: true });
    if (value.cause !== undefined)
      Object.defineProperty(copy, "cause", { value: redactDeep(value.cause, secrets, depth + 1), writable: true });
    return copy;
  }
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, secrets, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactDeep(v, secrets, depth + 1)]));
}

/**
 * `logger` with every secret in `secrets` replaced (by `redactSecrets`' `***`) in each line's
 * message and in the strings of its object, children included: the logger core hands a provider,
 * so that a line quoting a secret option (or an SDK error that does) never carries its value.
 * @param secrets values from {@link secretOptionValues}; none: `logger` itself
 */
export function redactingLogger(logger: Logger, secrets: readonly string[]): Logger {
  if (secrets.length === 0) return logger;
  const line =
    (level: "debug" | "info" | "warn" | "error") =>
    (obj: object, msg?: string): void => {
      const clean = redactDeep(obj, secrets) as object;
      if (msg === undefined) logger[level](clean);
      else logger[level](clean, redactSecrets(msg, secrets));
    };
  return {
    debug: line("debug"),
    info: line("info"),
    warn: line("warn"),
    error: line("error"),
    child: (bindings) =>
      redactingLogger(logger.child(redactDeep(bindings, secrets) as Record<string, unknown>), secrets),
  };
}
