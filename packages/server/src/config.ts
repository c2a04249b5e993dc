/**
 * Loading of `webhook.config.yaml`: discovery and parsing with cosmiconfig (YAML
 * via the `yaml` package), `${VAR}` / `${VAR:-default}` interpolation from the
 * environment, validation by core's config schema (messages name the YAML path),
 * and relative paths resolved against the config file's directory.
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { cosmiconfig } from "cosmiconfig";
import { parse as parseYaml } from "yaml";
import { ConfigError, validateConfig, type CredhookConfig } from "@credhook/core";

/** File names searched (in the working directory) when no `--config` is given. */
export const CONFIG_SEARCH_PLACES = ["webhook.config.yaml", "webhook.config.yml"];

/** A validated configuration and where it came from. */
export interface LoadedConfig extends CredhookConfig {
  /** Absolute path of the file it was read from. */
  readonly configFile: string;
}

/** Options of {@link loadConfigFile}. */
export interface LoadConfigOptions {
  /** Variables for `${VAR}` interpolation. @default process.env */
  env?: Record<string, string | undefined>;
  /** Directory searched when `file` is omitted. @default process.cwd() */
  cwd?: string;
}

const VAR = /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-((?:[^}\\]|\\.)*))?\}/g;

/**
 * Replaces `${VAR}` and `${VAR:-default}` (default also when VAR is empty) in
 * every string of `value`; `$$` stands for a literal `$`.
 * @throws ConfigError listing each unset variable without default, with its YAML path
 */
export function interpolate(value: unknown, env: Record<string, string | undefined>, path = "", problems: string[] = []): unknown {
  if (typeof value === "string") {
    return value.replace(VAR, (match, name: string | undefined, fallback: string | undefined) => {
      if (match === "$$") return "$";
      const v = env[name!];
      if (v !== undefined && v !== "") return v;
      if (fallback !== undefined) return fallback.replace(/\\(.)/g, "$1");
      if (v === "") return "";
      problems.push(`${path || "(root)"}: environment variable ${name} is not set (write \${${name}:-} to allow it to be empty, or \${${name}:-value} for a default)`);
      return "";
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => interpolate(v, env, `${path}[${i}]`, problems));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env, path ? `${path}.${k}` : k, problems)]));
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
 * @param file path of the YAML file; omitted: `webhook.config.yaml` in `cwd`, or `$CREDHOOK_CONFIG`
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
  try {
    result = target ? await explorer.load(resolve(cwd, target)) : await explorer.search(cwd);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as { code?: string }).code;
    if (code === "ENOENT") throw new ConfigError([`config file ${resolve(cwd, target ?? "")} does not exist`], { cause: err });
    throw new ConfigError([`cannot read config: ${(err as Error).message}`], { cause: err });
  }
  if (!result || result.isEmpty) {
    throw new ConfigError([
      target ? `config file ${target} is empty` : `no ${CONFIG_SEARCH_PLACES.join(" or ")} in ${cwd} (pass --config FILE or set CREDHOOK_CONFIG)`,
    ]);
  }
  const problems: string[] = [];
  const interpolated = interpolate(result.config, env, "", problems);
  if (problems.length > 0) throw new ConfigError(problems);
  const config = validateConfig(interpolated);
  const base = dirname(result.filepath);
  const abs = (p: string) => (p === ":memory:" || isAbsolute(p) ? p : resolve(base, p));
  if ("sqlite" in config.store) config.store = { sqlite: abs(config.store.sqlite) };
  config.dataDir = abs(config.dataDir);
  return Object.assign(config, { configFile: result.filepath });
}

/** Masks secrets of a config for display (`check-config`): passwords, hashes, and any option whose name suggests a secret. */
export function maskSecrets(value: unknown, key = ""): unknown {
  if (typeof value === "string") {
    return /pass(word)?|secret|token|key$|credential|connection|postgres/i.test(key) && value !== "" ? "****" : value;
  }
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, key));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, k)]));
  }
  return value;
}
