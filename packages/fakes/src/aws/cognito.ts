/**
 * An in-memory fake of the Amazon Cognito user-pool control plane for app
 * clients and resource servers (JSON 1.1: `POST /` with
 * `X-Amz-Target: AWSCognitoIdentityProviderService.<Op>`), plus the user pool
 * domain's OAuth2 token endpoint (`POST /oauth2/token`, client_credentials grant).
 *
 * Faithful to https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/
 * in what credhook relies on:
 * - UpdateUserPoolClient resets every omitted field to its default
 *   (https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_UpdateUserPoolClient.html);
 * - UpdateResourceServer replaces the whole scope list;
 * - a scope not on a resource server is ScopeDoesNotExistException;
 * - client_credentials must be the only flow and needs a client secret (InvalidOAuthFlowException);
 * - ListUserPoolClients pagination (MaxResults 1–60, NextToken);
 * - quotas (https://docs.aws.amazon.com/cognito/latest/developerguide/limits.html):
 *   1,000 app clients per pool, 25 resource servers, 100 scopes per resource
 *   server, 50 scopes per client, and ≤ 5 requests per second per operation;
 * - the token endpoint (https://docs.aws.amazon.com/cognito/latest/developerguide/token-endpoint.html):
 *   form-encoded `grant_type=client_credentials[&scope=…]`, Basic client_id:client_secret,
 *   answers `{access_token, expires_in: 3600, token_type: "Bearer"}` or `{error}`.
 */
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type FakeClock, systemClock } from "../clock.js";
import {
  applyAndAnswer,
  AwsFakeError,
  decodeToken,
  encodeToken,
  randomId,
  TokenBucket,
  type FaultInjector,
  type OperationHook,
} from "./faults.js";

/** A scope on a resource server. */
export interface FakeScope {
  ScopeName: string;
  ScopeDescription: string;
}

/** A resource server as the fake holds it. */
export interface FakeResourceServer {
  Identifier: string;
  Name: string;
  Scopes: FakeScope[];
}

/** An app client as the fake holds it (the DescribeUserPoolClient shape, secret included). */
export interface FakeUserPoolClient {
  UserPoolId: string;
  ClientId: string;
  ClientName: string;
  ClientSecret?: string;
  CreationDate: number;
  LastModifiedDate: number;
  [field: string]: unknown;
}

/** A user pool as the fake holds it. */
export interface FakeUserPool {
  Id: string;
  Name: string;
  /** Prefix domain (`<Domain>.auth.<region>.amazoncognito.com`). */
  Domain?: string;
  CustomDomain?: string;
  clients: Map<string, FakeUserPoolClient>;
  resourceServers: Map<string, FakeResourceServer>;
}

/** Options of the Cognito fake. */
export interface CognitoFakeOptions {
  /** Enforce the per-operation rate quota. @default true */
  enforceQuotas?: boolean;
  /** Requests per second per operation and pool. @default 5 */
  operationRps?: number;
  /** App clients per pool. @default 1000 */
  maxClients?: number;
  /** AWS region used in pool ids. @default "us-east-1" */
  region?: string;
  /**
   * The clock of the rate quota, late applies, `CreationDate`/`LastModifiedDate` and the access
   * tokens' `iat`/`exp` (and their expiry check): a `ManualClock` in a test that waits for them.
   * @default systemClock
   */
  clock?: FakeClock;
  /** Test control: at most this many app clients per ListUserPoolClients page whatever `MaxResults` asks (to exercise `NextToken` paging with few clients). */
  maxPageSize?: number;
}

/**
 * Fields UpdateUserPoolClient sets, with the default each one is reset to when
 * the request omits it. `undefined` means "absent from Describe".
 */
const CLIENT_DEFAULTS: Record<string, () => unknown> = {
  RefreshTokenValidity: () => 30,
  AccessTokenValidity: () => 60,
  IdTokenValidity: () => 60,
  TokenValidityUnits: () => ({ AccessToken: "minutes", IdToken: "minutes", RefreshToken: "days" }),
  ReadAttributes: () => undefined,
  WriteAttributes: () => undefined,
  ExplicitAuthFlows: () => ["ALLOW_REFRESH_TOKEN_AUTH", "ALLOW_CUSTOM_AUTH", "ALLOW_USER_SRP_AUTH"],
  SupportedIdentityProviders: () => undefined,
  CallbackURLs: () => undefined,
  LogoutURLs: () => undefined,
  DefaultRedirectURI: () => undefined,
  AllowedOAuthFlows: () => undefined,
  AllowedOAuthScopes: () => undefined,
  AllowedOAuthFlowsUserPoolClient: () => false,
  AnalyticsConfiguration: () => undefined,
  PreventUserExistenceErrors: () => "ENABLED",
  EnableTokenRevocation: () => true,
  EnablePropagateAdditionalUserContextData: () => false,
  AuthSessionValidity: () => 3,
  RefreshTokenRotation: () => undefined,
};

const STANDARD_SCOPES = new Set(["openid", "email", "phone", "profile", "aws.cognito.signin.user.admin"]);
const CLIENT_NAME_RE = /^[\w\s+=,.@-]{1,128}$/;
const SCOPE_NAME_RE = /^[\x21\x23-\x2E\x30-\x5B\x5D-\x7E]{1,256}$/;
const MAX_SCOPES_PER_CLIENT = 50;
const MAX_SCOPES_PER_SERVER = 100;
const MAX_RESOURCE_SERVERS = 25;
const TOKEN_TTL_S = 3600;

const notFoundPool = (id: unknown) =>
  new AwsFakeError(400, "ResourceNotFoundException", `User pool ${String(id)} does not exist.`);
const invalid = (message: string) => new AwsFakeError(400, "InvalidParameterException", message);

/**
 * The Cognito fake's state and request handlers. Tests seed pools and resource
 * servers with {@link CognitoFake.createUserPool} and
 * {@link CognitoFake.createResourceServer}, and inspect clients directly.
 */
export class CognitoFake {
  /** User pools by id. */
  readonly pools = new Map<string, FakeUserPool>();
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly enforceQuotas: boolean;
  private readonly operationRps: number;
  private readonly maxClients: number;
  private readonly maxPageSize: number;
  private readonly region: string;
  private readonly signingKey = randomId(32);
  private readonly clock: FakeClock;

  constructor(
    private readonly faults: FaultInjector,
    options: CognitoFakeOptions = {},
  ) {
    this.enforceQuotas = options.enforceQuotas ?? true;
    this.operationRps = options.operationRps ?? 5;
    this.maxClients = options.maxClients ?? 1000;
    this.maxPageSize = options.maxPageSize ?? 60;
    this.region = options.region ?? "us-east-1";
    this.clock = options.clock ?? systemClock;
  }

  /** Creates a user pool (id `<region>_<9 chars>` unless given). */
  createUserPool(pool: { id?: string; name?: string; domain?: string; customDomain?: string } = {}): FakeUserPool {
    const id =
      pool.id ?? `${this.region}_${randomId(9, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")}`;
    const p: FakeUserPool = {
      Id: id,
      Name: pool.name ?? `pool-${id}`,
      ...(pool.domain ? { Domain: pool.domain } : {}),
      ...(pool.customDomain ? { CustomDomain: pool.customDomain } : {}),
      clients: new Map(),
      resourceServers: new Map(),
    };
    this.pools.set(id, p);
    return p;
  }

  /** Creates a resource server with `scopes` (names) on a pool. */
  createResourceServer(
    poolId: string,
    identifier: string,
    scopes: string[] = [],
    name = identifier.replace(/[^\w\s+=,.@-]/g, "-"),
  ): FakeResourceServer {
    const pool = this.pools.get(poolId);
    if (!pool) throw new Error(`no user pool ${poolId}`);
    const rs: FakeResourceServer = {
      Identifier: identifier,
      Name: name,
      Scopes: scopes.map((s) => ({ ScopeName: s, ScopeDescription: s })),
    };
    pool.resourceServers.set(identifier, rs);
    return rs;
  }

  /** Every app client of every pool. */
  allClients(): FakeUserPoolClient[] {
    return [...this.pools.values()].flatMap((p) => [...p.clients.values()]);
  }

  /** Handles one JSON 1.1 request (`operation` from `X-Amz-Target`). */
  async handle(operation: string, body: Buffer, res: ServerResponse, operationHook: OperationHook): Promise<void> {
    const input = (body.length > 0 ? JSON.parse(body.toString("utf8")) : {}) as Record<string, unknown>;
    await operationHook(operation, {
      action: `cognito-idp:${operation}`,
      resource: `arn:aws:cognito-idp:${this.region}:123456789012:userpool/${String(input.UserPoolId ?? "")}`,
    });
    if (this.enforceQuotas) {
      const key = `${String(input.UserPoolId ?? "")}|${operation}`;
      let bucket = this.buckets.get(key);
      if (!bucket) this.buckets.set(key, (bucket = new TokenBucket(this.operationRps, this.operationRps, this.clock)));
      const wait = bucket.take();
      if (wait > 0) {
        this.faults.countThrottled(operation);
        throw new AwsFakeError(400, "TooManyRequestsException", "Rate exceeded", {
          "retry-after": String(Math.max(1, Math.ceil(wait))),
        });
      }
    }
    await applyAndAnswer(
      this.faults.takeApply("cognito", operation),
      res,
      () => this.dispatch(operation, input),
      (out) => {
        res.writeHead(200, { "content-type": "application/x-amz-json-1.1", "x-amzn-requestid": randomUUID() });
        res.end(JSON.stringify(out));
      },
      this.clock,
    );
  }

  private pool(id: unknown): FakeUserPool {
    const pool = typeof id === "string" ? this.pools.get(id) : undefined;
    if (!pool) throw notFoundPool(id);
    return pool;
  }

  private client(pool: FakeUserPool, id: unknown): FakeUserPoolClient {
    const client = typeof id === "string" ? pool.clients.get(id) : undefined;
    if (!client)
      throw new AwsFakeError(400, "ResourceNotFoundException", `User pool client ${String(id)} does not exist.`);
    return client;
  }

  private dispatch(op: string, input: Record<string, unknown>): unknown {
    switch (op) {
      case "DescribeUserPool": {
        const p = this.pool(input.UserPoolId);
        return {
          UserPool: {
            Id: p.Id,
            Name: p.Name,
            Arn: `arn:aws:cognito-idp:${this.region}:123456789012:userpool/${p.Id}`,
            ...(p.Domain ? { Domain: p.Domain } : {}),
            ...(p.CustomDomain ? { CustomDomain: p.CustomDomain } : {}),
          },
        };
      }
      case "CreateUserPoolClient":
        return { UserPoolClient: this.clientJson(this.createClient(input)) };
      case "DescribeUserPoolClient": {
        const pool = this.pool(input.UserPoolId);
        return { UserPoolClient: this.clientJson(this.client(pool, input.ClientId)) };
      }
      case "UpdateUserPoolClient":
        return { UserPoolClient: this.clientJson(this.updateClient(input)) };
      case "DeleteUserPoolClient": {
        const pool = this.pool(input.UserPoolId);
        this.client(pool, input.ClientId);
        pool.clients.delete(input.ClientId as string);
        return {};
      }
      case "ListUserPoolClients": {
        const pool = this.pool(input.UserPoolId);
        const asked = input.MaxResults === undefined ? 60 : Number(input.MaxResults);
        if (!Number.isInteger(asked) || asked < 1 || asked > 60)
          throw invalid(
            "1 validation error detected: Value at 'maxResults' failed to satisfy constraint: Member must have value between 1 and 60",
          );
        const max = Math.min(asked, this.maxPageSize);
        const start = input.NextToken === undefined ? 0 : decodeToken(String(input.NextToken));
        if (start === undefined) throw invalid("Invalid pagination token");
        const all = [...pool.clients.values()];
        const page = all
          .slice(start, start + max)
          .map((c) => ({ ClientId: c.ClientId, UserPoolId: c.UserPoolId, ClientName: c.ClientName }));
        return { UserPoolClients: page, ...(start + max < all.length ? { NextToken: encodeToken(start + max) } : {}) };
      }
      case "CreateResourceServer": {
        const pool = this.pool(input.UserPoolId);
        const id = this.identifier(input.Identifier);
        if (pool.resourceServers.has(id)) throw invalid(`${id} already exists in user pool ${pool.Id}.`);
        if (pool.resourceServers.size >= MAX_RESOURCE_SERVERS)
          throw new AwsFakeError(
            400,
            "LimitExceededException",
            `A user pool can have at most ${MAX_RESOURCE_SERVERS} resource servers.`,
          );
        const rs: FakeResourceServer = {
          Identifier: id,
          Name: this.rsName(input.Name),
          Scopes: this.scopes(input.Scopes),
        };
        pool.resourceServers.set(id, rs);
        return { ResourceServer: { UserPoolId: pool.Id, ...structuredClone(rs) } };
      }
      case "DescribeResourceServer": {
        const pool = this.pool(input.UserPoolId);
        const rs = pool.resourceServers.get(String(input.Identifier));
        if (!rs)
          throw new AwsFakeError(
            400,
            "ResourceNotFoundException",
            `Resource server ${String(input.Identifier)} does not exist.`,
          );
        return { ResourceServer: { UserPoolId: pool.Id, ...structuredClone(rs) } };
      }
      case "UpdateResourceServer": {
        const pool = this.pool(input.UserPoolId);
        const id = String(input.Identifier);
        if (!pool.resourceServers.has(id))
          throw new AwsFakeError(400, "ResourceNotFoundException", `Resource server ${id} does not exist.`);
        // Update replaces the whole definition: omitted Scopes means no scopes.
        const rs: FakeResourceServer = {
          Identifier: id,
          Name: this.rsName(input.Name),
          Scopes: this.scopes(input.Scopes),
        };
        pool.resourceServers.set(id, rs);
        return { ResourceServer: { UserPoolId: pool.Id, ...structuredClone(rs) } };
      }
      default:
        throw new AwsFakeError(400, "UnknownOperationException", `Unsupported operation ${op}`);
    }
  }

  private identifier(v: unknown): string {
    if (typeof v !== "string" || !/^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/.test(v))
      throw invalid("Invalid resource server identifier");
    return v;
  }

  private rsName(v: unknown): string {
    if (typeof v !== "string" || !/^[\w\s+=,.@-]{1,256}$/.test(v))
      throw invalid(
        "1 validation error detected: Value at 'name' failed to satisfy constraint: Member must not be null",
      );
    return v;
  }

  private scopes(v: unknown): FakeScope[] {
    const list = (v ?? []) as Array<{ ScopeName?: unknown; ScopeDescription?: unknown }>;
    if (!Array.isArray(list)) throw invalid("Scopes must be a list");
    if (list.length > MAX_SCOPES_PER_SERVER)
      throw new AwsFakeError(
        400,
        "LimitExceededException",
        `A resource server can have at most ${MAX_SCOPES_PER_SERVER} scopes.`,
      );
    const seen = new Set<string>();
    return list.map((s) => {
      if (typeof s.ScopeName !== "string" || !SCOPE_NAME_RE.test(s.ScopeName))
        throw invalid(`Invalid scope name ${String(s.ScopeName)}`);
      if (typeof s.ScopeDescription !== "string" || s.ScopeDescription.length < 1 || s.ScopeDescription.length > 256)
        throw invalid(`Invalid description of scope ${s.ScopeName}`);
      if (seen.has(s.ScopeName)) throw invalid(`Duplicate scope ${s.ScopeName}`);
      seen.add(s.ScopeName);
      return { ScopeName: s.ScopeName, ScopeDescription: s.ScopeDescription };
    });
  }

  /** Validates and normalises the settable fields of a client (Create/Update input). */
  private settable(pool: FakeUserPool, input: Record<string, unknown>, hasSecret: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [field, def] of Object.entries(CLIENT_DEFAULTS)) {
      const v = input[field] !== undefined ? structuredClone(input[field]) : def();
      if (v !== undefined) out[field] = v;
    }
    const flows = (out.AllowedOAuthFlows ?? []) as string[];
    const scopes = (out.AllowedOAuthScopes ?? []) as string[];
    for (const f of flows)
      if (!["code", "implicit", "client_credentials"].includes(f)) throw invalid(`Invalid OAuth flow ${f}`);
    if (flows.includes("client_credentials") && flows.length > 1) {
      throw new AwsFakeError(
        400,
        "InvalidOAuthFlowException",
        "client_credentials flow can not be selected along with code flow or implicit flow.",
      );
    }
    if (flows.includes("client_credentials") && !hasSecret) {
      throw new AwsFakeError(
        400,
        "InvalidOAuthFlowException",
        "client_credentials flow can not be selected if client does not have a client secret.",
      );
    }
    if (out.AllowedOAuthFlowsUserPoolClient === true && flows.length === 0) {
      throw invalid(
        "AllowedOAuthFlows and AllowedOAuthScopes are required if user pool client is allowed to use OAuth flows.",
      );
    }
    if (scopes.length > MAX_SCOPES_PER_CLIENT)
      throw new AwsFakeError(
        400,
        "LimitExceededException",
        `An app client can have at most ${MAX_SCOPES_PER_CLIENT} scopes.`,
      );
    for (const s of scopes) {
      if (STANDARD_SCOPES.has(s)) {
        if (flows.includes("client_credentials"))
          throw new AwsFakeError(
            400,
            "InvalidOAuthFlowException",
            "client_credentials flow can only be used with custom scopes.",
          );
        continue;
      }
      const slash = s.lastIndexOf("/");
      const rs = slash > 0 ? pool.resourceServers.get(s.slice(0, slash)) : undefined;
      if (!rs || !rs.Scopes.some((x) => x.ScopeName === s.slice(slash + 1)))
        throw new AwsFakeError(400, "ScopeDoesNotExistException", `Invalid scope requested: ${s}`);
    }
    return out;
  }

  private checkName(name: unknown): string {
    if (typeof name !== "string" || !CLIENT_NAME_RE.test(name)) {
      throw invalid(
        "1 validation error detected: Value at 'clientName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w\\s+=,.@-]+",
      );
    }
    return name;
  }

  private createClient(input: Record<string, unknown>): FakeUserPoolClient {
    const pool = this.pool(input.UserPoolId);
    const name = this.checkName(input.ClientName);
    if (pool.clients.size >= this.maxClients)
      throw new AwsFakeError(
        400,
        "LimitExceededException",
        `User pool ${pool.Id} has reached its limit of ${this.maxClients} app clients.`,
      );
    const hasSecret = input.GenerateSecret === true;
    const fields = this.settable(pool, input, hasSecret);
    const now = this.clock.now() / 1000;
    const client: FakeUserPoolClient = {
      UserPoolId: pool.Id,
      ClientId: randomId(26),
      ClientName: name,
      ...(hasSecret ? { ClientSecret: randomId(51) } : {}),
      CreationDate: now,
      LastModifiedDate: now,
      ...fields,
    };
    pool.clients.set(client.ClientId, client);
    return client;
  }

  private updateClient(input: Record<string, unknown>): FakeUserPoolClient {
    const pool = this.pool(input.UserPoolId);
    const old = this.client(pool, input.ClientId);
    const name = input.ClientName === undefined ? old.ClientName : this.checkName(input.ClientName);
    const fields = this.settable(pool, input, old.ClientSecret !== undefined);
    // Every settable field not in the request is reset to its default: nothing of `old` but identity survives.
    const client: FakeUserPoolClient = {
      UserPoolId: pool.Id,
      ClientId: old.ClientId,
      ClientName: name,
      ...(old.ClientSecret !== undefined ? { ClientSecret: old.ClientSecret } : {}),
      CreationDate: old.CreationDate,
      LastModifiedDate: this.clock.now() / 1000,
      ...fields,
    };
    pool.clients.set(client.ClientId, client);
    return client;
  }

  private clientJson(c: FakeUserPoolClient): unknown {
    return structuredClone(c);
  }

  /**
   * The OAuth2 token endpoint (client_credentials grant only). Answers like
   * Cognito: 200 `{access_token, expires_in, token_type}`, else 400
   * `{error: invalid_request|invalid_client|unauthorized_client|unsupported_grant_type|invalid_scope}`.
   */
  async handleToken(
    req: IncomingMessage,
    body: Buffer,
    res: ServerResponse,
    operationHook: OperationHook,
  ): Promise<void> {
    await operationHook("Token", { action: "oauth2:token", resource: "/oauth2/token" });
    const fail = (error: string, status = 400) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error }));
    };
    if (!String(req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded"))
      return fail("invalid_request");
    const form = new URLSearchParams(body.toString("utf8"));
    let clientId = form.get("client_id") ?? undefined;
    let clientSecret = form.get("client_secret") ?? undefined;
    const auth = req.headers.authorization;
    if (auth?.startsWith("Basic ")) {
      const decoded = Buffer.from(auth.slice(6), "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      if (colon < 0) return fail("invalid_client");
      clientId = decodeURIComponent(decoded.slice(0, colon));
      clientSecret = decodeURIComponent(decoded.slice(colon + 1));
    }
    if (form.get("grant_type") === null) return fail("invalid_request");
    if (!clientId) return fail("invalid_client");
    const client = this.allClients().find((c) => c.ClientId === clientId);
    if (!client || client.ClientSecret === undefined || clientSecret === undefined) return fail("invalid_client");
    const a = Buffer.from(client.ClientSecret);
    const b = Buffer.from(clientSecret);
    if (a.length !== b.length || !timingSafeEqual(a, b)) return fail("invalid_client");
    if (form.get("grant_type") !== "client_credentials") return fail("unsupported_grant_type");
    const allowed = (client.AllowedOAuthScopes ?? []) as string[];
    if (
      client.AllowedOAuthFlowsUserPoolClient !== true ||
      !((client.AllowedOAuthFlows ?? []) as string[]).includes("client_credentials")
    ) {
      return fail("unauthorized_client");
    }
    const requested = form.get("scope");
    const scopes = requested === null ? allowed : requested.split(" ").filter(Boolean);
    if (scopes.length === 0 || scopes.some((s) => !allowed.includes(s))) return fail("invalid_scope");
    const now = Math.floor(this.clock.now() / 1000);
    const token = this.sign({
      sub: client.ClientId,
      token_use: "access",
      scope: scopes.join(" "),
      auth_time: now,
      iss: `https://cognito-idp.${this.region}.amazonaws.com/${client.UserPoolId}`,
      exp: now + TOKEN_TTL_S,
      iat: now,
      version: 2,
      jti: randomUUID(),
      client_id: client.ClientId,
    });
    res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
    res.end(JSON.stringify({ access_token: token, expires_in: TOKEN_TTL_S, token_type: "Bearer" }));
  }

  private sign(payload: Record<string, unknown>): string {
    const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const head = `${enc({ alg: "HS256", typ: "JWT", kid: "fake" })}.${enc(payload)}`;
    return `${head}.${createHmac("sha256", this.signingKey).update(head).digest("base64url")}`;
  }

  /** Verifies a token this fake issued and returns its claims, or undefined. */
  verifyAccessToken(token: string): Record<string, unknown> | undefined {
    const [h, p, s] = token.split(".");
    if (!h || !p || !s) return undefined;
    const expected = createHmac("sha256", this.signingKey).update(`${h}.${p}`).digest("base64url");
    if (expected !== s) return undefined;
    const claims = JSON.parse(Buffer.from(p, "base64url").toString("utf8")) as Record<string, unknown>;
    return typeof claims.exp === "number" && claims.exp > this.clock.now() / 1000 ? claims : undefined;
  }
}
