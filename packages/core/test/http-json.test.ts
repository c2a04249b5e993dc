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
