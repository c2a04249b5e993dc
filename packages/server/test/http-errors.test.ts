import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { AUTH, errorOf, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";
import { controls } from "./fixtures/faulty-provider.js";

const FAULTY = fileURLToPath(new URL("./fixtures/faulty-provider.ts", import.meta.url));
const YAML = LOCAL_YAML.replace(
  "routes:\n",
  `  faulty:
    provider: ${FAULTY}
    credentialType: API_KEY
    options: { label: test }
routes:
  - { apis: ["throttle", "upstream-down", "timeout", "bug", "slow", "fine-*"], gateway: faulty }
`,
).replace("server:\n", "server:\n  bodyLimitBytes: 2048\n");

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(YAML);
});
afterAll(() => s.close());

const create = (apis: Array<{ id: string; usagePlans?: Array<{ id: string }> }>, extra: Record<string, unknown> = {}) =>
  s.post("/v1/createCredentials", { appName: `App ${Math.random()}`, developer: "e@example.com", apis, ...extra });

describe("400: malformed JSON, schema violations, unsupported credentialType", () => {
  it("malformed JSON is a 400 that does not echo the body", async () => {
    const res = await s.post("/v1/createCredentials", '{"appName": "x", "apiKey": "SUPERSECRETVALUE", ');
    const err = await errorOf(res);
    expect(err).toMatchObject({
      status: 400,
      error: "Bad Request",
      path: "/v1/createCredentials",
      messages: ["body is not valid JSON"],
    });
    expect(JSON.stringify(err)).not.toContain("SUPERSECRETVALUE");
  });

  it("lists every schema problem at once, each with where and what", async () => {
    const res = await s.post("/v1/createCredentials", { appName: 7, apis: [{ id: 3, usagePlans: [{}] }] });
    const err = await errorOf(res);
    expect(err.status).toBe(400);
    expect(err.messages).toEqual(
      expect.arrayContaining([
        "body must have required property 'developer'",
        "body/appName must be string",
        "body/apis/0/id must be string",
        "body/apis/0/usagePlans/0 must have required property 'id'",
      ]),
    );
    expect(err.messages).toHaveLength(4);
  });

  it("a JSON body that is not an object is a 400", async () => {
    const err = await errorOf(await s.post("/v1/createCredentials", "[1,2]"));
    expect(err.messages).toEqual(["body must be a JSON object"]);
  });

  it("an unsupported credentialType is a 400 naming the allowed values", async () => {
    for (const path of ["/v1/updateCredentials", "/v1/revokeCredentials"]) {
      const err = await errorOf(await s.post(path, { credentialType: "JWT", apiKeyId: "x", apis: [] }));
      expect(err.status).toBe(400);
      expect(err.messages).toContain("body/credentialType must be one of: API_KEY, CLIENT_CREDENTIALS");
    }
  });

  it("update without the id its credentialType needs is a 400", async () => {
    const err = await errorOf(
      await s.post("/v1/updateCredentials", { credentialType: "CLIENT_CREDENTIALS", apis: [] }),
    );
    expect(err.messages).toEqual(["body must have required property 'clientId'"]);
  });

  it("an action outside NONE/ADDED/REMOVED is a 400", async () => {
    const err = await errorOf(
      await s.post("/v1/updateCredentials", {
        credentialType: "API_KEY",
        apiKeyId: "x",
        apis: [{ id: "a", action: "MOVED" }],
      }),
    );
    expect(err.messages).toEqual(["body/apis/0/action must be one of: NONE, ADDED, REMOVED"]);
  });
});

describe("401 and 429: authentication", () => {
  it("401 with WWW-Authenticate when the header is missing, malformed, or wrong", async () => {
    for (const authorization of [
      undefined,
      "Bearer abc",
      `Basic ${Buffer.from("portal:wrong").toString("base64")}`,
      `Basic ${Buffer.from("nobody:correct-horse-battery").toString("base64")}`,
    ]) {
      const res = await fetch(`${s.url}/v1/health`, { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Basic realm="credhook", charset="UTF-8"');
      expect((await errorOf(res)).error).toBe("Unauthorized");
    }
  });

  it("all four endpoints require auth", async () => {
    for (const [method, path] of [
      ["POST", "/v1/createCredentials"],
      ["POST", "/v1/updateCredentials"],
      ["POST", "/v1/revokeCredentials"],
      ["GET", "/v1/health"],
    ] as const) {
      const res = await fetch(s.url + path, {
        method,
        headers: { "content-type": "application/json" },
        ...(method === "POST" ? { body: "{}" } : {}),
      });
      expect(res.status, path).toBe(401);
    }
  });
});

describe("404 / 405 / 413 / 415", () => {
  it("unknown path is a 404 ErrorResponse", async () => {
    const err = await errorOf(await s.get("/v2/createCredentials"));
    expect(err).toMatchObject({ status: 404, path: "/v2/createCredentials" });
  });

  it("wrong method is a 405 with Allow", async () => {
    const res = await fetch(`${s.url}/v1/createCredentials`, { headers: { authorization: AUTH } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    await errorOf(res);
    const h = await fetch(`${s.url}/v1/health`, { method: "DELETE", headers: { authorization: AUTH } });
    expect(h.status).toBe(405);
    expect(h.headers.get("allow")).toBe("GET, HEAD");
  });

  it("update of a credential neither the store nor its gateway knows is a 404", async () => {
    const err = await errorOf(
      await s.post("/v1/updateCredentials", {
        credentialType: "API_KEY",
        apiKeyId: "lkdoesnotexist",
        apis: [{ id: "5aba4csvd4", action: "NONE" }],
      }),
    );
    expect(err.status).toBe(404);
    expect(err.messages[0]).toContain("lkdoesnotexist");
  });

  it("a body over the limit is a 413", async () => {
    const err = await errorOf(
      await s.post("/v1/createCredentials", { appName: "x".repeat(3000), developer: "d", apis: [{ id: "a" }] }),
    );
    expect(err).toMatchObject({ status: 413, messages: ["body is larger than the limit of 2048 bytes"] });
  });

  it("a body that is not application/json is a 415", async () => {
    const err = await errorOf(
      await s.post("/v1/createCredentials", "appName=x", { "content-type": "application/x-www-form-urlencoded" }),
    );
    expect(err.status).toBe(415);
  });
});

describe("422: routing and references", () => {
  it("an API id routed nowhere names the id", async () => {
    const err = await errorOf(await create([{ id: "5aba4csvd4" }, { id: "nowhere-1" }, { id: "nowhere-2" }]));
    expect(err.status).toBe(422);
    expect(err.messages[0]).toBe("no route matches API ids 'nowhere-1', 'nowhere-2'");
  });

  it("APIs needing different credential types are a 422 that lists them", async () => {
    const err = await errorOf(await create([{ id: "5aba4csvd4" }, { id: "m2m-x" }]));
    expect(err.status).toBe(422);
    expect(err.messages).toEqual([
      "the app's APIs need different credential types",
      "API_KEY: '5aba4csvd4' (gateway local)",
      "CLIENT_CREDENTIALS: 'm2m-x' (gateway local-m2m)",
    ]);
  });

  it("a usage plan unknown to its gateway is a 422 and leaves no credential", async () => {
    const before = (await s.credhook.store.stateFor("local").list("cred:")).length;
    const err = await errorOf(await create([{ id: "5aba4csvd4", usagePlans: [{ id: "zzzzzz" }] }]));
    expect(err).toMatchObject({ status: 422, messages: ["[gateway local] usage plan 'zzzzzz' does not exist"] });
    expect((await s.credhook.store.stateFor("local").list("cred:")).length).toBe(before);
  });
});

describe("5xx from gateways", () => {
  it("throttled after retries is a 503 with Retry-After", async () => {
    const res = await create([{ id: "throttle" }]);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("7");
    expect((await errorOf(res)).messages).toEqual(["[gateway faulty] the cloud throttled CreateApiKey"]);
  });

  it("a failed cloud call is a 502, a timed-out one a 504", async () => {
    expect((await errorOf(await create([{ id: "upstream-down" }]))).status).toBe(502);
    expect((await errorOf(await create([{ id: "timeout" }]))).status).toBe(504);
  });

  it("an untyped provider error is a 502 that does not leak its message", async () => {
    const err = await errorOf(await create([{ id: "bug" }]));
    expect(err).toMatchObject({ status: 502, messages: ["gateway 'faulty' failed unexpectedly"] });
    expect(JSON.stringify(err)).not.toContain("secret-in-raw-error");
    const logged = s.logs.filter((l) => l.includes("secret-in-raw-error"));
    expect(logged.length).toBeGreaterThan(0); // the operator sees what went wrong …
    for (const line of logged) expect(line).not.toMatch(/stack|\bat act \(/); // … without a stack trace
  });

  it("a failure on one gateway rolls back the others of the same create", async () => {
    // The fixture's record of live ids is module-wide: other files' servers in this worker use it too.
    controls.revoked.length = 0;
    controls.created.clear();
    const before = (await s.credhook.store.stateFor("local").list("cred:")).length;
    const err = await errorOf(await create([{ id: "5aba4csvd4" }, { id: "fine-1" }, { id: "timeout" }]));
    expect(err.status).toBe(504);
    expect((await s.credhook.store.stateFor("local").list("cred:")).length).toBe(before);
    expect(controls.created.size).toBe(0);
    // The timed-out call may still land on 'faulty': the record stays 'abandoned', holding nothing, with 'faulty' to search.
    const unfinished = (await s.credhook.store.list()).filter(
      (r) => r.status !== "active" && r.apis.some((a) => a.id === "fine-1"),
    );
    expect(unfinished).toEqual([
      expect.objectContaining({
        status: "abandoned",
        bindings: [],
        publicId: "",
        abandoned: expect.objectContaining({ uncertain: ["faulty"] }),
      }),
    ]);
    await s.credhook.store.delete(unfinished[0]!.id);
  });

  it("health is a 503 naming the unhealthy gateway", async () => {
    controls.healthy = false;
    try {
      const res = await s.get("/v1/health");
      const err = await errorOf(res);
      expect(err.status).toBe(503);
      expect(err.messages).toEqual(["gateway 'faulty': [gateway faulty] DescribeService failed: connection refused"]);
    } finally {
      controls.healthy = true;
    }
  });
});

describe("500: a bug", () => {
  it("an unexpected error is a 500 ErrorResponse naming the request id, with no stack trace or internal message", async () => {
    const { SqliteCredentialStore } = await import("@credhook/store-sqlite");
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { loadConfigFile, startServer, createLogger } = await import("../src/index.js");
    const dir = mkdtempSync(join(tmpdir(), "credhook-bug-"));
    const store = new SqliteCredentialStore({ path: join(dir, "c.db") });
    await store.init();
    // The create's first read (one statement on SQLite; two on a store without findApp) hits a bug.
    const bug = async (): Promise<never> => {
      throw new RangeError("internal invariant broken at row 42");
    };
    store.findApp = bug;
    store.findByAppKey = bug;
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(dir, "webhook.config.yaml"), LOCAL_YAML);
    const config = await loadConfigFile(join(dir, "webhook.config.yaml"), {
      env: { CREDHOOK_PASSWORD: "correct-horse-battery", CREDHOOK_DATA_DIR: dir },
    });
    const server = await startServer(config, { port: 0, host: "127.0.0.1", store, logger: createLogger("silent") });
    try {
      const res = await fetch(`${server.url}/v1/createCredentials`, {
        method: "POST",
        headers: { authorization: AUTH, "content-type": "application/json" },
        body: JSON.stringify({ appName: "Bug", developer: "b@example.com", apis: [{ id: "5aba4csvd4" }] }),
      });
      const err = await errorOf(res);
      expect(err.status).toBe(500);
      expect(err.error).toBe("Internal Server Error");
      expect(err.messages).toEqual([
        `internal error; see the server log for request ${res.headers.get("x-request-id")}`,
      ]);
      expect(JSON.stringify(err)).not.toContain("invariant");
    } finally {
      await server.close();
      await store.close();
    }
  });
});
