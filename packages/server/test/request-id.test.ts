/**
 * The request id: on every answer (success, failure, probe, Node-level refusal),
 * taken from a sane incoming `X-Request-Id` or generated, and on every log line
 * written while the request is handled — the orchestrator's included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, LOCAL_YAML, startTestServer, type TestServer, until } from "./helpers.js";
import { rawExchange } from "./raw-http.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(LOCAL_YAML);
});
afterAll(() => s.close());

const lines = () => s.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
const create = (appName: string, headers: Record<string, string> = {}) =>
  s.post(
    "/v1/createCredentials",
    { appName, developer: "rid@example.com", apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }] },
    headers,
  );

describe("every answer carries X-Request-Id", () => {
  it("successes, failures, probes and unknown paths each get a fresh UUID", async () => {
    const answers = [
      await create("Fresh ids"),
      await s.get("/v1/health"),
      await s.get("/livez"),
      await s.get("/readyz"),
      await s.get("/nowhere"),
      await s.get("/v1/health", { authorization: "Basic bm9ib2R5Ondyb25n" }),
      await s.post("/v1/createCredentials", "{not json"),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 204, 204, 204, 404, 401, 400]);
    const ids = answers.map((r) => r.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("a sane incoming id is kept; an empty, overlong or odd one is replaced", async () => {
    const kept = ["JKJaXmPLvHcESHA=", "req-42:a/b+c", "x".repeat(128)];
    for (const id of kept) expect((await s.get("/livez", { "x-request-id": id })).headers.get("x-request-id")).toBe(id);
    for (const id of ["x".repeat(129), "two words", 'quo"te', "<script>"]) {
      expect((await s.get("/livez", { "x-request-id": id })).headers.get("x-request-id")).toMatch(UUID);
    }
  });

  it("a refusal Node's HTTP parser makes (outside express) has one too, and its log line the same", async () => {
    const x = await rawExchange(s.port, "HELLO THERE\r\n\r\n", { waitMs: 3000 });
    const id = x.responses[0]!.headers["x-request-id"];
    expect(x.responses[0]!.status).toBe(400);
    expect(id).toMatch(UUID);
    expect(lines().filter((l) => l.msg === "request refused by the HTTP layer" && l.requestId === id)).toHaveLength(1);
  });
});

describe("every log line of a request has its id", () => {
  it("the orchestrator's lines and the completion line of a create carry the request's id", async () => {
    const res = await create("Logged ids", { "x-request-id": "portal-req-0001" });
    expect(res.status).toBe(200);
    // the completion line is written once the response finished
    await until("the completion line", () =>
      lines().some((l) => l.requestId === "portal-req-0001" && l.msg === "request completed"),
    );
    const done = lines().find((l) => l.requestId === "portal-req-0001" && l.msg === "request completed");
    expect(done).toMatchObject({ status: 200, credentialId: expect.any(String) });
    // The orchestrator logs through its own logger, not the request's: its line has the id all the same.
    const created = lines().filter((l) => l.msg === "credential created" && l.credentialId === done!.credentialId);
    expect(created).toHaveLength(1);
    expect(created[0]!.requestId).toBe("portal-req-0001");
    // One line per request at info: the orchestrator's says nothing the request line does not, so it is at debug.
    expect(created[0]!.level).toBe("debug");
    expect(lines().filter((l) => l.requestId === "portal-req-0001" && l.level !== "debug")).toEqual([done]);
    // Each line names the id once (no duplicate key from two sources).
    for (const raw of s.logs.filter((l) => l.includes("portal-req-0001")))
      expect(raw.match(/"requestId"/g)).toHaveLength(1);
  });

  it("a failing request's lines carry it too, and the error body keeps it (ErrorResponse; a 500 names it)", async () => {
    const res = await fetch(`${s.url}/v1/createCredentials`, {
      method: "POST",
      headers: { authorization: AUTH, "content-type": "application/json", "x-request-id": "portal-req-0002" },
      body: JSON.stringify({ appName: "Nowhere", developer: "rid@example.com", apis: [{ id: "unrouted-api" }] }),
    });
    expect(res.status).toBe(422);
    expect(res.headers.get("x-request-id")).toBe("portal-req-0002");
    expect(((await res.json()) as { path: string }).path).toBe("/v1/createCredentials");
    await until("the completion line", () =>
      lines().some((l) => l.requestId === "portal-req-0002" && l.msg === "request completed"),
    );
    expect(lines().find((l) => l.requestId === "portal-req-0002" && l.msg === "request completed")).toMatchObject({
      status: 422,
    });
  });
});
