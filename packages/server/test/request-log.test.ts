/** The request log: one line per request, with the request's id, route, status, duration and outcome; no secret. */
import { afterAll, beforeAll, expect, it } from "vitest";
import { LOCAL_YAML, SERVER_YAML, startTestServer, type TestServer, until } from "./helpers.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(LOCAL_YAML);
});
afterAll(() => s.close());

const linesOf = (requestId: string) =>
  s.logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.requestId === requestId && (l.msg === "request completed" || l.msg === "request aborted"));

it("one info line per successful request, carrying the id echoed in X-Request-Id, the route, status, duration, gateways and user", async () => {
  const res = await s.post(
    "/v1/createCredentials",
    { appName: "Logged", developer: "l@example.com", apis: [{ id: "5aba4csvd4" }] },
    { "x-request-id": "req-1234" },
  );
  expect(res.status).toBe(200);
  expect(res.headers.get("x-request-id")).toBe("req-1234");
  const { apiKey } = (await res.json()) as { apiKey: string };
  await until("the request's completion line", () => linesOf("req-1234").length > 0);
  const lines = linesOf("req-1234");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({
    level: "info",
    route: "/v1/createCredentials",
    status: 200,
    req: { method: "POST", path: "/v1/createCredentials" },
    res: { status: 200 },
    user: "portal",
  });
  expect(lines[0]!.gateways).toEqual(["local"]);
  expect(typeof lines[0]!.durationMs).toBe("number");
  expect(s.logs.join("\n")).not.toContain(apiKey);
});

it("a refused request is one warn line with its error code; an unsafe X-Request-Id is replaced by a UUID", async () => {
  const res = await s.post(
    "/v1/revokeCredentials",
    { credentialType: "API_KEY" },
    { "x-request-id": "bad id with spaces" },
  );
  expect(res.status).toBe(400);
  const id = res.headers.get("x-request-id")!;
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  await until("the request's completion line", () => linesOf(id).length > 0);
  const lines = linesOf(id);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: "warn", status: 400, errorCode: "VALIDATION_FAILED" });
});

it("an update that takes the credential off a gateway names it, on the update's one info line", async () => {
  const two = await startTestServer(`${SERVER_YAML}gateways:
  east: { provider: local, credentialType: API_KEY }
  west: { provider: local, credentialType: API_KEY }
routes:
  - { apis: ["east-api"], gateway: east }
  - { apis: ["west-api"], gateway: west }
`);
  try {
    const created = await two.post("/v1/createCredentials", {
      appName: "Mover",
      developer: "m@example.com",
      apis: [{ id: "east-api" }, { id: "west-api" }],
    });
    expect(created.status).toBe(200);
    const { apiKeyId } = (await created.json()) as { apiKeyId: string };
    const moved = await two.post(
      "/v1/updateCredentials",
      { credentialType: "API_KEY", apiKeyId, apis: [{ id: "west-api", action: "REMOVED" }] },
      { "x-request-id": "req-move" },
    );
    expect(moved.status).toBe(204);
    const lineOf = () =>
      two.logs
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.requestId === "req-move" && l.level !== "debug");
    await until("the update's completion line", () => lineOf().length > 0);
    expect(lineOf()).toHaveLength(1);
    expect(lineOf()[0]).toMatchObject({
      msg: "request completed",
      level: "info",
      status: 204,
      gateways: ["east", "west"],
      removed: ["west"],
    });
    expect(lineOf()[0]!.created).toBeUndefined();
  } finally {
    await two.close();
  }
});
