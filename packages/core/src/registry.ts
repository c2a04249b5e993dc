/**
 * The provider and store registries: turn each `gateways:` entry of the config
 * into a live {@link Provider}, and `store:` into a {@link CredentialStore}.
 * `provider: aws` loads `@credhook/provider-aws` (likewise `azure`, `gcp`,
 * `kong`, `apigee`, `local`); `store: { postgres: … }` loads `@credhook/store-postgres` (likewise
 * `sqlite`); any other value is imported as a package name, so a third party
 * ships `credhook-provider-tyk` or `credhook-store-dynamodb` without touching
 * credhook.
 *
 * A package that fails to load, or whose options fail its schema, stops
 * start-up with a {@link ConfigError} naming the YAML path — never skipped.
 */
import type { CredentialType } from "./contract.js";
import { type CredhookConfig, formatConfigErrors, isObject } from "./config.js";
import { ConfigError, isCredhookError } from "./errors.js";
import type { Logger } from "./logger.js";
import type { Provider, ProviderFactory, ProviderStateStore, RateSlots } from "./provider.js";
import type { CredentialStore, StoreFactory } from "./store.js";
import { redactSecrets } from "./provider-kit/redact.js";
import { resolveOptions } from "./provider-kit/define-provider.js";
import { redactingLogger, secretOptionValues } from "./provider-kit/secret-options.js";
import { closestName } from "./suggest.js";

/** Short provider names and the packages they load. */
export const BUILTIN_PROVIDERS: Readonly<Record<string, string>> = {
  local: "@credhook/provider-local",
  aws: "@credhook/provider-aws",
  azure: "@credhook/provider-azure",
  gcp: "@credhook/provider-gcp",
  kong: "@credhook/provider-kong",
  apigee: "@credhook/provider-apigee",
};

/** A configured gateway: its name, type, credential type and provider. */
export interface Gateway {
  /** Key under `gateways:`. */
  name: string;
  /** The `provider:` value (`aws`, or a package name). */
  providerType: string;
  credentialType: CredentialType;
  provider: Provider;
  /** The provider's options schema (where its secret options are marked, see `maskSecretOptions`); absent for a gateway built by hand. */
  optionsSchema?: Record<string, unknown>;
  /** `gateways.<name>.retired`: no new credential on it; what it holds is still updated and revoked. @default false */
  retired?: boolean;
}

/** Short store names and the packages they load. */
export const BUILTIN_STORES: Readonly<Record<string, string>> = {
  sqlite: "@credhook/store-sqlite",
  postgres: "@credhook/store-postgres",
};

/** What {@link loadGateways} needs from its caller. */
export interface LoadGatewaysOptions {
  /**
   * Imports a module by specifier. The server passes `(s) => import(s)` from its
   * own package so resolution starts there; a resolver from the working
   * directory is tried next.
   */
  importModule: (specifier: string) => Promise<unknown>;
  logger: Logger;
  /** Provider state store of a gateway (from the credential store). */
  stateFor: (gateway: string) => ProviderStateStore;
  /** The store's shared call slots, when several instances share it. */
  rateSlots?: RateSlots;
}

/** Package name a `provider:` value loads. */
export function providerPackage(provider: string): string {
  return BUILTIN_PROVIDERS[provider] ?? provider;
}

/** A factory package's default export has `type`, `optionsSchema` and `create`. */
function isFactory(value: unknown): value is ProviderFactory & StoreFactory {
  const f = value as ProviderFactory | undefined;
  return (
    !!f &&
    typeof f.type === "string" &&
    typeof f.create === "function" &&
    typeof f.optionsSchema === "object" &&
    f.optionsSchema !== null
  );
}

/** The built-in names of each kind of package, and the packages they load. */
const BUILTINS = {
  provider: BUILTIN_PROVIDERS,
  store: BUILTIN_STORES,
} as const;

/**
 * The message for a package a `provider:` value (or `store:` key) names that is not installed, at `at`. A name that
 * is not built in gets the built-in names, and either the closest one when it looks like a typo of it
 * (`provider: AWS` — did you mean 'aws'?) or how to install a package of that name.
 */
function notInstalled(kind: "provider" | "store", name: string, at: string): string {
  const builtins = BUILTINS[kind];
  const pkg = builtins[name] ?? name;
  const install =
    `install it next to credhook, e.g. pnpm add ${pkg}; ` +
    `a package of credhook's workspace that is not built runs from its TypeScript sources, in its folder: ` +
    `CREDHOOK_FROM_SOURCE=1 node --conditions=dev-source <checkout>/packages/server/bin/credhook.mjs serve`;
  if (name in builtins) return `${at}: ${kind} package '${pkg}' is not installed (${install})`;
  const known = Object.keys(builtins);
  // a package name of credhook's own scope is compared with the built-in packages, any other name with the short names
  const meant = closestName(name, name.startsWith("@credhook/") ? Object.values(builtins) : known);
  const list = `built-in ${kind}s: ${known.join(", ")}; any other value is a package name`;
  return meant
    ? `${at}: ${kind} package '${pkg}' is not installed — did you mean '${meant}'? (${list})`
    : `${at}: ${kind} package '${pkg}' is not installed (${list}: ${install})`;
}

/**
 * Imports the factory a package default-exports.
 * @param kind `provider` or `store`, for messages
 * @param name the `provider:` value, or the store's key: a built-in name or a package name
 * @throws ConfigError naming `at` when it cannot be loaded (not installed: with the built-in names and the closest
 *   one, see {@link notInstalled}) or is not a factory
 */
async function loadFactory(
  kind: "provider" | "store",
  name: string,
  at: string,
  importModule: LoadGatewaysOptions["importModule"],
): Promise<ProviderFactory & StoreFactory> {
  const pkg = BUILTINS[kind][name] ?? name;
  let mod: unknown;
  try {
    mod = await importModule(pkg);
  } catch (err) {
    const code = (err as { code?: string }).code;
    const missing = code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
    throw new ConfigError(
      [
        missing
          ? notInstalled(kind, name, at)
          : `${at}: ${kind} package '${pkg}' failed to load: ${(err as Error).message}`,
      ],
      { cause: err },
    );
  }
  const factory = (mod as { default?: unknown }).default ?? mod;
  if (!isFactory(factory)) {
    throw new ConfigError([
      `${at}: package '${pkg}' does not default-export a credhook ${kind} factory ({ type, optionsSchema, create })`,
    ]);
  }
  return factory;
}

/**
 * A package's options validated by its factory's schema, defaults applied to a copy ({@link resolveOptions}; the value
 * as written is not changed; a store's options may be a string, as `sqlite: ./data/credhook.db`).
 * @param raw the options as written
 * @param at their YAML path (`gateways.aws-us.options`, `store.postgres`)
 * @returns `options`, or `problems`: one message per problem, `[provider-aws] <path> …` (an unknown option with the
 *   closest the schema knows)
 */
function checkedOptions(
  kind: "provider" | "store",
  factory: ProviderFactory | StoreFactory,
  raw: unknown,
  at: string,
): { options: unknown } | { problems: string[] } {
  // The one place defaults are applied (check-config and serve both load here): create gets the options as they are.
  const { options, errors } = resolveOptions(factory.optionsSchema, raw, { coerceTypes: true });
  if (errors.length === 0) return { options };
  return {
    problems: formatConfigErrors(errors, at, { schema: factory.optionsSchema, data: options }).map(
      (m) => `[${kind}-${factory.type}] ${m}`,
    ),
  };
}

/** Imports a provider package's factory. @throws ConfigError naming `at` when it cannot be loaded or is not a factory */
export async function loadProviderFactory(
  provider: string,
  at: string,
  importModule: LoadGatewaysOptions["importModule"],
): Promise<ProviderFactory> {
  return loadFactory("provider", provider, at, importModule);
}

/**
 * What loading the packages `config` names would find wrong, without creating anything: each gateway's provider
 * package (one that is not installed with the built-in names and the closest one) and its `options` against the
 * package's schema (an unknown option with the closest one), and likewise the store's package and options. A part
 * the config's schema already refused (a gateway without a `provider:` string, `options` that are not an object,
 * a `store:` without exactly one key) is skipped: {@link configProblems} reports it.
 * @param config an interpolated config, defaults applied, possibly with problems of its own ({@link configProblems})
 * @param importModule how packages are imported (see {@link LoadGatewaysOptions.importModule})
 * @returns one message per problem, each naming its YAML path; empty when every package loads and accepts its options
 */
export async function packageProblems(
  config: CredhookConfig,
  importModule: LoadGatewaysOptions["importModule"],
): Promise<string[]> {
  const check = async (kind: "provider" | "store", name: string, raw: unknown, at: string, optionsAt: string) => {
    try {
      const checked = checkedOptions(kind, await loadFactory(kind, name, at, importModule), raw, optionsAt);
      return "problems" in checked ? checked.problems : [];
    } catch (err) {
      return isCredhookError(err) ? err.messages : [`${at}: ${(err as Error).message}`];
    }
  };
  const checks: Promise<string[]>[] = [];
  for (const [name, gw] of Object.entries(isObject(config.gateways) ? config.gateways : {})) {
    const options = isObject(gw) ? (gw.options ?? {}) : undefined;
    if (typeof gw?.provider === "string" && gw.provider !== "" && isObject(options))
      checks.push(check("provider", gw.provider, options, `gateways.${name}.provider`, `gateways.${name}.options`));
  }
  const store = isObject(config.store) ? Object.entries(config.store) : [];
  if (store.length === 1) {
    const [name, raw] = store[0]!;
    checks.push(check("store", name, raw, `store.${name}`, `store.${name}`));
  }
  return (await Promise.all(checks)).flat();
}

/** What {@link loadStore} needs from its caller. */
export interface LoadStoreOptions {
  /** Imports a module by specifier (see {@link LoadGatewaysOptions.importModule}). */
  importModule: (specifier: string) => Promise<unknown>;
  logger: Logger;
  /** Directory relative store paths are resolved against (the config file's). */
  baseDir: string;
  /** A serving process: a database that is away at start may be waited for ({@link StoreContext.waitAtStart}). @default false */
  waitAtStart?: boolean;
}

/**
 * Opens the store `config.store` names: its one key is the store's name
 * (`sqlite`, `postgres`, or a package name), its value the store's options,
 * validated by the package's own schema.
 * @throws ConfigError naming `store.<name>` when the package cannot be loaded or its options are invalid
 */
export async function loadStore(config: CredhookConfig, options: LoadStoreOptions): Promise<CredentialStore> {
  const [name, raw] = Object.entries(config.store)[0]!;
  const at = `store.${name}`;
  const factory = await loadFactory("store", name, at, options.importModule);
  const checked = checkedOptions("store", factory, raw, at);
  if ("problems" in checked) throw new ConfigError(checked.problems);
  return factory.create(checked.options, {
    configPath: at,
    baseDir: options.baseDir,
    logger: redactingLogger(
      options.logger.child({ store: factory.type }),
      secretOptionValues(factory.optionsSchema, checked.options),
    ),
    ...(options.waitAtStart ? { waitAtStart: true } : {}),
  });
}

/**
 * Loads, validates and creates every gateway of `config`.
 * @throws ConfigError listing every gateway that failed, each with its YAML path
 */
export async function loadGateways(
  config: CredhookConfig,
  options: LoadGatewaysOptions,
): Promise<Map<string, Gateway>> {
  const gateways = new Map<string, Gateway>();
  const problems: string[] = [];
  for (const [name, gw] of Object.entries(config.gateways)) {
    const at = `gateways.${name}`;
    // the values of the options the schema marks secret (writeOnly): redacted from the provider's logs and errors
    let secrets: string[] = [];
    try {
      const factory = await loadProviderFactory(gw.provider, `${at}.provider`, options.importModule);
      const checked = checkedOptions("provider", factory, gw.options ?? {}, `${at}.options`);
      if ("problems" in checked) {
        problems.push(...checked.problems);
        continue;
      }
      const opts = checked.options as Record<string, unknown>;
      secrets = secretOptionValues(factory.optionsSchema, opts);
      const logger = redactingLogger(options.logger.child({ gateway: name }), secrets);
      const provider = await factory.create(opts, {
        gateway: name,
        configPath: `${at}.options`,
        credentialType: gw.credentialType,
        logger,
        state: options.stateFor(name),
        ...(options.rateSlots ? { rateSlots: options.rateSlots } : {}),
      });
      if (!provider.capabilities.credentialTypes.includes(gw.credentialType)) {
        problems.push(
          `${at}.credentialType: provider '${gw.provider}' does not issue ${gw.credentialType} (it issues ${provider.capabilities.credentialTypes.join(", ")})`,
        );
        await provider.close?.();
        continue;
      }
      gateways.set(name, {
        name,
        providerType: gw.provider,
        credentialType: gw.credentialType,
        provider,
        optionsSchema: factory.optionsSchema,
        ...(gw.retired ? { retired: true } : {}),
      });
    } catch (err) {
      const messages = isCredhookError(err)
        ? err.messages.map((m) => (m.startsWith("gateways.") || m.startsWith("[") ? m : `${at}: ${m}`))
        : [`${at}: ${(err as Error).message}`];
      problems.push(...messages.map((m) => redactSecrets(m, secrets)));
    }
  }
  if (problems.length > 0) {
    await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
    throw new ConfigError(problems);
  }
  return gateways;
}
