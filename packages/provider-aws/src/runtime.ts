/**
 * What the two credential implementations (API keys, Cognito clients) share:
 * the resolved options, SDK client configuration (endpoint, credentials,
 * timeouts, retries), the rate limiters and the logger of one gateway.
 */
import { fromTemporaryCredentials } from "@aws-sdk/credential-providers";
import { StandardRetryStrategy } from "@smithy/core/retry";
import type { Logger, RateSlots } from "@credhook/core/provider";
import { isCredhookError } from "@credhook/core/errors";
import type { RateLimiter } from "@credhook/core/provider-kit";
import { acquireAttempt, type LimiterSet } from "./limits.js";
import type { AwsProviderOptions, AwsProviderOptionsWithDefaults } from "./types.js";

/** Options with every default applied (by the factory: core's `resolveOptions`). */
export type ResolvedOptions = AwsProviderOptionsWithDefaults;

/** The endpoint to use for `service`, or undefined for the SDK default. */
export function endpointFor(o: AwsProviderOptions, service: "apiGateway" | "cognito" | "sts"): string | undefined {
  const e = o.endpoints?.[service] || o.endpoint;
  return e ? e : undefined;
}

/**
 * SDK client configuration shared by both clients: region, endpoint,
 * credentials (static, assumed role, or the default chain), attempts and
 * per-attempt timeouts (`throwOnRequestTimeout` turns the handler's timeout into an error).
 */
export function sdkConfig(o: ResolvedOptions, service: "apiGateway" | "cognito", gateway: string): SdkClientConfig {
  const endpoint = endpointFor(o, service);
  const stsEndpoint = endpointFor(o, "sts");
  let credentials: SdkClientConfig["credentials"];
  if (o.roleArn) {
    credentials = shareCredentials(
      fromTemporaryCredentials({
        params: {
          RoleArn: o.roleArn,
          RoleSessionName: o.roleSessionName ?? `credhook-${gateway}`.replace(/[^\w+=,.@-]/g, "-").slice(0, 64),
          ...(o.externalId ? { ExternalId: o.externalId } : {}),
          DurationSeconds: 3600,
        },
        ...(o.credentials ? { masterCredentials: o.credentials } : {}),
        clientConfig: { region: o.region, ...(stsEndpoint ? { endpoint: stsEndpoint } : {}) },
      }),
    );
  } else if (o.credentials) {
    credentials = o.credentials;
  }
  return {
    region: o.region,
    ...(endpoint ? { endpoint } : {}),
    ...(credentials ? { credentials } : {}),
    maxAttempts: o.maxAttempts,
    requestHandler: {
      requestTimeout: o.timeoutMs,
      connectionTimeout: Math.min(o.timeoutMs, 5_000),
      throwOnRequestTimeout: true,
    },
  };
}

/** Credentials of the assumed role. */
type TemporaryCredentials = Awaited<ReturnType<ReturnType<typeof fromTemporaryCredentials>>>;

/**
 * One cache of assumed-role credentials for every SDK client built from the
 * same configuration (the provider has two per service), so the role is
 * assumed once and again only within 5 minutes of expiry (or after a failure).
 */
function shareCredentials(source: () => Promise<TemporaryCredentials>): () => Promise<TemporaryCredentials> {
  let current: Promise<TemporaryCredentials> | undefined;
  let refreshAt = Number.POSITIVE_INFINITY;
  return () => {
    if (!current || Date.now() >= refreshAt) {
      refreshAt = Number.POSITIVE_INFINITY;
      const next = source().then(
        (creds) => {
          refreshAt = creds.expiration ? creds.expiration.getTime() - 5 * 60_000 : Number.POSITIVE_INFINITY;
          return creds;
        },
        (err: unknown) => {
          if (current === next) current = undefined;
          throw err;
        },
      );
      current = next;
    }
    return current;
  };
}

/** The configuration both SDK clients are built with. */
export interface SdkClientConfig {
  region: string;
  endpoint?: string;
  credentials?: NonNullable<AwsProviderOptions["credentials"]> | (() => Promise<TemporaryCredentials>);
  maxAttempts: number;
  requestHandler: { requestTimeout: number; connectionTimeout: number; throwOnRequestTimeout: boolean };
}

/** One gateway's shared runtime. */
export interface Runtime {
  gateway: string;
  options: ResolvedOptions;
  logger: Logger;
  limiters: LimiterSet;
  /** Call slots shared by every credhook instance on the store (absent: one instance). */
  rateSlots?: RateSlots;
  /** The quota's scope (region, identity, endpoint): the prefix of its shared slot keys. */
  quotaScope: string;
}

/** The part of an SDK v3 client this module touches (its middleware stack). */
interface SdkClientLike {
  middlewareStack: {
    addRelativeTo(
      middleware: unknown,
      options: { relation: "before" | "after"; toMiddleware: string; name: string; override?: boolean },
    ): void;
  };
}

/**
 * Makes every HTTP attempt of `client` — the first and each SDK retry — wait
 * for a slot of the limiter `pick` returns for its operation (the SDK command
 * name without `Command`). Installed in the finalizeRequest step between the
 * retry middleware and request signing, so a retry is limited and signed like
 * a first attempt. A queue longer than `maxQueueWaitMs` fails the attempt with
 * Throttled (503), which the SDK does not retry.
 */
export function limitEveryAttempt(client: SdkClientLike, rt: Runtime, pick: (operation: string) => RateLimiter): void {
  const middleware =
    (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
    async (args: unknown): Promise<unknown> => {
      const operation = String(context.commandName ?? "").replace(/Command$/, "");
      const limiter = pick(operation);
      // Several instances: the quota is the account's, so the attempt also waits for its slot among all of them.
      await acquireAttempt(
        limiter,
        rt.options.maxQueueWaitMs,
        rt.gateway,
        rt.rateSlots ? { slots: rt.rateSlots, key: `aws|${rt.quotaScope}|${limiter.name}` } : undefined,
      );
      return next(args);
    };
  client.middlewareStack.addRelativeTo(middleware, {
    relation: "before",
    toMiddleware: "httpSigningMiddleware",
    name: "credhookRateLimitMiddleware",
    override: true,
  });
}

/** Network failures where the request never reached AWS (safe to send again). */
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

/**
 * True when a failed attempt may nevertheless have been applied by AWS: a
 * timeout, a connection lost after sending, or any 5xx (clouds do not cancel
 * work when a client gives up — docs/cloud-facts.md). False for answers that
 * refuse the request (4xx, throttling), for a connection never made, and for
 * credhook's own errors (the client-side queue refused before sending).
 */
export function mayHaveLanded(err: unknown): boolean {
  if (isCredhookError(err)) return false;
  const e = (err ?? {}) as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  if (typeof status === "number") return status >= 500;
  if (NOT_SENT.has(e.code ?? "") || NOT_SENT.has(e.name ?? "")) return false;
  if (e.name === "CredentialsProviderError") return false;
  return true;
}

/**
 * The retry strategy of calls that are not idempotent (CreateUserPoolClient,
 * CreateApiKey without an imported value): the SDK's standard strategy, but an
 * attempt is repeated only when the previous one was certainly not applied
 * (throttled, or never sent). Retrying after a timeout or a 5xx could create a
 * second resource; the failure is reported as outcome-unknown instead and core
 * finds the resource by its mark.
 */
export function retryOnlyUnapplied(maxAttempts: number): StandardRetryStrategy {
  const strategy = new StandardRetryStrategy(maxAttempts);
  const refresh = strategy.refreshRetryTokenForRetry.bind(strategy);
  strategy.refreshRetryTokenForRetry = async (token, errorInfo) => {
    if (errorInfo.errorType !== "THROTTLING" && mayHaveLanded(errorInfo.error)) throw errorInfo.error;
    return refresh(token, errorInfo);
  };
  return strategy;
}
