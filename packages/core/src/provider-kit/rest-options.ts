/**
 * The options every provider of a REST gateway called through {@link JsonApiClient} has, written
 * once: the call's time limit, retries, the longest `Retry-After` waited for, the client-side rate
 * limit and the health cache. A provider spreads {@link restClientOptions} into its options
 * schema's `properties` (after its own options), and hands the resolved values to
 * `new JsonApiClient({ ...restClientSettings(options), … })`.
 */
import type { JsonApiSettings } from "./http-json.js";

/** What differs between gateways in {@link restClientOptions}: the words, the defaults and the gateway's quota. */
export interface RestClientDefaults<T extends number, R extends number, W extends number> {
  /** One call, as the descriptions say it: `Admin API call`, `management call`. */
  call: string;
  /** Default time limit of one call (ms), retries included. */
  timeoutMs: T;
  /** The client-side rate limit's defaults and description (the gateway's quota, with a link to where it is documented). */
  rateLimit: { requests: R; windowMs: W; description: string };
}

/**
 * The JSON Schema properties `timeoutMs`, `maxRetries`, `maxRetryAfterS`, `rateLimit` (`requests`
 * per sliding `windowMs`) and `healthCacheMs`, each with its bounds, default and description.
 *
 * ```ts
 * properties: { adminUrl: { … }, ...restClientOptions({ call: "Admin API call", timeoutMs: 10000,
 *   rateLimit: { requests: 0, windowMs: 1000, description: "Client-side limit of Admin API calls: …" } }) }
 * ```
 */
export function restClientOptions<const T extends number, const R extends number, const W extends number>(
  d: RestClientDefaults<T, R, W>,
) {
  return {
    timeoutMs: {
      type: "integer",
      minimum: 100,
      maximum: 600000,
      default: d.timeoutMs,
      description: `Time limit of one ${d.call} (ms), retries included; exceeded: 504. Default ${d.timeoutMs}.`,
    },
    maxRetries: {
      type: "integer",
      minimum: 0,
      maximum: 10,
      default: 2,
      description: "Retries of a throttled (429) call, and of a failed (5xx, network) read or delete. Default 2.",
    },
    maxRetryAfterS: {
      type: "number",
      minimum: 0,
      maximum: 600,
      default: 10,
      description:
        "Longest `Retry-After` (s) waited for inside one request; a longer one answers 503 with it at once. Default 10.",
    },
    rateLimit: {
      type: "object",
      additionalProperties: false,
      default: {},
      description: d.rateLimit.description,
      properties: {
        requests: {
          type: "integer",
          minimum: 0,
          default: d.rateLimit.requests,
          description: `Calls per window; 0 turns the limit off. Default ${d.rateLimit.requests}.`,
        },
        windowMs: {
          type: "integer",
          minimum: 1,
          default: d.rateLimit.windowMs,
          description: `Window length (ms). Default ${d.rateLimit.windowMs}.`,
        },
      },
    },
    healthCacheMs: {
      type: "integer",
      minimum: 0,
      maximum: 3600000,
      default: 30000,
      description: "How long a health() answer is reused (ms). Default 30000.",
    },
  } as const;
}

/** The {@link restClientOptions} of a provider, resolved (every default applied). */
export interface RestClientOptions {
  timeoutMs: number;
  maxRetries: number;
  maxRetryAfterS: number;
  rateLimit: { requests: number; windowMs: number };
  healthCacheMs: number;
}

/** The {@link JsonApiSettings} that {@link RestClientOptions} set: time limit, retries, Retry-After and rate limit. */
export function restClientSettings(
  options: RestClientOptions,
): Pick<JsonApiSettings, "timeoutMs" | "maxRetries" | "maxRetryAfterS" | "rateLimit"> {
  const { timeoutMs, maxRetries, maxRetryAfterS, rateLimit } = options;
  return { timeoutMs, maxRetries, maxRetryAfterS, rateLimit };
}
