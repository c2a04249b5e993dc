/**
 * The HTTP edge under hostile input, through raw sockets: bodies limited before
 * they are read, slow clients cut off with 408, Node's own refusals answered as
 * ErrorResponses, and an answer in flight written before a protocol-error close.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gzipSync } from "node:zlib";
import { openApiDocument } from "@credhook/core";
import { AUTH, errorResponseProblem, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";
import { rawExchange, type RawResponse } from "./raw-http.js";

const LIMIT = 4096;
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(
    LOCAL_YAML.replace("server:\n", `server:\n  bodyLimitBytes: ${LIMIT}\n`),
    {},
    { headersTimeoutMs: 600, requestTimeoutMs: 600 },
  );
});
afterAll(() => s.close());

/** Every ErrorResponse these tests saw: its status and `path` (checked against the OpenAPI document at the end). */
const observed: Array<{ status: number; path: string }> = [];

/** Asserts an ErrorResponse with `status`, returns its messages. */
function refusal(r: RawResponse | undefined, status: number): string[] {
  expect(r, "a response").toBeDefined();
  expect(r!.status).toBe(status);
  expect(errorResponseProblem(r!.status, r!.headers["content-type"], r!.body)).toBeUndefined();
  observed.push({ status: r!.status, path: String(r!.json!.path) });
  return r!.json!.messages as string[];
}

const head = (method: string, path: string, headers: Record<string, string | number>, version = "1.1") =>
  `${method} ${path} HTTP/${version}\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("")}\r\n`;
const jsonHeaders = (extra: Record<string, string | number> = {}) => ({
  Host: "credhook",
  "Content-Type": "application/json",
  ...extra,
});
const createBody = (name: string) =>
  JSON.stringify({
    appName: name,
    developer: "edge@example.com",
    apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
  });
const MiB = Buffer.alloc(1 << 20, 0x61);

describe("body limits are enforced before the body is read", () => {
  it("Content-Length over the limit: 413 at once, without reading the body, and the connection closed (with or without credentials)", async () => {
    for (const auth of [{}, { Authorization: AUTH }] as Record<string, string>[]) {
      const x = await rawExchange(
        s.port,
        head("POST", "/v1/createCredentials", jsonHeaders({ ...auth, "Content-Length": 100_000_000_000 })),
        { waitMs: 3000 },
      );
      expect(refusal(x.responses[0], 413)).toEqual([`body is larger than the limit of ${LIMIT} bytes`]);
      expect(x.responses[0]!.headers.connection).toBe("close");
      expect(x.closed).toBe(true);
    }
  });

  it("a client that keeps sending after the 413 is cut off: the server does not read on", async () => {
    const x = await rawExchange(
      s.port,
      head("POST", "/v1/createCredentials", jsonHeaders({ Authorization: AUTH, "Content-Length": 100_000_000_000 })),
      {
        flood: MiB,
        waitMs: 5000,
      },
    );
    refusal(x.responses[0], 413);
    expect(x.closed).toBe(true);
    expect(x.bytesWritten).toBeLessThan(64 << 20); // socket buffers at most; not the 100 GB announced
  });

  it("a chunked body is cut off at the limit: 413 and closed while the client still sends", async () => {
    const chunk = `${(64 * 1024).toString(16)}\r\n${"a".repeat(64 * 1024)}\r\n`;
    const x = await rawExchange(
      s.port,
      head("POST", "/v1/createCredentials", jsonHeaders({ Authorization: AUTH, "Transfer-Encoding": "chunked" })),
      { flood: Buffer.from(chunk.repeat(16)), waitMs: 5000 },
    );
    expect(refusal(x.responses[0], 413)).toEqual([`body is larger than the limit of ${LIMIT} bytes`]);
    expect(x.closed).toBe(true);
    expect(x.bytesWritten).toBeLessThan(64 << 20);
  });

  it("an unauthenticated request's body is never read: 401 before the body is sent, and the connection closed", async () => {
    const x = await rawExchange(
      s.port,
      head("POST", "/v1/createCredentials", jsonHeaders({ "Content-Length": 2000 })),
      { waitMs: 3000 },
    );
    refusal(x.responses[0], 401);
    expect(x.responses[0]!.headers["www-authenticate"]).toMatch(/^Basic /);
    expect(x.closed).toBe(true); // a 401, not the 408 a server that waited for the body would have sent at its timeout
  });

  it("Expect: 100-continue gets 100 Continue only once authenticated and within the limit", async () => {
    const body = createBody("Expect continue");
    const denied = await rawExchange(
      s.port,
      head("POST", "/v1/createCredentials", jsonHeaders({ Expect: "100-continue", "Content-Length": body.length })),
      {
        waitMs: 2000,
      },
    );
    expect(denied.interim).toEqual([]);
    refusal(denied.responses[0], 401);

    const x = await rawExchange(
      s.port,
      head(
        "POST",
        "/v1/createCredentials",
        jsonHeaders({ Authorization: AUTH, Expect: "100-continue", "Content-Length": body.length }),
      ),
      { pieces: [{ data: body, delayMs: 100 }], stopAfter: 1 },
    );
    expect(x.interim).toEqual([100]);
    expect(x.responses[0]!.status).toBe(200);
    expect(x.responses[0]!.json).toMatchObject({ credentialType: "API_KEY", apiKey: expect.any(String) });
  });

  it("gzip bodies are decoded; a malformed one is a 400 and one that inflates past the limit a 413", async () => {
    const ok = await fetch(`${s.url}/v1/createCredentials`, {
      method: "POST",
      headers: { authorization: AUTH, "content-type": "application/json", "content-encoding": "gzip" },
      body: new Uint8Array(gzipSync(createBody("Gzipped"))),
    });
    expect(ok.status).toBe(200);
    const bad = await rawExchange(
      s.port,
      head(
        "POST",
        "/v1/createCredentials",
        jsonHeaders({ Authorization: AUTH, "Content-Encoding": "gzip", "Content-Length": 20 }),
      ),
      {
        pieces: [{ data: Buffer.from("1f8b0800000000000003ffffffffffffffffffff", "hex").subarray(0, 20) }],
        stopAfter: 1,
      },
    );
    expect(refusal(bad.responses[0], 400)).toEqual(["body is not valid gzip data (Content-Encoding: gzip)"]);
    const bomb = gzipSync(Buffer.alloc(1 << 20, 0x20));
    expect(bomb.length).toBeLessThan(LIMIT);
    const big = await rawExchange(
      s.port,
      head(
        "POST",
        "/v1/createCredentials",
        jsonHeaders({ Authorization: AUTH, "Content-Encoding": "gzip", "Content-Length": bomb.length }),
      ),
      { pieces: [{ data: bomb }], stopAfter: 1 },
    );
    expect(refusal(big.responses[0], 413)[0]).toBe(
      `body is larger than the limit of ${LIMIT} bytes once decompressed (Content-Encoding: gzip)`,
    );
    const unknown = await s.post("/v1/createCredentials", createBody("x"), { "content-encoding": "compress" });
    expect(unknown.status).toBe(415);
  });
});

describe("Content-Type", () => {
  it("application/json with a body passes; a POST that names it but has no body, or names another type, is a 415", async () => {
    const noBody = await rawExchange(
      s.port,
      head("POST", "/v1/createCredentials", jsonHeaders({ Authorization: AUTH })),
      { stopAfter: 1 },
    );
    expect(refusal(noBody.responses[0], 415)).toEqual(["body must be application/json (got 'application/json')"]);
    const text = await s.post("/v1/createCredentials", createBody("Typed"), { "content-type": "text/plain" });
    expect(text.status).toBe(415);
    const withCharset = await s.post("/v1/createCredentials", createBody("Typed"), {
      "content-type": "Application/JSON; charset=utf-8",
    });
    expect(withCharset.status).toBe(200);
  });
});

describe("bodies of other methods", () => {
  it("a GET's body is read up to the limit and ignored; a chunked one past the limit is a 413", async () => {
    const small = await rawExchange(
      s.port,
      head("GET", "/v1/health", { Host: "credhook", Authorization: AUTH, "Content-Length": 8 }) + "not json",
      { stopAfter: 1 },
    );
    expect(small.responses[0]!.status).toBe(204);
    const chunk = `${(64 * 1024).toString(16)}\r\n${"a".repeat(64 * 1024)}\r\n`;
    const big = await rawExchange(
      s.port,
      head("GET", "/v1/health", { Host: "credhook", Authorization: AUTH, "Transfer-Encoding": "chunked" }),
      {
        flood: Buffer.from(chunk.repeat(16)),
        waitMs: 5000,
      },
    );
    refusal(big.responses[0], 413);
    expect(big.closed).toBe(true);
  });
});

describe("slow clients get 408 and are disconnected", () => {
  it("a body trickled slower than the request timeout: 408 ErrorResponse and closed", async () => {
    const body = createBody("Trickled");
    const requestHead = head(
      "POST",
      "/v1/createCredentials",
      jsonHeaders({ Authorization: AUTH, "Content-Length": body.length }),
    );
    // The whole body, a byte every 100 ms: 10+ s, far beyond the 600 ms request timeout (and its checking interval).
    const x = await rawExchange(s.port, requestHead, {
      pieces: [...body].map((c) => ({ data: c, delayMs: 100 })),
      waitMs: 30_000,
    });
    expect(refusal(x.responses[0], 408)[0]).toMatch(/did not arrive in time/);
    expect(x.responses[0]!.json!.path).toBe("/v1/createCredentials");
    expect(x.closed).toBe(true);
    // Cut while the client was still trickling: the order of events, not a time.
    expect(x.bytesWritten).toBeLessThan(Buffer.byteLength(requestHead) + body.length);
  });

  it("headers trickled slower than the headers timeout: 408 ErrorResponse and closed", async () => {
    const requestLine = "GET /v1/health HTTP/1.1\r\nHost: credhook\r\n";
    // 150 header lines, one every 100 ms: 15 s, far beyond the 600 ms headers timeout; the headers never end.
    const pieces = Array.from({ length: 150 }, (_, i) => ({ data: `X-Slow-${i}: y\r\n`, delayMs: 100 }));
    const x = await rawExchange(s.port, requestLine, { pieces, waitMs: 30_000 });
    refusal(x.responses[0], 408);
    expect(x.closed).toBe(true);
    // Cut while the client was still trickling: the order of events, not a time.
    expect(x.bytesWritten).toBeLessThan(requestLine.length + pieces.reduce((n, p) => n + p.data.length, 0));
  });
});

describe("Node's own refusals are ErrorResponses", () => {
  const cases: Array<[string, string, number]> = [
    ["no Host header", "GET /v1/health HTTP/1.1\r\nAuthorization: x\r\n\r\n", 400],
    ["two Host headers", "GET /v1/health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400],
    [
      "Content-Length with Transfer-Encoding",
      "POST /v1/createCredentials HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      400,
    ],
    [
      "duplicate Content-Length",
      "POST /v1/createCredentials HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
      400,
    ],
    [
      "a bad chunk",
      `POST /v1/createCredentials HTTP/1.1\r\nHost: a\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      400,
    ],
    ["bare LF line endings", "GET /v1/health HTTP/1.1\nHost: a\n\n", 400],
    ["a garbage request line", "HELLO THERE\r\n\r\n", 400],
    ["an unknown Expect", "GET /v1/health HTTP/1.1\r\nHost: a\r\nExpect: x-weird\r\n\r\n", 417],
    ["a 17 KB header", `GET /v1/health HTTP/1.1\r\nHost: a\r\nX-Big: ${"b".repeat(17 * 1024)}\r\n\r\n`, 431],
    ["a CONNECT (credhook is no proxy)", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 501],
  ];
  for (const [what, bytes, status] of cases) {
    it(`${what} → ${status} ErrorResponse, connection closed`, async () => {
      const x = await rawExchange(s.port, bytes, { waitMs: 3000 });
      expect(x.responses).toHaveLength(1);
      refusal(x.responses[0], status);
      expect(x.responses[0]!.headers.connection).toBe("close");
      expect(x.closed).toBe(true);
    });
  }

  it("the metrics count the refusals written outside express", async () => {
    await rawExchange(s.port, "HELLO THERE\r\n\r\n", { waitMs: 2000 });
    const text = await (await s.get("/metrics")).text();
    expect(text).toMatch(/credhook_errors_total\{route="other",status="400",code="MALFORMED_HTTP"\} [1-9]/);
  });
});

describe("an answer in flight is written before a protocol-error close", () => {
  it("a valid create followed by garbage on the same connection still gets its credential, then a 400", async () => {
    const body = createBody("Then garbage");
    const x = await rawExchange(
      s.port,
      head(
        "POST",
        "/v1/createCredentials",
        jsonHeaders({ Authorization: AUTH, "Content-Length": Buffer.byteLength(body) }),
      ) +
        body +
        "\x00\x01GARBAGE\r\n\r\n",
      { waitMs: 5000 },
    );
    expect(x.responses.map((r) => r.status)).toEqual([200, 400]);
    expect(x.responses[0]!.json).toMatchObject({
      credentialType: "API_KEY",
      apiKeyId: expect.any(String),
      apiKey: expect.stringMatching(/^credhook[0-9A-Za-z]{46}$/),
    });
    refusal(x.responses[1], 400);
    expect(x.closed).toBe(true);
  });

  it("pipelined requests are all answered, in order, before the refusal", async () => {
    const get = head("GET", "/v1/health", { Host: "credhook", Authorization: AUTH });
    const x = await rawExchange(s.port, get + get + "GET /v1/health HTTP/1.1\r\nHost: a\r\nBad Header Line\r\n\r\n", {
      waitMs: 5000,
    });
    expect(x.responses.map((r) => r.status)).toEqual([204, 204, 400]);
    refusal(x.responses[2], 400);
    expect(x.closed).toBe(true);
  });
});

describe("the OpenAPI document lists what the edge answers", () => {
  it("every status observed above is documented, with the ErrorResponse body, on its path's operations (on every operation when the request had no readable path)", () => {
    const doc = openApiDocument() as {
      paths: Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>;
      components: { responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }> };
    };
    const operations = (path: string) =>
      Object.entries(doc.paths)
        .filter(([p]) => path === "" || p === path)
        .flatMap(([p, ops]) => Object.entries(ops).map(([m, op]) => ({ at: `${m.toUpperCase()} ${p}`, op })));
    const statuses = new Set(observed.map((o) => o.status));
    expect([...statuses].sort()).toEqual(expect.arrayContaining([400, 401, 408, 413, 417, 431, 501]));
    const missing: string[] = [];
    for (const { status, path } of observed) {
      for (const { at, op } of operations(path)) {
        const ref = op.responses[String(status)]?.$ref;
        const body = ref
          ? doc.components.responses[ref.split("/").pop()!]?.content?.["application/json"]?.schema?.$ref
          : undefined;
        if (body !== "#/components/schemas/ErrorResponse") missing.push(`${at} ${status}`);
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });
});
