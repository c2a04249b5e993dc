/**
 * The Kong Admin API as the provider calls it: `fetch` through core's `httpJson`
 * (time limit, Retry-After, bounded retries), the RBAC or Konnect token header,
 * lists paged by `offset`, and Kong's error bodies turned into core's typed
 * errors with the key values they may quote (a 409's `UNIQUE violation detected
 * on '{key="…"}'`) redacted.
 *
 * Reference: https://developer.konghq.com/api/gateway/admin-ee/ (entities, paging,
 * tags); errors: Kong's `kong/db/errors.lua` (code 2 schema violation → 400,
 * code 5 unique constraint violation → 409).
 */
import { type CredhookError, HttpTransportError, type HttpJsonResponse, type RateLimiter, httpFailure, httpJson, redactSecrets } from "@credhook/core";

/** How the client authenticates (the `auth` option). */
export type KongAuth = { type: "none" } | { type: "rbac-token"; token: string } | { type: "bearer"; token: string };

/** Settings of a {@link KongAdmin}. */
export interface KongAdminSettings {
  adminUrl: string;
  auth: KongAuth;
  timeoutMs: number;
  maxRetries: number;
  maxRetryAfterS: number;
  limiter?: RateLimiter;
  gateway: string;
}

/** Kong's entity fields the provider reads. */
export interface KongEntity {
  id: string;
  tags?: string[] | null;
  [field: string]: unknown;
}

/** A Kong call that answered something other than what was expected. */
export class KongCallFailed extends Error {
  constructor(
    readonly failure: HttpJsonResponse | HttpTransportError,
    readonly typed: CredhookError,
  ) {
    super(typed.message);
  }
}

/** The message Kong's body carries (`message`, or Konnect's `detail`). */
function kongMessage(json: unknown): string | undefined {
  const o = json as { message?: unknown; detail?: unknown } | undefined;
  const m = typeof o?.message === "string" ? o.message : typeof o?.detail === "string" ? o.detail : undefined;
  return m?.slice(0, 300);
}

const RBAC_HINT =
  "the Admin API refused the token: grant its RBAC role create/read/update/delete on /consumers, /consumers/*, /plugins and /plugins/* (Kong Enterprise), or the Konnect token's role Control Plane Admin on this control plane";

/** The Admin API client of one gateway. */
export class KongAdmin {
  private readonly base: string;

  constructor(private readonly s: KongAdminSettings) {
    this.base = s.adminUrl.replace(/\/+$/, "");
  }

  private headers(): Record<string, string> {
    if (this.s.auth.type === "rbac-token") return { "kong-admin-token": this.s.auth.token };
    if (this.s.auth.type === "bearer") return { authorization: `Bearer ${this.s.auth.token}` };
    return {};
  }

  /**
   * One call; answers the response when its status is one of `ok`.
   * @param secrets values to redact from any message (a key being imported)
   * @throws KongCallFailed any other answer or no answer, with core's typed error
   */
  async call(method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, what: string, options: { body?: unknown; ok?: number[]; secrets?: readonly string[] } = {}): Promise<HttpJsonResponse> {
    const write = method !== "GET";
    let res: HttpJsonResponse;
    try {
      res = await httpJson({
        url: `${this.base}${path}`,
        method,
        headers: this.headers(),
        body: options.body,
        timeoutMs: this.s.timeoutMs,
        maxRetries: this.s.maxRetries,
        maxRetryAfterS: this.s.maxRetryAfterS,
        // POST creates are not idempotent: a 5xx may have been applied. GET, PATCH of tags/config and DELETE are.
        idempotent: method !== "POST",
        ...(this.s.limiter ? { limiter: this.s.limiter } : {}),
      });
    } catch (err) {
      if (!(err instanceof HttpTransportError)) throw err;
      throw new KongCallFailed(err, httpFailure(err, { gateway: this.s.gateway, what, write }));
    }
    if ((options.ok ?? [200, 201, 204]).includes(res.status)) return res;
    const detail = kongMessage(res.json);
    const typed = httpFailure(res, { gateway: this.s.gateway, what, write, ...(detail ? { detail: redactSecrets(detail, options.secrets ?? []) } : {}), permissionHint: RBAC_HINT });
    throw new KongCallFailed(res, typed);
  }

  /** One entity, or undefined on 404. @throws KongCallFailed other failures */
  async get<T extends KongEntity>(path: string, what: string): Promise<T | undefined> {
    const res = await this.call("GET", path, what, { ok: [200, 404] });
    return res.status === 404 ? undefined : (res.json as T);
  }

  /** Every entity of a list, following `offset` (pages of 1000, Kong's largest). @throws KongCallFailed */
  async list<T extends KongEntity>(path: string, what: string, tags?: string[]): Promise<T[]> {
    const out: T[] = [];
    let offset: string | undefined;
    do {
      const q = new URLSearchParams({ size: "1000" });
      if (tags && tags.length > 0) q.set("tags", tags.join(","));
      if (offset) q.set("offset", offset);
      const res = await this.call("GET", `${path}?${q}`, what, { ok: [200] });
      const body = res.json as { data?: T[]; offset?: string | null } | undefined;
      out.push(...(body?.data ?? []));
      offset = body?.offset ?? undefined;
    } while (offset);
    return out;
  }
}
