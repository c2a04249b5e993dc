/**
 * Options of a `provider: gcp` gateway (the YAML block `gateways.<name>.options`).
 * Every duration is in milliseconds unless its name ends in `S` (seconds).
 */

/**
 * How the provider authenticates to Google.
 * - `application-default` (default): Application Default Credentials — the
 *   `GOOGLE_APPLICATION_CREDENTIALS` file, `gcloud auth application-default login`,
 *   or the attached service account on GCE/GKE/Cloud Run
 *   (https://cloud.google.com/docs/authentication/application-default-credentials).
 * - `key-file`: a service-account JSON key file at `path`.
 * - `static-token`: a fixed Bearer token (default `"emulator"`) that never
 *   refreshes. **For local emulators and fakes only** (`credhook demo`, tests);
 *   Google rejects it.
 */
export type GcpCredentialsOption =
  | { type: "application-default" }
  | { type: "key-file"; path: string }
  | { type: "static-token"; token?: string };

/**
 * Client-side rate limiting, sized below the API Keys quotas
 * (https://cloud.google.com/api-keys/docs/quotas). The quotas are per project:
 * every gateway of one process on the same endpoint and project (with the same
 * limits) shares one read bucket and one write bucket.
 */
export interface GcpRateLimitOptions {
  /**
   * Sustained write calls (create/update/delete/undelete) per minute. With
   * `writeBurst` it keeps any 60-second window at or below the project's
   * 120 writes/minute quota. @default 100
   */
  writesPerMinute?: number;
  /** Write calls that may start at once after an idle period. @default 20 */
  writeBurst?: number;
  /** Sustained read calls (get/getKeyString/list and operation polls) per minute; quota 240/minute. @default 200 */
  readsPerMinute?: number;
  /** Read calls that may start at once after an idle period. @default 40 */
  readBurst?: number;
  /**
   * Longest a call may wait for the limiter (ms). A call that would wait longer
   * fails at once with Throttled (503 + Retry-After) instead of holding the
   * portal's synchronous request. @default 10000
   */
  maxQueueWaitMs?: number;
}

/**
 * Retries. A 429 (RESOURCE_EXHAUSTED) is retried after Google's RetryInfo
 * delay when it sends one, else after an exponential back-off with jitter;
 * transient failures (5xx, connection errors, request time-outs) up to
 * `maxAttempts`. Every wait of one provider operation (a create: createKey, its
 * operation polls, getKeyString) comes out of one `budgetMs`; a retry whose
 * wait does not fit is not made and the failure is answered (a 429: 503 +
 * Retry-After). Google's retry guidance: https://cloud.google.com/apis/design/errors#retrying_errors
 */
export interface GcpRetryOptions {
  /** Attempts in all for a transient failure, the first included (1 disables those retries). @default 3 */
  maxAttempts?: number;
  /** First back-off delay after a transient failure (ms); doubles each attempt, with jitter. @default 200 */
  initialDelayMs?: number;
  /** Longest back-off delay after a transient failure (ms). @default 2000 */
  maxDelayMs?: number;
  /** First back-off delay after a 429 that carries no retry hint (ms); doubles with jitter, at most 5000 ms. @default 1000 */
  throttleInitialDelayMs?: number;
  /** Total back-off (ms) one provider operation may spend on retries of 429s and transient failures; 0 disables retries. @default 10000 */
  budgetMs?: number;
}

/** Options of the `gcp` provider. */
export interface GcpProviderOptions {
  /** Google Cloud project id (or number) that owns the keys. Required. */
  projectId: string;
  /**
   * The API Keys endpoint: `host`, `host:port`, or a URL `https://host[:port]` /
   * `http://host:port` (plain HTTP only for emulators and fakes). Overrides the
   * default `https://apikeys.googleapis.com:443` — for Private Service Connect
   * endpoints (`apikeys-myendpoint.p.googleapis.com`) or a local fake.
   * The provider always uses the client library's REST transport (HTTP/1.1 + JSON).
   */
  endpoint?: string;
  /** How to authenticate. @default { type: "application-default" } */
  credentials?: GcpCredentialsOption;
  /**
   * Portal API id → Google service name the key is restricted to (an API
   * Gateway managed service such as `my-api-abc123.apigateway.my-project.cloud.goog`,
   * or a Cloud Endpoints service). Checked before `serviceTemplate`.
   */
  services?: Record<string, string>;
  /**
   * Service name for API ids not in `services`: `{apiId}` is replaced by the
   * API id, e.g. `"{apiId}.apigateway.my-project.cloud.goog"`. Without it, an
   * API id missing from `services` is an unknown reference (422).
   */
  serviceTemplate?: string;
  /**
   * Usage plan id → the methods a key in that plan may call on the API's
   * service (`apiTargets[].methods`; e.g. `["GetOrder", "List*"]`); `[]` means
   * every method. When this map is given, a usage plan missing from it is an
   * unknown reference (422). When it is absent, plans do not restrict methods
   * and are only recorded in the key's annotations.
   */
  usagePlans?: Record<string, string[]>;
  /**
   * Prefix of every keyId (`<prefix><26 base32 chars of sha256(credentialId)>`):
   * a lowercase letter, then up to 30 of `[a-z0-9-]`. @default "credhook-"
   */
  keyIdPrefix?: string;
  /** Longest wait (ms) for one long-running operation (create/update/delete/undelete). @default 60000 */
  operationTimeoutMs?: number;
  /** First delay (ms) between operation polls; grows ×1.5 up to 5000 ms. @default 500 */
  pollInitialDelayMs?: number;
  /** Time-out (ms) of one HTTP call to the API. @default 15000 */
  requestTimeoutMs?: number;
  /** Client-side rate limiting. */
  rateLimit?: GcpRateLimitOptions;
  /** Retries of transient failures. */
  retry?: GcpRetryOptions;
  /** How long (ms) a successful health() answer is reused; failures are reused for 5000 ms at most. @default 30000 */
  healthCacheMs?: number;
}
