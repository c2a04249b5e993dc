import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Context } from "aws-lambda";
import {
  createLambdaHandler,
  handler,
  reconcileHandler,
  type LambdaApp,
  type LambdaHttpEvent,
  type LambdaHttpResult,
} from "../src/lambda.js";
import { Writable } from "node:stream";
import { createLogger } from "../src/index.js";
import { AUTH, LOCAL_YAML, PASSWORD } from "./helpers.js";

// The event shapes AWS documents (see each fixture's _source), filled in per call.
type Kind = "rest-api-v1" | "http-api-v2" | "function-url";
const fixture = (kind: Kind): Record<string, unknown> => {
  const e = JSON.parse(readFileSync(new URL(`./fixtures/lambda/${kind}.json`, import.meta.url), "utf8")) as Record<
    string,
    unknown
  >;
  delete e._source;
  return e;
};

interface Call {
  method?: string;
  body?: string;
  base64?: boolean;
  auth?: string | null;
}

/** An event of `kind` for `method path`, with Basic auth (unless `auth: null`) and a JSON body (base64-encoded when asked). */
function event(kind: Kind, path: string, call: Call = {}): LambdaHttpEvent {
  const e = fixture(kind) as Record<string, any>;
  const method = call.method ?? (call.body === undefined ? "GET" : "POST");
  const auth = call.auth === undefined ? AUTH : call.auth;
  const extra: Record<string, string> = {};
  if (auth) extra.Authorization = auth;
  if (call.body !== undefined) extra["Content-Type"] = "application/json";
  // As the client sent it: the decoded body's length.
  extra["Content-Length"] = String(Buffer.byteLength(call.body ?? ""));
  const body = call.body === undefined ? null : call.base64 ? Buffer.from(call.body).toString("base64") : call.body;
  if (kind === "rest-api-v1") {
    // REST APIs pass header names as the client sent them, in headers and multiValueHeaders.
    Object.assign(e, { httpMethod: method, path, body, isBase64Encoded: !!call.base64 });
    Object.assign(e.requestContext, { httpMethod: method, path: `/prod${path}` });
    Object.assign(e.headers, extra);
    for (const [k, v] of Object.entries(extra)) e.multiValueHeaders[k] = [v];
  } else {
    // HTTP APIs and function URLs lower-case header names.
    Object.assign(e, { rawPath: path, isBase64Encoded: !!call.base64 });
    if (body !== null) e.body = body;
    else delete e.body;
    Object.assign(e.requestContext.http, { method, path });
    for (const [k, v] of Object.entries(extra)) e.headers[k.toLowerCase()] = v;
  }
  return e as LambdaHttpEvent;
}

const context = {
  awsRequestId: "8f5b1c2d-aaaa-bbbb-cccc-0123456789ab",
  functionName: "credhook",
  callbackWaitsForEmptyEventLoop: true,
} as unknown as Context;

/** The result's headers with lower-case names. */
const headersOf = (r: LambdaHttpResult) =>
  Object.fromEntries(
    Object.entries((r as { headers?: Record<string, unknown> }).headers ?? {}).map(([k, v]) => [
      k.toLowerCase(),
      String(v),
    ]),
  );
const json = (r: LambdaHttpResult) => {
  const b = (r as { body?: string; isBase64Encoded?: boolean }).body ?? "";
  return JSON.parse(
    (r as { isBase64Encoded?: boolean }).isBase64Encoded ? Buffer.from(b, "base64").toString("utf8") : b,
  ) as Record<string, any>;
};
const status = (r: LambdaHttpResult) => (r as { statusCode: number }).statusCode;

/** Asserts the contract's ErrorResponse (and the status) and returns it. */
function errorResponse(r: LambdaHttpResult, expected: number, path: string) {
  expect(status(r)).toBe(expected);
  expect(headersOf(r)["content-type"]).toMatch(/^application\/json/);
  const body = json(r);
  expect(Object.keys(body).sort()).toEqual(["error", "messages", "path", "status", "timestamp"]);
  expect(body.status).toBe(expected);
  expect(body.path).toBe(path);
  expect(Number.isNaN(Date.parse(body.timestamp))).toBe(false);
  expect(body.messages.length).toBeGreaterThan(0);
  return body;
}

// The deployment the handler is for: the store on PostgreSQL (a real server, in a schema of this file's own).
let dir: string;
let lambda: LambdaApp;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "credhook-lambda-"));
  const schema = `lambda_${randomBytes(4).toString("hex")}`;
  writeFileSync(
    join(dir, "webhook.config.yaml"),
    LOCAL_YAML.replace(/^store: .*$/m, `store: { postgres: { url: "\${DATABASE_URL}", schema: ${schema} } }`),
  );
  lambda = await createLambdaHandler({
    env: {
      CREDHOOK_CONFIG: join(dir, "webhook.config.yaml"),
      CREDHOOK_PASSWORD: PASSWORD,
      CREDHOOK_DATA_DIR: dir,
      DATABASE_URL: inject("databaseUrl"),
    },
    logger: createLogger("silent"),
  });
  expect(lambda.credhook.store.shared).toBe(true);
});
afterAll(async () => {
  await lambda.credhook.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the request log on Lambda", () => {
  it("one 'request completed' line per invocation, at info, with the event's request id", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(...String(chunk).split("\n").filter(Boolean));
        cb();
      },
    });
    const d = mkdtempSync(join(tmpdir(), "credhook-lambda-log-"));
    writeFileSync(join(d, "webhook.config.yaml"), LOCAL_YAML);
    const logged = await createLambdaHandler({
      env: { CREDHOOK_CONFIG: join(d, "webhook.config.yaml"), CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: d },
      logger: createLogger("info", sink),
    });
    try {
      for (const kind of ["rest-api-v1", "http-api-v2", "function-url"] as Kind[]) {
        expect(status(await logged.handler(event(kind, "/v1/health"), context))).toBe(204);
        const requestId = (fixture(kind).requestContext as { requestId: string }).requestId;
        const mine = lines
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .filter((l) => l.requestId === requestId);
        expect(mine).toEqual([
          expect.objectContaining({ level: "info", msg: "request completed", status: 204, route: "/v1/health" }),
        ]);
        lines.length = 0;
      }
    } finally {
      await logged.credhook.close();
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe.each<Kind>(["rest-api-v1", "http-api-v2", "function-url"])("AWS Lambda handler, %s events", (kind) => {
  it("passes the contract's four calls: create (base64 body) 200, update 204, revoke 204, health 204", async () => {
    const app = {
      appName: `Lambda ${kind}`,
      developer: "dev@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    };
    const created = await lambda.handler(
      event(kind, "/v1/createCredentials", { body: JSON.stringify(app), base64: true }),
      context,
    );
    expect(status(created)).toBe(200);
    expect(headersOf(created)["content-type"]).toMatch(/^application\/json/);
    expect(headersOf(created)["cache-control"]).toBe("no-store");
    const cred = json(created);
    expect(cred).toEqual({
      credentialType: "API_KEY",
      apiKeyId: expect.any(String),
      apiKey: expect.stringMatching(/^credhook[0-9A-Za-z]{46}$/),
    });
    // the request id is the one API Gateway / the function URL gave the request
    const requestId = (fixture(kind).requestContext as { requestId: string }).requestId;
    expect(headersOf(created)["x-request-id"]).toBe(requestId);

    const updated = await lambda.handler(
      event(kind, "/v1/updateCredentials", {
        body: JSON.stringify({
          ...app,
          credentialType: "API_KEY",
          apiKeyId: cred.apiKeyId,
          apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "2plan2", action: "ADDED" }] }],
        }),
      }),
      context,
    );
    expect(status(updated)).toBe(204);
    expect((updated as { body?: string }).body ?? "").toBe("");
    // the update really happened: revoking is idempotent, so check via a second update of an unknown plan (422 from the embedded provider)
    const unknownPlan = await lambda.handler(
      event(kind, "/v1/updateCredentials", {
        body: JSON.stringify({
          credentialType: "API_KEY",
          apiKeyId: cred.apiKeyId,
          apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "nope00", action: "ADDED" }] }],
        }),
        base64: true,
      }),
      context,
    );
    errorResponse(unknownPlan, 422, "/v1/updateCredentials");

    const revoked = await lambda.handler(
      event(kind, "/v1/revokeCredentials", {
        body: JSON.stringify({ ...app, credentialType: "API_KEY", apiKeyId: cred.apiKeyId }),
      }),
      context,
    );
    expect(status(revoked)).toBe(204);
    // revoked: an update of it is now unknown to credhook
    const after = await lambda.handler(
      event(kind, "/v1/updateCredentials", {
        body: JSON.stringify({
          credentialType: "API_KEY",
          apiKeyId: cred.apiKeyId,
          apis: [{ id: "5aba4csvd4", action: "NONE" }],
        }),
      }),
      context,
    );
    expect(status(after)).toBe(404);

    const health = await lambda.handler(event(kind, "/v1/health"), context);
    expect(status(health)).toBe(204);
  });

  it("answers errors as ErrorResponse: 401 without credentials, 400 for a malformed base64 JSON body, 404 for an unknown path", async () => {
    const unauthorized = await lambda.handler(
      event(kind, "/v1/createCredentials", { body: "{}", auth: null }),
      context,
    );
    errorResponse(unauthorized, 401, "/v1/createCredentials");
    expect(headersOf(unauthorized)["www-authenticate"]).toMatch(/^Basic realm="credhook"/);

    const wrong = await lambda.handler(
      event(kind, "/v1/health", { auth: `Basic ${Buffer.from("portal:wrong-password").toString("base64")}` }),
      context,
    );
    errorResponse(wrong, 401, "/v1/health");

    const malformed = await lambda.handler(
      event(kind, "/v1/createCredentials", { body: '{"appName": "x", ', base64: true }),
      context,
    );
    expect(errorResponse(malformed, 400, "/v1/createCredentials").messages).toEqual(["body is not valid JSON"]);

    const invalid = await lambda.handler(
      event(kind, "/v1/createCredentials", {
        body: JSON.stringify({ appName: "x", developer: "d", apis: [{ id: 7 }] }),
      }),
      context,
    );
    expect(errorResponse(invalid, 400, "/v1/createCredentials").messages).toContain("body/apis/0/id must be string");

    errorResponse(await lambda.handler(event(kind, "/v2/nothing"), context), 404, "/v2/nothing");
  });
});

describe("the exported Lambda handler", () => {
  it("refuses to start without a password (it would be lost with the execution environment), answering 500 ErrorResponse", async () => {
    const saved = { ...process.env };
    const stderr: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => (stderr.push(String(chunk)), true)) as typeof process.stderr.write;
    try {
      const d = mkdtempSync(join(tmpdir(), "credhook-lambda-nopw-"));
      delete process.env.CREDHOOK_PASSWORD;
      delete process.env.CREDHOOK_CONFIG;
      process.env.CREDHOOK_DATA_DIR = d;
      const res = await handler(event("http-api-v2", "/v1/health"), context);
      errorResponse(res, 500, "/v1/health");
      expect(json(res).messages).toEqual(["credhook could not start; see the function's log"]);
      expect(stderr.join("")).toContain("server.auth.users[0]: no password; on AWS Lambda set CREDHOOK_PASSWORD");

      // the next invocation tries again, and with a password the embedded default serves
      process.env.CREDHOOK_PASSWORD = PASSWORD;
      const ok = await handler(event("function-url", "/v1/health"), context);
      expect(status(ok)).toBe(204);
      // the scheduled entry point runs a reconcile-loop pass on the same app
      expect(await reconcileHandler()).toEqual({ ran: true, finished: 0, inFlight: 0, swept: 0 });
      rmSync(d, { recursive: true, force: true });
    } finally {
      process.stderr.write = write;
      process.env = saved;
    }
  });
});
