/**
 * The Kong Admin API as the provider calls it: core's `JsonApiClient` (fetch, time
 * limit, Retry-After, bounded retries, typed errors) with the RBAC or Konnect token
 * header, Kong's error messages (the key values a 409's `UNIQUE violation detected
 * on '{key="…"}'` quotes are redacted by the caller's `secrets`), and lists paged by `offset`.
 *
 * Reference: https://developer.konghq.com/api/gateway/admin-ee/ (entities, paging,
 * tags); errors: Kong's `kong/db/errors.lua` (code 2 schema violation → 400,
 * code 5 unique constraint violation → 409).
 */
import { JsonApiClient, type RateLimiter } from "@credhook/core/provider-kit";

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

/** The message Kong's body carries (`message`, or Konnect's `detail`). */
function kongMessage(json: unknown): string | undefined {
  const o = json as { message?: unknown; detail?: unknown } | undefined;
  return typeof o?.message === "string" ? o.message : typeof o?.detail === "string" ? o.detail : undefined;
}

/** What the RBAC role (or Konnect token) needs; said with every 401/403. */
export const KONG_PERMISSIONS =
  "the Admin API refused the token: grant its RBAC role create/read/update/delete on /consumers, /consumers/*, /consumers/*/*, /consumers/*/*/* and /plugins/* (Kong Enterprise), or the Konnect token the Control Plane Admin role on this control plane";

/** The Admin API client of one gateway. */
export class KongAdmin extends JsonApiClient {
  constructor(s: KongAdminSettings) {
    const auth = s.auth;
    const headers: Record<string, string> =
      auth.type === "rbac-token"
        ? { "kong-admin-token": auth.token }
        : auth.type === "bearer"
          ? { authorization: `Bearer ${auth.token}` }
          : {};
    super({
      baseUrl: s.adminUrl,
      gateway: s.gateway,
      headers: () => headers,
      timeoutMs: s.timeoutMs,
      maxRetries: s.maxRetries,
      maxRetryAfterS: s.maxRetryAfterS,
      ...(s.limiter ? { limiter: s.limiter } : {}),
      messageOf: kongMessage,
      permissionHint: KONG_PERMISSIONS,
    });
  }

  /** Every entity of a list, following `offset` (pages of 1000, Kong's largest). @throws HttpCallFailed */
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
