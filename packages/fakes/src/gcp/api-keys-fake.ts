/**
 * An in-process HTTP fake of the Google Cloud API Keys v2 REST API
 * (`https://apikeys.googleapis.com/v2/...`), for tests and `credhook demo`.
 * The unmodified `@google-cloud/apikeys` client reaches it with
 * `{ fallback: true, protocol: "http", apiEndpoint: "127.0.0.1", port }`.
 *
 * What it models (https://cloud.google.com/api-keys/docs/reference/rest):
 * - keys: create (with `keyId`, long-running), get, list (`pageSize` ≤ 300,
 *   `pageToken`, `showDeleted`), getKeyString, patch (`updateMask` of
 *   `displayName`, `restrictions`, `annotations`; `key.etag` checked), delete
 *   (soft delete, `etag` checked, long-running), undelete (long-running);
 * - operations: `GET /v2/operations/{id}`; each answers `done: false` on the
 *   first `pollsUntilDone` polls (default 1) and then the finished Key. A
 *   finished create's `response` is the Key **with its `keyString`**, as
 *   Google answers it (Google's own sample reads the new key's string from the
 *   create result: "For authenticating with the API key, use the value in
 *   result.getKeyString()", GoogleCloudPlatform/java-docs-samples
 *   auth/src/main/java/CreateApiKey.java, the sample of
 *   https://cloud.google.com/docs/authentication/api-keys#create); the REST
 *   reference calls the field output-only and readable "only through
 *   GetKeyString", so `setKeyStringInCreateResult(false)` models that reading;
 * - validation: `keyId` must match `[a-z]([a-z0-9-]{0,61}[a-z0-9])?` and not be
 *   UUID-like; `displayName` ≤ 63 characters; every `apiTargets[].service` non-empty;
 * - errors as Google sends them: `{"error":{code,message,status,details}}` —
 *   400 INVALID_ARGUMENT, 401 UNAUTHENTICATED (no Bearer token), 403
 *   PERMISSION_DENIED (another project), 404 NOT_FOUND, 409 ALREADY_EXISTS,
 *   409 ABORTED (stale etag), 429 RESOURCE_EXHAUSTED;
 * - quotas: 240 reads and 120 writes per minute per project
 *   (https://cloud.google.com/api-keys/docs/quotas), counted over a sliding
 *   60-second window; operation polls and getKeyString count as reads (so a 429
 *   can come after the key exists).
 *
 * Behaviour Google does not document, chosen here (the provider does not depend
 * on it: it reads `deleteTime` first): GET of a soft-deleted key returns it with
 * `deleteTime` set; getKeyString, patch and delete of a soft-deleted key answer
 * 404; a `keyId` stays taken while its key is soft-deleted (409 on create);
 * undelete of a live key answers 400 FAILED_PRECONDITION.
 *
 * Fault injection is a JS API on {@link ApiKeysFake.control}, for every RPC
 * including operation polls and getKeyString:
 * - `fail({ status, rpcs, times, every, retryAfterS })`: 403/429/500/503/…
 *   answered instead of handling the request (429 without a retry hint, as
 *   Google usually sends it, unless `retryAfterS` adds `Retry-After` and a
 *   `google.rpc.RetryInfo` detail);
 * - `fail({ …, afterApply: true })`: the request is applied, then the error is
 *   answered (a write that took effect although the client saw a failure);
 * - `setLatency(ms, { rpcs })`: the request waits `ms` before it is handled,
 *   so a write slower than the client's time-out is applied after the client
 *   gave up;
 * - `delayOperations(ms)`: writes are accepted at once but applied `ms` later
 *   (their operation is not done until then; a created keyId is reserved
 *   meanwhile: createKey answers 409, getKey 404) — a create operation that
 *   lands after the client stopped polling;
 * - `holdOperations`, `setPollsUntilDone`, `setQuotas`;
 * - {@link ApiKeysFake.createForeignKey}: a key made by someone else in the
 *   same project (no credhook annotations).
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { readJsonBody, sendJson, startFakeServer, type FakeServer } from "@credhook/provider-testkit";
import { type FakeClock, systemClock } from "../clock.js";

/** An API target of a key's restrictions (REST JSON shape). */
export interface FakeApiTarget {
  service: string;
  methods?: string[];
}

/** A key as the fake stores it (REST JSON field names). */
export interface FakeKey {
  /** `projects/{projectNumber}/locations/global/keys/{keyId}`. */
  name: string;
  keyId: string;
  uid: string;
  displayName: string;
  /** The secret; only getKeyString (and the create operation's result) return it. */
  keyString: string;
  createTime: string;
  updateTime: string;
  /** Set once soft-deleted. */
  deleteTime?: string;
  annotations: Record<string, string>;
  restrictions: { apiTargets?: FakeApiTarget[]; [other: string]: unknown };
  etag: string;
}

/** Which requests an injected fault or latency applies to. */
export interface FakeRequestFilter {
  /** RPC names, e.g. `["CreateKey", "GetOperation"]`; all when absent. */
  rpcs?: FakeRpc[];
}

/** The RPCs the fake answers. */
export type FakeRpc =
  | "CreateKey"
  | "ListKeys"
  | "GetKey"
  | "GetKeyString"
  | "UpdateKey"
  | "DeleteKey"
  | "UndeleteKey"
  | "GetOperation";

/** An error to answer with instead of handling the request. */
export interface FakeFault extends FakeRequestFilter {
  /** HTTP status: 429 (RESOURCE_EXHAUSTED), 500 (INTERNAL), 503 (UNAVAILABLE), 504 (DEADLINE_EXCEEDED) … */
  status: number;
  /** Seconds, sent as `Retry-After` and as a `google.rpc.RetryInfo` detail. */
  retryAfterS?: number;
  /** How many matching requests fail. @default 1 */
  times?: number;
  /** Fail only every `every`-th matching request (1st, 2nd … `every`-th: the last one fails), until `times` failed. @default 1 */
  every?: number;
  /**
   * Apply the request first, then answer the error: a write that took effect
   * although the client saw a failure (e.g. 500 after createKey made the key).
   * @default false
   */
  afterApply?: boolean;
  /** Status name in the body, e.g. `ABORTED` for a 409 etag clash. @default the canonical name of `status` */
  grpcStatus?: string;
}

/** One request the fake received, for assertions. */
export interface FakeRequestRecord {
  rpc: FakeRpc | "Unknown";
  method: string;
  /** Path and query. */
  url: string;
  /** HTTP status answered. */
  status: number;
}

/** Options of {@link startApiKeysFake}. */
export interface ApiKeysFakeOptions {
  /** Project id the fake serves. @default "fake-project" */
  projectId?: string;
  /** Project number used in resource names. @default "123456789012" */
  projectNumber?: string;
  /** Only this Bearer token is accepted; any non-empty one when absent. */
  token?: string;
  /** Read requests per minute per project. @default 240 */
  readsPerMinute?: number;
  /** Write requests per minute per project. @default 120 */
  writesPerMinute?: number;
  /** Polls answered `done: false` before an operation finishes. @default 1 */
  pollsUntilDone?: number;
  /**
   * The clock of the per-minute quotas' window, latency, delayed operations (`delayOperations`) and
   * the keys' `createTime`/`updateTime`/`deleteTime`: a `ManualClock` in a test that waits for them.
   * @default systemClock
   */
  clock?: FakeClock;
  /** Test control: at most this many keys per ListKeys page whatever `pageSize` asks (to exercise `pageToken` paging with few keys). */
  maxPageSize?: number;
}

/** Control API of a running fake (JS methods, not HTTP). */
export interface ApiKeysFakeControl {
  /** Answers the next `times` matching requests with `status` (and Retry-After for 429/503). */
  fail(fault: FakeFault): void;
  /** Delays every matching request by `ms` milliseconds (0 removes it). */
  setLatency(ms: number, filter?: FakeRequestFilter): void;
  /** While true, operations never finish (polls answer `done: false`). */
  holdOperations(hold: boolean): void;
  /** Polls answered `done: false` before an operation finishes, for new operations. */
  setPollsUntilDone(n: number): void;
  /**
   * Writes accepted from now on are applied `ms` milliseconds later, whether or
   * not anyone polls (0 = at once, the default): their operation answers
   * `done: false` until then, and a created keyId is reserved (createKey 409,
   * getKey 404) until the key appears.
   */
  delayOperations(ms: number): void;
  /** Whether a finished create operation's Key carries `keyString` (default true, as Google answers). */
  setKeyStringInCreateResult(include: boolean): void;
  /** Changes the per-minute quotas (and forgets the requests counted so far). */
  setQuotas(q: { readsPerMinute?: number; writesPerMinute?: number }): void;
  /** Removes a soft-deleted key for good (Google purges after 30 days). */
  purge(keyId: string): void;
  /** Removes every injected fault, the latency, held and delayed operations (writes already accepted still land); keys stay. */
  clearFaults(): void;
  /** Clears keys, operations, faults, latency, quotas' counters and the request log. */
  reset(): void;
}

/** A running API Keys fake. */
export interface ApiKeysFake {
  /** Base URL, `http://127.0.0.1:PORT` — what the provider's `endpoint` option takes. */
  url: string;
  port: number;
  projectId: string;
  projectNumber: string;
  control: ApiKeysFakeControl;
  /** Every key, including soft-deleted ones (copies). */
  keys(): FakeKey[];
  /** One key by keyId (a copy), or undefined. */
  key(keyId: string): FakeKey | undefined;
  /** Requests received so far, in order. */
  requests(): FakeRequestRecord[];
  /**
   * Creates a key directly, as another tool or a person would in the same
   * project: no credhook annotations unless given. Counts no quota and logs no request.
   * @returns the key (a copy)
   */
  createForeignKey(key?: {
    keyId?: string;
    displayName?: string;
    annotations?: Record<string, string>;
    restrictions?: FakeKey["restrictions"];
  }): FakeKey;
  /** Stops the server. */
  close(): Promise<void>;
}

const KEY_ID = /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
const UUID_LIKE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const KEY_TYPE = "type.googleapis.com/google.api.apikeys.v2.Key";
const MUTABLE_FIELDS = ["displayName", "restrictions", "annotations"] as const;

const STATUS_NAMES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ALREADY_EXISTS",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "NOT_IMPLEMENTED",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** gRPC code numbers of the status names, for a failed operation's `error.code` (https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto). */
const GRPC_CODES: Record<string, number> = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  INTERNAL: 13,
  UNAVAILABLE: 14,
};

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly grpcStatus: string,
    message: string,
    readonly details: unknown[] = [],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface FakeOperation {
  name: string;
  pollsLeft: number;
  /** The finished operation's Key; undefined while a delayed write is not applied yet. */
  result?: Record<string, unknown>;
  /** The operation's error, when the delayed write failed as it was applied. */
  error?: { code: number; message: string; status: string };
}

function keyString(): string {
  // Google API keys: "AIza" followed by 35 characters of [A-Za-z0-9_-] (39 in all).
  return `AIza${randomBytes(27).toString("base64url").slice(0, 35)}`;
}

function etagOf(key: Omit<FakeKey, "etag">): string {
  const h = createHash("sha256")
    .update(JSON.stringify([key.displayName, key.annotations, key.restrictions, key.updateTime, key.deleteTime ?? ""]))
    .digest("base64");
  return `W/"${h.slice(0, 24)}"`;
}

function publicKey(key: FakeKey, withKeyString = false): Record<string, unknown> {
  const { keyId: _id, keyString: secret, ...rest } = key;
  const out: Record<string, unknown> = { ...rest };
  if (withKeyString) out.keyString = secret;
  if (Object.keys(key.annotations).length === 0) delete out.annotations;
  return structuredClone(out);
}

function validateRestrictions(restrictions: unknown): FakeKey["restrictions"] {
  if (restrictions === undefined || restrictions === null) return {};
  if (typeof restrictions !== "object")
    throw new HttpFailure(400, "INVALID_ARGUMENT", "restrictions must be an object.");
  const r = restrictions as FakeKey["restrictions"];
  for (const [i, t] of (r.apiTargets ?? []).entries()) {
    if (typeof t?.service !== "string" || t.service.length === 0) {
      throw new HttpFailure(400, "INVALID_ARGUMENT", `restrictions.api_targets[${i}].service must be set.`);
    }
    if (
      t.methods !== undefined &&
      (!Array.isArray(t.methods) || t.methods.some((m) => typeof m !== "string" || m.length === 0))
    ) {
      throw new HttpFailure(
        400,
        "INVALID_ARGUMENT",
        `restrictions.api_targets[${i}].methods must be non-empty strings.`,
      );
    }
  }
  const clientRestrictions = [
    "browserKeyRestrictions",
    "serverKeyRestrictions",
    "androidKeyRestrictions",
    "iosKeyRestrictions",
  ].filter((k) => r[k] !== undefined);
  if (clientRestrictions.length > 1)
    throw new HttpFailure(400, "INVALID_ARGUMENT", "Only one client restriction type may be set.");
  return structuredClone(r);
}

function validateDisplayName(name: unknown): string {
  if (name === undefined || name === null) return "";
  if (typeof name !== "string") throw new HttpFailure(400, "INVALID_ARGUMENT", "display_name must be a string.");
  if ([...name].length > 63)
    throw new HttpFailure(400, "INVALID_ARGUMENT", "display_name must be at most 63 characters long.");
  return name;
}

function validateAnnotations(a: unknown): Record<string, string> {
  if (a === undefined || a === null) return {};
  if (typeof a !== "object" || Object.values(a).some((v) => typeof v !== "string")) {
    throw new HttpFailure(400, "INVALID_ARGUMENT", "annotations must map strings to strings.");
  }
  return { ...(a as Record<string, string>) };
}

/**
 * Starts the API Keys fake on 127.0.0.1, port 0.
 * @param options project, accepted token, quotas, polls per operation
 * @returns the running fake; call `close()` when done
 */
export async function startApiKeysFake(options: ApiKeysFakeOptions = {}): Promise<ApiKeysFake> {
  const projectId = options.projectId ?? "fake-project";
  const projectNumber = options.projectNumber ?? "123456789012";
  let readsPerMinute = options.readsPerMinute ?? 240;
  let writesPerMinute = options.writesPerMinute ?? 120;
  let pollsUntilDone = options.pollsUntilDone ?? 1;
  let hold = false;
  let applyDelayMs = 0;
  let keyStringInCreateResult = true;
  const clock = options.clock ?? systemClock;
  const timestamp = () => new Date(clock.now()).toISOString();

  const keys = new Map<string, FakeKey>();
  /** keyIds of creates accepted but not applied yet (delayOperations). */
  const reserved = new Set<string>();
  const operations = new Map<string, FakeOperation>();
  /** Aborts the delayed applies not landed yet (reset, close). */
  let delayed = new AbortController();
  let faults: Array<FakeFault & { left: number; seen: number }> = [];
  let latency: { ms: number; filter?: FakeRequestFilter | undefined } = { ms: 0 };
  let readTimes: number[] = [];
  let writeTimes: number[] = [];
  let log: FakeRequestRecord[] = [];

  const matches = (filter: FakeRequestFilter | undefined, rpc: FakeRpc | "Unknown") =>
    !filter?.rpcs || (rpc !== "Unknown" && filter.rpcs.includes(rpc));

  function checkProject(p: string): void {
    if (p !== projectId && p !== projectNumber) {
      throw new HttpFailure(403, "PERMISSION_DENIED", `Permission denied on resource project ${p}.`, [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "CONSUMER_INVALID",
          domain: "googleapis.com",
          metadata: { consumer: `projects/${p}`, service: "apikeys.googleapis.com" },
        },
      ]);
    }
  }

  function checkLocation(l: string): void {
    if (l !== "global")
      throw new HttpFailure(
        400,
        "INVALID_ARGUMENT",
        `Location ${l} is not supported; the only supported location is global.`,
      );
  }

  function countQuota(kind: "read" | "write"): void {
    const now = clock.now();
    const limit = kind === "read" ? readsPerMinute : writesPerMinute;
    const times = (kind === "read" ? readTimes : writeTimes).filter((t) => now - t < 60_000);
    if (kind === "read") readTimes = times;
    else writeTimes = times;
    if (times.length >= limit) {
      const metric = kind === "read" ? "Read requests" : "Write requests";
      throw new HttpFailure(
        429,
        "RESOURCE_EXHAUSTED",
        `Quota exceeded for quota metric '${metric}' and limit '${metric} per minute' of service 'apikeys.googleapis.com' for consumer 'project_number:${projectNumber}'.`,
        [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "RATE_LIMIT_EXCEEDED",
            domain: "googleapis.com",
            metadata: {
              quota_limit_value: String(limit),
              service: "apikeys.googleapis.com",
              consumer: `projects/${projectNumber}`,
            },
          },
        ],
      );
    }
    times.push(now);
  }

  function findKey(keyId: string, opts: { allowDeleted: boolean }): FakeKey {
    const key = keys.get(keyId);
    if (!key || (key.deleteTime && !opts.allowDeleted)) {
      throw new HttpFailure(
        404,
        "NOT_FOUND",
        `Key projects/${projectNumber}/locations/global/keys/${keyId} not found.`,
      );
    }
    return key;
  }

  /** Freshness check (https://google.aip.dev/154): a stale etag is 409 ABORTED; none skips the check. */
  function checkEtag(key: FakeKey, etag: unknown): void {
    if (typeof etag === "string" && etag.length > 0 && etag !== key.etag) {
      throw new HttpFailure(
        409,
        "ABORTED",
        `The etag of key ${key.name} does not match; the key was changed concurrently.`,
      );
    }
  }

  /**
   * Accepts a write: returns its operation, and runs `apply` (which returns the
   * operation's result) now, or `applyDelayMs` later when writes are delayed.
   */
  function accept(apply: () => Record<string, unknown>): Record<string, unknown> {
    const name = `operations/akmf.p7-${projectNumber}-${randomUUID()}`;
    const op: FakeOperation = { name, pollsLeft: pollsUntilDone };
    operations.set(name, op);
    const run = () => {
      try {
        op.result = apply();
      } catch (err) {
        if (!(err instanceof HttpFailure)) throw err;
        op.error = { code: GRPC_CODES[err.grpcStatus] ?? 2, message: err.message, status: err.grpcStatus };
      }
    };
    if (applyDelayMs > 0) {
      clock.sleep(applyDelayMs, delayed.signal).then(run, () => {}); // rejected only when reset or closed: dropped
    } else {
      run();
    }
    return { name };
  }

  function operationResult(key: FakeKey, withKeyString = false): Record<string, unknown> {
    return { "@type": KEY_TYPE, ...publicKey(key, withKeyString) };
  }

  function touch(key: FakeKey): void {
    key.updateTime = timestamp();
    key.etag = etagOf(key);
  }

  function makeKey(keyId: string, body: Record<string, unknown>): FakeKey {
    const now = timestamp();
    const partial: Omit<FakeKey, "etag"> = {
      name: `projects/${projectNumber}/locations/global/keys/${keyId}`,
      keyId,
      uid: randomUUID(),
      displayName: validateDisplayName(body.displayName),
      keyString: keyString(),
      createTime: now,
      updateTime: now,
      annotations: validateAnnotations(body.annotations),
      restrictions: validateRestrictions(body.restrictions),
    };
    return { ...partial, etag: etagOf(partial) };
  }

  async function route(
    req: IncomingMessage,
    url: URL,
  ): Promise<{ rpc: FakeRpc | "Unknown"; run: () => Promise<[number, unknown]> }> {
    const method = req.method ?? "GET";
    const path = decodeURIComponent(url.pathname);
    let m: RegExpMatchArray | null;

    if ((m = path.match(/^\/v2\/(operations\/[^/]+)$/)) && method === "GET") {
      const opName = m[1]!;
      return {
        rpc: "GetOperation",
        run: async () => {
          countQuota("read");
          const op = operations.get(opName);
          if (!op) throw new HttpFailure(404, "NOT_FOUND", `Operation ${opName} not found.`);
          if (hold || op.pollsLeft > 0 || (!op.result && !op.error)) {
            if (!hold && op.pollsLeft > 0) op.pollsLeft -= 1;
            return [200, { name: op.name, done: false }];
          }
          return [
            200,
            op.error
              ? { name: op.name, done: true, error: op.error }
              : { name: op.name, done: true, response: op.result },
          ];
        },
      };
    }

    if ((m = path.match(/^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/keys$/))) {
      const [, project, location] = m as unknown as [string, string, string];
      if (method === "POST") {
        return {
          rpc: "CreateKey",
          run: async () => {
            checkProject(project);
            checkLocation(location);
            countQuota("write");
            const body = ((await readJsonBody<Record<string, unknown>>(req)) ?? {}) as Record<string, unknown>;
            const keyId = url.searchParams.get("keyId") || randomUUID();
            if (url.searchParams.has("keyId") && (!KEY_ID.test(keyId) || UUID_LIKE.test(keyId))) {
              throw new HttpFailure(
                400,
                "INVALID_ARGUMENT",
                `Invalid key_id '${keyId}': it must match [a-z]([a-z0-9-]{0,61}[a-z0-9])? and must not be UUID-like.`,
              );
            }
            if (keys.has(keyId) || reserved.has(keyId))
              throw new HttpFailure(409, "ALREADY_EXISTS", `A key with the ID ${keyId} already exists in the project.`);
            const key = makeKey(keyId, body); // validates before the operation is accepted
            reserved.add(keyId);
            return [
              200,
              accept(() => {
                reserved.delete(keyId);
                keys.set(keyId, key);
                return operationResult(key, keyStringInCreateResult);
              }),
            ];
          },
        };
      }
      if (method === "GET") {
        return {
          rpc: "ListKeys",
          run: async () => {
            checkProject(project);
            checkLocation(location);
            countQuota("read");
            const showDeleted = url.searchParams.get("showDeleted") === "true";
            const requested = Number(url.searchParams.get("pageSize") ?? "0");
            const pageSize = Math.min(requested > 0 ? Math.min(requested, 300) : 300, options.maxPageSize ?? 300);
            const token = url.searchParams.get("pageToken");
            const start = token ? Number(Buffer.from(token, "base64url").toString("utf8")) : 0;
            if (!Number.isInteger(start) || start < 0)
              throw new HttpFailure(400, "INVALID_ARGUMENT", "Invalid page token.");
            const all = [...keys.values()]
              .filter((k) => showDeleted || !k.deleteTime)
              .sort((a, b) => a.keyId.localeCompare(b.keyId));
            const page = all.slice(start, start + pageSize);
            const body: Record<string, unknown> = { keys: page.map((k) => publicKey(k)) };
            if (start + pageSize < all.length)
              body.nextPageToken = Buffer.from(String(start + pageSize)).toString("base64url");
            return [200, body];
          },
        };
      }
    }

    if ((m = path.match(/^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/keys\/([^/:]+)(\/keyString|:undelete)?$/))) {
      const [, project, location, keyId, suffix] = m as unknown as [string, string, string, string, string | undefined];
      const guard = (kind: "read" | "write") => {
        checkProject(project);
        checkLocation(location);
        countQuota(kind);
      };
      if (suffix === "/keyString" && method === "GET") {
        return {
          rpc: "GetKeyString",
          run: async () => {
            guard("read");
            return [200, { keyString: findKey(keyId, { allowDeleted: false }).keyString }];
          },
        };
      }
      if (suffix === ":undelete" && method === "POST") {
        return {
          rpc: "UndeleteKey",
          run: async () => {
            guard("write");
            await readJsonBody(req);
            const key = findKey(keyId, { allowDeleted: true });
            if (!key.deleteTime) throw new HttpFailure(400, "FAILED_PRECONDITION", `Key ${key.name} is not deleted.`);
            return [
              200,
              accept(() => {
                delete key.deleteTime;
                touch(key);
                return operationResult(key);
              }),
            ];
          },
        };
      }
      if (suffix === undefined && method === "GET") {
        return {
          rpc: "GetKey",
          run: async () => {
            guard("read");
            return [200, publicKey(findKey(keyId, { allowDeleted: true }))];
          },
        };
      }
      if (suffix === undefined && method === "PATCH") {
        return {
          rpc: "UpdateKey",
          run: async () => {
            guard("write");
            const body = ((await readJsonBody<Record<string, unknown>>(req)) ?? {}) as Record<string, unknown>;
            const key = findKey(keyId, { allowDeleted: false });
            const maskParam = url.searchParams.get("updateMask");
            const mask = maskParam
              ? maskParam
                  .split(",")
                  .map((s) => s.trim())
                  .filter(Boolean)
              : [...MUTABLE_FIELDS];
            for (const f of mask) {
              if (!(MUTABLE_FIELDS as readonly string[]).includes(f)) {
                throw new HttpFailure(
                  400,
                  "INVALID_ARGUMENT",
                  `Invalid update_mask path '${f}': only display_name, restrictions and annotations can be updated.`,
                );
              }
            }
            checkEtag(key, body.etag);
            const next = {
              displayName: mask.includes("displayName") ? validateDisplayName(body.displayName) : key.displayName,
              restrictions: mask.includes("restrictions") ? validateRestrictions(body.restrictions) : key.restrictions,
              annotations: mask.includes("annotations") ? validateAnnotations(body.annotations) : key.annotations,
            };
            return [
              200,
              accept(() => {
                Object.assign(key, next);
                touch(key);
                return operationResult(key);
              }),
            ];
          },
        };
      }
      if (suffix === undefined && method === "DELETE") {
        return {
          rpc: "DeleteKey",
          run: async () => {
            guard("write");
            const key = findKey(keyId, { allowDeleted: false });
            checkEtag(key, url.searchParams.get("etag"));
            return [
              200,
              accept(() => {
                key.deleteTime = timestamp();
                touch(key);
                return operationResult(key);
              }),
            ];
          },
        };
      }
    }

    return {
      rpc: "Unknown",
      run: async () => {
        throw new HttpFailure(404, "NOT_FOUND", `The requested URL ${url.pathname} was not found on this server.`);
      },
    };
  }

  /** The first fault that applies to this request, counting it; undefined when none does. */
  function takeFault(rpc: FakeRpc | "Unknown"): (FakeFault & { left: number; seen: number }) | undefined {
    for (const f of faults) {
      if (f.left <= 0 || !matches(f, rpc)) continue;
      f.seen += 1;
      if (f.seen % Math.max(1, f.every ?? 1) !== 0) continue;
      f.left -= 1;
      faults = faults.filter((x) => x.left > 0);
      return f;
    }
    return undefined;
  }

  function injected(fault: FakeFault): HttpFailure {
    const details: unknown[] = [];
    const headers: Record<string, string> = {};
    if (fault.retryAfterS !== undefined) {
      headers["retry-after"] = String(fault.retryAfterS);
      details.push({ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${fault.retryAfterS}s` });
    }
    return new HttpFailure(
      fault.status,
      fault.grpcStatus ?? STATUS_NAMES[fault.status] ?? "UNKNOWN",
      `Injected failure (${fault.status}).`,
      details,
      headers,
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const { rpc, run } = await route(req, url);
    const record: FakeRequestRecord = { rpc, method: req.method ?? "GET", url: url.pathname + url.search, status: 0 };
    log.push(record);
    try {
      if (latency.ms > 0 && matches(latency.filter, rpc)) await clock.sleep(latency.ms);
      const auth = req.headers.authorization ?? "";
      const token = auth.startsWith("Bearer ") ? auth.slice(7).trim() : "";
      if (!token || (options.token !== undefined && token !== options.token)) {
        throw new HttpFailure(
          401,
          "UNAUTHENTICATED",
          "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
        );
      }
      const fault = takeFault(rpc);
      if (fault && !fault.afterApply) throw injected(fault);
      const [status, body] = await run();
      if (fault) throw injected(fault); // applied, then answered with the error
      record.status = status;
      sendJson(res, status, body);
    } catch (err) {
      if (err instanceof HttpFailure) {
        record.status = err.status;
        const error: Record<string, unknown> = { code: err.status, message: err.message, status: err.grpcStatus };
        if (err.details.length > 0) error.details = err.details;
        sendJson(res, err.status, { error }, err.headers);
        return;
      }
      if (err instanceof SyntaxError) {
        record.status = 400;
        sendJson(res, 400, {
          error: { code: 400, message: "Invalid JSON payload received.", status: "INVALID_ARGUMENT" },
        });
        return;
      }
      throw err;
    }
  }

  const server: FakeServer = await startFakeServer(handle);

  function clearTimers(): void {
    delayed.abort();
    delayed = new AbortController();
  }

  const control: ApiKeysFakeControl = {
    fail(fault) {
      faults.push({ ...fault, left: fault.times ?? 1, seen: 0 });
    },
    setLatency(ms, filter) {
      latency = { ms, filter };
    },
    holdOperations(h) {
      hold = h;
    },
    setPollsUntilDone(n) {
      pollsUntilDone = n;
    },
    delayOperations(ms) {
      applyDelayMs = Math.max(0, ms);
    },
    setKeyStringInCreateResult(include) {
      keyStringInCreateResult = include;
    },
    setQuotas(q) {
      if (q.readsPerMinute !== undefined) readsPerMinute = q.readsPerMinute;
      if (q.writesPerMinute !== undefined) writesPerMinute = q.writesPerMinute;
      readTimes = [];
      writeTimes = [];
    },
    purge(keyId) {
      if (keys.get(keyId)?.deleteTime) keys.delete(keyId);
    },
    clearFaults() {
      faults = [];
      latency = { ms: 0 };
      hold = false;
      applyDelayMs = 0;
    },
    reset() {
      clearTimers();
      keys.clear();
      reserved.clear();
      operations.clear();
      faults = [];
      latency = { ms: 0 };
      readTimes = [];
      writeTimes = [];
      log = [];
      hold = false;
      applyDelayMs = 0;
      keyStringInCreateResult = true;
      pollsUntilDone = options.pollsUntilDone ?? 1;
      readsPerMinute = options.readsPerMinute ?? 240;
      writesPerMinute = options.writesPerMinute ?? 120;
    },
  };

  return {
    url: server.url,
    port: server.port,
    projectId,
    projectNumber,
    control,
    keys: () => [...keys.values()].map((k) => structuredClone(k)),
    key: (keyId) => {
      const k = keys.get(keyId);
      return k ? structuredClone(k) : undefined;
    },
    requests: () => log.map((r) => ({ ...r })),
    createForeignKey(spec = {}) {
      const keyId = spec.keyId ?? `foreign-${randomBytes(6).toString("hex")}`;
      if (!KEY_ID.test(keyId) || UUID_LIKE.test(keyId)) throw new Error(`createForeignKey: invalid keyId '${keyId}'`);
      if (keys.has(keyId) || reserved.has(keyId)) throw new Error(`createForeignKey: keyId '${keyId}' is taken`);
      const key = makeKey(keyId, {
        displayName: spec.displayName ?? "made by hand",
        annotations: spec.annotations,
        restrictions: spec.restrictions,
      });
      keys.set(keyId, key);
      return structuredClone(key);
    },
    close: async () => {
      clearTimers();
      await server.close();
    },
  };
}
