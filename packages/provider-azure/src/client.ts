/**
 * Builds the unmodified `ApiManagementClient` for a gateway: credential,
 * endpoint (including plain-HTTP fakes), retries and the Retry-After cap.
 */
import { ApiManagementClient } from "@azure/arm-apimanagement";
import type { AccessToken, TokenCredential } from "@azure/core-auth";
import {
  createDefaultHttpClient,
  type HttpClient,
  type PipelinePolicy,
  type PipelineRequest,
} from "@azure/core-rest-pipeline";
import { ClientSecretCredential, DefaultAzureCredential, ManagedIdentityCredential } from "@azure/identity";
import { RateLimitQueueFull, retryAfterFromHeaders } from "@credhook/core/provider-kit";
import { optionsSchema } from "./schema.js";
import type { AzureCredentialOption } from "./types.js";

/** ARM's public endpoint: the schema's default of the `endpoint` option. */
export const DEFAULT_ARM_ENDPOINT = optionsSchema.properties.endpoint.default;

/**
 * Thrown inside the pipeline when ARM asks to wait longer than the configured
 * cap (`maxRetryAfterS`); the SDK's retry policy does not retry it.
 */
export class RetryAfterTooLong extends Error {
  override readonly name = "RetryAfterTooLong";
  /** The request that got the answer (non-enumerable: never logged). */
  declare readonly request?: PipelineRequest;
  constructor(
    /** The server's `Retry-After`, in seconds. */
    readonly retryAfterS: number,
    /** HTTP status that carried it (429 or 503). */
    readonly status: number,
    request?: PipelineRequest,
  ) {
    super(`ARM asked to retry after ${retryAfterS} s (status ${status})`);
    Object.defineProperty(this, "request", { value: request, enumerable: false });
  }
}

/** What the attempts of one request have shown so far (see {@link attemptTrackingPolicy}). */
export interface AttemptHistory {
  /** Attempts started. */
  count: number;
  /** An attempt was sent and got no clear refusal: a 5xx, a 408, no answer, a network error. */
  ambiguous: boolean;
}

const attempts = new WeakMap<PipelineRequest, AttemptHistory>();

/** The attempt history of `request`, when it went through {@link attemptTrackingPolicy}. */
export function attemptsOf(request: PipelineRequest): AttemptHistory | undefined {
  return attempts.get(request);
}

/**
 * A per-retry pipeline policy, first of the per-retry ones, that records each
 * attempt of a request and whether one ended ambiguously — so that a failed
 * write can tell "refused, nothing applied" from "outcome unknown" although the
 * SDK's retry policy resends after a 5xx, a 408 or a network error (ARM does not
 * cancel a request whose client gave up, and a 5xx may follow an applied write).
 */
export function attemptTrackingPolicy(): PipelinePolicy {
  return {
    name: "credhookAttemptTracking",
    async sendRequest(request, next) {
      const seen = attempts.get(request) ?? { count: 0, ambiguous: false };
      seen.count += 1;
      attempts.set(request, seen);
      try {
        const response = await next(request);
        if (response.status >= 500 || response.status === 408) seen.ambiguous = true;
        return response;
      } catch (err) {
        // credhook's own limiter refuses before sending; a capped Retry-After on a 429 was a refusal too.
        const refusedHere =
          err instanceof RateLimitQueueFull || (err instanceof RetryAfterTooLong && err.status === 429);
        if (!refusedHere) seen.ambiguous = true;
        throw err;
      }
    },
  };
}

/** A pipeline policy (per retry) that stops the SDK from sleeping through a `Retry-After` above `maxS` seconds. */
export function retryAfterCapPolicy(maxS: number): PipelinePolicy {
  return {
    name: "credhookRetryAfterCap",
    async sendRequest(request, next) {
      const response = await next(request);
      if (response.status === 429 || response.status === 503) {
        const s = retryAfterFromHeaders((n) => response.headers.get(n));
        if (s !== undefined && s > maxS) throw new RetryAfterTooLong(s, response.status, request);
      }
      return response;
    },
  };
}

/**
 * How the SDK reaches `endpoint`: an `https://` endpoint is used as it is; for
 * an `http://` one the SDK is given the same origin with `https://` (its bearer
 * policy refuses plain-HTTP URLs), and the returned `httpClient` sends those
 * requests over plain HTTP with `allowInsecureConnection`.
 */
export function endpointMapping(endpoint: string): { sdkEndpoint: string; httpClient?: HttpClient } {
  const url = new URL(endpoint);
  const base = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  if (url.protocol === "https:") return { sdkEndpoint: base };
  if (url.protocol !== "http:") throw new Error(`endpoint must be an http(s) URL, got ${url.protocol}`);
  const sdkEndpoint = `https://${base.slice("http://".length)}`;
  const inner = createDefaultHttpClient();
  return {
    sdkEndpoint,
    httpClient: {
      sendRequest(request: PipelineRequest) {
        if (request.url.startsWith(sdkEndpoint)) {
          request.url = `http://${request.url.slice("https://".length)}`;
          request.allowInsecureConnection = true;
        }
        return inner.sendRequest(request);
      },
    },
  };
}

/** A credential that always hands out `token` (tests and local fakes only). */
export function staticTokenCredential(token: string): TokenCredential {
  return {
    async getToken(): Promise<AccessToken> {
      return { token, expiresOnTimestamp: Date.now() + 3_600_000 };
    },
  };
}

/** Builds the `TokenCredential` an {@link AzureCredentialOption} describes. */
export function buildCredential(option: AzureCredentialOption | undefined): TokenCredential {
  const o: AzureCredentialOption = option ?? optionsSchema.properties.credential.default;
  switch (o.type) {
    case "default":
      return new DefaultAzureCredential({
        ...(o.managedIdentityClientId ? { managedIdentityClientId: o.managedIdentityClientId } : {}),
        ...(o.tenantId ? { tenantId: o.tenantId } : {}),
      });
    case "client-secret":
      return new ClientSecretCredential(
        o.tenantId,
        o.clientId,
        o.clientSecret,
        o.authorityHost ? { authorityHost: o.authorityHost } : {},
      );
    case "managed-identity":
      return o.clientId ? new ManagedIdentityCredential({ clientId: o.clientId }) : new ManagedIdentityCredential();
    case "static-token":
      return staticTokenCredential(o.token);
  }
}

/** Settings of {@link buildArmClient}. */
export interface ArmClientSettings {
  subscriptionId: string;
  /** ARM base URL (`https://…`, or `http://…` for fakes). */
  endpoint: string;
  credential: TokenCredential;
  /** SDK retries of 429/5xx/network failures. */
  maxRetries: number;
  /** Retry-After cap, seconds (see {@link retryAfterCapPolicy}). */
  maxRetryAfterS: number;
  /** Extra policies run on every attempt (e.g. the client-side ARM rate limit). */
  perRetryPolicies?: PipelinePolicy[];
}

/** The SDK client for one gateway. */
export function buildArmClient(settings: ArmClientSettings): ApiManagementClient {
  const { sdkEndpoint, httpClient } = endpointMapping(settings.endpoint);
  return new ApiManagementClient(settings.credential, settings.subscriptionId, {
    endpoint: sdkEndpoint,
    $host: sdkEndpoint,
    ...(httpClient ? { httpClient } : {}),
    retryOptions: { maxRetries: settings.maxRetries, retryDelayInMs: 500, maxRetryDelayInMs: 8_000 },
    additionalPolicies: [
      { policy: attemptTrackingPolicy(), position: "perRetry" },
      ...(settings.perRetryPolicies ?? []).map((policy) => ({ policy, position: "perRetry" as const })),
      { policy: retryAfterCapPolicy(settings.maxRetryAfterS), position: "perRetry" },
    ],
    userAgentOptions: { userAgentPrefix: "credhook" },
  });
}
