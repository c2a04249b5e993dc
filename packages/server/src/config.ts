/**
 * Loading of `webhook.config.yaml`: the lookup ({@link findConfigFile}), parsing with cosmiconfig (YAML
 * via the `yaml` package), `${VAR}` / `${VAR:-default}` interpolation from the
 * environment, secrets read from files (`${file:/run/secrets/x}`, `VAR_FILE`),
 * validation by core's config schema and of the packages it names (every problem at once, messages name the
 * YAML path and the name that was meant), and relative
 * paths resolved against the config file's directory. With no file at all,
 * {@link loadConfigFile} can fall back to the embedded default
 * ({@link EMBEDDED_CONFIG_FILE}), which `credhook init` also writes.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { cosmiconfig } from "cosmiconfig";
import { parseDocument, type YAMLError } from "yaml";
import { ConfigError } from "@credhook/core/errors";
import { configProblems, type CredhookConfig, packageProblems } from "@credhook/core";
import { type EmbeddedGatewayConfig, parseEmbeddedGatewayConfig } from "@credhook/gateway";
import { importProviderModule } from "./runtime.js";

/** File names searched (in the working directory) when no `--config` is given. */
export const CONFIG_SEARCH_PLACES = ["webhook.config.yaml", "webhook.config.yml"];

/**
 * The embedded default configuration: the embedded provider, SQLite in
 * `${CREDHOOK_DATA_DIR:-./data}`, one portal user whose password comes from
 * `CREDHOOK_PASSWORD` / `CREDHOOK_PASSWORD_FILE` (generated when both are unset).
 * Fully commented: `credhook init` copies it as a starter config, and
 * `credhook serve` runs it when no config file exists.
 */
export const EMBEDDED_CONFIG_FILE = fileURLToPath(new URL("../config/webhook.config.yaml", import.meta.url));

/** A validated configuration and where it came from. */
export interface LoadedConfig extends CredhookConfig {
  /** Absolute path of the file it was read from ({@link EMBEDDED_CONFIG_FILE} for the embedded default). */
  readonly configFile: string;
  /** True when no config file was found and the embedded default was loaded (relative paths then resolve against the working directory). */
  readonly embeddedDefault: boolean;
  /** The `embeddedGateway:` block, parsed (defaults applied, `oauth.signing.keyFile` absolute). */
  embeddedGateway?: EmbeddedGatewayConfig;
}

/** Options of {@link loadConfigFile}. */
export interface LoadConfigOptions {
  /** Variables for `${VAR}` interpolation. @default process.env */
  env?: Record<string, string | undefined>;
  /** Directory searched when `file` is omitted. @default process.cwd() */
  cwd?: string;
  /**
   * With no `file`, no `$CREDHOOK_CONFIG` and no config file in `cwd`, load the
   * embedded default ({@link EMBEDDED_CONFIG_FILE}) instead of failing.
   * @default false
   */
  embeddedDefault?: boolean;
  /**
   * Imports a provider or store package, to check that each one the config names is installed and accepts its
   * options. @default importProviderModule (the server's: its own dependencies, then the working directory's)
   */
  importModule?: (specifier: string) => Promise<unknown>;
}

/** Options of {@link interpolate}. */
export interface InterpolateOptions {
  /** Directory against which relative `${file:…}` paths resolve (the config file's). @default process.cwd() */
  baseDir?: string;
}

/** Largest secret file read by `${file:…}` / `VAR_FILE`, bytes (64 KiB): a secret, not a data file. */
export const MAX_SECRET_FILE_BYTES = 65536;

const VAR = /\$\$|\$\{file:([^}]+)\}|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-((?:[^}\\]|\\.)*))?\}/g;

const FILE_ERRORS: Record<string, string> = {
  ENOENT: "no such file",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "it is a directory",
  ENOTDIR: "a parent is not a directory",
};

/**
 * Reads a secret file (Kubernetes / Docker secret) as UTF-8, without its
 * trailing line break(s). Never puts the content in an error.
 * @returns the content, or an error text (`no such file`, `permission denied` …)
 */
function readSecretFile(file: string): { value: string } | { error: string } {
  try {
    if (statSync(file).size > MAX_SECRET_FILE_BYTES)
      return { error: `it is larger than ${MAX_SECRET_FILE_BYTES} bytes, too large for a secret` };
    return { value: readFileSync(file, "utf8").replace(/(\r?\n)+$/, "") };
  } catch (err) {
    const code = (err as { code?: string }).code ?? "";
    return { error: FILE_ERRORS[code] ?? `it cannot be read (${code || (err as Error).message})` };
  }
}

/**
 * Replaces, in every string of `value`:
 * - `${VAR}` and `${VAR:-default}` (default also when VAR is empty) from `env`;
 *   when VAR is unset or empty and `VAR_FILE` names a file, that file's content
 *   (the Docker / Kubernetes `*_FILE` convention);
 * - `${file:PATH}` by the content of the file at PATH (relative to
 *   `options.baseDir`), e.g. `${file:/run/secrets/credhook-password}`;
 * - `$$` by a literal `$`.
 * A file's trailing line breaks are dropped; files are at most
 * {@link MAX_SECRET_FILE_BYTES}. File contents never appear in a message.
 * @throws never; each problem (an unset variable without default, an unreadable
 *   file, VAR and VAR_FILE both set) is pushed to `problems` with its YAML path
 */
export function interpolate(
  value: unknown,
  env: Record<string, string | undefined>,
  path = "",
  problems: string[] = [],
  options: InterpolateOptions = {},
): unknown {
  if (typeof value === "string") {
    const at = path || "(root)";
    const fromFile = (file: string, what: string): string => {
      const target = resolve(options.baseDir ?? process.cwd(), file);
      const got = readSecretFile(target);
      if ("value" in got) return got.value;
      problems.push(`${at}: cannot read ${what} (${target}): ${got.error}`);
      return "";
    };
    return value.replace(
      VAR,
      (match, file: string | undefined, name: string | undefined, fallback: string | undefined) => {
        if (match === "$$") return "$";
        if (file !== undefined) return fromFile(file.trim(), `\${file:${file.trim()}}`);
        const v = env[name!];
        const viaFile = env[`${name}_FILE`];
        if (viaFile) {
          if (v !== undefined && v !== "") {
            problems.push(`${at}: both ${name} and ${name}_FILE are set; set only one`);
            return "";
          }
          return fromFile(viaFile, `${name}_FILE`);
        }
        if (v !== undefined && v !== "") return v;
        if (fallback !== undefined) return fallback.replace(/\\(.)/g, "$1");
        if (v === "") return "";
        problems.push(
          `${at}: environment variable ${name} is not set (write \${${name}:-} to allow it to be empty, or \${${name}:-value} for a default)`,
        );
        return "";
      },
    );
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, `${path}[${i}]`, problems, options));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, interpolate(v, env, path ? `${path}.${k}` : k, problems, options)]),
    );
  }
  return value;
}

/**
 * One message per YAML syntax error of a file: where (`file:line:column`), what (the `yaml` library's text) and the
 * library's code frame — the line and a `^` under the column — each frame line indented by 4 spaces, so that it
 * stands under the message in `credhook: invalid configuration:`'s list.
 */
function yamlSyntaxProblems(filepath: string, errors: readonly YAMLError[]): string[] {
  return errors.map((err) => {
    // With prettyErrors the message is "<what> at line L, column C:\n\n<frame>\n" (linePos holds L and C).
    const [head = "", ...rest] = err.message.split("\n");
    const pos = err.linePos?.[0];
    const what = head.replace(/ at line \d+, column \d+:$/, "");
    const frame = rest.join("\n").replace(/^\n+|\n+$/g, "");
    return [
      `${filepath}${pos ? `:${pos.line}:${pos.col}` : ""}: not valid YAML: ${what}`,
      ...(frame ? frame.split("\n").map((line) => `    ${line}`.trimEnd()) : []),
    ].join("\n");
  });
}

/** A config file {@link findConfigFile} names, and how it was named. */
export interface FoundConfigFile {
  /** Absolute path of the file (named by `file` or `$CREDHOOK_CONFIG`, it may not exist: loading it says so). */
  readonly path: string;
  /** How: the `file` argument (`--config`), `$CREDHOOK_CONFIG`, or the first of {@link CONFIG_SEARCH_PLACES} in the working directory. */
  readonly source: "argument" | "CREDHOOK_CONFIG" | "working directory";
}

/**
 * The lookup of the config file, one for every command that reads one (`credhook serve`,
 * `check-config` …, {@link loadConfigFile}) and for `pnpm lambda:bundle` (scripts/lambda-bundle.mjs):
 * `file` (`--config FILE`), else `$CREDHOOK_CONFIG`, else the first of {@link CONFIG_SEARCH_PLACES}
 * that exists in `cwd`. Relative paths resolve against `cwd`. Reads no file.
 * @returns the file and how it was named; undefined when none is named and none is in `cwd` (where
 *   the caller allows it, the embedded default {@link EMBEDDED_CONFIG_FILE} is read instead)
 */
export function findConfigFile(
  file?: string,
  options: Pick<LoadConfigOptions, "env" | "cwd"> = {},
): FoundConfigFile | undefined {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  if (file) return { path: resolve(cwd, file), source: "argument" };
  if (env.CREDHOOK_CONFIG) return { path: resolve(cwd, env.CREDHOOK_CONFIG), source: "CREDHOOK_CONFIG" };
  const found = CONFIG_SEARCH_PLACES.map((name) => join(cwd, name)).find((path) => existsSync(path));
  return found === undefined ? undefined : { path: found, source: "working directory" };
}

const yamlLoader = (filepath: string, content: string) => {
  // Every syntax error of the file at once (the parser goes on after one), each with its code frame.
  const doc = parseDocument(content, { prettyErrors: true });
  if (doc.errors.length > 0) throw new ConfigError(yamlSyntaxProblems(filepath, doc.errors), { cause: doc.errors[0] });
  return doc.toJS() as unknown;
};

/** The YAML path a problem's message starts with (`gateways.aws.options.region` of `[provider-aws] gateways.aws.options.region must …`). */
function problemPath(message: string): string {
  return /^(?:\[[^\]]*\] )?([^\s:]+)/.exec(message)?.[1] ?? "";
}

/** Whether the YAML path `path` is `at` or under it (`at.x`, `at[0]`). */
function isUnder(path: string, at: string): boolean {
  return path === at || path.startsWith(`${at}.`) || path.startsWith(`${at}[`);
}

/**
 * Reads, interpolates and validates the configuration, and reports every problem at once: a YAML syntax error
 * stops there (every syntax error of the file, each with its code frame, {@link yamlSyntaxProblems}); otherwise
 * `${VAR}`s that cannot be interpolated, the schema's problems (an unknown key with the closest known one:
 * `server must not have property 'prot' (did you mean 'port'?)`), the references (routes naming unknown gateways,
 * expiry policies), each gateway's provider package (one that is not installed, with the built-in providers and
 * the closest one) and its options, the store's package and options, and the embedded gateway's block — one
 * {@link ConfigError}, each message starting with its YAML path. `credhook serve` and `credhook check-config` load
 * through it alike.
 * @param file path of the YAML file; omitted: `$CREDHOOK_CONFIG`, else `webhook.config.yaml` in
 *   `cwd` ({@link findConfigFile}), else (with `options.embeddedDefault`) the embedded default;
 *   a file found empty is an error, not a reason to take the embedded default
 * @throws ConfigError when the file is missing or invalid (each message names the YAML path)
 */
export async function loadConfigFile(file?: string, options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  // Only loads: the lookup is findConfigFile's.
  const explorer = cosmiconfig("webhook", {
    loaders: { ".yaml": yamlLoader, ".yml": yamlLoader },
    cache: false,
  });
  const found = findConfigFile(file, { env, cwd });
  let result;
  let embedded = false;
  try {
    if (found) result = await explorer.load(found.path);
    else if (options.embeddedDefault) {
      result = await explorer.load(EMBEDDED_CONFIG_FILE);
      embedded = true;
    }
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as { code?: string }).code;
    if (code === "ENOENT") throw new ConfigError([`config file ${found?.path} does not exist`], { cause: err });
    throw new ConfigError([`cannot read config: ${(err as Error).message}`], { cause: err });
  }
  if (!result || result.isEmpty) {
    throw new ConfigError([
      found
        ? `config file ${found.path} is empty`
        : `no ${CONFIG_SEARCH_PLACES.join(" or ")} in ${cwd} (pass --config FILE or set CREDHOOK_CONFIG)`,
    ]);
  }
  // The embedded default lives inside the installed package: its relative paths mean the working directory.
  const base = embedded ? cwd : dirname(result.filepath);
  // Every problem at once: interpolation, the schema and the references, the packages and their options, the
  // embedded gateway's block — less what only repeats a value that could not be interpolated (it is empty).
  const interpolation: string[] = [];
  const interpolated = interpolate(result.config, env, "", interpolation, { baseDir: base });
  const { config, problems } = configProblems(interpolated);
  problems.push(...(await packageProblems(config, options.importModule ?? importProviderModule)));
  // Parsed once here, into its type (`startEmbeddedGateway` parses it again: idempotent).
  let embeddedGateway: EmbeddedGatewayConfig | undefined;
  const block = config.embeddedGateway;
  if (typeof block === "object" && block !== null && !Array.isArray(block)) {
    try {
      embeddedGateway = parseEmbeddedGatewayConfig(block);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.messages);
    }
  }
  const unresolved = interpolation.map(problemPath);
  const all = [...interpolation, ...problems.filter((m) => !unresolved.some((at) => isUnder(problemPath(m), at)))];
  if (all.length > 0) throw new ConfigError(all);
  const abs = (p: string) => (p === ":memory:" || isAbsolute(p) ? p : resolve(base, p));
  if (typeof config.store.sqlite === "string") config.store = { sqlite: abs(config.store.sqlite) };
  config.dataDir = abs(config.dataDir);
  const keyFile = embeddedGateway?.oauth.signing.keyFile;
  if (embeddedGateway && keyFile) embeddedGateway.oauth.signing.keyFile = abs(keyFile);
  return Object.assign(config, {
    configFile: result.filepath,
    embeddedDefault: embedded,
    ...(embeddedGateway ? { embeddedGateway } : {}),
  });
}

/** The JSON Schema of webhook.config.yaml shipped with this package (written by `pnpm schema`). */
export const CONFIG_SCHEMA_FILE = join(dirname(EMBEDDED_CONFIG_FILE), "webhook.config.schema.json");

/**
 * The embedded default config's text (comments included), for `credhook init`.
 * @param writtenTo - absolute path the text will be written to: its
 *   `# yaml-language-server: $schema=…` line then names {@link CONFIG_SCHEMA_FILE} relative to
 *   that file's folder (POSIX separators), so that editors find the installed schema.
 *   Omitted: the line as shipped (relative to the shipped file).
 */
export function embeddedConfigText(writtenTo?: string): string {
  const text = readFileSync(EMBEDDED_CONFIG_FILE, "utf8");
  if (!writtenTo) return text;
  const schema = relative(dirname(writtenTo), CONFIG_SCHEMA_FILE).split(sep).join("/");
  return text.replace(
    /^# yaml-language-server: \$schema=\S+$/m,
    () => `# yaml-language-server: $schema=${schema.startsWith(".") ? schema : `./${schema}`}`,
  );
}

/** Masks secrets of a config for display (`check-config`): passwords, hashes, and any option whose name suggests a secret. */
export function maskSecrets(value: unknown, key = ""): unknown {
  if (typeof value === "string") {
    if (/pass(word)?|secret|token|key$|credential|connection|postgres/i.test(key) && value !== "") return "****";
    return value.replace(/(\/\/[^/:@\s]*:)[^@/\s]+@/g, "$1****@"); // a password inside a URL (postgres://user:pw@host)
  }
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, key));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, k)]));
  }
  return value;
}
