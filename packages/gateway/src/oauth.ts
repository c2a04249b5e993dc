/**
 * OAuth 2.0 for the embedded CLIENT_CREDENTIALS gateways — only what a
 * client-credentials authorization server needs, written against the RFCs:
 *
 * - token endpoint, client credentials grant (RFC 6749 §4.4), client
 *   authentication `client_secret_basic` (§2.3.1, form-urlencoded id and secret
 *   in HTTP Basic) and `client_secret_post`; errors per §5.2;
 * - JWT access tokens, RFC 9068 profile (`typ: at+jwt`; iss, sub = client id,
 *   aud, exp, iat, jti, client_id, scope), signed with {@link SigningKeys} via `jose`;
 * - JWKS (RFC 7517) of the signing keys;
 * - Authorization Server Metadata (RFC 8414);
 * - token introspection (RFC 7662), for any caller authenticated as a live
 *   client of an embedded gateway.
 *
 * Clients are the credentials the `provider: local` CLIENT_CREDENTIALS gateways
 * issued: client id = the credential's native id, secret checked against its
 * SHA-256 digest in constant time (the secret is never stored). Scopes are the
 * APIs the client holds (or the scope names configured per API); a revoked
 * client's tokens introspect as inactive and it gets no new one.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { jwtVerify, SignJWT, type JWTPayload } from "jose";
import { verifySecretHash } from "@credhook/core/provider-kit";
import type { Logger } from "@credhook/core/provider";
import type { OAuthConfig } from "./config.js";
import type { CredentialDirectory, CredentialGrant } from "./directory.js";
import { FormError, readForm, sendJson, sendOAuthError, sendProblem } from "./http.js";
import type { PlanLimiter } from "./limits.js";
import type { SigningKeys } from "./signing-keys.js";

/** Paths of the OAuth endpoints, relative to the gateway's base. */
export const OAUTH_PATHS = {
  token: "/oauth2/token",
  introspection: "/oauth2/introspect",
  jwks: "/.well-known/jwks.json",
  metadata: "/.well-known/oauth-authorization-server",
  /**
   * The same metadata where OpenID Connect discovery looks (RFC 8414 §5: its
   * fields are compatible), so a client library's default discovery
   * (openid-client's `discovery()`) works without `algorithm: "oauth2"`.
   */
  openidConfiguration: "/.well-known/openid-configuration",
} as const;

const FORM_LIMIT_BYTES = 16 * 1024;

/** An access token that verified, and the client it was issued to (still live). */
export interface VerifiedToken {
  claims: JWTPayload & { client_id?: string; scope?: string };
  client: CredentialGrant;
  /** The token's scopes the client still holds. */
  scopes: string[];
}

/** Options of {@link OAuthServer}. */
export interface OAuthServerOptions {
  config: OAuthConfig;
  directory: CredentialDirectory;
  limiter: PlanLimiter;
  keys: SigningKeys;
  /** The issuer identifier (the gateway's public base URL, no trailing slash); read per request (known once listening). */
  issuer: () => string;
  logger: Logger;
}

type ClientAuth = { client: CredentialGrant } | { status: 400 | 401; error: string; description: string };

/** Decodes one half of a client_secret_basic credential (RFC 6749 §2.3.1: form-urlencoded before base64). */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, "%20"));
}

/** The OAuth endpoints of the embedded gateway. */
export class OAuthServer {
  constructor(private readonly options: OAuthServerOptions) {}

  /** Scope names of API `apiId`: the configured ones, else the API id itself. */
  scopesOf(apiId: string): readonly string[] {
    return this.options.config.scopes[apiId] ?? [apiId];
  }

  /** Scope → the client's APIs it covers, for every API the client holds. */
  private scopeMap(client: CredentialGrant): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const api of client.apis.keys()) {
      for (const s of this.scopesOf(api)) out.set(s, [...(out.get(s) ?? []), api]);
    }
    return out;
  }

  /** RFC 8414 metadata. */
  metadata(): Record<string, unknown> {
    const issuer = this.options.issuer();
    return {
      issuer,
      token_endpoint: issuer + OAUTH_PATHS.token,
      jwks_uri: issuer + OAUTH_PATHS.jwks,
      introspection_endpoint: issuer + OAUTH_PATHS.introspection,
      grant_types_supported: ["client_credentials"],
      // No authorization endpoint: no response type is supported (RFC 8414 §2 requires the member).
      response_types_supported: [],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      ...(Object.keys(this.options.config.scopes).length > 0
        ? { scopes_supported: [...new Set(Object.values(this.options.config.scopes).flat())] }
        : {}),
    };
  }

  /** GET metadata. */
  serveMetadata(res: ServerResponse): void {
    sendJson(res, 200, this.metadata(), { "cache-control": "public, max-age=300" });
  }

  /** GET JWKS. */
  serveJwks(res: ServerResponse): void {
    sendJson(res, 200, this.options.keys.jwks(), { "cache-control": "public, max-age=300" });
  }

  /**
   * Authenticates the client of a token or introspection request: HTTP Basic
   * (client_secret_basic) or client_id + client_secret in the body
   * (client_secret_post), never both (RFC 6749 §2.3).
   */
  private async authenticate(req: IncomingMessage, form: Map<string, string>): Promise<ClientAuth> {
    const header = req.headers.authorization;
    const bodySecret = form.get("client_secret");
    let clientId: string | undefined;
    let secret: string | undefined;
    if (header !== undefined) {
      if (bodySecret !== undefined)
        return {
          status: 400,
          error: "invalid_request",
          description: "client authentication must use one method: HTTP Basic or client_secret in the body, not both",
        };
      const m = /^Basic ([A-Za-z0-9+/]+={0,2})$/i.exec(header.trim());
      const decoded = m ? Buffer.from(m[1]!, "base64").toString("utf8") : "";
      const colon = decoded.indexOf(":");
      if (colon < 0)
        return {
          status: 401,
          error: "invalid_client",
          description: "the Authorization header must be Basic base64(client_id:client_secret)",
        };
      try {
        clientId = formDecode(decoded.slice(0, colon));
        secret = formDecode(decoded.slice(colon + 1));
      } catch {
        return {
          status: 400,
          error: "invalid_request",
          description:
            "client_id and client_secret in the Authorization header must be form-urlencoded (RFC 6749 §2.3.1)",
        };
      }
      const bodyId = form.get("client_id");
      if (bodyId !== undefined && bodyId !== clientId)
        return {
          status: 400,
          error: "invalid_request",
          description: "client_id in the body differs from the one in the Authorization header",
        };
    } else if (bodySecret !== undefined) {
      clientId = form.get("client_id");
      secret = bodySecret;
      if (clientId === undefined)
        return { status: 400, error: "invalid_request", description: "client_secret in the body needs client_id" };
    } else {
      return {
        status: 401,
        error: "invalid_client",
        description:
          "client authentication is required: HTTP Basic (client_secret_basic) or client_id and client_secret in the body (client_secret_post)",
      };
    }
    const client = await this.options.directory.findClient(clientId);
    // One answer for unknown, revoked and wrong-secret clients: which one is no business of the caller.
    if (!client || !client.enabled || !verifySecretHash(secret, client.secretHash)) {
      return {
        status: 401,
        error: "invalid_client",
        description: "client authentication failed: unknown client, revoked client, or wrong secret",
      };
    }
    return { client };
  }

  private sendAuthError(
    res: ServerResponse,
    path: string,
    auth: Exclude<ClientAuth, { client: CredentialGrant }>,
  ): void {
    // RFC 6749 §5.2: a 401 invalid_client carries WWW-Authenticate with the scheme the client may use.
    const headers: Record<string, string> =
      auth.status === 401 ? { "www-authenticate": `Basic realm="${this.options.issuer()}", charset="UTF-8"` } : {};
    sendOAuthError(res, auth.status, path, auth.error, auth.description, headers);
  }

  /** Reads the form body, answering the error itself when it cannot. @returns undefined when answered */
  private async form(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
  ): Promise<Map<string, string> | undefined> {
    try {
      return await readForm(req, FORM_LIMIT_BYTES);
    } catch (err) {
      if (!(err instanceof FormError)) throw err;
      if (err.status === 413) sendProblem(res, 413, path, [err.message], { "cache-control": "no-store" });
      else sendOAuthError(res, 400, path, "invalid_request", err.message);
      return undefined;
    }
  }

  /** POST token endpoint (RFC 6749 §4.4.2 request, §5.1 response, §5.2 errors). */
  async token(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const form = await this.form(req, res, path);
    if (!form) return;
    const grantType = form.get("grant_type");
    if (grantType === undefined)
      return sendOAuthError(res, 400, path, "invalid_request", "grant_type is required (client_credentials)");
    if (grantType !== "client_credentials") {
      return sendOAuthError(
        res,
        400,
        path,
        "unsupported_grant_type",
        `grant_type '${grantType.slice(0, 60)}' is not supported; this server issues tokens for grant_type=client_credentials only`,
      );
    }
    const auth = await this.authenticate(req, form);
    if (!("client" in auth)) return this.sendAuthError(res, path, auth);
    const client = auth.client;
    const available = this.scopeMap(client);
    const requested = form.get("scope")?.split(" ").filter(Boolean);
    let granted: string[];
    if (requested) {
      const unknown = requested.filter((s) => !available.has(s));
      if (unknown.length > 0) {
        return sendOAuthError(
          res,
          400,
          path,
          "invalid_scope",
          `scope ${unknown.map((s) => `'${s.slice(0, 60)}'`).join(", ")} is not granted to this client (it may request: ${[...available.keys()].join(" ") || "nothing"})`,
        );
      }
      granted = [...new Set(requested)];
    } else {
      granted = [...available.keys()];
    }
    if (granted.length === 0)
      return sendOAuthError(res, 400, path, "invalid_scope", "the client holds no API, so no scope can be granted");
    const apis = [...new Set(granted.flatMap((s) => available.get(s)!))];
    const plans = [...new Set(apis.flatMap((a) => client.apis.get(a) ?? []))];
    const refusal = await this.options.limiter.admit(client.provider, client.credentialId, plans);
    if (refusal) {
      return sendProblem(res, 429, path, [refusal.message], {
        "retry-after": String(refusal.retryAfterS),
        "cache-control": "no-store",
      });
    }
    const { config, keys } = this.options;
    const signer = keys.signer();
    const now = Math.floor(Date.now() / 1000);
    const accessToken = await new SignJWT({ client_id: client.nativeId, scope: granted.join(" ") })
      .setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: "at+jwt" })
      .setIssuer(this.options.issuer())
      .setSubject(client.nativeId)
      .setAudience(config.audience ?? (apis.length === 1 ? apis[0]! : apis))
      .setIssuedAt(now)
      .setExpirationTime(now + config.tokenTtlS)
      .setJti(randomUUID())
      .sign(signer.key);
    this.options.logger.info(
      {
        clientId: client.nativeId,
        credentialId: client.credentialId,
        gateway: client.gateway,
        scope: granted.join(" "),
      },
      "access token issued",
    );
    sendJson(
      res,
      200,
      { access_token: accessToken, token_type: "Bearer", expires_in: config.tokenTtlS, scope: granted.join(" ") },
      { "cache-control": "no-store", pragma: "no-cache" },
    );
  }

  /**
   * Verifies an access token this server issued: signature (a published key),
   * `typ: at+jwt`, issuer, expiry; and that its client is still live.
   * @returns undefined for any token that is not (or no longer) valid
   */
  async verifyAccessToken(token: string): Promise<VerifiedToken | undefined> {
    let claims: VerifiedToken["claims"];
    try {
      ({ payload: claims } = await jwtVerify(
        token,
        async (header) => {
          const k = await this.options.keys.verificationKey(header.kid);
          if (!k || k.alg !== header.alg) throw new Error("unknown signing key");
          return k.key;
        },
        { issuer: this.options.issuer(), typ: "at+jwt", algorithms: ["RS256", "ES256"], clockTolerance: 5 },
      ));
    } catch {
      return undefined;
    }
    if (typeof claims.client_id !== "string") return undefined;
    const client = await this.options.directory.findClient(claims.client_id);
    if (!client || !client.enabled) return undefined;
    const held = this.scopeMap(client);
    const scopes = (typeof claims.scope === "string" ? claims.scope.split(" ") : []).filter((s) => held.has(s));
    return { claims, client, scopes };
  }

  /** POST introspection endpoint (RFC 7662 §2.1 request, §2.2 response). */
  async introspect(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const form = await this.form(req, res, path);
    if (!form) return;
    const auth = await this.authenticate(req, form);
    if (!("client" in auth)) return this.sendAuthError(res, path, auth);
    const token = form.get("token");
    if (token === undefined) return sendOAuthError(res, 400, path, "invalid_request", "token is required");
    const v = await this.verifyAccessToken(token);
    const noStore = { "cache-control": "no-store", pragma: "no-cache" };
    if (!v) return sendJson(res, 200, { active: false }, noStore);
    const c = v.claims;
    sendJson(
      res,
      200,
      {
        active: true,
        scope: v.scopes.join(" "),
        client_id: c.client_id,
        token_type: "Bearer",
        exp: c.exp,
        iat: c.iat,
        sub: c.sub,
        aud: c.aud,
        iss: c.iss,
        jti: c.jti,
      },
      noStore,
    );
  }
}
