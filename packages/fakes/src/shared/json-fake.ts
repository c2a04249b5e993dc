/**
 * The part every JSON control-plane fake of this package shares (Kong's Admin
 * API, Apigee's management API): a request log, injected faults — any status on
 * any call (reads included) with an optional `Retry-After`, a write applied
 * before its error answer, a request held past the client's time-out and
 * applied afterwards (no gateway cancels work when its client gives up) —
 * latency, and `idle()` (every held write has landed).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson, startFakeServer } from "@credhook/provider-testkit";
import { type FakeClock, systemClock } from "../clock.js";

/** One request as a fake's handler sees it (body parsed as JSON). */
export interface JsonFakeRequest {
  method: string;
  /** Path below the fake's base path, without the query. */
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  /** The parsed JSON body; `undefined` when empty. */
  body: unknown;
}

/** What a handler answers. */
export interface JsonFakeAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** One request the fake received (no body: no keys). */
export interface JsonFakeRecord {
  method: string;
  /** Path below the base path, with the query. */
  path: string;
  /** Status the client was answered (0 while held). */
  status: number;
  /** With an `afterApply` fault: the status the real handling produced before the fault replaced it. */
  appliedStatus?: number;
}

/**
 * A fault answered instead of (or after) the real behaviour:
 * - `{ status: 500 }`: answer 500 and apply nothing;
 * - `{ status: 500, afterApply: true }`: apply the request, then answer 500 (a lost answer);
 * - `{ delayMs: 2000 }`: hold the request 2 s, then apply and answer it — a write that
 *   lands after a client with a shorter time-out gave up;
 * - `{ status: 429, retryAfterS: 2 }`: throttling, with the gateway's error shape.
 */
export interface JsonFakeFault {
  /** Status to answer; absent (with `delayMs`): the real answer, late. */
  status?: number;
  /** Apply the request, then answer `status`. @default false */
  afterApply?: boolean;
  /** Hold the request this long before handling it, ms. @default 0 */
  delayMs?: number;
  /** How many matching requests get it. @default 1 */
  times?: number;
  /** `Retry-After` header, seconds. */
  retryAfterS?: number;
  /** Method to match (upper case); any when absent. */
  method?: string;
  /** Substring or pattern of the path (query included) to match; any when absent. */
  path?: string | RegExp;
}

/** The control API shared by the JSON fakes. */
export interface JsonFakeControl {
  /** Base URL (`http://127.0.0.1:PORT`). */
  url: string;
  /** Every request received, in order. */
  requests: JsonFakeRecord[];
  /** Queues a fault; the first queued fault matching a request is answered. */
  inject(fault: JsonFakeFault): void;
  /** Drops every queued fault. */
  clearFaults(): void;
  /** Delays every answer by `ms` (0 to stop). */
  setLatency(ms: number): void;
  /** Resolves once no request is in flight (held ones included): every late write has landed. */
  idle(): Promise<void>;
  /** Stops the server. */
  close(): Promise<void>;
}

/** How a fake plugs into {@link startJsonFake}. */
export interface JsonFakeHandlers {
  /** Path prefix stripped before `handle` (e.g. a Konnect control plane's). @default "" */
  basePath?: string;
  /** The real behaviour of one request. Throwing answers 500. */
  handle(req: JsonFakeRequest): JsonFakeAnswer | Promise<JsonFakeAnswer>;
  /** The body of an injected fault, in the gateway's error shape. */
  faultBody(status: number, req: JsonFakeRequest): unknown;
  /** The clock latency and held requests (`delayMs`) wait on. @default systemClock */
  clock?: FakeClock;
}

/** Starts a JSON fake on 127.0.0.1, port 0. */
export async function startJsonFake(handlers: JsonFakeHandlers): Promise<JsonFakeControl> {
  const basePath = handlers.basePath ?? "";
  const clock = handlers.clock ?? systemClock;
  const requests: JsonFakeRecord[] = [];
  const faults: Array<JsonFakeFault & { left: number }> = [];
  let latencyMs = 0;
  let inFlight = 0;
  let idleWaiters: Array<() => void> = [];

  async function receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const method = req.method ?? "GET";
    const path = url.pathname.startsWith(basePath) ? url.pathname.slice(basePath.length) || "/" : url.pathname;
    const rec: JsonFakeRecord = { method, path: `${path}${url.search}`, status: 0 };
    requests.push(rec);
    // The whole request is received before any held time: a client that gives up does not undo it.
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown;
    try {
      body = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      rec.status = 400;
      return sendJson(res, 400, { message: "Cannot parse JSON body" });
    }
    const request: JsonFakeRequest = { method, path, query: url.searchParams, headers: req.headers, body };
    if (latencyMs > 0) await clock.sleep(latencyMs);
    const fault = faults.find(
      (f) =>
        f.left > 0 &&
        (!f.method || f.method === method) &&
        (!f.path || (typeof f.path === "string" ? rec.path.includes(f.path) : f.path.test(rec.path))),
    );
    if (fault) {
      fault.left -= 1;
      if (fault.left <= 0) faults.splice(faults.indexOf(fault), 1);
      if (fault.delayMs) await clock.sleep(fault.delayMs);
    }
    if (!fault || fault.status === undefined || fault.afterApply) {
      const answer = await handlers.handle(request);
      rec.status = answer.status;
      if (!fault || fault.status === undefined) {
        if (res.destroyed) return;
        return sendJson(res, answer.status, answer.body, answer.headers);
      }
      rec.appliedStatus = answer.status;
    }
    rec.status = fault.status;
    if (res.destroyed) return;
    sendJson(
      res,
      fault.status,
      handlers.faultBody(fault.status, request),
      fault.retryAfterS !== undefined ? { "retry-after": String(fault.retryAfterS) } : {},
    );
  }

  const server = await startFakeServer(async (req, res) => {
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

  return {
    url: `${server.url}${basePath}`,
    requests,
    inject(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    clearFaults() {
      faults.length = 0;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    idle() {
      return inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    close: () => server.close(),
  };
}

/** Pages a list the way offset-paged APIs do: `size` items from the opaque `offset` (a base64url index). */
export function page<T>(items: T[], offset: string | null, size: number): { items: T[]; next: string | undefined } {
  const start = offset ? Number(Buffer.from(offset, "base64url").toString("utf8")) || 0 : 0;
  const slice = items.slice(start, start + size);
  const end = start + slice.length;
  return { items: slice, next: end < items.length ? Buffer.from(String(end)).toString("base64url") : undefined };
}
