/**
 * The key check: an HTTP authorization service for NGINX `auth_request` and
 * Envoy's `ext_authz` (HTTP service). The proxy forwards the original request's
 * headers (NGINX: to `/check`, with `X-Original-URI`; Envoy: to `/check` +
 * the original path, via `path_prefix: /check`), with any method.
 *
 * Decision:
 * 1. the API key from the configured header (default `x-api-key`) or query
 *    parameter of the original request — else, when enabled, an
 *    `Authorization: Bearer` access token of the embedded token endpoint;
 *    missing → 401;
 * 2. the credential, by the SHA-256 digest of the key (index + cache);
 *    unknown or revoked → 401;
 * 3. the API: the configured header, else the longest matching path prefix
 *    of the (normalised) original path; none, or not held by the key → 403;
 * 4. the limits of the API's usage plans → 429 + `Retry-After`;
 * 5. 200, empty, with headers naming app, developer, credential id, key (or
 *    client) id, API, plans and (for a bearer token) its scopes — for the proxy
 *    to pass upstream. These come only from the credential found here, never
 *    from a header of the request.
 *
 * Every refusal (401, 403, 429, 503) is an ErrorResponse, sent both as the body
 * and, JSON-encoded in ASCII, in the `<responseHeaderPrefix>error` header: NGINX's
 * `auth_request` drops the subrequest's body (and turns any status but 2xx, 401
 * and 403 into 500), so `examples/nginx/` answers the client with that header.
 *
 * Which API a request is for comes from what the proxy states: the API header
 * (which must carry the response header prefix, so that the shipped proxy
 * examples, which remove every client-sent header with that prefix, leave it to
 * the proxy) or the path rules over the original URI the proxy states.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorResponse } from "@credhook/core";
import type { Logger } from "@credhook/core/provider";
import type { KeyCheckConfig } from "./config.js";
import type { CredentialDirectory, CredentialGrant } from "./directory.js";
import { asciiJson, headerValue, splitTarget } from "./http.js";
import type { PlanLimiter } from "./limits.js";
import type { OAuthServer } from "./oauth.js";

/** Path of the key check, relative to the gateway's base; `/check/<original path>` is accepted too (Envoy). */
export const KEY_CHECK_PATH = "/check";

/** A path that may need normalising: percent-encoding, a `.`/`..` segment, or `//`. */
const ALREADY_NORMAL_UNSAFE = /%|\/\.\.?(?:\/|$)|\/\/|^[^/]/;

/** What a decision was, for metrics: 200, 401, 403, 429 or 503. */
export type CheckStatus = 200 | 401 | 403 | 429 | 503;

/**
 * Normalises a request path the way proxies route it (RFC 3986 §5.2.4 dot
 * segments removed, percent-encoding decoded, repeated slashes merged), so a
 * path rule cannot be side-stepped with `/weather/../orders/`.
 * @returns the normalised path, or undefined when it cannot be decoded
 */
export function normalisePath(path: string): string | undefined {
  // Already normal (the common case): nothing encoded, no dot segment, no empty segment.
  if (!ALREADY_NORMAL_UNSAFE.test(path)) return path;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  const out: string[] = [];
  for (const seg of decoded.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(seg);
  }
  return `/${out.join("/")}${decoded.endsWith("/") && out.length > 0 ? "/" : ""}`;
}

/** Options of {@link KeyCheck}. */
export interface KeyCheckOptions {
  config: KeyCheckConfig;
  directory: CredentialDirectory;
  limiter: PlanLimiter;
  /** Verifies bearer access tokens; undefined when no client-credentials gateway exists or `bearer: false`. */
  oauth: OAuthServer | undefined;
  logger: Logger;
  /** Path the gateway is mounted under (`/gateway`), or "" on its own port: error bodies name the full path. */
  basePath: string;
  /** Called with every decision (metrics). */
  observe?: (status: CheckStatus) => void;
}

/** The key-check endpoint. */
export class KeyCheck {
  private readonly rules: Array<{ prefix: string; api: string }>;
  private readonly challenges: string[];
  private readonly h: {
    app: string;
    developer: string;
    credentialId: string;
    keyId: string;
    clientId: string;
    api: string;
    plans: string;
    scopes: string;
    error: string;
    cacheKey: string;
  };

  constructor(private readonly options: KeyCheckOptions) {
    const c = options.config;
    this.rules = [...c.apis]
      .map((r) => ({ prefix: r.pathPrefix, api: r.api }))
      .sort((a, b) => b.prefix.length - a.prefix.length);
    this.challenges = [
      `APIKey realm="credhook", header="${c.header}"`,
      ...(options.oauth ? ['Bearer realm="credhook"'] : []),
    ];
    const p = c.responseHeaderPrefix;
    this.h = {
      app: `${p}app`,
      developer: `${p}developer`,
      credentialId: `${p}credential-id`,
      keyId: `${p}key-id`,
      clientId: `${p}client-id`,
      api: `${p}api`,
      plans: `${p}plans`,
      scopes: `${p}scopes`,
      error: `${p}error`,
      cacheKey: `${p}cache-key`,
    };
  }

  /** The API id of the original request: the API header, else the longest matching path prefix. */
  apiOf(req: IncomingMessage, originalPath: string): string | undefined {
    const c = this.options.config;
    if (c.apiHeader) {
      const v = req.headers[c.apiHeader];
      const api = Array.isArray(v) ? v[0] : v;
      if (api) return api;
    }
    if (this.rules.length === 0) return undefined;
    const path = normalisePath(originalPath);
    if (path === undefined) return undefined;
    for (const r of this.rules) if (path.startsWith(r.prefix)) return r.api;
    return undefined;
  }

  /**
   * Answers one check. `path` and `query` are the check request's own (relative
   * to the gateway's base). Refusals name, as their `path`, the original path
   * the proxy stated (else the check's own path).
   */
  handle(req: IncomingMessage, res: ServerResponse, path: string, query: string): void | Promise<void> {
    const c = this.options.config;
    const given = req.headers[c.originalUriHeader];
    const original =
      typeof given === "string" && given !== ""
        ? splitTarget(given)
        : { path: path.slice(KEY_CHECK_PATH.length) || "/", query };
    const raw = req.headers[c.header];
    let key = Array.isArray(raw) ? raw[0] : raw;
    const at: Refusal = {
      res,
      where: (typeof given === "string" && given !== "" ? original.path : this.options.basePath + path).slice(0, 200),
      cacheKeyInput:
        typeof given === "string" && given !== ""
          ? `${key ?? ""}\n${req.headers.authorization ?? ""}\n${given}`
          : undefined,
    };
    if (!key && c.queryParam && original.query)
      key = new URLSearchParams(original.query).get(c.queryParam) ?? undefined;
    if (!key) {
      const auth = req.headers.authorization;
      if (this.options.oauth && auth && /^bearer /i.test(auth))
        return this.bearer(req, at, original.path, auth.slice(7).trim());
      return this.deny(
        at,
        401,
        `no API key: send it in the ${c.header} header${c.queryParam ? ` or the ${c.queryParam} query parameter` : ""}`,
        this.challenges,
      );
    }
    const digest = createHash("sha256").update(key, "utf8").digest("hex");
    const cached = this.options.directory.peekKey(digest);
    if (cached !== undefined) return this.decide(req, at, original.path, cached);
    return this.options.directory.findKey(digest).then(
      (grant) => this.decide(req, at, original.path, grant),
      (err: unknown) => this.unavailable(at, err),
    );
  }

  private decide(
    req: IncomingMessage,
    at: Refusal,
    originalPath: string,
    grant: CredentialGrant | null,
  ): void | Promise<void> {
    if (!grant || !grant.enabled)
      return this.deny(at, 401, "the API key is not valid (unknown or revoked)", this.challenges);
    return this.admit(req, at, originalPath, grant);
  }

  private async bearer(req: IncomingMessage, at: Refusal, originalPath: string, token: string): Promise<void> {
    let v;
    try {
      v = await this.options.oauth!.verifyAccessToken(token);
    } catch (err) {
      return this.unavailable(at, err);
    }
    if (!v)
      return this.deny(at, 401, "the access token is not valid (expired, not issued here, or its client was revoked)", [
        'Bearer realm="credhook", error="invalid_token"',
      ]);
    const api = this.apiOf(req, originalPath);
    if (api !== undefined && !this.options.oauth!.scopesOf(api).some((s) => v.scopes.includes(s))) {
      return this.deny(at, 403, `the access token has no scope of API '${api}'`, [
        `Bearer realm="credhook", error="insufficient_scope", scope="${this.options.oauth!.scopesOf(api).join(" ")}"`,
      ]);
    }
    return this.admit(req, at, originalPath, v.client, v.scopes);
  }

  /**
   * Admits a live credential for the request's API (within its plans' limits).
   * Every identity header is in the answer, empty when it does not apply (a key
   * has no client id or scopes, a token no key id): a proxy that copies the
   * answer's headers then overwrites every one of them.
   * @param scopes the bearer token's scopes; undefined for an API key
   */
  private admit(
    req: IncomingMessage,
    at: Refusal,
    originalPath: string,
    grant: CredentialGrant,
    scopes?: string[],
  ): void | Promise<void> {
    const api = this.apiOf(req, originalPath);
    if (api === undefined) {
      const c = this.options.config;
      return this.deny(
        at,
        403,
        c.apis.length === 0 && !c.apiHeader
          ? "no API is configured for any path: embeddedGateway.keyCheck.apis is empty (add { pathPrefix, api } rules, or set keyCheck.apiHeader and have the proxy name the API)"
          : `no API is configured for path '${originalPath.slice(0, 200)}' (embeddedGateway.keyCheck.apis${c.apiHeader ? ` or the ${c.apiHeader} header the proxy sets` : ""})`,
      );
    }
    const plans = grant.apis.get(api);
    if (!plans) return this.deny(at, 403, `the credential does not hold API '${api.slice(0, 200)}'`);
    // The answer's headers, as writeHead's flat [name, value, …] list, built once per cached credential, API (and scopes).
    const memoKey = scopes ? `${api}\n${scopes.join(" ")}` : api;
    let headers = grant.memo.get(memoKey) as string[] | undefined;
    if (!headers) {
      headers = [
        this.h.app,
        headerValue(grant.appName),
        this.h.developer,
        headerValue(grant.developer),
        this.h.credentialId,
        grant.credentialId,
        this.h.keyId,
        scopes ? "" : grant.nativeId,
        this.h.clientId,
        scopes ? grant.nativeId : "",
        this.h.api,
        headerValue(api),
        this.h.plans,
        headerValue(plans.join(",")),
        this.h.scopes,
        scopes ? headerValue(scopes.join(" ")) : "",
        "content-length",
        "0",
      ];
      grant.memo.set(memoKey, headers);
    }
    if (!this.options.limiter.hasLimits(grant.provider, plans))
      return this.allow(at.res, headers, this.cacheable(req, at));
    const ok = headers;
    return this.options.limiter.admit(grant.provider, grant.credentialId, plans).then((refusal) => {
      // Counted: never cached, or the proxy would admit requests the plan does not count.
      if (!refusal) return this.allow(at.res, ok, false);
      this.refuse(at, 429, refusal.message, { "retry-after": String(refusal.retryAfterS) });
    });
  }

  /**
   * Whether the proxy may cache this admission: it asked to (the cache-key
   * header) under a key that is exactly the SHA-1 of what decided it — the key
   * header, the Authorization header and the original URI, each ended by a line
   * break but the last (none of them can hold one) —
   * and no API header named the API. (SHA-1 as NGINX's set-misc module computes
   * it; the cache key holds no credential in clear.)
   */
  private cacheable(req: IncomingMessage, at: Refusal): boolean {
    const claimed = req.headers[this.h.cacheKey];
    if (typeof claimed !== "string" || at.cacheKeyInput === undefined) return false;
    const api = this.options.config.apiHeader;
    if (api !== undefined && req.headers[api] !== undefined) return false;
    return claimed.toLowerCase() === createHash("sha1").update(at.cacheKeyInput, "utf8").digest("hex");
  }

  /**
   * Sends the admission. Cacheable: `X-Accel-Expires: @<this second>` (NGINX
   * keeps it to the end of the current second, so a revoke or update reaches
   * the proxy within 1 − {@link CACHE_MARGIN_MS}/1000 s on the same clock); else
   * `Cache-Control: no-store`.
   */
  private allow(res: ServerResponse, headers: string[], cacheable: boolean): void {
    this.options.observe?.(200);
    const now = Date.now();
    // Not in the first CACHE_MARGIN_MS of a second: a revoke right after would otherwise wait a whole second.
    const cache = cacheable && now % 1000 >= CACHE_MARGIN_MS;
    res.writeHead(200, headers.concat(cache ? ["x-accel-expires", `@${Math.floor(now / 1000)}`] : NO_STORE));
    res.end();
  }

  private deny(at: Refusal, status: 401 | 403, message: string, challenges?: string[]): void {
    this.options.logger.debug({ status, reason: message }, "key check denied");
    this.refuse(at, status, message, challenges ? { "www-authenticate": challenges.join(", ") } : {});
  }

  private unavailable(at: Refusal, err: unknown): void {
    this.options.logger.error(
      { err: { message: (err as Error)?.message } },
      "key check: the credential store cannot be read",
    );
    this.refuse(at, 503, "the credential store cannot be read right now; try again shortly", { "retry-after": "1" });
  }

  /** Sends a refusal: the ErrorResponse as the body and, for proxies that drop the body, in the error header. */
  private refuse(at: Refusal, status: CheckStatus, message: string, headers: Record<string, string>): void {
    this.options.observe?.(status);
    const body = asciiJson(errorResponse(status, [message], at.where));
    at.res.writeHead(status, {
      ...headers,
      [this.h.error]: body,
      "cache-control": "no-store",
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(body),
    });
    at.res.end(body);
  }
}

/** Where an answer goes: the response, the path a refusal's ErrorResponse names, and what a proxy's cache key must digest. */
interface Refusal {
  res: ServerResponse;
  where: string;
  /** `<key header>\n<Authorization>\n<original URI>` when the proxy stated the original URI; else undefined (never cached). */
  cacheKeyInput: string | undefined;
}

const NO_STORE = ["cache-control", "no-store"];

/** An admission in the first this-many ms of a second is not cached: a cached one then lives at most 1000 − this ms. */
export const CACHE_MARGIN_MS = 25;
