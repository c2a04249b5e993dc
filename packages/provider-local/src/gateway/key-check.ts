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
 *    client) id, API and plans — for the proxy to pass upstream.
 *
 * NGINX's `auth_request` allows only 2xx, 401 and 403 from the subrequest
 * (anything else becomes 500); `examples/nginx/` shows how the 429 reaches the
 * client all the same.
 */
import { createHash } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "@credhook/core";
import type { KeyCheckConfig } from "./config.js";
import type { CredentialDirectory, CredentialGrant } from "./directory.js";
import { headerValue, sendProblem, splitTarget } from "./http.js";
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
  private readonly h: { app: string; developer: string; credentialId: string; keyId: string; clientId: string; api: string; plans: string };

  constructor(private readonly options: KeyCheckOptions) {
    const c = options.config;
    this.rules = [...c.apis].map((r) => ({ prefix: r.pathPrefix, api: r.api })).sort((a, b) => b.prefix.length - a.prefix.length);
    this.challenges = [`APIKey realm="credhook", header="${c.header}"`, ...(options.oauth ? ['Bearer realm="credhook"'] : [])];
    const p = c.responseHeaderPrefix;
    this.h = {
      app: `${p}app`,
      developer: `${p}developer`,
      credentialId: `${p}credential-id`,
      keyId: `${p}key-id`,
      clientId: `${p}client-id`,
      api: `${p}api`,
      plans: `${p}plans`,
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

  /** Answers one check. `path` and `query` are the check request's own (relative to the gateway's base). */
  handle(req: IncomingMessage, res: ServerResponse, path: string, query: string): void | Promise<void> {
    const c = this.options.config;
    const given = req.headers[c.originalUriHeader];
    const original = typeof given === "string" && given !== "" ? splitTarget(given) : { path: path.slice(KEY_CHECK_PATH.length) || "/", query };
    const raw = req.headers[c.header];
    let key = Array.isArray(raw) ? raw[0] : raw;
    if (!key && c.queryParam && original.query) key = new URLSearchParams(original.query).get(c.queryParam) ?? undefined;
    if (!key) {
      const auth = req.headers.authorization;
      if (this.options.oauth && auth && /^bearer /i.test(auth)) return this.bearer(req, res, path, original.path, auth.slice(7).trim());
      return this.deny(res, path, 401, `no API key: send it in the ${c.header} header${c.queryParam ? ` or the ${c.queryParam} query parameter` : ""}`, this.challenges);
    }
    const digest = createHash("sha256").update(key, "utf8").digest("hex");
    const cached = this.options.directory.peekKey(digest);
    if (cached !== undefined) return this.decide(req, res, path, original.path, cached);
    return this.options.directory.findKey(digest).then(
      (grant) => this.decide(req, res, path, original.path, grant),
      (err: unknown) => this.unavailable(res, path, err),
    );
  }

  private decide(req: IncomingMessage, res: ServerResponse, path: string, originalPath: string, grant: CredentialGrant | null): void | Promise<void> {
    if (!grant || !grant.enabled) return this.deny(res, path, 401, "the API key is not valid (unknown or revoked)", this.challenges);
    return this.admit(req, res, path, originalPath, grant, this.h.keyId);
  }

  private async bearer(req: IncomingMessage, res: ServerResponse, path: string, originalPath: string, token: string): Promise<void> {
    let v;
    try {
      v = await this.options.oauth!.verifyAccessToken(token);
    } catch (err) {
      return this.unavailable(res, path, err);
    }
    if (!v) return this.deny(res, path, 401, "the access token is not valid (expired, not issued here, or its client was revoked)", ['Bearer realm="credhook", error="invalid_token"']);
    const api = this.apiOf(req, originalPath);
    if (api !== undefined && !this.options.oauth!.scopesOf(api).some((s) => v.scopes.includes(s))) {
      return this.deny(res, path, 403, `the access token has no scope of API '${api}'`, [`Bearer realm="credhook", error="insufficient_scope", scope="${this.options.oauth!.scopesOf(api).join(" ")}"`]);
    }
    return this.admit(req, res, path, originalPath, v.client, this.h.clientId);
  }

  private admit(req: IncomingMessage, res: ServerResponse, path: string, originalPath: string, grant: CredentialGrant, idHeader: string): void | Promise<void> {
    const api = this.apiOf(req, originalPath);
    if (api === undefined) {
      return this.deny(res, path, 403, `no API is configured for path '${originalPath.slice(0, 200)}' (embeddedGateway.keyCheck.apis${this.options.config.apiHeader ? ` or the ${this.options.config.apiHeader} header` : ""})`);
    }
    const plans = grant.apis.get(api);
    if (!plans) return this.deny(res, path, 403, `the credential does not hold API '${api.slice(0, 200)}'`);
    // The answer's headers, as writeHead's flat [name, value, …] list, built once per cached credential and API.
    let headers = grant.memo.get(api) as string[] | undefined;
    if (!headers) {
      headers = [
        this.h.app,
        headerValue(grant.appName),
        this.h.developer,
        headerValue(grant.developer),
        this.h.credentialId,
        grant.credentialId,
        idHeader,
        grant.nativeId,
        this.h.api,
        headerValue(api),
        this.h.plans,
        headerValue(plans.join(",")),
        "cache-control",
        "no-store",
        "content-length",
        "0",
      ];
      grant.memo.set(api, headers);
    }
    if (!this.options.limiter.hasLimits(grant.provider, plans)) return this.allow(res, headers);
    const ok = headers;
    return this.options.limiter.admit(grant.provider, grant.credentialId, plans).then((refusal) => {
      if (!refusal) return this.allow(res, ok);
      this.options.observe?.(429);
      sendProblem(res, 429, this.options.basePath + path, [refusal.message], { "retry-after": String(refusal.retryAfterS), "cache-control": "no-store" });
    });
  }

  private allow(res: ServerResponse, headers: string[]): void {
    this.options.observe?.(200);
    res.writeHead(200, headers);
    res.end();
  }

  private deny(res: ServerResponse, path: string, status: 401 | 403, message: string, challenges?: string[]): void {
    this.options.observe?.(status);
    this.options.logger.debug({ status, reason: message }, "key check denied");
    sendProblem(res, status, this.options.basePath + path, [message], { "cache-control": "no-store", ...(challenges ? { "www-authenticate": challenges.join(", ") } : {}) });
  }

  private unavailable(res: ServerResponse, path: string, err: unknown): void {
    this.options.observe?.(503);
    this.options.logger.error({ err: { message: (err as Error)?.message } }, "key check: the credential store cannot be read");
    sendProblem(res, 503, this.options.basePath + path, ["the credential store cannot be read right now; try again shortly"], { "retry-after": "1", "cache-control": "no-store" });
  }
}
