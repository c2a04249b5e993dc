/**
 * One JSON call over HTTP with `fetch`, for providers of gateways that ship no
 * official Node SDK (Kong's Admin API) or whose SDK is a whole-API bundle
 * (Apigee): a time limit over the whole call, a client-side rate limiter slot
 * before each attempt, and bounded retries of throttled answers (`429`,
 * `Retry-After` read by {@link retryAfterFromHeaders}) and — for idempotent
 * calls only — of 5xx answers and network failures. The caller maps the
 * answer's status to core's typed errors with its gateway's words.
 */
import {
  Conflict,
  type CredhookError,
  NotFound,
  Throttled,
  UpstreamError,
  UpstreamTimeout,
  UpstreamUnavailable,
} from "../errors.js";
import { type RateLimiter, RateLimitQueueFull, SlidingWindowLimiter } from "./rate-limit.js";
import { redactSecrets } from "./redact.js";
import { retryAfterFromHeaders } from "./retry-after.js";

/** Options of {@link httpJson}. */
export interface HttpJsonRequest {
  /** Absolute URL. */
  url: string;
  /** HTTP method, upper case. */
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Request headers (authorization included); `content-type: application/json` is added with a body. */
  headers?: Record<string, string>;
  /** JSON body, serialised with `JSON.stringify`. */
  body?: unknown;
  /** Time limit of the whole call, retries and their waits included, ms. */
  timeoutMs: number;
  /** Retries of a throttled answer (and, when {@link idempotent}, of a 5xx or network failure). */
  maxRetries: number;
  /** Longest `Retry-After` waited for inside the call, seconds; a longer one is returned to the caller at once. */
  maxRetryAfterS: number;
  /**
   * True when sending the call twice has the effect of sending it once (GET, PUT, DELETE): a 5xx
   * or network failure is then retried. False for creates (POST): a 5xx may have been applied.
   */
  idempotent: boolean;
  /** Client-side limiter; one slot is taken before each attempt. */
  limiter?: RateLimiter;
  /** Waits a retry without `Retry-After` makes, ms, per attempt (doubled each time). @default 200 */
  backoffMs?: number;
}

/** What {@link httpJson} answers: the last attempt's status, headers and body (parsed when JSON). */
export interface HttpJsonResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body; `undefined` when empty or not JSON. */
  json: unknown;
  /** Seconds the answer's `Retry-After` (or `retry-after-ms`) asked for, when any. */
  retryAfterS: number | undefined;
  /** Attempts made (1 + retries). */
  attempts: number;
}

/**
 * The call failed without an HTTP answer. `outcomeUnknown` is true when the
 * request may have reached the server (a time-out, a connection reset): a
 * write may still land. A plain Error: the provider maps it.
 */
export class HttpTransportError extends Error {
  override readonly name = "HttpTransportError";
  constructor(
    message: string,
    /** `timeout`: the call's time limit passed; `network`: the connection failed; `queue`: the rate limiter refused the wait. */
    readonly kind: "timeout" | "network" | "queue",
    /** The request may have been received (and a write applied). */
    readonly outcomeUnknown: boolean,
    /** Seconds to wait before trying again (`queue` only). */
    readonly retryAfterS?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/** True for errors `fetch` throws when the connection was refused before anything was sent. */
function refusedBeforeSending(err: unknown): boolean {
  const code = (err as { cause?: { code?: string } })?.cause?.code;
  return code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN";
}

/**
 * Sends one JSON call (see the module comment).
 * @returns the last answer, whatever its status (2xx, 4xx, a 429 whose wait is too long or past the retries, a 5xx)
 * @throws HttpTransportError no answer: time-out, connection failure, or the limiter's queue is longer than the time left
 */
export async function httpJson(request: HttpJsonRequest): Promise<HttpJsonResponse> {
  const deadline = AbortSignal.timeout(request.timeoutMs);
  const started = Date.now();
  const headers: Record<string, string> = { accept: "application/json", ...request.headers };
  if (request.body !== undefined) headers["content-type"] = "application/json";
  const body = request.body === undefined ? undefined : JSON.stringify(request.body);
  let backoff = request.backoffMs ?? 200;
  for (let attempt = 1; ; attempt++) {
    const left = request.timeoutMs - (Date.now() - started);
    try {
      await request.limiter?.acquire(Math.min(left, request.maxRetryAfterS * 1000));
    } catch (err) {
      if (err instanceof RateLimitQueueFull)
        throw new HttpTransportError(
          `the ${err.limiter} queue is full: ${err.message}`,
          "queue",
          false,
          err.waitMs / 1000,
          { cause: err },
        );
      throw err;
    }
    let res: Response;
    try {
      res = await fetch(request.url, { method: request.method, headers, body, signal: deadline });
    } catch (err) {
      if (deadline.aborted)
        throw new HttpTransportError(`no answer within ${request.timeoutMs} ms`, "timeout", true, undefined, {
          cause: err,
        });
      const unknown = !refusedBeforeSending(err);
      if (attempt <= request.maxRetries && (request.idempotent || !unknown)) {
        await sleep(backoff, deadline).catch(() => undefined);
        backoff *= 2;
        if (!deadline.aborted) continue;
      }
      throw new HttpTransportError(`the connection failed: ${(err as Error).message}`, "network", unknown, undefined, {
        cause: err,
      });
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new HttpTransportError(
        deadline.aborted ? `no answer within ${request.timeoutMs} ms` : "the answer was cut off",
        deadline.aborted ? "timeout" : "network",
        true,
        undefined,
        { cause: err },
      );
    }
    let json: unknown;
    try {
      json = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    const retryAfterS = retryAfterFromHeaders((n) => res.headers.get(n));
    const throttled = res.status === 429;
    const failed = res.status >= 500 && request.idempotent;
    if ((throttled || failed) && attempt <= request.maxRetries) {
      const waitMs = retryAfterS !== undefined ? retryAfterS * 1000 : backoff;
      const stillLeft = request.timeoutMs - (Date.now() - started);
      if (waitMs <= request.maxRetryAfterS * 1000 && waitMs < stillLeft) {
        backoff *= 2;
        await sleep(waitMs, deadline).catch(() => undefined);
        if (!deadline.aborted) continue;
      }
    }
    return { status: res.status, headers: res.headers, json, retryAfterS, attempts: attempt };
  }
}

/** How {@link httpFailure} words and classifies one failed call. */
export interface HttpFailureContext {
  /** The gateway's name (messages start `[gateway <name>]`). */
  gateway: string;
  /** What was being done, e.g. `creating consumer credhook-… on Kong`. */
  what: string;
  /** The gateway's own message from the answer's body (already free of secrets), if any. */
  detail?: string;
  /** True when the call was a write: a 5xx or an unanswered call may then have been applied. */
  write: boolean;
  /** Extra words for 401/403 answers (which permission to grant). */
  permissionHint?: string;
}

/**
 * Core's typed error for a call that did not succeed: a {@link HttpTransportError}
 * (time-out → UpstreamTimeout, connection → UpstreamUnavailable, full queue →
 * Throttled) or an answer's status (404 NotFound, 409 Conflict, 429 Throttled
 * with its Retry-After, 401/403 and other 4xx UpstreamError naming the permission,
 * 5xx UpstreamError). `outcomeUnknown` is set for writes that may have been applied.
 */
export function httpFailure(failure: HttpJsonResponse | HttpTransportError, ctx: HttpFailureContext): CredhookError {
  const gw = (text: string) => `[gateway ${ctx.gateway}] ${text}`;
  // The cause is kept for logs: an answer's body may quote a secret (Kong's 409 names the duplicate key), so only its status travels.
  const cause = {
    cause: failure instanceof HttpTransportError ? failure : new Error(`HTTP ${failure.status}`),
    gateway: ctx.gateway,
  };
  if (failure instanceof HttpTransportError) {
    const unknown = ctx.write && failure.outcomeUnknown;
    if (failure.kind === "queue")
      return new Throttled(gw(`${ctx.what}: ${failure.message}`), failure.retryAfterS ?? 1, {
        ...cause,
        outcomeUnknown: false,
      });
    if (failure.kind === "timeout")
      return new UpstreamTimeout(gw(`${ctx.what}: ${failure.message}`), { ...cause, outcomeUnknown: unknown });
    return new UpstreamUnavailable(gw(`${ctx.what}: ${failure.message}`), 5, { ...cause, outcomeUnknown: unknown });
  }
  const said = ctx.detail ? `: ${ctx.detail}` : "";
  const status = failure.status;
  if (status === 404) return new NotFound(gw(`${ctx.what}: not found${said}`), { ...cause, outcomeUnknown: false });
  if (status === 409) return new Conflict(gw(`${ctx.what}: conflict${said}`), { ...cause, outcomeUnknown: false });
  if (status === 429)
    return new Throttled(gw(`${ctx.what}: throttled (429)${said}`), failure.retryAfterS ?? 1, {
      ...cause,
      outcomeUnknown: false,
    });
  if (status === 401 || status === 403) {
    return new UpstreamError(
      gw(`${ctx.what}: refused (${status})${said}${ctx.permissionHint ? `; ${ctx.permissionHint}` : ""}`),
      { ...cause, outcomeUnknown: false },
    );
  }
  if (status < 500)
    return new UpstreamError(gw(`${ctx.what}: unexpected answer ${status}${said}`), {
      ...cause,
      outcomeUnknown: false,
    });
  return new UpstreamError(gw(`${ctx.what}: the gateway failed (${status})${said}`), {
    ...cause,
    outcomeUnknown: ctx.write,
  });
}

/** A call of a {@link JsonApiClient} that answered something other than what was expected, with core's typed error. */
export class HttpCallFailed extends Error {
  override readonly name = "HttpCallFailed";
  constructor(
    /** The answer, or why there was none. */
    readonly failure: HttpJsonResponse | HttpTransportError,
    /** Core's typed error for it (what a provider throws). */
    readonly typed: CredhookError,
  ) {
    super(typed.message);
  }
}

/**
 * How a list endpoint pages (read by {@link JsonApiClient.list}): the answer's field holding the
 * page's items, and where the next page's cursor comes from, which the next call sends as the
 * query parameter `cursor`.
 */
export interface ListPaging {
  /** Query parameters of every page's call (the page size: Kong `size`, Apigee `rows`). */
  query?: Record<string, string>;
  /** The answer's field that holds the page's items (Kong `data`, Apigee `app`); absent: an empty page. */
  items: string;
  /** The query parameter that carries the cursor (Kong `offset`, Apigee `startKey`). */
  cursor: string;
  /**
   * Where the next cursor is. `{ field }`: a field of the answer (Kong's `offset`), absent or null
   * on the last page. `{ lastItem }`: a field of the page's last item, and the next page starts
   * with that item (Apigee's inclusive `startKey`): it is not counted twice, and the listing ends
   * at a page with nothing new, so a server that answers fewer items than asked is still read whole.
   */
  next: { field: string } | { lastItem: string };
}

/** Settings of a {@link JsonApiClient}. */
export interface JsonApiSettings {
  /** Base URL every path is appended to (no trailing slash needed). */
  baseUrl: string;
  /** The gateway's name, for messages. */
  gateway: string;
  /** Headers of every call (authorization): fixed, or read before each call (a token that refreshes). */
  headers: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
  /** Time limit of one call, retries and their waits included, ms. */
  timeoutMs: number;
  /** Retries of a throttled answer (and of a 5xx or network failure of an idempotent call). */
  maxRetries: number;
  /** Longest `Retry-After` waited for inside a call, seconds. */
  maxRetryAfterS: number;
  /** A client-side limiter of the caller's (shared, stopped by the caller); one slot per attempt. */
  limiter?: RateLimiter;
  /**
   * A client-side limit the client keeps itself when no {@link limiter} is given (the `rateLimit`
   * option of `restClientOptions`): at most `requests` attempts, retries included, in any
   * sliding window of `windowMs` plus 50 ms for clock jitter; 0 requests: no limit. Its limiter is
   * named {@link api} and stopped by {@link JsonApiClient.close}.
   */
  rateLimit?: { requests: number; windowMs: number };
  /** The API's name, e.g. `Kong Admin API`: the name of the {@link rateLimit}'s limiter. @default `<gateway> API` */
  api?: string;
  /** How the API's list endpoints page, for {@link JsonApiClient.list}. */
  paging?: ListPaging;
  /** The gateway's own message in an error body (Kong `message`, Google `error.message`), if any. */
  messageOf: (json: unknown) => string | undefined;
  /** Words for 401/403 answers: which permission to grant. */
  permissionHint: string;
}

/** The value at `field` of `json` when it is an object, else undefined. */
const fieldOf = (json: unknown, field: string): unknown =>
  typeof json === "object" && json !== null ? (json as Record<string, unknown>)[field] : undefined;

/**
 * A JSON API of one gateway: {@link httpJson} with the gateway's headers, limits and
 * error words; every failure is a {@link HttpCallFailed} carrying core's typed error,
 * with the values in `secrets` redacted from the gateway's message.
 */
export class JsonApiClient {
  private readonly base: string;
  /** The limiter of {@link JsonApiSettings.rateLimit}, which {@link close} stops. */
  private readonly ownLimiter: RateLimiter | undefined;
  /** The limiter each attempt takes a slot of: the caller's, else the client's own, else none. */
  private readonly limiter: RateLimiter | undefined;

  constructor(private readonly s: JsonApiSettings) {
    this.base = s.baseUrl.replace(/\/+$/, "");
    const { requests = 0, windowMs = 1000 } = s.limiter ? {} : (s.rateLimit ?? {});
    if (requests > 0) this.ownLimiter = new SlidingWindowLimiter(requests, windowMs + 50, s.api ?? `${s.gateway} API`);
    this.limiter = s.limiter ?? this.ownLimiter;
  }

  /** Stops the limiter the client built from {@link JsonApiSettings.rateLimit} (a caller's limiter is left running). */
  async close(): Promise<void> {
    await this.ownLimiter?.stop();
  }

  /**
   * One call; answers the response when its status is one of `ok`.
   * @param what what is being done, for messages (`creating consumer x`)
   * @throws HttpCallFailed any other answer, or none
   */
  async call(
    method: HttpJsonRequest["method"],
    path: string,
    what: string,
    options: { body?: unknown; ok?: number[]; secrets?: readonly string[]; idempotent?: boolean } = {},
  ): Promise<HttpJsonResponse> {
    const write = method !== "GET";
    let res: HttpJsonResponse;
    try {
      res = await httpJson({
        url: `${this.base}${path}`,
        method,
        headers: typeof this.s.headers === "function" ? await this.s.headers() : this.s.headers,
        body: options.body,
        timeoutMs: this.s.timeoutMs,
        maxRetries: this.s.maxRetries,
        maxRetryAfterS: this.s.maxRetryAfterS,
        // A POST creates: a 5xx may have been applied, so it is not resent. GET, PUT, PATCH and DELETE are idempotent.
        idempotent: options.idempotent ?? method !== "POST",
        ...(this.limiter ? { limiter: this.limiter } : {}),
      });
    } catch (err) {
      if (!(err instanceof HttpTransportError)) throw err;
      throw new HttpCallFailed(err, httpFailure(err, { gateway: this.s.gateway, what, write }));
    }
    if ((options.ok ?? [200, 201, 204]).includes(res.status)) return res;
    const detail = this.s.messageOf(res.json)?.slice(0, 300);
    const typed = httpFailure(res, {
      gateway: this.s.gateway,
      what,
      write,
      ...(detail ? { detail: redactSecrets(detail, options.secrets ?? []) } : {}),
      permissionHint: this.s.permissionHint,
    });
    throw new HttpCallFailed(res, typed);
  }

  /**
   * A DELETE of something that may already be gone: any 2xx, or a 404, is done.
   * @param secrets values to redact from the gateway's message (a key in the path)
   * @throws HttpCallFailed any other answer, or none
   */
  async delete(path: string, what: string, secrets: readonly string[] = []): Promise<void> {
    await this.call("DELETE", path, what, { ok: [200, 202, 204, 404], secrets });
  }

  /** The body of a GET, or undefined on 404. @throws HttpCallFailed other failures */
  async get<T>(path: string, what: string): Promise<T | undefined> {
    const res = await this.call("GET", path, what, { ok: [200, 404] });
    return res.status === 404 ? undefined : (res.json as T);
  }

  /**
   * Every item of a list endpoint, page after page as {@link JsonApiSettings.paging} says (one GET
   * each; an answer other than 200 fails the whole listing).
   * @param path the list's path, without a query
   * @param what what is being listed, for messages
   * @param query query parameters of every page besides the paging's own (a filter: Kong `tags`)
   * @throws HttpCallFailed a page failed; Error the client has no `paging` setting
   */
  async list<T>(path: string, what: string, query: Record<string, string> = {}): Promise<T[]> {
    const paging = this.s.paging;
    if (!paging) throw new Error(`JsonApiClient of gateway ${this.s.gateway}: list() needs the paging setting`);
    const out: T[] = [];
    let cursor: string | undefined;
    for (;;) {
      const q = new URLSearchParams({ ...paging.query, ...query, ...(cursor ? { [paging.cursor]: cursor } : {}) });
      const json = (await this.call("GET", `${path}?${q}`, what, { ok: [200] })).json;
      const page = (fieldOf(json, paging.items) as T[] | undefined) ?? [];
      const next = paging.next;
      if ("field" in next) {
        out.push(...page);
        cursor = (fieldOf(json, next.field) as string | null | undefined) ?? undefined;
        if (!cursor) return out;
        continue;
      }
      const fresh = cursor ? page.filter((item) => fieldOf(item, next.lastItem) !== cursor) : page;
      out.push(...fresh);
      if (fresh.length === 0) return out;
      cursor = String(fieldOf(page[page.length - 1], next.lastItem));
    }
  }
}
