/**
 * An in-process fake of the Kong Gateway Admin API entities credhook drives —
 * consumers, key-auth credentials, ACLs and plugins — written from Kong's Admin
 * API reference (https://developer.konghq.com/api/gateway/admin-ee/) and the
 * error shapes and codes of Kong's `kong/db/errors.lua` (2 schema violation, 5 unique violation, 7 invalid offset, 9 invalid size, 11 invalid options):
 *
 * - creates answer 201, reads 200, `PATCH` 200, `DELETE` 204 — also for an entity
 *   that does not exist (Kong's deletes are idempotent);
 * - deleting a consumer deletes its credentials, ACLs and plugins (cascade);
 * - a missing entity is 404 `{"message":"Not found"}`; a duplicate `username`,
 *   key-auth `key`, consumer+ACL `group` or consumer+plugin `name` is 409
 *   `{"code":5,"name":"unique constraint violation","message":"UNIQUE violation detected on '{key=\"…\"}'","fields":{…}}`
 *   (the message carries the duplicate value, key included); a schema violation 400 with code 2 — among them a
 *   rate-limiting plugin whose limits are out of Kong's period order (second <= minute <= hour <= day <= month <= year
 *   wherever both are set), on its create and on a PATCH, with Kong's body
 *   `{"code":2,"name":"schema violation","message":"schema violation (config: The limit for hour(50.0) cannot be lower than the limit for minute(100.0))","fields":{"config":"The limit for …"}}`;
 * - lists page by `size` (1–1000, default 100) and an opaque `offset`, answering
 *   `{"data":[…],"next":"/consumers?offset=…","offset":"…"}` (`next: null` on the last page);
 *   `?tags=a,b` filters with AND, `?tags=a/b` with OR, at most 5 tags, never mixed
 *   (https://developer.konghq.com/gateway/tags/);
 * - tags hold no `,` `/` or non-printable characters;
 * - RBAC (Kong Enterprise): with `adminToken`, a request without the matching
 *   `Kong-Admin-Token` header is 401; `denied` routes answer 403 — or, for a
 *   Konnect control plane, `bearerToken` checks `Authorization: Bearer`;
 * - Konnect's rate limit (`throttle`): past the window's requests, 429 with `Retry-After`.
 *
 * Faults (any status on any call, a write applied before its error answer, a write
 * that lands after the client gave up) come from the shared JSON fake harness.
 */
import { randomBytes, randomUUID } from "node:crypto";
import {
  type JsonFakeAnswer,
  type JsonFakeControl,
  type JsonFakeRequest,
  page,
  startJsonFake,
} from "../shared/json-fake.js";
import { type FakeClock, systemClock } from "../clock.js";

/** Options of {@link startKongFake}. */
export interface KongFakeOptions {
  /** Path prefix of the Admin API, e.g. a workspace (`/team-a`) or a Konnect control plane (`/v2/control-planes/<id>/core-entities`). @default "" */
  basePath?: string;
  /** Kong Enterprise RBAC: the token every request must carry in `Kong-Admin-Token`. */
  adminToken?: string;
  /** Konnect: the token every request must carry as `Authorization: Bearer …`. */
  bearerToken?: string;
  /** Calls the RBAC role lacks (403): a method and a path prefix, e.g. `{ method: "DELETE", path: "/consumers" }`. */
  denied?: Array<{ method: string; path: string }>;
  /** Konnect-style rate limit: at most `requests` per `windowMs`; past it, 429 with `Retry-After`. */
  throttle?: { requests: number; windowMs: number };
  /** Test control: at most this many items per page whatever `size` asks (to exercise `offset` paging with few entities). */
  maxPageSize?: number;
  /** The clock of the rate limit's window, latency, held requests and `created_at`/`updated_at`: a `ManualClock` in a test that waits for them. @default systemClock */
  clock?: FakeClock;
}

/** A consumer as the fake holds it. */
export interface KongConsumer {
  id: string;
  username: string | null;
  custom_id: string | null;
  tags: string[] | null;
  created_at: number;
  updated_at: number;
}

/** A key-auth credential as the fake holds it (key included: test inspection only). */
export interface KongKeyAuth {
  id: string;
  consumer: { id: string };
  key: string;
  ttl: number | null;
  tags: string[] | null;
  created_at: number;
}

/** An ACL group membership. */
export interface KongAcl {
  id: string;
  consumer: { id: string };
  group: string;
  tags: string[] | null;
  created_at: number;
}

/** A plugin instance (here: consumer-scoped). */
export interface KongPlugin {
  id: string;
  name: string;
  consumer: { id: string } | null;
  service: null;
  route: null;
  config: Record<string, unknown>;
  enabled: boolean;
  protocols: string[];
  tags: string[] | null;
  created_at: number;
  updated_at: number;
}

/** A running Kong Admin API fake. */
export interface KongFake extends JsonFakeControl {
  consumers(): KongConsumer[];
  keyAuths(): KongKeyAuth[];
  acls(): KongAcl[];
  plugins(): KongPlugin[];
  /**
   * Creates a consumer directly, as a person or another tool would (no request
   * recorded): with a key-auth credential when `key` is given and ACL groups.
   */
  addForeignConsumer(c: { username: string; tags?: string[]; key?: string; groups?: string[] }): KongConsumer;
}

type Entity = { id: string; tags: string[] | null };

/** Printable, no space, no `,` or `/` (Kong's tag rule). */
const TAG = /^[!-+\-.0-~\u0080-\uffff]+$/;
const RATE_FIELDS = ["second", "minute", "hour", "day", "month", "year"] as const;

/**
 * Kong's `validate_periods_order` (the rate-limiting plugin's `custom_validator` in
 * `kong/plugins/rate-limiting/schema.lua`, https://github.com/Kong/kong/blob/master/kong/plugins/rate-limiting/schema.lua):
 * the first pair of windows, shortest first, whose longer window's limit is lower, in Kong's words
 * (its `%.1f`: `The limit for hour(50.0) cannot be lower than the limit for minute(100.0)`); undefined when in order.
 */
function periodOrderViolation(config: Record<string, unknown>): string | undefined {
  for (const [i, lower] of RATE_FIELDS.entries()) {
    const v1 = config[lower];
    if (typeof v1 !== "number") continue;
    for (const upper of RATE_FIELDS.slice(i + 1)) {
      const v2 = config[upper];
      if (typeof v2 === "number" && v2 < v1)
        return `The limit for ${upper}(${v2.toFixed(1)}) cannot be lower than the limit for ${lower}(${v1.toFixed(1)})`;
    }
  }
  return undefined;
}

const notFound = (): JsonFakeAnswer => ({ status: 404, body: { message: "Not found" } });
const schemaViolation = (fields: Record<string, unknown>, text: string): JsonFakeAnswer => ({
  status: 400,
  body: { code: 2, name: "schema violation", message: `schema violation (${text})`, fields },
});
const unique = (fields: Record<string, string>): JsonFakeAnswer => {
  const shown = Object.entries(fields)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",");
  return {
    status: 409,
    body: {
      code: 5,
      name: "unique constraint violation",
      message: `UNIQUE violation detected on '{${shown}}'`,
      fields,
    },
  };
};

/** Starts the Kong Admin API fake on 127.0.0.1, port 0. */
export async function startKongFake(options: KongFakeOptions = {}): Promise<KongFake> {
  const consumers = new Map<string, KongConsumer>();
  const keyAuths = new Map<string, KongKeyAuth>();
  const acls = new Map<string, KongAcl>();
  const plugins = new Map<string, KongPlugin>();
  const window: number[] = [];
  const clock = options.clock ?? systemClock;
  /** Kong's timestamps: seconds since the epoch. */
  const now = () => Math.floor(clock.now() / 1000);

  const consumerOf = (idOrName: string) =>
    consumers.get(idOrName) ?? [...consumers.values()].find((c) => c.username === idOrName);

  function tagsOf(body: Record<string, unknown>): { tags: string[] | null } | JsonFakeAnswer {
    const tags = body.tags;
    if (tags === undefined || tags === null) return { tags: null };
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== "string" || !TAG.test(t))) {
      return schemaViolation(
        { tags: "invalid tag" },
        "tags: invalid value: tags must be printable ASCII without ',' or '/'",
      );
    }
    return { tags: [...new Set(tags as string[])] };
  }

  function list<T extends Entity>(items: T[], q: URLSearchParams, path: string): JsonFakeAnswer {
    const sizeText = q.get("size");
    const size = sizeText === null ? 100 : Number(sizeText);
    if (!Number.isInteger(size) || size < 1 || size > 1000)
      return {
        status: 400,
        body: { code: 9, name: "invalid size", message: "size must be an integer between 1 and 1000" },
      };
    const offset = q.get("offset");
    if (offset !== null && !/^[A-Za-z0-9_-]+$/.test(offset))
      return {
        status: 400,
        body: { code: 7, name: "invalid offset", message: `'${offset}' is not a valid offset: bad base64 encoding` },
      };
    let filtered = items;
    const tags = q.get("tags");
    if (tags) {
      if (tags.includes(",") && tags.includes("/"))
        return {
          status: 400,
          body: {
            code: 11,
            name: "invalid options",
            message: "invalid option (tags: cannot mix the 'or' and 'and' operators)",
          },
        };
      const any = tags.includes("/");
      const wanted = tags.split(any ? "/" : ",");
      if (wanted.length > 5)
        return {
          status: 400,
          body: { code: 11, name: "invalid options", message: "invalid option (tags: cannot query more than 5 tags)" },
        };
      filtered = items.filter((e) =>
        any ? wanted.some((t) => e.tags?.includes(t)) : wanted.every((t) => e.tags?.includes(t)),
      );
    }
    const p = page(filtered, offset, Math.min(size, options.maxPageSize ?? size));
    const next = p.next
      ? `${path}?${new URLSearchParams({ ...(tags ? { tags } : {}), size: String(size), offset: p.next })}`
      : null;
    return { status: 200, body: { data: p.items, next, ...(p.next ? { offset: p.next } : {}) } };
  }

  function deleteConsumer(c: KongConsumer): void {
    consumers.delete(c.id);
    for (const m of [keyAuths, acls, plugins] as Array<Map<string, { consumer: { id: string } | null }>>) {
      for (const [id, e] of m) if (e.consumer?.id === c.id) m.delete(id);
    }
  }

  function createConsumer(body: Record<string, unknown>): JsonFakeAnswer {
    const t = tagsOf(body);
    if ("status" in t) return t;
    const username = typeof body.username === "string" ? body.username : null;
    const customId = typeof body.custom_id === "string" ? body.custom_id : null;
    if (!username && !customId)
      return schemaViolation(
        { "@entity": ["at least one of these fields must be non-empty: 'custom_id', 'username'"] },
        "at least one of these fields must be non-empty: 'custom_id', 'username'",
      );
    if (username && [...consumers.values()].some((c) => c.username === username)) return unique({ username });
    if (customId && [...consumers.values()].some((c) => c.custom_id === customId))
      return unique({ custom_id: customId });
    const c: KongConsumer = {
      id: randomUUID(),
      username,
      custom_id: customId,
      tags: t.tags,
      created_at: now(),
      updated_at: now(),
    };
    consumers.set(c.id, c);
    return { status: 201, body: c };
  }

  function createKeyAuth(c: KongConsumer, body: Record<string, unknown>): JsonFakeAnswer {
    const t = tagsOf(body);
    if ("status" in t) return t;
    const key = typeof body.key === "string" ? body.key : randomBytes(16).toString("hex");
    if ([...keyAuths.values()].some((k) => k.key === key)) return unique({ key });
    const k: KongKeyAuth = {
      id: randomUUID(),
      consumer: { id: c.id },
      key,
      ttl: null,
      tags: t.tags,
      created_at: now(),
    };
    keyAuths.set(k.id, k);
    return { status: 201, body: k };
  }

  function createAcl(c: KongConsumer, body: Record<string, unknown>): JsonFakeAnswer {
    const t = tagsOf(body);
    if ("status" in t) return t;
    if (typeof body.group !== "string" || body.group.length === 0)
      return schemaViolation({ group: "required field missing" }, "group: required field missing");
    const group = body.group;
    if ([...acls.values()].some((a) => a.consumer.id === c.id && a.group === group))
      return unique({ cache_key: `acls:${c.id}:${group}::::` });
    const a: KongAcl = { id: randomUUID(), consumer: { id: c.id }, group, tags: t.tags, created_at: now() };
    acls.set(a.id, a);
    return { status: 201, body: a };
  }

  function checkRateConfig(config: Record<string, unknown>): JsonFakeAnswer | undefined {
    for (const f of RATE_FIELDS) {
      const v = config[f];
      if (v !== undefined && v !== null && (typeof v !== "number" || v <= 0))
        return schemaViolation(
          { config: { [f]: "value must be greater than 0" } },
          `config.${f}: value must be greater than 0`,
        );
    }
    const order = periodOrderViolation(config);
    if (order) return schemaViolation({ config: order }, `config: ${order}`);
    if (!RATE_FIELDS.some((f) => typeof config[f] === "number")) {
      return schemaViolation(
        {
          "@entity": [
            "at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'",
          ],
        },
        "at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'",
      );
    }
    return undefined;
  }

  function createPlugin(c: KongConsumer, body: Record<string, unknown>): JsonFakeAnswer {
    const t = tagsOf(body);
    if ("status" in t) return t;
    const name = body.name;
    if (typeof name !== "string")
      return schemaViolation({ name: "required field missing" }, "name: required field missing");
    const config = (body.config ?? {}) as Record<string, unknown>;
    if (name === "rate-limiting") {
      const bad = checkRateConfig(config);
      if (bad) return bad;
    }
    if ([...plugins.values()].some((p) => p.consumer?.id === c.id && p.name === name))
      return unique({ cache_key: `plugins:${name}::::${c.id}:` });
    const p: KongPlugin = {
      id: randomUUID(),
      name,
      consumer: { id: c.id },
      service: null,
      route: null,
      config: { policy: "local", limit_by: "consumer", ...config },
      enabled: body.enabled !== false,
      protocols: ["grpc", "grpcs", "http", "https"],
      tags: t.tags,
      created_at: now(),
      updated_at: now(),
    };
    plugins.set(p.id, p);
    return { status: 201, body: p };
  }

  function patchPlugin(p: KongPlugin, body: Record<string, unknown>): JsonFakeAnswer {
    const t = body.tags === undefined ? { tags: p.tags } : tagsOf(body);
    if ("status" in t) return t;
    const config = body.config === undefined ? p.config : { ...p.config, ...(body.config as Record<string, unknown>) };
    if (p.name === "rate-limiting") {
      const bad = checkRateConfig(config);
      if (bad) return bad;
    }
    Object.assign(p, { config, tags: t.tags, updated_at: now() });
    return { status: 200, body: p };
  }

  function patchTags<T extends Entity>(e: T, body: Record<string, unknown>): JsonFakeAnswer {
    const t = tagsOf(body);
    if ("status" in t) return t;
    e.tags = t.tags;
    return { status: 200, body: e };
  }

  function authorize(req: JsonFakeRequest): JsonFakeAnswer | undefined {
    if (options.adminToken !== undefined && req.headers["kong-admin-token"] !== options.adminToken) {
      return { status: 401, body: { message: "Invalid credentials. Token or User credentials required" } };
    }
    if (options.bearerToken !== undefined && req.headers.authorization !== `Bearer ${options.bearerToken}`) {
      return { status: 401, body: { status: 401, title: "Unauthorized", detail: "Invalid credentials" } };
    }
    if (options.denied?.some((d) => d.method === req.method && req.path.startsWith(d.path))) {
      const action =
        { GET: "read", POST: "create", PUT: "update", PATCH: "update", DELETE: "delete" }[req.method] ?? "access";
      return { status: 403, body: { message: `you do not have permissions to ${action} this resource` } };
    }
    if (options.throttle) {
      const t = clock.now();
      while (window.length > 0 && window[0]! <= t - options.throttle.windowMs) window.shift();
      if (window.length >= options.throttle.requests) {
        const retryAfterS = Math.max(1, Math.ceil((window[0]! + options.throttle.windowMs - t) / 1000));
        return {
          status: 429,
          body: { status: 429, title: "Too Many Requests", detail: "API rate limit exceeded" },
          headers: { "retry-after": String(retryAfterS) },
        };
      }
      window.push(t);
    }
    return undefined;
  }

  function handle(req: JsonFakeRequest): JsonFakeAnswer {
    const refused = authorize(req);
    if (refused) return refused;
    const parts = req.path.split("/").filter(Boolean).map(decodeURIComponent);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const { method, query } = req;
    if (parts[0] === "consumers") {
      if (parts.length === 1) {
        if (method === "GET") return list([...consumers.values()], query, "/consumers");
        if (method === "POST") return createConsumer(body);
      }
      const c = parts[1] !== undefined ? consumerOf(parts[1]) : undefined;
      if (parts.length === 2) {
        if (method === "DELETE") {
          if (c) deleteConsumer(c);
          return { status: 204 };
        }
        if (!c) return notFound();
        if (method === "GET") return { status: 200, body: c };
        if (method === "PATCH") return patchTags(c, body);
      }
      if (!c) return notFound();
      const kind = parts[2];
      const byConsumer = <T extends { consumer: { id: string } | null }>(m: Map<string, T>) =>
        [...m.values()].filter((e) => e.consumer?.id === c.id);
      if (kind === "key-auth") {
        if (parts.length === 3) {
          if (method === "GET") return list(byConsumer(keyAuths), query, `/consumers/${c.id}/key-auth`);
          if (method === "POST") return createKeyAuth(c, body);
        }
        const k = [...keyAuths.values()].find(
          (x) => x.consumer.id === c.id && (x.id === parts[3] || x.key === parts[3]),
        );
        if (method === "DELETE") {
          if (k) keyAuths.delete(k.id);
          return { status: 204 };
        }
        if (!k) return notFound();
        if (method === "GET") return { status: 200, body: k };
        if (method === "PATCH") return patchTags(k, body);
      }
      if (kind === "acls") {
        if (parts.length === 3) {
          if (method === "GET") return list(byConsumer(acls), query, `/consumers/${c.id}/acls`);
          if (method === "POST") return createAcl(c, body);
        }
        const a = [...acls.values()].find((x) => x.consumer.id === c.id && (x.id === parts[3] || x.group === parts[3]));
        if (method === "DELETE") {
          if (a) acls.delete(a.id);
          return { status: 204 };
        }
        if (!a) return notFound();
        if (method === "GET") return { status: 200, body: a };
        if (method === "PATCH") return patchTags(a, body);
      }
      if (kind === "plugins" && parts.length === 3) {
        if (method === "GET") return list(byConsumer(plugins), query, `/consumers/${c.id}/plugins`);
        if (method === "POST") return createPlugin(c, body);
      }
    }
    if (parts[0] === "plugins" && parts.length === 2) {
      const p = plugins.get(parts[1]!);
      if (method === "DELETE") {
        if (p) plugins.delete(p.id);
        return { status: 204 };
      }
      if (!p) return notFound();
      if (method === "GET") return { status: 200, body: p };
      if (method === "PATCH") return patchPlugin(p, body);
    }
    if (parts.length === 0 && method === "GET")
      return { status: 200, body: { version: "3.9.1", tagline: "Welcome to kong" } };
    return { status: 405, body: { message: "Method not allowed" } };
  }

  const control = await startJsonFake({
    basePath: options.basePath ?? "",
    clock,
    handle,
    faultBody: (status) =>
      status === 429
        ? { status: 429, title: "Too Many Requests", detail: "API rate limit exceeded" }
        : {
            message:
              status >= 500
                ? "An unexpected error occurred"
                : status === 403
                  ? "you do not have permissions to access this resource"
                  : `injected ${status}`,
          },
  });

  return {
    ...control,
    consumers: () => [...consumers.values()],
    keyAuths: () => [...keyAuths.values()],
    acls: () => [...acls.values()],
    plugins: () => [...plugins.values()],
    addForeignConsumer(spec) {
      const c: KongConsumer = {
        id: randomUUID(),
        username: spec.username,
        custom_id: null,
        tags: spec.tags ?? null,
        created_at: now(),
        updated_at: now(),
      };
      consumers.set(c.id, c);
      if (spec.key !== undefined) {
        const id = randomUUID();
        keyAuths.set(id, { id, consumer: { id: c.id }, key: spec.key, ttl: null, tags: null, created_at: now() });
      }
      for (const group of spec.groups ?? []) {
        const id = randomUUID();
        acls.set(id, { id, consumer: { id: c.id }, group, tags: null, created_at: now() });
      }
      return c;
    },
  };
}
