/**
 * An in-process HTTP fake of the Azure Resource Manager (ARM) endpoints of one
 * API Management service that credhook drives: subscriptions (PUT/GET/HEAD/
 * PATCH/DELETE/list/listSecrets), products and APIs (GET), users (PUT/GET/list)
 * and the service itself (GET), at api-version 2024-05-01.
 *
 * The unmodified `@azure/arm-apimanagement` client talks to it (see the
 * provider's `endpoint` option). It follows the documented behaviour:
 * - `PUT …/subscriptions/{sid}` answers 201 (created) or 200 (replaced), with an
 *   `ETag`; a PUT carrying `If-Match` that does not match answers 412.
 *   https://learn.microsoft.com/rest/api/apimanagement/subscription/create-or-update
 * - `PATCH` and `DELETE` require `If-Match` (an ETag or `*`); a stale ETag is 412.
 *   https://learn.microsoft.com/rest/api/apimanagement/subscription/update
 * - GET never returns keys; `POST …/listSecrets` does.
 *   https://learn.microsoft.com/rest/api/apimanagement/subscription/list-secrets
 * - `scope` is `/apis`, `/apis/{apiId}` or `/products/{productId}`; sid ≤ 256
 *   characters without `*#&+:<>?`; displayName 1–100 characters; keys 1–256.
 * - A subscription created without `state` starts `submitted`.
 * - A product's `subscriptionsLimit` caps the subscriptions one user may own
 *   (400 ValidationError "Subscriptions limit reached for same user").
 * - ARM throttling: a token bucket per subscription + principal, writes 200
 *   burst / 10 per second refill, reads 250 / 25; exhaustion answers 429 with
 *   `Retry-After` (seconds) and code `SubscriptionRequestsThrottled`.
 *   https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling
 * - Errors have ARM's shape `{"error":{"code","message","details"}}`.
 *
 * Undocumented (our model, switchable): whether two subscriptions may share one
 * key (allowed by default; `rejectDuplicateKeys: true` answers 400
 * ValidationError on `primaryKey`), and the status of a PUT whose scope names a
 * missing product or API (400 ValidationError, target `scope`).
 *
 * Fault injection is a JS control API on the returned object: {@link ApimFake.inject}
 * (any status with optional `Retry-After` on any call, reads included; a write
 * applied before its error answer; a request held past the client's timeout and
 * applied afterwards — see {@link FaultSpec}), {@link ApimFake.setLatency},
 * {@link ApimFake.addForeignSubscription} (a subscription someone else made) and
 * {@link ApimFake.idle} (every late write has landed).
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson, startFakeServer, type FakeServer } from "@credhook/provider-testkit";
import { type FakeClock, systemClock } from "../clock.js";

/** Token-bucket parameters of one ARM throttling class. */
export interface BucketOptions {
  /** Tokens when full (the burst). */
  capacity: number;
  /** Tokens added per second. */
  refillPerSecond: number;
}

/** Options of {@link startApimFake}. */
export interface ApimFakeOptions {
  /** Azure subscription id in paths. @default "00000000-0000-0000-0000-000000000000" */
  subscriptionId?: string;
  /** Resource group in paths. @default "rg-credhook" */
  resourceGroup?: string;
  /** API Management service name. @default "apim-credhook" */
  serviceName?: string;
  /** Products that exist (ids, or objects with a per-user subscription limit). @default ["starter", "unlimited"] (APIM's built-in ones) */
  products?: Array<string | { id: string; subscriptionsLimit?: number | null; displayName?: string }>;
  /** APIs that exist. @default ["echo-api"] (APIM's built-in one) */
  apis?: string[];
  /**
   * ARM throttling buckets per subscription + principal, or `false` for none.
   * @default { writes: { capacity: 200, refillPerSecond: 10 }, reads: { capacity: 250, refillPerSecond: 25 } }
   */
  throttle?: false | { writes?: BucketOptions; reads?: BucketOptions };
  /** Model a service that refuses a key already used by another subscription. @default false */
  rejectDuplicateKeys?: boolean;
  /** Items per list page before a `nextLink`. @default 100 */
  pageSize?: number;
  /**
   * The clock of the throttling buckets' refill, latency, held requests (`delayMs`) and `createdDate`:
   * a `ManualClock` in a test that waits for them. @default systemClock
   */
  clock?: FakeClock;
}

/** A subscription as the fake holds it (keys included: test inspection only). */
export interface FakeSubscription {
  sid: string;
  /** Short scope: `/products/{id}`, `/apis/{id}` or `/apis`. */
  scope: string;
  displayName: string;
  state: string;
  /** Short owner id `/users/{id}`, if any. */
  ownerId?: string;
  primaryKey: string;
  secondaryKey: string;
  etag: string;
  allowTracing: boolean;
  createdDate: string;
}

/** A user as the fake holds it. */
export interface FakeUser {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
  state: string;
  etag: string;
}

/** One request the fake received (no body, no keys). */
export interface FakeRequestRecord {
  method: string;
  /** Path below the service (`/subscriptions/x`), or the full path for other resources. */
  path: string;
  /** The list's OData `$filter`, when the request had one. */
  filter?: string;
  ifMatch?: string;
  /** Status the client was answered (0 while the request is still held, e.g. by `delayMs`). */
  status: number;
  /** With an `afterApply` fault: the status the real handling produced before the fault replaced it. */
  appliedStatus?: number;
}

/**
 * A fault answered instead of (or after) the real behaviour. ARM does not cancel
 * a request whose client gave up: a request held by `delayMs` is still handled
 * when the delay ends, even if the client timed out and closed the connection
 * (https://learn.microsoft.com/azure/azure-resource-manager/management/async-operations
 * — a synchronous PUT runs to completion server-side).
 *
 * - `{ status: 500 }`: answer 500 and apply nothing.
 * - `{ status: 500, afterApply: true }`: apply the request, then answer 500 (a lost answer).
 * - `{ delayMs: 2000 }`: hold the request 2 s, then apply and answer it normally —
 *   a write that lands after a client with `timeoutMs` < 2000 gave up.
 * - `{ status: 403 }` / `{ status: 429, retryAfterS: 5 }` on any call, reads
 *   (`GET`, `POST …/listSecrets`) included, with ARM's error codes and messages.
 */
export interface FaultSpec {
  /** HTTP status to answer (403, 429, 500, 503, 404, 412 …). Absent (with `delayMs`): the real answer, late. */
  status?: number;
  /** Apply the request as usual, then answer `status` instead of the real answer. @default false */
  afterApply?: boolean;
  /** Hold the request this many milliseconds before handling it (ms). @default 0 */
  delayMs?: number;
  /** How many matching requests get it (`Infinity`: every one). @default 1 */
  times?: number;
  /** `Retry-After` header (seconds). */
  retryAfterS?: number;
  /** ARM error code. @default derived from the status */
  code?: string;
  /** ARM error message. @default derived from the status */
  message?: string;
  /** HTTP method to match (upper case); any when absent. */
  method?: string;
  /** Substring or pattern of the service-relative path to match; any when absent. */
  path?: string | RegExp;
}

/** A running APIM fake. */
export interface ApimFake {
  /** Base URL (`http://127.0.0.1:PORT`) to use as the provider's `endpoint`. */
  url: string;
  subscriptionId: string;
  resourceGroup: string;
  serviceName: string;
  /** Every request received so far, in order. */
  requests: FakeRequestRecord[];
  /** Adds (or replaces) a product. */
  addProduct(id: string, options?: { subscriptionsLimit?: number | null; displayName?: string }): void;
  /** Deletes a product (its subscriptions stay, as `deleteSubscriptions=false` would refuse; tests only). */
  removeProduct(id: string): void;
  /** Adds an API. */
  addApi(id: string): void;
  /** All subscriptions, keys included. */
  listSubscriptions(): FakeSubscription[];
  /** One subscription by sid (case-insensitive), keys included. */
  getSubscription(sid: string): FakeSubscription | undefined;
  /** Changes a subscription behind the client's back (new ETag), e.g. to provoke 412. */
  touchSubscription(sid: string, changes?: Partial<Pick<FakeSubscription, "displayName" | "state">>): void;
  /** Removes a subscription behind the client's back (drift). */
  dropSubscription(sid: string): void;
  /**
   * Creates a subscription directly, as someone else would (the Azure portal,
   * another tool, another webhook): no request is recorded and credhook's marks
   * are whatever `sid` says. Defaults: a random `sid` (`manual-<hex>`), state
   * `active`, a generated key, displayName `Created by hand`.
   * @throws Error the scope names no existing product/API
   */
  addForeignSubscription(subscription: {
    scope: string;
    sid?: string;
    displayName?: string;
    state?: string;
    primaryKey?: string;
  }): FakeSubscription;
  /** Resolves once no request is in flight (held requests included): every late write has landed. */
  idle(): Promise<void>;
  /** All users. */
  listUsers(): FakeUser[];
  /** Queues a fault; the first queued fault matching a request is answered instead. */
  inject(fault: FaultSpec): void;
  /** Drops every queued fault. */
  clearFaults(): void;
  /** Delays every answer by `ms` milliseconds (0 to stop). */
  setLatency(ms: number): void;
  /** Sets or removes the duplicate-key refusal at run time. */
  setRejectDuplicateKeys(on: boolean): void;
  /** Refills every throttling bucket. */
  resetThrottle(): void;
  /** Stops the server. */
  close(): Promise<void>;
}

/** The ARM api-version the fake models (the one `@azure/arm-apimanagement` 10 sends). */
const API_VERSION = "2024-05-01";
const SID_FORBIDDEN = /[*#&+:<>?]/;
const DEFAULT_STATUS_CODES: Record<number, string> = {
  400: "BadRequest",
  401: "AuthenticationFailed",
  403: "AuthorizationFailed",
  404: "ResourceNotFound",
  409: "Conflict",
  412: "PreconditionFailed",
  429: "SubscriptionRequestsThrottled",
  500: "InternalServerError",
  502: "BadGateway",
  503: "ServiceUnavailable",
  504: "GatewayTimeout",
};

interface Bucket {
  tokens: number;
  at: number;
}

interface Product {
  id: string;
  displayName: string;
  subscriptionsLimit: number | null;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Array<{ code: string; target: string; message: string }> | null = null,
  ) {
    super(message);
  }
}

function newEtag(): string {
  return `"${randomBytes(8).toString("base64")}"`;
}

function generatedKey(): string {
  return randomBytes(16).toString("hex");
}

function lower(s: string): string {
  return s.toLowerCase();
}

/** Parses the small OData `$filter` subset APIM lists accept: `f eq 'v'`, `startswith(f,'v')`, `endswith`, `contains`, joined by `and`. */
function parseFilter(filter: string | null): (row: Record<string, string | undefined>) => boolean {
  if (!filter) return () => true;
  const clauses = filter.split(/\s+and\s+/i).map((clause) => {
    const c = clause.trim();
    let m = /^(startswith|endswith|contains|substringof)\(\s*(\w+)\s*,\s*'((?:[^']|'')*)'\s*\)$/i.exec(c);
    if (m) {
      const fn = lower(m[1]!);
      const field = m[2]!;
      const value = lower(m[3]!.replace(/''/g, "'"));
      return (row: Record<string, string | undefined>) => {
        const v = lower(row[field] ?? "");
        if (fn === "startswith") return v.startsWith(value);
        if (fn === "endswith") return v.endsWith(value);
        return v.includes(value);
      };
    }
    m = /^(\w+)\s+(eq|ne)\s+'((?:[^']|'')*)'$/i.exec(c);
    if (m) {
      const field = m[1]!;
      const neg = lower(m[2]!) === "ne";
      const value = lower(m[3]!.replace(/''/g, "'"));
      return (row: Record<string, string | undefined>) => (lower(row[field] ?? "") === value) !== neg;
    }
    throw new HttpError(400, "ValidationError", `Invalid filter clause: ${c}`);
  });
  return (row) => clauses.every((f) => f(row));
}

/**
 * Starts the APIM fake on 127.0.0.1, port 0.
 *
 * ```ts
 * const fake = await startApimFake({ products: ["gold", "silver"], apis: ["orders"] });
 * // provider options: { endpoint: fake.url, subscriptionId: fake.subscriptionId, resourceGroup: fake.resourceGroup,
 * //   serviceName: fake.serviceName, credential: { type: "static-token", token: "fake" } }
 * ```
 */
export async function startApimFake(options: ApimFakeOptions = {}): Promise<ApimFake> {
  const subscriptionId = options.subscriptionId ?? "00000000-0000-0000-0000-000000000000";
  const resourceGroup = options.resourceGroup ?? "rg-credhook";
  const serviceName = options.serviceName ?? "apim-credhook";
  const pageSize = options.pageSize ?? 100;
  const throttleCfg =
    options.throttle === false
      ? undefined
      : {
          writes: options.throttle?.writes ?? { capacity: 200, refillPerSecond: 10 },
          reads: options.throttle?.reads ?? { capacity: 250, refillPerSecond: 25 },
        };
  let rejectDuplicateKeys = options.rejectDuplicateKeys ?? false;
  let latencyMs = 0;
  const clock = options.clock ?? systemClock;
  const faults: Array<FaultSpec & { left: number }> = [];
  const buckets = new Map<string, Bucket>();
  const requests: FakeRequestRecord[] = [];

  const products = new Map<string, Product>();
  const apis = new Map<string, string>();
  const subscriptions = new Map<string, FakeSubscription>();
  const users = new Map<string, FakeUser>();

  const addProduct = (id: string, o: { subscriptionsLimit?: number | null; displayName?: string } = {}) => {
    products.set(lower(id), { id, displayName: o.displayName ?? id, subscriptionsLimit: o.subscriptionsLimit ?? null });
  };
  for (const p of options.products ?? ["starter", "unlimited"]) {
    if (typeof p === "string") addProduct(p);
    else addProduct(p.id, p);
  }
  for (const a of options.apis ?? ["echo-api"]) apis.set(lower(a), a);
  users.set("1", {
    id: "1",
    email: "admin@contoso.com",
    firstName: "Administrator",
    lastName: "",
    state: "active",
    etag: newEtag(),
  });

  const servicePrefix = `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.ApiManagement/service/${serviceName}`;
  const armId = (rel: string) => `${servicePrefix}${rel}`;

  function take(
    kind: "writes" | "reads",
    principal: string,
  ): { ok: true; remaining: number } | { ok: false; retryAfterS: number } {
    if (!throttleCfg) return { ok: true, remaining: 1e9 };
    const cfg = throttleCfg[kind];
    const key = `${kind}|${principal}`;
    const now = clock.now();
    const b = buckets.get(key) ?? { tokens: cfg.capacity, at: now };
    b.tokens = Math.min(cfg.capacity, b.tokens + ((now - b.at) / 1000) * cfg.refillPerSecond);
    b.at = now;
    buckets.set(key, b);
    if (b.tokens < 1) return { ok: false, retryAfterS: Math.max(1, Math.ceil((1 - b.tokens) / cfg.refillPerSecond)) };
    b.tokens -= 1;
    return { ok: true, remaining: Math.floor(b.tokens) };
  }

  function shortScope(scope: unknown): { kind: "all" | "api" | "product"; id: string; short: string } {
    if (typeof scope !== "string" || scope.length === 0) {
      throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
        {
          code: "ValidationError",
          target: "scope",
          message: "Subscription scope should be one of '/apis', '/apis/{apiId}', '/products/{productId}'",
        },
      ]);
    }
    const tail = scope.toLowerCase().startsWith(servicePrefix.toLowerCase())
      ? scope.slice(servicePrefix.length)
      : scope;
    if (tail === "/apis") return { kind: "all", id: "", short: "/apis" };
    const m = /^\/(apis|products)\/([^/]+)$/.exec(tail);
    if (!m) {
      throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
        {
          code: "ValidationError",
          target: "scope",
          message: "Subscription scope should be one of '/apis', '/apis/{apiId}', '/products/{productId}'",
        },
      ]);
    }
    const id = decodeURIComponent(m[2]!);
    if (m[1] === "apis") {
      const known = apis.get(lower(id));
      if (!known)
        throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
          { code: "ValidationError", target: "scope", message: `API '${id}' not found.` },
        ]);
      return { kind: "api", id: known, short: `/apis/${known}` };
    }
    const p = products.get(lower(id));
    if (!p)
      throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
        { code: "ValidationError", target: "scope", message: `Product '${id}' not found.` },
      ]);
    return { kind: "product", id: p.id, short: `/products/${p.id}` };
  }

  function subscriptionBody(s: FakeSubscription) {
    return {
      id: armId(`/subscriptions/${s.sid}`),
      type: "Microsoft.ApiManagement/service/subscriptions",
      name: s.sid,
      properties: {
        ownerId: s.ownerId ? armId(s.ownerId) : undefined,
        scope: armId(s.scope),
        displayName: s.displayName,
        state: s.state,
        createdDate: s.createdDate,
        startDate: s.state === "active" ? s.createdDate : undefined,
        allowTracing: s.allowTracing,
      },
    };
  }

  function userBody(u: FakeUser) {
    return {
      id: armId(`/users/${u.id}`),
      type: "Microsoft.ApiManagement/service/users",
      name: u.id,
      properties: {
        email: u.email,
        firstName: u.firstName,
        lastName: u.lastName,
        state: u.state,
        registrationDate: new Date(0).toISOString(),
        identities: [{ provider: "Basic", id: u.email }],
      },
    };
  }

  function checkIfMatch(header: string | undefined, etag: string | undefined, required: boolean): void {
    if (header === undefined) {
      if (required) throw new HttpError(400, "ValidationError", "If-Match header is required for this operation.");
      return;
    }
    if (header === "*") {
      if (etag === undefined) throw new HttpError(412, "PreconditionFailed", "The resource does not exist.");
      return;
    }
    if (etag === undefined || header !== etag)
      throw new HttpError(
        412,
        "PreconditionFailed",
        "The entity tag provided does not match the current entity tag of the resource.",
      );
  }

  function validateKey(name: "primaryKey" | "secondaryKey", value: unknown, selfSid: string): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string" || value.length < 1 || value.length > 256) {
      throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
        { code: "ValidationError", target: name, message: `'${name}' length must be between 1 and 256 characters.` },
      ]);
    }
    if (rejectDuplicateKeys) {
      for (const other of subscriptions.values()) {
        if (lower(other.sid) !== lower(selfSid) && (other.primaryKey === value || other.secondaryKey === value)) {
          throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
            {
              code: "ValidationError",
              target: name,
              message: "Subscription key is already in use by another subscription.",
            },
          ]);
        }
      }
    }
    return value;
  }

  function checkOwnerLimit(ownerId: string | undefined, scope: { kind: string; id: string }, selfSid: string): void {
    if (!ownerId || scope.kind !== "product") return;
    const p = products.get(lower(scope.id));
    if (!p || p.subscriptionsLimit === null) return;
    const count = [...subscriptions.values()].filter(
      (s) =>
        lower(s.sid) !== lower(selfSid) &&
        s.ownerId &&
        lower(s.ownerId) === lower(ownerId) &&
        lower(s.scope) === lower(`/products/${p.id}`) &&
        ["active", "submitted", "suspended"].includes(s.state),
    ).length;
    if (count >= p.subscriptionsLimit)
      throw new HttpError(400, "ValidationError", "Subscriptions limit reached for same user");
  }

  function shortOwner(ownerId: unknown): string | undefined {
    if (ownerId === undefined || ownerId === null) return undefined;
    if (typeof ownerId !== "string") throw new HttpError(400, "ValidationError", "ownerId must be a string");
    const m = /\/users\/([^/]+)$/.exec(ownerId);
    const u = m ? users.get(lower(decodeURIComponent(m[1]!))) : undefined;
    if (!u)
      throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
        { code: "ValidationError", target: "ownerId", message: "User not found." },
      ]);
    return `/users/${u.id}`;
  }

  async function handleSubscriptions(
    req: IncomingMessage,
    res: ServerResponse,
    rest: string[],
    url: URL,
    ifMatch: string | undefined,
    record: (s: number) => void,
  ): Promise<void> {
    const method = req.method ?? "GET";
    if (rest.length === 0) {
      if (method !== "GET") throw new HttpError(405, "MethodNotAllowed", `${method} is not allowed here.`);
      const match = parseFilter(url.searchParams.get("$filter"));
      const top = Number(url.searchParams.get("$top") ?? pageSize);
      const skip = Number(url.searchParams.get("$skip") ?? 0);
      const all = [...subscriptions.values()]
        .sort((a, b) => a.sid.localeCompare(b.sid))
        .filter((s) =>
          match({
            name: s.sid,
            displayName: s.displayName,
            state: s.state,
            scope: armId(s.scope),
            ownerId: s.ownerId ? armId(s.ownerId) : "",
            productId: s.scope.startsWith("/products/") ? s.scope.slice(10) : "",
          }),
        );
      const size = Math.min(top, pageSize);
      const page = all.slice(skip, skip + size);
      const body: Record<string, unknown> = { value: page.map(subscriptionBody), count: all.length };
      if (skip + size < all.length) {
        const next = new URL(url.toString());
        next.searchParams.set("$skip", String(skip + size));
        // ARM answers absolute https links; the client's endpoint mapping sends them back here.
        body.nextLink = `https://${req.headers.host}${next.pathname}${next.search}`;
      }
      record(200);
      return sendJson(res, 200, body);
    }
    const sid = decodeURIComponent(rest[0]!);
    if (sid.length > 256 || SID_FORBIDDEN.test(sid))
      throw new HttpError(400, "ValidationError", `Subscription identifier '${sid}' is invalid.`);
    const key = lower(sid);
    const existing = subscriptions.get(key);
    const action = rest[1];
    if (action !== undefined) {
      if (method !== "POST") throw new HttpError(405, "MethodNotAllowed", `${method} is not allowed here.`);
      if (!existing) throw new HttpError(404, "ResourceNotFound", "Subscription not found.");
      if (action === "listSecrets") {
        record(200);
        return sendJson(
          res,
          200,
          { primaryKey: existing.primaryKey, secondaryKey: existing.secondaryKey },
          { etag: existing.etag },
        );
      }
      if (action === "regeneratePrimaryKey" || action === "regenerateSecondaryKey") {
        if (action === "regeneratePrimaryKey") existing.primaryKey = generatedKey();
        else existing.secondaryKey = generatedKey();
        existing.etag = newEtag();
        record(204);
        res.writeHead(204).end();
        return;
      }
      throw new HttpError(404, "ResourceNotFound", `Unknown action ${action}.`);
    }
    if (method === "GET" || method === "HEAD") {
      if (!existing) throw new HttpError(404, "ResourceNotFound", "Subscription not found.");
      record(200);
      if (method === "HEAD") {
        res.writeHead(200, { etag: existing.etag }).end();
        return;
      }
      return sendJson(res, 200, subscriptionBody(existing), { etag: existing.etag });
    }
    if (method === "PUT") {
      const body = parseBody<{ properties?: Record<string, unknown> }>(rawBodies.get(req) ?? "") ?? {};
      const p = body.properties ?? {};
      if (ifMatch !== undefined) checkIfMatch(ifMatch, existing?.etag, false);
      const displayName = p.displayName;
      if (typeof displayName !== "string" || displayName.length < 1 || displayName.length > 100) {
        throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
          {
            code: "ValidationError",
            target: "displayName",
            message: "'displayName' length must be between 1 and 100 characters.",
          },
        ]);
      }
      const scope = shortScope(p.scope);
      const ownerId = shortOwner(p.ownerId);
      const primaryKey = validateKey("primaryKey", p.primaryKey, sid);
      const secondaryKey = validateKey("secondaryKey", p.secondaryKey, sid);
      checkOwnerLimit(ownerId, scope, sid);
      const state = typeof p.state === "string" ? p.state : "submitted";
      const sub: FakeSubscription = {
        sid: existing?.sid ?? sid,
        scope: scope.short,
        displayName,
        state,
        ownerId,
        primaryKey: primaryKey ?? generatedKey(),
        secondaryKey: secondaryKey ?? generatedKey(),
        etag: newEtag(),
        allowTracing: p.allowTracing === true,
        createdDate: existing?.createdDate ?? new Date(clock.now()).toISOString(),
      };
      subscriptions.set(key, sub);
      const status = existing ? 200 : 201;
      record(status);
      return sendJson(res, status, subscriptionBody(sub), { etag: sub.etag });
    }
    if (method === "PATCH") {
      checkIfMatch(ifMatch, existing?.etag, true);
      if (!existing) throw new HttpError(404, "ResourceNotFound", "Subscription not found.");
      const body = parseBody<{ properties?: Record<string, unknown> }>(rawBodies.get(req) ?? "") ?? {};
      const p = body.properties ?? {};
      if (p.displayName !== undefined) {
        if (typeof p.displayName !== "string" || p.displayName.length < 1 || p.displayName.length > 100) {
          throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
            {
              code: "ValidationError",
              target: "displayName",
              message: "'displayName' length must be between 1 and 100 characters.",
            },
          ]);
        }
        existing.displayName = p.displayName;
      }
      if (p.scope !== undefined) existing.scope = shortScope(p.scope).short;
      if (p.ownerId !== undefined) existing.ownerId = shortOwner(p.ownerId);
      const pk = validateKey("primaryKey", p.primaryKey, sid);
      const sk = validateKey("secondaryKey", p.secondaryKey, sid);
      if (pk) existing.primaryKey = pk;
      if (sk) existing.secondaryKey = sk;
      if (typeof p.state === "string") existing.state = p.state;
      existing.etag = newEtag();
      record(200);
      return sendJson(res, 200, subscriptionBody(existing), { etag: existing.etag });
    }
    if (method === "DELETE") {
      if (ifMatch === undefined)
        throw new HttpError(400, "ValidationError", "If-Match header is required for this operation.");
      if (!existing) {
        record(204);
        res.writeHead(204).end();
        return;
      }
      checkIfMatch(ifMatch, existing.etag, true);
      subscriptions.delete(key);
      record(200);
      res.writeHead(200).end();
      return;
    }
    throw new HttpError(405, "MethodNotAllowed", `${method} is not allowed here.`);
  }

  async function handleUsers(
    req: IncomingMessage,
    res: ServerResponse,
    rest: string[],
    url: URL,
    ifMatch: string | undefined,
    record: (s: number) => void,
  ): Promise<void> {
    const method = req.method ?? "GET";
    if (rest.length === 0) {
      if (method !== "GET") throw new HttpError(405, "MethodNotAllowed", `${method} is not allowed here.`);
      const match = parseFilter(url.searchParams.get("$filter"));
      const value = [...users.values()]
        .filter((u) =>
          match({ name: u.id, email: u.email, firstName: u.firstName, lastName: u.lastName, state: u.state }),
        )
        .map(userBody);
      record(200);
      return sendJson(res, 200, { value, count: value.length });
    }
    const id = decodeURIComponent(rest[0]!);
    if (id.length > 80) throw new HttpError(400, "ValidationError", "User identifier is too long.");
    const existing = users.get(lower(id));
    if (method === "GET") {
      if (!existing) throw new HttpError(404, "ResourceNotFound", "User not found.");
      record(200);
      return sendJson(res, 200, userBody(existing), { etag: existing.etag });
    }
    if (method === "PUT") {
      if (ifMatch !== undefined) checkIfMatch(ifMatch, existing?.etag, false);
      const p = parseBody<{ properties?: Record<string, unknown> }>(rawBodies.get(req) ?? "")?.properties ?? {};
      const email = p.email;
      if (typeof email !== "string" || !/^[^@\s]+@[^@\s]+$/.test(email) || email.length > 254) {
        throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
          { code: "ValidationError", target: "email", message: "Email is invalid." },
        ]);
      }
      for (const f of ["firstName", "lastName"] as const) {
        const v = p[f];
        if (typeof v !== "string" || v.length < 1 || v.length > 100) {
          throw new HttpError(400, "ValidationError", "One or more fields contain incorrect values:", [
            { code: "ValidationError", target: f, message: `'${f}' length must be between 1 and 100 characters.` },
          ]);
        }
      }
      const clash = [...users.values()].find((u) => lower(u.email) === lower(email) && lower(u.id) !== lower(id));
      if (clash) throw new HttpError(409, "Conflict", "User with the same email already exists.");
      const u: FakeUser = {
        id: existing?.id ?? id,
        email,
        firstName: p.firstName as string,
        lastName: p.lastName as string,
        state: typeof p.state === "string" ? p.state : "active",
        etag: newEtag(),
      };
      users.set(lower(id), u);
      const status = existing ? 200 : 201;
      record(status);
      return sendJson(res, status, userBody(u), { etag: u.etag });
    }
    throw new HttpError(405, "MethodNotAllowed", `${method} is not allowed here.`);
  }

  const rawBodies = new WeakMap<object, string>();
  const parseBody = <T>(text: string): T | undefined => {
    if (text.length === 0) return undefined;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new HttpError(
        400,
        "InvalidRequestContent",
        "The request content was invalid and could not be deserialized.",
      );
    }
  };

  /** ARM's error body of an injected fault: its code and message, or ARM's usual ones for the status. */
  function faultBody(fault: FaultSpec & { status: number }, method: string, path: string) {
    const action = /\/listsecrets$/i.test(path)
      ? "subscriptions/listSecrets/action"
      : `${path.split("/").filter(Boolean)[0] ?? ""}/${method === "GET" || method === "HEAD" ? "read" : method === "DELETE" ? "delete" : "write"}`;
    const defaults: Record<number, string> = {
      403: `The client 'credhook' with object id '00000000-0000-0000-0000-00000000c0de' does not have authorization to perform action 'Microsoft.ApiManagement/service/${action}' over scope '${servicePrefix}${path}' or the scope is invalid. If access was recently granted, please refresh your credentials.`,
      429: `Number of requests for subscription '${subscriptionId}' exceeded the limit. Please try again after '${fault.retryAfterS ?? 1}' seconds.`,
      500: "An unexpected error occurred while processing the request.",
      503: "The service is temporarily unavailable. Please retry later.",
    };
    return {
      error: {
        code: fault.code ?? DEFAULT_STATUS_CODES[fault.status] ?? "Error",
        message: fault.message ?? defaults[fault.status] ?? `Injected fault ${fault.status}.`,
        details: null,
      },
    };
  }

  /** A response that swallows what is written to it (the real answer of an `afterApply` fault). */
  function sinkResponse(): ServerResponse {
    const sink = {
      headersSent: false,
      statusCode: 200,
      setHeader: () => sink,
      writeHead(status: number) {
        sink.statusCode = status;
        sink.headersSent = true;
        return sink;
      },
      end: () => sink,
    };
    return sink as unknown as ServerResponse;
  }

  let inFlight = 0;
  let idleWaiters: Array<() => void> = [];

  const server: FakeServer = await startFakeServer(async (req, res) => {
    inFlight += 1;
    try {
      await receive(req, res);
    } finally {
      inFlight -= 1;
      if (inFlight === 0) {
        const waiters = idleWaiters;
        idleWaiters = [];
        for (const w of waiters) w();
      }
    }
  });

  /** Receives one request whole, then answers it: through an injected fault, or for real. */
  async function receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const method = req.method ?? "GET";
    const ifMatch = typeof req.headers["if-match"] === "string" ? req.headers["if-match"] : undefined;
    const pathLower = url.pathname.toLowerCase();
    const relPath = pathLower.startsWith(servicePrefix.toLowerCase())
      ? url.pathname.slice(servicePrefix.length)
      : url.pathname;
    const filter = url.searchParams.get("$filter");
    const rec: FakeRequestRecord = {
      method,
      path: relPath || "/",
      ...(filter !== null ? { filter } : {}),
      ...(ifMatch !== undefined ? { ifMatch } : {}),
      status: 0,
    };
    requests.push(rec);
    // The whole request is received before any injected latency, as a real
    // service would have it: a client that disconnects while waiting does not undo it.
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    rawBodies.set(req, Buffer.concat(chunks).toString("utf8"));
    if (latencyMs > 0) await clock.sleep(latencyMs);
    const auth = req.headers.authorization;
    const fault =
      typeof auth === "string"
        ? faults.find(
            (f) =>
              f.left > 0 &&
              (!f.method || f.method === method) &&
              (!f.path || (typeof f.path === "string" ? rec.path.includes(f.path) : f.path.test(rec.path))),
          )
        : undefined;
    if (!fault) return serve(req, res, url, rec);
    fault.left -= 1;
    if (fault.left <= 0) faults.splice(faults.indexOf(fault), 1);
    if (fault.delayMs) await clock.sleep(fault.delayMs);
    if (fault.status === undefined) return serve(req, res, url, rec);
    if (fault.afterApply) {
      await serve(req, sinkResponse(), url, rec);
      rec.appliedStatus = rec.status;
    }
    rec.status = fault.status;
    const headers: Record<string, string> =
      fault.retryAfterS !== undefined ? { "retry-after": String(fault.retryAfterS) } : {};
    if (res.destroyed) return;
    sendJson(res, fault.status, faultBody({ ...fault, status: fault.status }, method, rec.path), headers);
  }

  /** The real behaviour of one request (auth, ARM throttling, the resource handlers). */
  async function serve(req: IncomingMessage, res: ServerResponse, url: URL, rec: FakeRequestRecord): Promise<void> {
    const method = req.method ?? "GET";
    const ifMatch = rec.ifMatch;
    const pathLower = url.pathname.toLowerCase();
    const relPath = rec.path;
    const record = (s: number) => {
      rec.status = s;
    };
    // ARM answers every request, refused or not, with its id for support cases
    // (https://learn.microsoft.com/en-us/rest/api/azure/#response-headers).
    res.setHeader("x-ms-request-id", randomUUID());
    try {
      const auth = req.headers.authorization;
      if (typeof auth !== "string" || !/^Bearer \S+/.test(auth)) {
        throw new HttpError(
          401,
          "AuthenticationFailed",
          "Authentication failed. The 'Authorization' header is missing.",
        );
      }
      const principal = `${subscriptionId}|${createHash("sha256").update(auth).digest("hex").slice(0, 16)}`;
      const kind = method === "GET" || method === "HEAD" ? "reads" : "writes";
      const t = take(kind, principal);
      if (!t.ok) {
        record(429);
        return sendJson(
          res,
          429,
          {
            error: {
              code: "SubscriptionRequestsThrottled",
              message: `Number of '${kind === "writes" ? "write" : "read"}' requests for subscription '${subscriptionId}' actor '${principal.split("|")[1]}' exceeded. Please try again after '${t.retryAfterS}' seconds.`,
            },
          },
          { "retry-after": String(t.retryAfterS) },
        );
      }
      res.setHeader(`x-ms-ratelimit-remaining-subscription-${kind}`, String(t.remaining));
      if (!url.searchParams.get("api-version")) {
        throw new HttpError(
          400,
          "MissingApiVersionParameter",
          "The api-version query parameter (?api-version=) is required for all requests.",
        );
      }
      const svcRoot = servicePrefix.toLowerCase();
      if (!pathLower.startsWith(svcRoot)) {
        const m = /^\/subscriptions\/([^/]+)\/resourcegroups\/([^/]+)/.exec(pathLower);
        if (m && m[1] !== lower(subscriptionId))
          throw new HttpError(404, "SubscriptionNotFound", `The subscription '${m[1]}' could not be found.`);
        if (m && m[2] !== lower(resourceGroup))
          throw new HttpError(404, "ResourceGroupNotFound", `Resource group '${m[2]}' could not be found.`);
        throw new HttpError(
          404,
          "ResourceNotFound",
          `The Resource 'Microsoft.ApiManagement/service/${url.pathname.split("/")[8] ?? ""}' under resource group '${resourceGroup}' was not found.`,
        );
      }
      const parts = relPath.split("/").filter((s) => s.length > 0);
      if (parts.length === 0) {
        if (method !== "GET") throw new HttpError(405, "MethodNotAllowed", `${method} is not allowed here.`);
        record(200);
        return sendJson(
          res,
          200,
          {
            id: servicePrefix,
            name: serviceName,
            type: "Microsoft.ApiManagement/service",
            location: "West Europe",
            sku: { name: "Developer", capacity: 1 },
            properties: {
              provisioningState: "Succeeded",
              gatewayUrl: `https://${serviceName}.azure-api.net`,
              publisherEmail: "admin@contoso.com",
              publisherName: "Contoso",
            },
          },
          { etag: '"service"' },
        );
      }
      const [collection, ...rest] = parts;
      switch (lower(collection!)) {
        case "subscriptions":
          return await handleSubscriptions(req, res, rest, url, ifMatch, record);
        case "users":
          return await handleUsers(req, res, rest, url, ifMatch, record);
        case "products": {
          if (method !== "GET" || rest.length !== 1)
            throw new HttpError(405, "MethodNotAllowed", `${method} is not allowed here.`);
          const p = products.get(lower(decodeURIComponent(rest[0]!)));
          if (!p) throw new HttpError(404, "ResourceNotFound", "Product not found.");
          record(200);
          return sendJson(
            res,
            200,
            {
              id: armId(`/products/${p.id}`),
              type: "Microsoft.ApiManagement/service/products",
              name: p.id,
              properties: {
                displayName: p.displayName,
                subscriptionRequired: true,
                subscriptionsLimit: p.subscriptionsLimit,
                state: "published",
              },
            },
            { etag: '"product"' },
          );
        }
        case "apis": {
          if (method !== "GET" || rest.length !== 1)
            throw new HttpError(405, "MethodNotAllowed", `${method} is not allowed here.`);
          const a = apis.get(lower(decodeURIComponent(rest[0]!)));
          if (!a) throw new HttpError(404, "ResourceNotFound", "Api not found.");
          record(200);
          return sendJson(
            res,
            200,
            {
              id: armId(`/apis/${a}`),
              type: "Microsoft.ApiManagement/service/apis",
              name: a,
              properties: { displayName: a, path: a, protocols: ["https"], subscriptionRequired: true },
            },
            { etag: '"api"' },
          );
        }
        default:
          throw new HttpError(404, "ResourceNotFound", `Unknown collection ${collection}.`);
      }
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      record(err.status);
      return sendJson(res, err.status, { error: { code: err.code, message: err.message, details: err.details } });
    }
  }

  const snapshot = (s: FakeSubscription): FakeSubscription => ({ ...s });
  return {
    url: server.url,
    subscriptionId,
    resourceGroup,
    serviceName,
    requests,
    addProduct,
    removeProduct(id) {
      products.delete(lower(id));
    },
    addApi(id) {
      apis.set(lower(id), id);
    },
    listSubscriptions: () => [...subscriptions.values()].map(snapshot),
    getSubscription(sid) {
      const s = subscriptions.get(lower(sid));
      return s ? snapshot(s) : undefined;
    },
    touchSubscription(sid, changes = {}) {
      const s = subscriptions.get(lower(sid));
      if (!s) throw new Error(`no subscription ${sid}`);
      Object.assign(s, changes, { etag: newEtag() });
    },
    dropSubscription(sid) {
      subscriptions.delete(lower(sid));
    },
    addForeignSubscription(o) {
      const sid = o.sid ?? `manual-${randomBytes(6).toString("hex")}`;
      let scope: { short: string };
      try {
        scope = shortScope(o.scope);
      } catch (err) {
        throw new Error(
          `addForeignSubscription: ${(err as HttpError).details?.[0]?.message ?? (err as Error).message}`,
        );
      }
      const now = new Date(clock.now()).toISOString();
      const sub: FakeSubscription = {
        sid,
        scope: scope.short,
        displayName: o.displayName ?? "Created by hand",
        state: o.state ?? "active",
        primaryKey: o.primaryKey ?? generatedKey(),
        secondaryKey: generatedKey(),
        etag: newEtag(),
        allowTracing: false,
        createdDate: now,
      };
      subscriptions.set(lower(sid), sub);
      return snapshot(sub);
    },
    idle() {
      return inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    listUsers: () => [...users.values()].map((u) => ({ ...u })),
    inject(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    clearFaults() {
      faults.length = 0;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    setRejectDuplicateKeys(on) {
      rejectDuplicateKeys = on;
    },
    resetThrottle() {
      buckets.clear();
    },
    close: () => server.close(),
  };
}

export { API_VERSION as FAKE_API_VERSION };
