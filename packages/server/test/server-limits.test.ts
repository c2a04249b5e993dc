/**
 * The edge and authentication limits in `webhook.config.yaml` (`server:` and
 * `server.auth:`) obeyed by a running server (their defaults and validation:
 * config.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, errorResponseProblem, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";
import { rawExchange } from "./raw-http.js";

/** LOCAL_YAML with `lines` added under `server:` (two-space indented YAML). */
const withServer = (lines: string) => LOCAL_YAML.replace("server:\n", `server:\n${lines}`);

describe("a server obeys the configured limits", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(
      withServer("  maxHeaderBytes: 2048\n  headersTimeoutMs: 400\n  requestTimeoutMs: 400\n").replace(
        "  auth:\n",
        "  auth:\n    maxFailures: 10\n    maxGlobalFailures: 2\n",
      ),
    );
  });
  afterAll(() => s.close());

  it("server.maxHeaderBytes: a 3 KB header is a 431 ErrorResponse", async () => {
    const x = await rawExchange(
      s.port,
      `GET /v1/health HTTP/1.1\r\nHost: a\r\nAuthorization: ${AUTH}\r\nX-Big: ${"b".repeat(3 * 1024)}\r\n\r\n`,
      { waitMs: 3000 },
    );
    expect(x.responses[0]!.status).toBe(431);
    expect(errorResponseProblem(431, x.responses[0]!.headers["content-type"], x.responses[0]!.body)).toBeUndefined();
    expect(x.responses[0]!.json!.messages).toEqual([
      "the request line and headers are larger than the limit of 2048 bytes",
    ]);
    // A 1 KB header is fine.
    expect((await s.get("/v1/health", { "x-big": "b".repeat(1024) })).status).toBe(204);
  });

  it("server.headersTimeoutMs: headers trickled past it get 408 and the connection closed", async () => {
    const x = await rawExchange(s.port, "GET /v1/health HTTP/1.1\r\nHost: credhook\r\n", {
      pieces: Array.from({ length: 20 }, (_, i) => ({ data: `X-Slow-${i}: y\r\n`, delayMs: 100 })),
      waitMs: 5000,
    });
    expect(x.responses[0]!.status).toBe(408);
    expect(x.responses[0]!.json!.messages).toEqual([
      "the request did not arrive in time: headers are allowed 400 ms, the whole request 400 ms",
    ]);
    expect(x.closed).toBe(true);
  });

  it("server.auth.maxGlobalFailures: the third wrong password in the window is a 429, whatever the address's own budget", async () => {
    const wrong = `Basic ${Buffer.from("portal:wrong").toString("base64")}`;
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await s.get("/v1/health", { authorization: wrong })).status);
    expect(statuses).toEqual([401, 401, 429]);
    const res = await s.get("/v1/health", {
      authorization: `Basic ${Buffer.from("portal:also-wrong").toString("base64")}`,
    });
    expect(res.status).toBe(429);
    expect(((await res.json()) as { messages: string[] }).messages[0]).toMatch(/from all clients together/);
  });
});
