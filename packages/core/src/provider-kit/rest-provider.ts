/**
 * `RestGatewayProvider`: a {@link MarkedResourceProvider} whose gateway is a JSON REST API called
 * through {@link JsonApiClient} (Kong's Admin API, Apigee's management API). It builds the client
 * from the provider's {@link restClientOptions} (time limit, retries, `Retry-After`, client-side
 * rate limit, health cache) and the gateway's own settings (base URL, auth headers, error words,
 * paging), stops it with the provider, and makes a create's first write the REST way
 * ({@link RestGatewayProvider.createOrFind}).
 */
import type { ProviderContext } from "../provider.js";
import { JsonApiClient, type JsonApiSettings } from "./http-json.js";
import { MarkedResourceProvider, type MarkedResourceSettings } from "./marked-provider.js";
import { type RestClientOptions, restClientSettings } from "./rest-options.js";

/** What a {@link RestGatewayProvider} is told besides its options and context. */
export interface RestGatewaySettings<M> extends Pick<MarkedResourceSettings<M>, "kind" | "product" | "marker"> {
  /** The gateway's API as the client calls it (its name, base URL, auth headers, error words, paging); the limits come from the options. */
  client: Omit<JsonApiSettings, "gateway" | "timeoutMs" | "maxRetries" | "maxRetryAfterS" | "rateLimit" | "limiter">;
}

/**
 * True when `current` (an entity as the gateway answers it) already holds all of `wanted` (what a
 * write would send): each field of a wanted object equal in the current one, recursively (`null`
 * and absent count the same), and a wanted array the same set of primitives (tags, in any order).
 * A write the entity already holds would change nothing: a provider skips it.
 */
export function holds(current: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) {
    const had = new Set(Array.isArray(current) ? current : []);
    return had.size === new Set(wanted).size && wanted.every((w) => had.has(w));
  }
  if (typeof wanted === "object" && wanted !== null) {
    const fields = (typeof current === "object" && current !== null ? current : {}) as Record<string, unknown>;
    return Object.entries(wanted).every(([k, v]) => holds(fields[k], v));
  }
  return (current ?? null) === (wanted ?? null);
}

/**
 * The shared part of a provider whose credential is one marked resource of a JSON REST API (see
 * the module comment and {@link MarkedResourceProvider}, whose hooks a provider writes).
 */
export abstract class RestGatewayProvider<R extends object, M> extends MarkedResourceProvider<R, M> {
  /** The gateway's API: every failure a `HttpCallFailed` carrying core's typed error (`run` throws it). */
  protected readonly api: JsonApiClient;

  /**
   * @param options the provider's resolved options (its {@link restClientOptions})
   * @param context the gateway's name and logger
   * @param settings what one resource is called, the mark, and the API's settings
   */
  constructor(
    options: RestClientOptions,
    context: Pick<ProviderContext, "gateway" | "logger">,
    settings: RestGatewaySettings<M>,
  ) {
    const api = new JsonApiClient({ ...settings.client, ...restClientSettings(options), gateway: context.gateway });
    const { kind, product, marker } = settings;
    const { gateway, logger } = context;
    super({ gateway, logger, kind, product, marker, healthCacheMs: options.healthCacheMs, release: () => api.close() });
    this.api = api;
  }

  /**
   * A create's first write: POSTs `body` (which carries the credential's mark) to `path`. A 409 —
   * the name is taken, most often by this credential's own earlier create whose answer was lost —
   * reads the resource back by its name with `find`; either way it must carry this credential's
   * mark ({@link MarkedResourceProvider.claimed}).
   * @param name the resource's name derived from the credential id (for messages)
   * @throws Conflict the name is taken by a resource without this credential's mark
   * @throws core's typed error of a failed call (nothing to compensate: the resource may not exist)
   */
  protected async createOrFind(
    path: string,
    body: unknown,
    name: string,
    credentialId: string,
    find: () => Promise<R | undefined>,
  ): Promise<R> {
    const made = await this.run(async () => {
      const res = await this.api.call("POST", path, `creating ${this.kind} ${name}`, { body, ok: [200, 201, 409] });
      return res.status === 409 ? find() : (res.json as R);
    });
    return this.claimed(made, credentialId, name);
  }
}
