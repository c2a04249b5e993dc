// One public surface per package (issue 23): every entry point of every package's `exports`
// exposes exactly the runtime names listed here, so a change to a package's surface is a change
// to this list, made on purpose and visible in review. Type-only exports have no runtime name and
// are not listed; core's entry points and what each holds are documented in
// packages/core/README.md ("Public surface").
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const PACKAGES = fileURLToPath(new URL("../..", import.meta.url));

/** The runtime names of each entry point (`<package name><subpath>`), sorted. */
const EXPORTED_NAMES: Record<string, string[]> = {
  "@credhook/core": [
    "API_KEY_BODY_LENGTH",
    "API_KEY_CHECKSUM_LENGTH",
    "API_KEY_PREFIX_PATTERN",
    "ACTION_DONE",
    "actOnCredentials",
    "BUILTIN_PROVIDERS",
    "BUILTIN_STORES",
    "CREDENTIAL_EVENT_SOURCE",
    "CREDENTIAL_EVENT_TYPES",
    "CREDENTIAL_STATES",
    "DEFAULT_API_KEY_PREFIX",
    "DRIFT_KINDS",
    "EXPIRY_ACTIONS",
    "EXPIRY_STATES",
    "MASKED_OPTION",
    "Orchestrator",
    "PRUNE_BATCH_SIZE",
    "addPrecompiledValidators",
    "apiKeyScanPattern",
    "closestName",
    "compileContractValidator",
    "compileSchema",
    "configProblems",
    "configSchema",
    "createAjv",
    "createRouter",
    "credentialDrift",
    "credentialEvent",
    "credentialExpiry",
    "describeDriftCounts",
    "drainHttpServer",
    "driftEvent",
    "driftTopology",
    "errorResponse",
    "expiryState",
    "findCredentialPage",
    "findCredentials",
    "formatAjvErrors",
    "formatConfigErrors",
    "generateApiKeyValue",
    "isCredhookKey",
    "loadGateways",
    "loadStore",
    "maskSecretOptions",
    "newestEventsOf",
    "normalizeFingerprint",
    "openApiDocument",
    "packageProblems",
    "precompiledKey",
    "resolveExpiryPolicies",
    "revokeRequestFor",
    "secretFingerprint",
    "silentLogger",
    "strandedProblems",
    "summarizeDrift",
    "validateConfig",
  ],
  "@credhook/core/errors": [
    "CircuitOpen",
    "ConfigError",
    "Conflict",
    "CredhookError",
    "ErrorCodes",
    "InvalidReference",
    "LockLost",
    "NotFound",
    "PolicyViolation",
    "ShuttingDown",
    "StoreUnavailable",
    "Throttled",
    "TooManyRequests",
    "Unauthorized",
    "Unroutable",
    "UpstreamError",
    "UpstreamTimeout",
    "UpstreamUnavailable",
    "ValidationError",
    "isCredhookError",
    "isStoreFailure",
    "retryAfterOf",
  ],
  "@credhook/core/provider": [
    "CREDENTIAL_TYPES",
    "STATE_PAGE_LIMIT",
    "applyOptionDefaults",
    "defineProvider",
    "resolveOptions",
    "statePages",
    "writeState",
  ],
  "@credhook/core/provider-kit": [
    "CREDENTIAL_ID_PATTERN",
    "CachedHealthProbe",
    "GatewayErrors",
    "HttpCallFailed",
    "HttpTransportError",
    "JsonApiClient",
    "KeyedLock",
    "MarkedResourceProvider",
    "RateLimitQueueFull",
    "RestGatewayProvider",
    "SharedResourcePool",
    "SlidingWindowLimiter",
    "TokenBucketLimiter",
    "attributeMarker",
    "containsSecret",
    "definedPlansOf",
    "gatewayError",
    "gatewayMessage",
    "generateApiKeyValue",
    "hashSecret",
    "holds",
    "httpJson",
    "keyValueMarker",
    "memoryStateStore",
    "mergeLimits",
    "ownsMark",
    "parseRetryAfter",
    "planLimitsOf",
    "randomBase62",
    "redactSecrets",
    "refusedPairs",
    "rejectionsOf",
    "restClientOptions",
    "restClientSettings",
    "retryAfterFromHeaders",
    "settleAll",
    "tagMarker",
    "tagValue",
    "unavailableFrom",
    "verifySecretHash",
    "windowPlansOption",
  ],
  "@credhook/core/store": [
    "AvailabilityLog",
    "CREDENTIALS_INDEXES_SQL",
    "CREDENTIAL_STATUSES",
    "EVENTS_APP_INDEXES_SQL",
    "EVENTS_PARTIAL_INDEXES_SQL",
    "EVENT_INSERT_COLUMNS",
    "EVENT_READ_COLUMNS",
    "EVENT_STATUSES",
    "KeyedLock",
    "PAGE_LIMIT_DEFAULT",
    "PAGE_LIMIT_MAX",
    "PAGE_SCAN_ROWS",
    "STORE_COUNT_COLUMNS",
    "STORE_COUNT_FIRST_COUNTS",
    "appKeyOf",
    "assertFenceHeld",
    "comparePositions",
    "credentialsTableSql",
    "currentFence",
    "eventCountsOf",
    "eventRow",
    "eventStatusOf",
    "eventsTableSql",
    "examinedMaxOf",
    "matchesListQuery",
    "pageOfExamined",
    "pageStartOf",
    "recordCountsOf",
    "recordsById",
    "runFenced",
    "statePageBounds",
    "statePageOf",
    "storedEventOf",
    "walkPages",
  ],
  "@credhook/fakes/aws": [
    "ApiGatewayFake",
    "AwsFakeError",
    "CognitoFake",
    "FaultInjector",
    "SlidingWindow",
    "StsFake",
    "TokenBucket",
    "startAwsFake",
  ],
  "@credhook/fakes/clock": ["ManualClock", "systemClock"],
  "@credhook/fakes/azure": ["FAKE_API_VERSION", "startApimFake"],
  "@credhook/fakes/gcp": ["startApiKeysFake"],
  "@credhook/fakes/kong": ["startKongFake"],
  "@credhook/fakes/apigee": ["startApigeeFake"],
  "@credhook/provider-apigee": ["ApigeeProvider", "createApigeeProvider", "default", "optionsSchema"],
  "@credhook/provider-aws": ["AwsProvider", "default", "optionsSchema"],
  "@credhook/provider-azure": [
    "AzureApimProvider",
    "createAzureProvider",
    "default",
    "isSubscriptionOf",
    "optionsSchema",
  ],
  "@credhook/provider-gcp": ["GcpApiKeysProvider", "default", "optionsSchema"],
  "@credhook/provider-kong": ["KongProvider", "createKongProvider", "default", "optionsSchema"],
  "@credhook/provider-local": ["LocalProvider", "default", "localCredentialReader", "optionsSchema"],
  "@credhook/gateway": [
    "CredentialDirectory",
    "EMBEDDED_GATEWAY_STATE",
    "EmbeddedGateway",
    "EncryptedStoreKeyStorage",
    "FileKeyStorage",
    "GENERATED_KEK_FILE",
    "KEY_CHECK_PATH",
    "KeyCheck",
    "OAUTH_PATHS",
    "OAuthServer",
    "PlanLimiter",
    "SigningKeys",
    "checkEmbeddedGatewayConfig",
    "describeEmbeddedGateway",
    "embeddedGatewayProblems",
    "embeddedGatewaySchema",
    "embeddedGatewayWarnings",
    "normalisePath",
    "parseEmbeddedGatewayConfig",
    "publicJwk",
    "startEmbeddedGateway",
  ],
  "@credhook/provider-testkit": [
    "CONFORMANCE_GROUPS",
    "MemoryCredentialStore",
    "MemoryOutbox",
    "ScriptedProvider",
    "compensateCreate",
    "countLimiterSlots",
    "createApiKeyRef",
    "freshPerTest",
    "memoryStateStore",
    "providerConformance",
    "readJsonBody",
    "sendJson",
    "startFakeServer",
    "storeConformance",
    "typedError",
  ],
  "@credhook/server": [
    "CLOUD_REQUEST_ID_HEADERS",
    "CONFIG_SCHEMA_FILE",
    "CONFIG_SEARCH_PLACES",
    "EDGE_DEFAULTS",
    "EMBEDDED_CONFIG_FILE",
    "MAX_SECRET_FILE_BYTES",
    "REDACT_PATHS",
    "SHUTDOWN_MARGIN_MS",
    "TRACER_NAME",
    "TRACING_SHUTDOWN_MS",
    "VERSION",
    "cloudRequestId",
    "cloudRequestIdIn",
    "createApp",
    "createLogger",
    "createReadiness",
    "createRuntime",
    "embeddedConfigText",
    "errorBody",
    "hashPassword",
    "importProviderModule",
    "interpolate",
    "loadConfigFile",
    "maskSecrets",
    "openStore",
    "startServer",
    "startTracing",
    "traceGateways",
    "traceProvider",
    "traceRequests",
    "tracingRequested",
    "verifyPassword",
  ],
  "@credhook/server/lambda": ["createLambdaHandler", "handler", "reconcileHandler"],
  "@credhook/store-postgres": ["PostgresCredentialStore", "default", "openPostgresStore"],
  "@credhook/store-sqlite": ["DEFAULT_CACHE_SIZE_MIB", "SqliteCredentialStore", "default", "openSqliteStore"],
};

/** Every entry point of the workspace's packages that is a module (not a file like core's `./openapi.yaml`). */
function entryPoints(): string[] {
  const found: string[] = [];
  for (const dir of readdirSync(PACKAGES).sort()) {
    const pkg = JSON.parse(readFileSync(join(PACKAGES, dir, "package.json"), "utf8")) as {
      name: string;
      exports?: Record<string, unknown>;
    };
    for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
      if (typeof target === "object" && target !== null) found.push(pkg.name + subpath.slice(1));
    }
  }
  return found;
}

/** The `.ts` files under `dir`, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

describe("the packages' public surfaces", () => {
  it("every entry point in a package.json has a list here, and every list an entry point", () => {
    expect(entryPoints().sort()).toEqual(Object.keys(EXPORTED_NAMES).sort());
  });

  it.each(Object.keys(EXPORTED_NAMES))("%s exports exactly its listed runtime names", async (entry) => {
    const module = (await import(entry)) as Record<string, unknown>;
    expect(Object.keys(module).sort()).toEqual([...(EXPORTED_NAMES[entry] ?? [])].sort());
  });

  it("a name exported by two of core's entry points is one value (one name, one concept)", async () => {
    const seen = new Map<string, { entry: string; value: unknown }>();
    const clashes: string[] = [];
    for (const entry of Object.keys(EXPORTED_NAMES).filter((e) => e.startsWith("@credhook/core"))) {
      for (const [name, value] of Object.entries((await import(entry)) as Record<string, unknown>)) {
        const first = seen.get(name);
        if (first && first.value !== value) clashes.push(`${name}: ${first.entry} and ${entry}`);
        seen.set(name, { entry, value });
      }
    }
    expect(clashes).toEqual([]);
  });

  it("no package source re-exports a whole module (`export *`): every exported name is named", () => {
    const offenders = readdirSync(PACKAGES)
      .flatMap((dir) => sources(join(PACKAGES, dir, "src")))
      .filter((file) => /^export \*/m.test(readFileSync(file, "utf8")))
      .map((file) => file.slice(PACKAGES.length));
    expect(offenders).toEqual([]);
  });
});
