/**
 * Loading of `webhook.config.yaml`: discovery and parsing with cosmiconfig (YAML
 * via the `yaml` package), `${VAR}` / `${VAR:-default}` interpolation from the
 * environment, secrets read from files (`${file:/run/secrets/x}`, `VAR_FILE`),
 * validation by core's config schema (messages name the YAML path), and relative
 * paths resolved against the config file's directory. With no file at all,
 * {@link loadConfigFile} can fall back to the embedded default
 * ({@link EMBEDDED_CONFIG_FILE}), which `credhook init` also writes.
 */
import { readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { cosmiconfig } from "cosmiconfig";
import { parse as parseYaml } from "yaml";
import { ConfigError } from "@credhook/core/errors";
import { validateConfig, type CredhookConfig } from "@credhook/core";
import { type EmbeddedGatewayConfig, parseEmbeddedGatewayConfig } from "@credhook/gateway";

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

const yamlLoader = (filepath: string, content: string) => {
  try {
    return parseYaml(content, { prettyErrors: true }) as unknown;
  } catch (err) {
    throw new ConfigError([`${filepath}: not valid YAML: ${(err as Error).message.split("\n")[0]}`], { cause: err });
  }
};

/**
 * Reads, interpolates and validates the configuration.
 * @param file path of the YAML file; omitted: `$CREDHOOK_CONFIG`, else `webhook.config.yaml` in
 *   `cwd`, else (with `options.embeddedDefault`) the embedded default
 * @throws ConfigError when the file is missing or invalid (each message names the YAML path)
 */
export async function loadConfigFile(file?: string, options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const explorer = cosmiconfig("webhook", {
    searchPlaces: CONFIG_SEARCH_PLACES,
    searchStrategy: "none",
    loaders: { ".yaml": yamlLoader, ".yml": yamlLoader },
    cache: false,
  });
  const target = file ?? env.CREDHOOK_CONFIG;
  let result;
  let embedded = false;
  try {
    result = target ? await explorer.load(resolve(cwd, target)) : await explorer.search(cwd);
    if (!result && !target && options.embeddedDefault) {
      result = await explorer.load(EMBEDDED_CONFIG_FILE);
      embedded = true;
    }
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as { code?: string }).code;
    if (code === "ENOENT")
      throw new ConfigError([`config file ${resolve(cwd, target ?? "")} does not exist`], { cause: err });
    throw new ConfigError([`cannot read config: ${(err as Error).message}`], { cause: err });
  }
  if (!result || result.isEmpty) {
    throw new ConfigError([
      target
        ? `config file ${target} is empty`
        : `no ${CONFIG_SEARCH_PLACES.join(" or ")} in ${cwd} (pass --config FILE or set CREDHOOK_CONFIG)`,
    ]);
  }
  // The embedded default lives inside the installed package: its relative paths mean the working directory.
  const base = embedded ? cwd : dirname(result.filepath);
  const problems: string[] = [];
  const interpolated = interpolate(result.config, env, "", problems, { baseDir: base });
  if (problems.length > 0) throw new ConfigError(problems);
  const config = validateConfig(interpolated);
  const abs = (p: string) => (p === ":memory:" || isAbsolute(p) ? p : resolve(base, p));
  if (typeof config.store.sqlite === "string") config.store = { sqlite: abs(config.store.sqlite) };
  config.dataDir = abs(config.dataDir);
  // Parsed once here, into its type (`startEmbeddedGateway` parses it again: idempotent).
  let embeddedGateway: EmbeddedGatewayConfig | undefined;
  if (config.embeddedGateway) {
    embeddedGateway = parseEmbeddedGatewayConfig(config.embeddedGateway);
    const keyFile = embeddedGateway.oauth.signing.keyFile;
    if (keyFile) embeddedGateway.oauth.signing.keyFile = abs(keyFile);
  }
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
