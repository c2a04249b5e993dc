// The provider kit's JSON call over fetch: retries, Retry-After, time limits, outcome-unknown
// classification and the typed errors — against a real local HTTP server.
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type HttpCallFailed,
  HttpTransportError,
  JsonApiClient,
  SlidingWindowLimiter,
  httpJson,
} from "../src/entry/provider-kit.js";

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

/** Serves `answers` in order (the last one repeats); returns the base URL and the methods seen. */
async function serve(
  answers: Array<(req: IncomingMessage, res: ServerResponse) => void>,
): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  server = createServer((req, res) => {
    seen.push(req.method ?? "");
    (answers[Math.min(seen.length - 1, answers.length - 1)] ?? (() => res.end()))(req, res);
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}
const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  (_: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };
const base = { timeoutMs: 3000, maxRetries: 2, maxRetryAfterS: 5, backoffMs: 10 };

describe("httpJson", () => {
  it("waits a short Retry-After and retries a 429; a POST's 5xx is not resent, a GET's is", async () => {
    const { url, seen } = await serve([json(429, {}, { "retry-after": "0.1" }), json(201, { id: "x" })]);
    const res = await httpJson({ ...base, url, method: "POST", idempotent: false, body: { a: 1 } });
    expect([res.status, res.json, res.attempts, seen]).toEqual([201, { id: "x" }, 2, ["POST", "POST"]]);
    await new Promise((r) => server!.close(r));
    const again = await serve([json(500, {}), json(200, { ok: true })]);
    expect((await httpJson({ ...base, url: again.url, method: "POST", idempotent: false })).status).toBe(500);
    expect((await httpJson({ ...base, url: again.url, method: "GET", idempotent: true })).status).toBe(200);
  });

  it("a Retry-After longer than maxRetryAfterS comes back at once with its seconds", async () => {
    const { url, seen } = await serve([json(429, {}, { "retry-after": "60" })]);
    const res = await httpJson({ ...base, url, method: "GET", idempotent: true });
    expect([res.status, res.retryAfterS, seen.length]).toEqual([429, 60, 1]);
  });

  it("no answer within the time limit is a time-out whose outcome is unknown; a refused connection is known not sent", async () => {
    const { url } = await serve([() => undefined]);
    const err = await httpJson({ ...base, timeoutMs: 200, url, method: "POST", idempotent: false }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HttpTransportError);
    expect(err).toMatchObject({ kind: "timeout", outcomeUnknown: true });
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = await httpJson({
      ...base,
      maxRetries: 0,
      url: `http://127.0.0.1:${port}`,
      method: "POST",
      idempotent: false,
    }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ kind: "network", outcomeUnknown: false });
  });

  it("a limiter whose queue is longer than the caller waits is a 'queue' refusal, nothing sent", async () => {
    const { url, seen } = await serve([json(200, {})]);
    const limiter = new SlidingWindowLimiter(1, 60_000, "test");
    await httpJson({ ...base, url, method: "GET", idempotent: true, limiter });
    const err = await httpJson({ ...base, maxRetryAfterS: 1, url, method: "GET", idempotent: true, limiter }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ kind: "queue", outcomeUnknown: false });
    expect(seen.length).toBe(1);
    await limiter.stop();
  });
});

describe("JsonApiClient", () => {
  it("maps statuses to typed errors with the gateway's message, secrets redacted, and no body in the cause", async () => {
    const { url } = await serve([
      json(409, { message: "UNIQUE violation detected on '{key=\"S3cretValue\"}'" }),
      json(403, { message: "no" }),
      json(503, { message: "down" }),
    ]);
    const api = new JsonApiClient({
      baseUrl: url,
      gateway: "g",
      headers: () => ({}),
      timeoutMs: 2000,
      maxRetries: 0,
      maxRetryAfterS: 0,
      messageOf: (j) => (j as { message?: string }).message,
      permissionHint: "grant X",
    });
    const fail = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => (e as HttpCallFailed).typed,
      );
    const conflict = await fail(api.call("POST", "/k", "adding key", { secrets: ["S3cretValue"] }));
    expect([conflict?.status, conflict?.message]).toEqual([
      409,
      "[gateway g] adding key: conflict: UNIQUE violation detected on '{key=\"***\"}'",
    ]);
    expect(JSON.stringify(conflict?.cause, Object.getOwnPropertyNames(conflict?.cause ?? {}))).not.toContain(
      "S3cretValue",
    );
    const denied = await fail(api.call("GET", "/k", "reading"));
    expect([denied?.status, denied?.message]).toEqual([502, "[gateway g] reading: refused (403): no; grant X"]);
    const down = await fail(api.call("DELETE", "/k", "deleting"));
    expect([down?.status, down?.outcomeUnknown]).toEqual([502, true]);
  });
});

describe("JsonApiClient of a REST gateway: paging, its own rate limit, deletes", () => {
  const settings = (url: string) => ({
    baseUrl: url,
    gateway: "g",
    headers: { authorization: "Bearer t" },
    timeoutMs: 2000,
    maxRetries: 0,
    maxRetryAfterS: 1,
    messageOf: (j: unknown) => (j as { message?: string } | undefined)?.message,
    permissionHint: "grant X",
  });
  /** A list of `items` served `size` at a time, paged as `style` says; records each request's query. */
  async function pagedList(style: "offset" | "startKey", items: Array<{ id: string }>, size = 2) {
    const queries: URLSearchParams[] = [];
    server = createServer((req, res) => {
      const q = new URL(req.url ?? "/", "http://x").searchParams;
      queries.push(q);
      res.writeHead(req.headers.authorization === "Bearer t" ? 200 : 401, { "content-type": "application/json" });
      if (style === "offset") {
        const from = Number(q.get("offset") ?? 0);
        const next = from + size < items.length ? String(from + size) : null;
        res.end(JSON.stringify({ data: items.slice(from, from + size), offset: next }));
      } else {
        // Apigee's startKey: the page starts with that item, inclusive
        const from = q.has("startKey") ? items.findIndex((i) => i.id === q.get("startKey")) : 0;
        res.end(JSON.stringify({ app: items.slice(from, from + size) }));
      }
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, queries };
  }
  const items = ["a", "b", "c", "d", "e"].map((id) => ({ id }));

  it("list reads every page of an `offset`-paged list (Kong) with the page's query and the caller's filter", async () => {
    const { url, queries } = await pagedList("offset", items);
    const api = new JsonApiClient({
      ...settings(url),
      paging: { query: { size: "1000" }, items: "data", cursor: "offset", next: { field: "offset" } },
    });
    expect(await api.list("/consumers", "listing", { tags: "t1,t2" })).toEqual(items);
    expect(queries.map((q) => q.toString())).toEqual([
      "size=1000&tags=t1%2Ct2",
      "size=1000&tags=t1%2Ct2&offset=2",
      "size=1000&tags=t1%2Ct2&offset=4",
    ]);
  });

  it("list reads every page of an inclusive `startKey` list (Apigee), each item once, until a page brings nothing new", async () => {
    const { url, queries } = await pagedList("startKey", items);
    const api = new JsonApiClient({
      ...settings(url),
      paging: { query: { rows: "1000" }, items: "app", cursor: "startKey", next: { lastItem: "id" } },
    });
    expect(await api.list("/apps", "listing")).toEqual(items);
    expect(queries.map((q) => q.get("startKey"))).toEqual([null, "b", "c", "d", "e"]);
  });

  it("keeps its own rate limit, named after the API, when given `rateLimit`; a wait past maxRetryAfterS is a 503 at once", async () => {
    const { url, seen } = await serve([json(200, {})]);
    const api = new JsonApiClient({ ...settings(url), api: "Test API", rateLimit: { requests: 1, windowMs: 60_000 } });
    await api.call("GET", "/a", "reading a");
    const err = await api.call("GET", "/b", "reading b").then(
      () => undefined,
      (e: HttpCallFailed) => e.typed,
    );
    expect([err?.status, err?.message]).toEqual([503, expect.stringContaining("Test API")]);
    expect(seen).toEqual(["GET"]);
    await api.close();
  });

  it("delete counts a 404 (already gone) as done and fails on anything else but a 2xx", async () => {
    const { url } = await serve([json(404, {}), json(204, {}), json(409, { message: "in use" })]);
    const api = new JsonApiClient(settings(url));
    await expect(api.delete("/x", "deleting x")).resolves.toBeUndefined();
    await expect(api.delete("/x", "deleting x")).resolves.toBeUndefined();
    const err = await api.delete("/x", "deleting x").catch((e: HttpCallFailed) => e.typed);
    expect(err?.message).toBe("[gateway g] deleting x: conflict: in use");
  });
});
