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
import type { CredhookConfig } from "./config.js";
import { formatConfigErrors } from "./config.js";
import { ConfigError, isCredhookError } from "./errors.js";
import type { Logger } from "./logger.js";
import type { Provider, ProviderExtension, ProviderFactory, ProviderStateStore } from "./provider.js";
import type { CredentialStore, RateSlots, StoreFactory } from "./store.js";
import { redactSecrets } from "./provider-kit/redact.js";
import { resolveOptions } from "./provider-kit/define-provider.js";
import { redactingLogger, secretOptionValues } from "./provider-kit/secret-options.js";

/** Short provider names and the packages they load. */
export const BUILTIN_PROVIDERS: Readonly<Record<string, string>> = {
  local: "@credhook/provider-local",
  aws: "@credhook/provider-aws",
  azure: "@credhook/provider-azure",
  gcp: "@credhook/provider-gcp",
  kong: "@credhook/provider-kong",
  apigee: "@credhook/provider-apigee",
};

/**
 * Top-level config blocks that turn on a provider package's {@link ProviderExtension}, and the
 * `provider:` name of the package that owns each: `embeddedGateway:` is provider-local's
 * embedded gateway. The config schema knows each key; the package is loaded for its block even
 * when no gateway uses it (its `problems` then say so).
 */
export const BUILTIN_EXTENSIONS: Readonly<Record<string, string>> = {
  embeddedGateway: "local",
};

/** An extension the config turns on, with its parsed block and the gateways of its package. */
export interface ConfiguredExtension {
  /** The config block's key (`embeddedGateway`). */
  configKey: string;
  /** The `provider:` name of the package that contributes it (`local`). */
  providerType: string;
  extension: ProviderExtension;
  /** The block, parsed by {@link ProviderExtension.parseConfig} (defaults applied): pass it on as it is. */
  config: unknown;
  /** The configured gateways whose provider this package made (possibly none). */
  gateways: Gateway[];
}

/**
 * The extensions `config` turns on (each key of {@link BUILTIN_EXTENSIONS} present in it), their
 * blocks parsed, and the problems each reports against the gateways and the store.
 * @param gateways the loaded gateways, by name
 * @param sharedStore whether the store is shared by instances; false before it is opened
 * @returns the extensions and one message per problem (each naming its YAML path)
 * @throws ConfigError when a block is invalid, or its package cannot be loaded or contributes no extension for it
 */
export async function loadExtensions(
  config: CredhookConfig,
  gateways: ReadonlyMap<string, Gateway>,
  options: { importModule: LoadGatewaysOptions["importModule"]; sharedStore?: boolean },
): Promise<{ extensions: ConfiguredExtension[]; problems: string[] }> {
  const extensions: ConfiguredExtension[] = [];
  const problems: string[] = [];
  const blocks = config as unknown as Record<string, unknown>;
  for (const [configKey, providerType] of Object.entries(BUILTIN_EXTENSIONS)) {
    const raw = blocks[configKey];
    if (raw === undefined) continue;
    const factory = await loadProviderFactory(providerType, configKey, options.importModule);
    const extension = factory.extension;
    if (!extension || extension.configKey !== configKey)
      throw new ConfigError([
        `${configKey}: provider package '${providerPackage(providerType)}' contributes no ${configKey}`,
      ]);
    const parsed = extension.parseConfig(raw, configKey);
    const own = [...gateways.values()].filter((g) => providerPackage(g.providerType) === providerPackage(providerType));
    problems.push(
      ...(extension.problems?.(parsed, {
        providers: own.map((g) => ({ gateway: g.name, provider: g.provider })),
        store: config.store,
        sharedStore: options.sharedStore ?? false,
      }) ?? []),
    );
    extensions.push({ configKey, providerType, extension, config: parsed, gateways: own });
  }
  return { extensions, problems };
}

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

/**
 * Imports the factory a package default-exports.
 * @param kind `provider` or `store`, for messages
 * @param pkg the package to import
 * @throws ConfigError naming `at` when it cannot be loaded or is not a factory
 */
async function loadFactory(
  kind: "provider" | "store",
  pkg: string,
  at: string,
  importModule: LoadGatewaysOptions["importModule"],
): Promise<ProviderFactory & StoreFactory> {
  let mod: unknown;
  try {
    mod = await importModule(pkg);
  } catch (err) {
    const code = (err as { code?: string }).code;
    const missing = code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND";
    throw new ConfigError(
      [
        missing
          ? `${at}: ${kind} package '${pkg}' is not installed (install it next to credhook, e.g. pnpm add ${pkg}; ` +
            `a package of credhook's workspace that is not built runs from its TypeScript sources, in its folder: ` +
            `CREDHOOK_FROM_SOURCE=1 node --conditions=dev-source <checkout>/packages/server/bin/credhook.mjs serve)`
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

/** Imports a provider package's factory. @throws ConfigError naming `at` when it cannot be loaded or is not a factory */
export async function loadProviderFactory(
  provider: string,
  at: string,
  importModule: LoadGatewaysOptions["importModule"],
): Promise<ProviderFactory> {
  return loadFactory("provider", providerPackage(provider), at, importModule);
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
  const factory = await loadFactory("store", BUILTIN_STORES[name] ?? name, at, options.importModule);
  const { options: value, errors } = resolveOptions(factory.optionsSchema, raw, { coerceTypes: true });
  if (errors.length > 0)
    throw new ConfigError(formatConfigErrors(errors, at).map((m) => `[store-${factory.type}] ${m}`));
  return factory.create(value, {
    configPath: at,
    baseDir: options.baseDir,
    logger: redactingLogger(
      options.logger.child({ store: factory.type }),
      secretOptionValues(factory.optionsSchema, value),
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
      // the one place defaults are applied (check-config and serve both load gateways here); create gets them as they are
      const { options: opts, errors } = resolveOptions<Record<string, unknown>>(
        factory.optionsSchema,
        gw.options ?? {},
        {
          coerceTypes: true,
        },
      );
      if (errors.length > 0) {
        problems.push(...formatConfigErrors(errors, `${at}.options`).map((m) => `[provider-${factory.type}] ${m}`));
        continue;
      }
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
