/**
 * Property-based fuzzing (fast-check) of the four endpoints, bounded in time:
 * whatever the method, path, headers and body — contract-shaped, mutated,
 * random JSON, not JSON, or raw bytes on a socket — every answer is a 2xx as
 * the contract defines it for that endpoint, or an ErrorResponse.
 * A failure prints the seed and the shrunk counterexample to replay.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { gzipSync } from "node:zlib";
import { AUTH, errorResponseProblem, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";
import { rawExchange, type RawResponse } from "./raw-http.js";

/**
 * Time each property may run, ms: 1500 in the suite (a few hundred cases each run, with a new seed
 * each time); `CREDHOOK_FUZZ_MS=60000 pnpm test test/fuzz.test.ts` in packages/server fuzzes longer.
 */
const BUDGET_MS = Number(process.env.CREDHOOK_FUZZ_MS) || 1500;

/**
 * Checks `property` for {@link BUDGET_MS} ms, then, when a busy machine ran fewer than `minRuns`
 * cases in that time, for the cases missing (however long they take): at least `minRuns` cases
 * whatever the machine's speed.
 * @throws Error with fast-check's report when a case fails
 * @returns the number of cases run
 */
async function checkAtLeast<T>(property: fc.IAsyncPropertyWithHooks<T>, minRuns: number): Promise<number> {
  const timed = await fc.check(property, {
    numRuns: 100_000,
    interruptAfterTimeLimit: BUDGET_MS,
    markInterruptAsFailure: false,
  });
  if (timed.failed) throw new Error(fc.defaultReportMessage(timed));
  if (timed.numRuns >= minRuns) return timed.numRuns;
  const rest = await fc.check(property, { numRuns: minRuns - timed.numRuns });
  if (rest.failed) throw new Error(fc.defaultReportMessage(rest));
  return timed.numRuns + rest.numRuns;
}
const ENDPOINTS = ["/v1/createCredentials", "/v1/updateCredentials", "/v1/revokeCredentials", "/v1/health"] as const;

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(
    LOCAL_YAML.replace("server:\n", "server:\n  bodyLimitBytes: 8192\n"),
    {},
    { headersTimeoutMs: 300, requestTimeoutMs: 300 },
  );
  expect((await s.get("/v1/health")).status).toBe(204); // the portal's credential is verified (remembered) before any failure
});
afterAll(() => s.close());

/** Ids of credentials the fuzzing created, so updates and revokes also reach real ones. */
const created: string[] = [];

/**
 * The invariant: a 2xx as the contract defines it for `path`, or an ErrorResponse
 * whose `status` is the HTTP status. Returns a description of the violation, or undefined.
 */
function violation(
  method: string,
  path: string,
  status: number,
  contentType: string | undefined,
  body: string,
): string | undefined {
  // A HEAD answer has no body by definition (RFC 9110, section 9.3.2): its status and type are all there is.
  if (method === "HEAD")
    return status === 204 || (status >= 400 && /^application\/json/.test(contentType ?? ""))
      ? undefined
      : `${status} on HEAD ${path}`;
  if (status >= 400 && status <= 599) return errorResponseProblem(status, contentType, body);
  if (method === "POST" && path === "/v1/createCredentials" && status === 200) {
    let c: Record<string, unknown>;
    try {
      c = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return "200 without JSON";
    }
    if (c.credentialType === "API_KEY" && typeof c.apiKeyId === "string" && typeof c.apiKey === "string") {
      created.push(c.apiKeyId);
      return undefined;
    }
    if (
      c.credentialType === "CLIENT_CREDENTIALS" &&
      typeof c.clientId === "string" &&
      typeof c.clientSecret === "string"
    )
      return undefined;
    return `200 that is not a CreateCredentialsResponse: ${body}`;
  }
  const noContent =
    (method === "POST" && (path === "/v1/updateCredentials" || path === "/v1/revokeCredentials")) ||
    ((method === "GET" || method === "HEAD") && path === "/v1/health");
  if (noContent && status === 204) return body === "" ? undefined : `204 with a body: ${body}`;
  if (method === "GET" && path === "/metrics" && status === 200) return undefined;
  return `${status} on ${method} ${path} is neither the contract's success nor an error`;
}

// ---------------------------------------------------------------- arbitraries

const text = fc.string({ maxLength: 40 });
const apiId = fc.oneof(fc.constantFrom("5aba4csvd4", "orders-7", "other-api", "m2m-pay", "nowhere-x"), text);
const planId = fc.oneof(fc.constantFrom("1el57v", "2plan2", "3plan3", "zzzzzz"), text);
const action = fc.oneof(fc.constantFrom("NONE", "ADDED", "REMOVED"), text);
const credentialType = fc.oneof(fc.constantFrom("API_KEY", "CLIENT_CREDENTIALS"), text);
const knownId = fc.oneof(
  fc.nat().map((i) => created[i % Math.max(1, created.length)] ?? "lkunknown"),
  text,
);
/** A value that may be of the wrong type, as a broken portal would send. */
const maybe = <T>(a: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 6, arbitrary: a }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });

const createBody = fc.record(
  {
    appName: maybe(text),
    developer: maybe(fc.oneof(fc.constantFrom("d@example.com", "D", "D/x"), text)),
    appSlug: maybe(text),
    apis: maybe(
      fc.array(
        fc.record(
          { id: maybe(apiId), usagePlans: maybe(fc.array(fc.record({ id: maybe(planId) }), { maxLength: 3 })) },
          { requiredKeys: ["id"] },
        ),
        { maxLength: 4 },
      ),
    ),
    customCredentials: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);
const updateBody = fc.record(
  {
    updatedAt: maybe(fc.constantFrom("2023-06-27T21:23:21.523Z[GMT]", "yesterday")),
    appName: maybe(text),
    developer: maybe(text),
    credentialType: maybe(credentialType),
    apiKeyId: maybe(knownId),
    clientId: maybe(knownId),
    apis: maybe(
      fc.array(
        fc.record(
          {
            id: maybe(apiId),
            action: maybe(action),
            usagePlans: maybe(fc.array(fc.record({ id: maybe(planId), action: maybe(action) }), { maxLength: 3 })),
          },
          { requiredKeys: [] },
        ),
        { maxLength: 4 },
      ),
    ),
  },
  { requiredKeys: [] },
);
const revokeBody = fc.record(
  {
    appName: maybe(text),
    developer: maybe(text),
    credentialType: maybe(credentialType),
    apiKeyId: maybe(knownId),
    clientId: maybe(knownId),
    apiKey: maybe(text),
    clientSecret: maybe(text),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  { weight: 4, arbitrary: fc.oneof(createBody, updateBody, revokeBody).map((b) => JSON.stringify(b)) },
  { weight: 1, arbitrary: fc.json({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.constant("x".repeat(9000)) }, // over the limit
);
const headerValue = fc.stringMatching(/^[\x21-\x7e]{0,40}$/);
const authorization = fc.oneof(
  { weight: 8, arbitrary: fc.constant(AUTH) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: headerValue.map((v) => `Basic ${Buffer.from(v).toString("base64")}`) },
  { weight: 1, arbitrary: headerValue },
);
const path = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...ENDPOINTS) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("/metrics", "/", "/v1/", "/v1/health/x", "/%zz", "/v1/createCredentials?x=1"),
  },
);
const request = fc.record({
  // Mostly the endpoint's own method, sometimes any other.
  target: path.chain((p) =>
    fc
      .oneof(
        { weight: 6, arbitrary: fc.constant(p === "/v1/health" || p === "/metrics" ? "GET" : "POST") },
        { weight: 1, arbitrary: fc.constantFrom("POST", "GET", "PUT", "DELETE", "PATCH", "OPTIONS") },
      )
      .map((method) => ({ path: p, method })),
  ),
  authorization,
  contentType: fc.oneof(
    { weight: 6, arbitrary: fc.constant("application/json") },
    {
      weight: 1,
      arbitrary: fc.constantFrom("text/plain", "application/json; charset=latin1", "application/x-www-form-urlencoded"),
    },
    { weight: 1, arbitrary: headerValue },
  ),
  contentEncoding: fc.oneof(
    { weight: 8, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom("gzip", "gzip-valid", "br", "deflate", "identity", "compress") },
  ),
  body,
  requestId: fc.option(headerValue, { nil: undefined }),
});

describe("fuzzing the four endpoints (fast-check, time-bounded)", () => {
  it("every answer over fetch is the contract's 2xx or an ErrorResponse", async () => {
    const property = fc.asyncProperty(request, async ({ target, ...r }) => {
      const { path, method } = target;
      const headers: Record<string, string> = { "content-type": r.contentType };
      if (r.authorization !== undefined) headers.authorization = r.authorization;
      if (r.requestId !== undefined) headers["x-request-id"] = r.requestId;
      let payload: string | Buffer | undefined = method === "GET" ? undefined : r.body;
      if (payload !== undefined && r.contentEncoding) {
        headers["content-encoding"] = r.contentEncoding === "gzip-valid" ? "gzip" : r.contentEncoding;
        if (r.contentEncoding === "gzip-valid") payload = gzipSync(payload);
      }
      const res = await fetch(s.url + path, {
        method,
        headers,
        ...(payload !== undefined ? { body: typeof payload === "string" ? payload : new Uint8Array(payload) } : {}),
      });
      const answer = await res.text();
      const bad = violation(
        method,
        path.split("?")[0]!,
        res.status,
        res.headers.get("content-type") ?? undefined,
        answer,
      );
      if (bad) throw new Error(bad);
    });
    await checkAtLeast(property, 51);
  });

  it("every answer to mutated raw HTTP on a socket is the contract's 2xx or an ErrorResponse", async () => {
    const template = fc.constantFrom(...ENDPOINTS).chain((path) =>
      (path === "/v1/health"
        ? fc.constant("")
        : fc.oneof(createBody, updateBody, revokeBody).map((b) => JSON.stringify(b))
      ).map((b) => {
        const method = path === "/v1/health" ? "GET" : "POST";
        const len = Buffer.byteLength(b);
        return `${method} ${path} HTTP/1.1\r\nHost: credhook\r\nAuthorization: ${AUTH}\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\nConnection: close\r\n\r\n${b}`;
      }),
    );
    const mutation = fc.record({
      at: fc.nat(),
      op: fc.constantFrom("insert", "replace", "delete"),
      bytes: fc.oneof(
        fc.uint8Array({ minLength: 1, maxLength: 8 }),
        fc
          .constantFrom(
            "\r\n",
            "\n",
            "\r\n\r\n",
            ":",
            " ",
            "\x00",
            "Transfer-Encoding: chunked\r\n",
            "Content-Length: 99\r\n",
            "Expect: 100-continue\r\n",
            "Expect: nope\r\n",
          )
          .map((t) => Buffer.from(t, "latin1")),
      ),
    });
    const mutate = (req: string, ms: Array<{ at: number; op: string; bytes: Uint8Array }>) => {
      let b = Buffer.from(req, "latin1");
      for (const m of ms) {
        const at = m.at % (b.length + 1);
        const ins = Buffer.from(m.bytes);
        b =
          m.op === "insert"
            ? Buffer.concat([b.subarray(0, at), ins, b.subarray(at)])
            : m.op === "replace"
              ? Buffer.concat([b.subarray(0, at), ins, b.subarray(at + ins.length)])
              : Buffer.concat([b.subarray(0, at), b.subarray(at + ins.length)]);
      }
      return b;
    };
    const batch = fc.array(fc.tuple(template, fc.array(mutation, { minLength: 0, maxLength: 3 })), {
      minLength: 1,
      maxLength: 12,
    });
    const property = fc.asyncProperty(batch, async (cases) => {
      const exchanges = await Promise.all(cases.map(([t, ms]) => rawExchange(s.port, mutate(t, ms), { waitMs: 800 })));
      exchanges.forEach((x, i) => {
        const sent = mutate(cases[i]![0], cases[i]![1]).toString("latin1");
        // The request line as the server read it (a mutation may have changed it); the first answer is to it.
        const line = /^([A-Z]+) (\/\S*) HTTP\/1\.[01]\r\n/.exec(sent);
        (x.responses as RawResponse[]).forEach((r, n) => {
          const bad =
            n === 0 && line
              ? violation(line[1]!, line[2]!.split("?")[0]!, r.status, r.headers["content-type"], r.body)
              : r.status >= 400
                ? violation("", "", r.status, r.headers["content-type"], r.body)
                : r.status === 200 || r.status === 204
                  ? undefined
                  : `status ${r.status}`;
          if (bad) throw new Error(`${bad}\nrequest: ${JSON.stringify(sent)}`);
        });
      });
    });
    // A batch can take most of a second (a request the server waits on), so a busy machine gets few in the budget: at least one.
    await checkAtLeast(property, 1);
  });
});
