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
import { type RateLimiter, RateLimitQueueFull } from "./rate-limit.js";
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

/** Settings of a {@link JsonApiClient}. */
export interface JsonApiSettings {
  /** Base URL every path is appended to (no trailing slash needed). */
  baseUrl: string;
  /** The gateway's name, for messages. */
  gateway: string;
  /** Headers of each attempt's call (authorization); may refresh a token. */
  headers: () => Record<string, string> | Promise<Record<string, string>>;
  timeoutMs: number;
  maxRetries: number;
  maxRetryAfterS: number;
  limiter?: RateLimiter;
  /** The gateway's own message in an error body (Kong `message`, Google `error.message`), if any. */
  messageOf: (json: unknown) => string | undefined;
  /** Words for 401/403 answers: which permission to grant. */
  permissionHint: string;
}

/**
 * A JSON API of one gateway: {@link httpJson} with the gateway's headers, limits and
 * error words; every failure is a {@link HttpCallFailed} carrying core's typed error,
 * with the values in `secrets` redacted from the gateway's message.
 */
export class JsonApiClient {
  private readonly base: string;

  constructor(private readonly s: JsonApiSettings) {
    this.base = s.baseUrl.replace(/\/+$/, "");
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
        headers: await this.s.headers(),
        body: options.body,
        timeoutMs: this.s.timeoutMs,
        maxRetries: this.s.maxRetries,
        maxRetryAfterS: this.s.maxRetryAfterS,
        // A POST creates: a 5xx may have been applied, so it is not resent. GET, PUT, PATCH and DELETE are idempotent.
        idempotent: options.idempotent ?? method !== "POST",
        ...(this.s.limiter ? { limiter: this.s.limiter } : {}),
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

  /** The body of a GET, or undefined on 404. @throws HttpCallFailed other failures */
  async get<T>(path: string, what: string): Promise<T | undefined> {
    const res = await this.call("GET", path, what, { ok: [200, 404] });
    return res.status === 404 ? undefined : (res.json as T);
  }
}
