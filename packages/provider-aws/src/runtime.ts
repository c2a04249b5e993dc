/**
 * What the two credential implementations (API keys, Cognito clients) share:
 * the resolved options, SDK client configuration (endpoint, credentials,
 * timeouts, retries), the rate limiters and the logger of one gateway.
 */
import { fromTemporaryCredentials } from "@aws-sdk/credential-providers";
import type { Logger } from "@credhook/core";
import type { LimiterSet, RateLimiter } from "./limits.js";
import type { AwsProviderOptions, RateLimitOptions } from "./types.js";

/** Options with every default applied. */
export type ResolvedOptions = Required<
  Pick<AwsProviderOptions, "region" | "timeoutMs" | "maxAttempts" | "maxQueueWaitMs" | "healthCacheMs" | "revokeMode" | "namePrefix" | "defaultScopes" | "createMissingScopes" | "scopes">
> &
  AwsProviderOptions & { rateLimits: Required<RateLimitOptions> };

/** Applies the documented defaults (the schema's `default`s, for callers that skip ajv). */
export function resolveOptions(o: AwsProviderOptions): ResolvedOptions {
  return {
    ...o,
    timeoutMs: o.timeoutMs ?? 10_000,
    maxAttempts: o.maxAttempts ?? 4,
    maxQueueWaitMs: o.maxQueueWaitMs ?? 30_000,
    healthCacheMs: o.healthCacheMs ?? 15_000,
    revokeMode: o.revokeMode ?? "delete",
    namePrefix: o.namePrefix ?? "credhook",
    defaultScopes: o.defaultScopes ?? ["{apiId}"],
    createMissingScopes: o.createMissingScopes ?? true,
    scopes: o.scopes ?? {},
    rateLimits: {
      createApiKey: o.rateLimits?.createApiKey ?? 5,
      deleteApiKey: o.rateLimits?.deleteApiKey ?? 5,
      apiGateway: o.rateLimits?.apiGateway ?? 10,
      apiGatewayBurst: o.rateLimits?.apiGatewayBurst ?? 40,
      cognitoPerOperation: o.rateLimits?.cognitoPerOperation ?? 5,
    },
  };
}

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
    credentials = fromTemporaryCredentials({
      params: {
        RoleArn: o.roleArn,
        RoleSessionName: o.roleSessionName ?? `credhook-${gateway}`.replace(/[^\w+=,.@-]/g, "-").slice(0, 64),
        ...(o.externalId ? { ExternalId: o.externalId } : {}),
        DurationSeconds: 3600,
      },
      ...(o.credentials ? { masterCredentials: o.credentials } : {}),
      clientConfig: { region: o.region, ...(stsEndpoint ? { endpoint: stsEndpoint } : {}) },
    });
  } else if (o.credentials) {
    credentials = o.credentials;
  }
  return {
    region: o.region,
    ...(endpoint ? { endpoint } : {}),
    ...(credentials ? { credentials } : {}),
    maxAttempts: o.maxAttempts,
    requestHandler: { requestTimeout: o.timeoutMs, connectionTimeout: Math.min(o.timeoutMs, 5_000), throwOnRequestTimeout: true },
  };
}

/** The configuration both SDK clients are built with. */
export interface SdkClientConfig {
  region: string;
  endpoint?: string;
  credentials?: NonNullable<AwsProviderOptions["credentials"]> | ReturnType<typeof fromTemporaryCredentials>;
  maxAttempts: number;
  requestHandler: { requestTimeout: number; connectionTimeout: number; throwOnRequestTimeout: boolean };
}

/** One gateway's shared runtime. */
export interface Runtime {
  gateway: string;
  options: ResolvedOptions;
  logger: Logger;
  limiters: LimiterSet;
  /** Runs `fn` through `limiter`, refusing with Throttled when the queue is longer than `maxQueueWaitMs`. */
  limited<T>(limiter: RateLimiter, fn: () => Promise<T>): Promise<T>;
}
