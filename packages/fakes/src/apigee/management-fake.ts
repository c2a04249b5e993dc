/**
 * An in-process fake of the Apigee X management API (`apigee.googleapis.com/v1`)
 * resources credhook drives, written from the REST reference
 * (https://cloud.google.com/apigee/docs/reference/apis/apigee/rest):
 *
 * - `organizations.get`; `developers.create|get` (409 ALREADY_EXISTS on an e-mail in use);
 * - `developers.apps.create|get|delete` and `…/attributes` (replace all); creating an
 *   app **generates a consumer key and secret** for it, associated with the
 *   `apiProducts` given (none when empty); deleting an app deletes its keys;
 * - `developers.apps.keys.create` (import a consumer key and secret: letters, digits,
 *   `_` and `-` only, ≤ 2 KB each; 409 ALREADY_EXISTS for a key the organisation
 *   holds already; the new key has no API product), `keys.get`, `keys.delete`,
 *   `keys.updateDeveloperAppKey` (`POST …/keys/{key}` adds `apiProducts`),
 *   `keys.apiproducts.delete` (removes one association);
 * - `apiproducts.get`; `apps.get` (by app id, with `developerEmail` and `credentials`)
 *   and `apps.list` (`expand`, `rows`, `startKey` paging, a `filter` such as `consumerKey=…`);
 * - creates answer 200 (Google REST); errors are Google's `{"error":{code,message,status}}`:
 *   400 INVALID_ARGUMENT, 401 UNAUTHENTICATED (no Bearer token), 403 PERMISSION_DENIED
 *   (`denied` permissions, named as IAM does), 404 NOT_FOUND, 409 ALREADY_EXISTS,
 *   429 RESOURCE_EXHAUSTED (no Retry-After, as Google usually sends none).
 *
 * Faults (a write applied before its error answer, one that lands after the client
 * gave up, throttling) come from the shared JSON fake harness.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { type FakeClock, systemClock } from "../clock.js";
import { type JsonFakeAnswer, type JsonFakeControl, type JsonFakeRequest, startJsonFake } from "../shared/json-fake.js";

/** Options of {@link startApigeeFake}. */
export interface ApigeeFakeOptions {
  /** Organisation (the Google Cloud project id). @default "fake-org" */
  organization?: string;
  /** API products that exist. @default ["starter"] */
  apiProducts?: string[];
  /** IAM permissions the caller lacks (403), e.g. `apigee.developerapps.delete`. */
  denied?: string[];
  /** Quota: at most `requests` per `windowMs`; past it, 429 RESOURCE_EXHAUSTED. */
  throttle?: { requests: number; windowMs: number };
  /** Test control: at most this many apps per `apps.list` page whatever `rows` asks (to exercise `startKey` paging). */
  maxRows?: number;
  /** The clock of the quota's window, latency, held requests and the timestamps (`createdAt` …): a `ManualClock` in a test that waits for them. @default systemClock */
  clock?: FakeClock;
}

/** A name/value attribute. */
export interface ApigeeAttribute {
  name: string;
  value: string;
}

/** A credential (consumer key and secret) of an app. */
export interface ApigeeCredential {
  consumerKey: string;
  consumerSecret: string;
  apiProducts: Array<{ apiproduct: string; status: string }>;
  status: string;
  issuedAt: string;
  expiresAt: string;
  attributes: ApigeeAttribute[];
  scopes: string[];
}

/** A developer app as the fake holds it (secrets included: test inspection only). */
export interface ApigeeApp {
  appId: string;
  name: string;
  developerId: string;
  developerEmail: string;
  attributes: ApigeeAttribute[];
  credentials: ApigeeCredential[];
  status: string;
  callbackUrl: string;
  createdAt: string;
  lastModifiedAt: string;
}

/** A developer. */
export interface ApigeeDeveloper {
  developerId: string;
  email: string;
  firstName: string;
  lastName: string;
  userName: string;
  attributes: ApigeeAttribute[];
  status: string;
  organizationName: string;
  createdAt: string;
}

/** A running Apigee fake. */
export interface ApigeeFake extends JsonFakeControl {
  organization: string;
  developers(): ApigeeDeveloper[];
  apps(): ApigeeApp[];
  /** Adds an API product. */
  addApiProduct(name: string): void;
  /** Creates a developer app directly, as a person or another tool would (no request recorded), with one credential. */
  addForeignApp(spec: {
    developer: string;
    name: string;
    consumerKey?: string;
    apiProducts?: string[];
    attributes?: ApigeeAttribute[];
  }): ApigeeApp;
}

const KEY = /^[A-Za-z0-9_-]{1,2048}$/;
const PERMISSION: Record<string, string> = {
  "POST developers": "apigee.developers.create",
  "GET developers": "apigee.developers.get",
  "POST apps": "apigee.developerapps.create",
  "GET apps": "apigee.developerapps.get",
  "DELETE apps": "apigee.developerapps.delete",
  "POST keys": "apigee.appkeys.create",
  "GET keys": "apigee.appkeys.get",
  "DELETE keys": "apigee.appkeys.delete",
  "POST attributes": "apigee.developerapps.manage",
};

const err = (code: number, status: string, message: string): JsonFakeAnswer => ({
  status: code,
  body: { error: { code, message, status } },
});

/** Starts the Apigee management API fake on 127.0.0.1, port 0 (its `url` is the provider's `endpoint`). */
export async function startApigeeFake(options: ApigeeFakeOptions = {}): Promise<ApigeeFake> {
  const org = options.organization ?? "fake-org";
  const products = new Set(options.apiProducts ?? ["starter"]);
  const developers = new Map<string, ApigeeDeveloper>();
  const apps = new Map<string, ApigeeApp>();
  const window: number[] = [];
  const clock = options.clock ?? systemClock;
  /** Apigee's timestamps: ms since the epoch, as a string. */
  const ms = () => String(Math.floor(clock.now()));

  const newCredential = (consumerKey: string, consumerSecret: string, apiProducts: string[]): ApigeeCredential => ({
    consumerKey,
    consumerSecret,
    apiProducts: apiProducts.map((p) => ({ apiproduct: p, status: "approved" })),
    status: "approved",
    issuedAt: ms(),
    expiresAt: "-1",
    attributes: [],
    scopes: [],
  });
  const keyInUse = (key: string) => [...apps.values()].some((a) => a.credentials.some((c) => c.consumerKey === key));
  const appOf = (dev: ApigeeDeveloper, name: string) =>
    [...apps.values()].find((a) => a.developerId === dev.developerId && a.name === name);
  const developerOf = (idOrEmail: string) =>
    developers.get(idOrEmail.toLowerCase()) ?? [...developers.values()].find((d) => d.developerId === idOrEmail);
  const attributesOf = (v: unknown): ApigeeAttribute[] =>
    Array.isArray(v)
      ? v
          .filter((a): a is ApigeeAttribute => typeof a?.name === "string")
          .map((a) => ({ name: a.name, value: String(a.value ?? "") }))
      : [];

  function createApp(
    dev: ApigeeDeveloper,
    name: string,
    body: Record<string, unknown>,
    consumerKey?: string,
  ): JsonFakeAnswer {
    if (!/^[A-Za-z0-9][A-Za-z0-9 ._$%-]{0,254}$/.test(name))
      return err(400, "INVALID_ARGUMENT", `Invalid app name ${name}`);
    if (appOf(dev, name)) return err(409, "ALREADY_EXISTS", `App with name ${name} already exists`);
    const wanted = Array.isArray(body.apiProducts) ? (body.apiProducts as string[]) : [];
    const missing = wanted.find((p) => !products.has(p));
    if (missing) return err(400, "INVALID_ARGUMENT", `API Product [${missing}] does not exist for tenant [${org}]`);
    const app: ApigeeApp = {
      appId: randomUUID(),
      name,
      developerId: dev.developerId,
      developerEmail: dev.email,
      attributes: attributesOf(body.attributes),
      credentials: [
        newCredential(
          consumerKey ?? randomBytes(24).toString("base64url"),
          randomBytes(24).toString("base64url"),
          wanted,
        ),
      ],
      status: "approved",
      callbackUrl: typeof body.callbackUrl === "string" ? body.callbackUrl : "",
      createdAt: ms(),
      lastModifiedAt: ms(),
    };
    apps.set(app.appId, app);
    return { status: 200, body: app };
  }

  function keyRoutes(req: JsonFakeRequest, app: ApigeeApp, rest: string[]): JsonFakeAnswer {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (rest.length === 0) {
      if (req.method !== "POST") return err(404, "NOT_FOUND", "Not found");
      const key = body.consumerKey;
      const secret = body.consumerSecret;
      if (typeof key !== "string" || typeof secret !== "string" || !KEY.test(key) || !KEY.test(secret)) {
        return err(
          400,
          "INVALID_ARGUMENT",
          "Consumer key and secret must contain only letters, numbers, underscores and hyphens (at most 2 KB)",
        );
      }
      if (keyInUse(key)) return err(409, "ALREADY_EXISTS", `Consumer key ${key} already exists`);
      const cred = newCredential(key, secret, []);
      app.credentials.push(cred);
      return { status: 200, body: cred };
    }
    const cred = app.credentials.find((c) => c.consumerKey === rest[0]);
    if (!cred) return err(404, "NOT_FOUND", `Consumer key ${rest[0]} does not exist for app ${app.name}`);
    if (rest.length === 1) {
      if (req.method === "GET") return { status: 200, body: cred };
      if (req.method === "DELETE") {
        app.credentials = app.credentials.filter((c) => c !== cred);
        return { status: 200, body: cred };
      }
      if (req.method === "POST") {
        const action = req.query.get("action");
        if (action === "approve" || action === "revoke") {
          cred.status = action === "approve" ? "approved" : "revoked";
          return { status: 204 };
        }
        const add = Array.isArray(body.apiProducts) ? (body.apiProducts as string[]) : [];
        const missing = add.find((p) => !products.has(p));
        if (missing) return err(400, "INVALID_ARGUMENT", `API Product [${missing}] does not exist for tenant [${org}]`);
        for (const p of add)
          if (!cred.apiProducts.some((x) => x.apiproduct === p))
            cred.apiProducts.push({ apiproduct: p, status: "approved" });
        if (body.attributes !== undefined) cred.attributes = attributesOf(body.attributes);
        return { status: 200, body: cred };
      }
    }
    if (rest.length === 3 && rest[1] === "apiproducts" && req.method === "DELETE") {
      if (!cred.apiProducts.some((x) => x.apiproduct === rest[2]))
        return err(404, "NOT_FOUND", `API product ${rest[2]} is not associated with the key`);
      cred.apiProducts = cred.apiProducts.filter((x) => x.apiproduct !== rest[2]);
      return { status: 200, body: cred };
    }
    return err(404, "NOT_FOUND", "Not found");
  }

  function listApps(q: URLSearchParams): JsonFakeAnswer {
    const rows = Math.min(Number(q.get("rows") ?? "1000") || 1000, 1000, options.maxRows ?? 1000);
    const all = [...apps.values()].sort((a, b) => a.appId.localeCompare(b.appId));
    const startKey = q.get("startKey");
    // `filter` (e.g. `consumerKey=abc`, `appName=x`, `developerEmail=y`): one field=value, as apps.list documents
    const filter = /^(consumerKey|appName|developerEmail|appId)=(.+)$/.exec(q.get("filter") ?? "");
    const matching = filter
      ? all.filter((a) =>
          filter[1] === "consumerKey"
            ? a.credentials.some((c) => c.consumerKey === filter[2])
            : filter[1] === "appName"
              ? a.name === filter[2]
              : filter[1] === "appId"
                ? a.appId === filter[2]
                : a.developerEmail === filter[2],
        )
      : all;
    const from = startKey ? matching.findIndex((a) => a.appId === startKey) : 0;
    const slice = matching.slice(Math.max(0, from), Math.max(0, from) + rows);
    const expand = q.get("expand") === "true";
    return { status: 200, body: { app: slice.map((a) => (expand ? a : { appId: a.appId })) } };
  }

  function handle(req: JsonFakeRequest): JsonFakeAnswer {
    if (!/^Bearer \S+/.test(String(req.headers.authorization ?? "")))
      return err(
        401,
        "UNAUTHENTICATED",
        "Request is missing required authentication credential. Expected OAuth 2 access token.",
      );
    if (options.throttle) {
      const t = clock.now();
      while (window.length > 0 && window[0]! <= t - options.throttle.windowMs) window.shift();
      if (window.length >= options.throttle.requests)
        return err(
          429,
          "RESOURCE_EXHAUSTED",
          "Quota exceeded for quota metric 'Requests' and limit 'Requests per minute' of service 'apigee.googleapis.com'.",
        );
      window.push(t);
    }
    const parts = req.path.split("/").filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== "v1" || parts[1] !== "organizations" || parts[2] !== org)
      return err(404, "NOT_FOUND", `Organization ${parts[2] ?? ""} not found`);
    const rest = parts.slice(3);
    const kind = rest.includes("keys")
      ? "keys"
      : rest.at(-1) === "attributes"
        ? "attributes"
        : rest.includes("apps")
          ? "apps"
          : (rest[0] ?? "");
    const permission =
      rest[0] === "apps"
        ? rest.length === 1
          ? "apigee.apps.list"
          : "apigee.apps.get"
        : PERMISSION[`${req.method} ${kind}`];
    if (permission && options.denied?.includes(permission))
      return err(
        403,
        "PERMISSION_DENIED",
        `Permission '${permission}' denied on resource '${req.path.replace(/^\/v1\//, "")}' (or it may not exist).`,
      );
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (rest.length === 0)
      return req.method === "GET"
        ? { status: 200, body: { name: org, projectId: org, runtimeType: "CLOUD", state: "ACTIVE" } }
        : err(404, "NOT_FOUND", "Not found");
    if (rest[0] === "apiproducts" && rest.length === 2 && req.method === "GET") {
      return products.has(rest[1]!)
        ? { status: 200, body: { name: rest[1], displayName: rest[1], approvalType: "auto" } }
        : err(404, "NOT_FOUND", `ApiProduct ${rest[1]} does not exist in organization ${org}`);
    }
    if (rest[0] === "apps") {
      if (rest.length === 1 && req.method === "GET") return listApps(req.query);
      const app = apps.get(rest[1] ?? "");
      if (rest.length === 2 && req.method === "GET")
        return app
          ? { status: 200, body: app }
          : err(404, "NOT_FOUND", `App ${rest[1]} does not exist in organization ${org}`);
    }
    if (rest[0] === "developers") {
      if (rest.length === 1 && req.method === "POST") {
        const email = typeof body.email === "string" ? body.email.toLowerCase() : "";
        if (!/^[^@\s]+@[^@\s]+$/.test(email)) return err(400, "INVALID_ARGUMENT", "Invalid email");
        if (developers.has(email)) return err(409, "ALREADY_EXISTS", `Developer with email ${email} already exists`);
        const d: ApigeeDeveloper = {
          developerId: randomUUID(),
          email,
          firstName: String(body.firstName ?? ""),
          lastName: String(body.lastName ?? ""),
          userName: String(body.userName ?? ""),
          attributes: attributesOf(body.attributes),
          status: "active",
          organizationName: org,
          createdAt: ms(),
        };
        developers.set(email, d);
        return { status: 200, body: d };
      }
      const dev = developerOf(rest[1] ?? "");
      if (!dev) return err(404, "NOT_FOUND", `DeveloperId ${rest[1]} does not exist in organization ${org}`);
      if (rest.length === 2 && req.method === "GET")
        return {
          status: 200,
          body: {
            ...dev,
            apps: [...apps.values()].filter((a) => a.developerId === dev.developerId).map((a) => a.name),
          },
        };
      if (rest[2] === "apps") {
        if (rest.length === 3 && req.method === "POST") return createApp(dev, String(body.name ?? ""), body);
        const app = appOf(dev, rest[3] ?? "");
        if (!app) return err(404, "NOT_FOUND", `App named ${rest[3]} does not exist under ${dev.email}`);
        if (rest.length === 4 && req.method === "GET") return { status: 200, body: app };
        if (rest.length === 4 && req.method === "DELETE") {
          apps.delete(app.appId);
          return { status: 200, body: app };
        }
        if (rest.length === 5 && rest[4] === "attributes" && req.method === "POST") {
          app.attributes = attributesOf(body.attribute);
          app.lastModifiedAt = ms();
          return { status: 200, body: { attribute: app.attributes } };
        }
        if (rest[4] === "keys") return keyRoutes(req, app, rest.slice(5));
      }
    }
    return err(404, "NOT_FOUND", "Not found");
  }

  const control = await startJsonFake({
    clock,
    handle,
    faultBody: (status) => {
      const name =
        {
          400: "INVALID_ARGUMENT",
          403: "PERMISSION_DENIED",
          404: "NOT_FOUND",
          409: "ALREADY_EXISTS",
          429: "RESOURCE_EXHAUSTED",
          503: "UNAVAILABLE",
        }[status] ?? "INTERNAL";
      return {
        error: {
          code: status,
          message: status === 429 ? "Quota exceeded for quota metric 'Requests'." : `injected ${status}`,
          status: name,
        },
      };
    },
  });

  return {
    ...control,
    organization: org,
    developers: () => [...developers.values()],
    apps: () => [...apps.values()],
    addApiProduct: (name) => void products.add(name),
    addForeignApp(spec) {
      const email = spec.developer.toLowerCase();
      const dev = developers.get(email) ?? {
        developerId: randomUUID(),
        email,
        firstName: "Ext",
        lastName: "Dev",
        userName: email,
        attributes: [],
        status: "active",
        organizationName: org,
        createdAt: ms(),
      };
      developers.set(email, dev);
      const answer = createApp(
        dev,
        spec.name,
        { apiProducts: spec.apiProducts ?? [], attributes: spec.attributes ?? [] },
        spec.consumerKey,
      );
      if (answer.status !== 200) throw new Error(JSON.stringify(answer.body));
      return answer.body as ApigeeApp;
    },
  };
}
