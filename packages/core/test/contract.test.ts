import { describe, expect, it } from "vitest";
import { compileContractValidator, openApiDocument } from "../src/index.js";
import { ValidationError } from "../src/entry/errors.js";

describe("the OpenAPI document", () => {
  const doc = openApiDocument() as {
    openapi: string;
    paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    components: { securitySchemes: unknown; schemas: Record<string, unknown> };
  };
  it("is OpenAPI 3.1 with the four endpoints, Basic auth, and the status codes of the design", () => {
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/v1/createCredentials",
      "/v1/health",
      "/v1/revokeCredentials",
      "/v1/updateCredentials",
    ]);
    expect(doc.components.securitySchemes).toEqual({
      basicAuth: expect.objectContaining({ type: "http", scheme: "basic" }),
    });
    expect(Object.keys(doc.paths["/v1/createCredentials"]!.post!.responses)).toEqual([
      "200",
      "400",
      "401",
      "408",
      "413",
      "415",
      "417",
      "422",
      "429",
      "431",
      "500",
      "501",
      "502",
      "503",
      "504",
    ]);
    expect(Object.keys(doc.paths["/v1/updateCredentials"]!.post!.responses)).toContain("404");
    expect(Object.keys(doc.paths["/v1/revokeCredentials"]!.post!.responses)[0]).toBe("204");
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining([
        "CreateCredentialsRequest",
        "CreateCredentialsResponse",
        "UpdateCredentialsRequest",
        "RevokeCredentialsRequest",
        "ErrorResponse",
      ]),
    );
  });
});

describe("the OpenAPI document's answers", () => {
  it("every answer of every operation declares X-Request-Id, and every 4xx/5xx has the ErrorResponse body", () => {
    const doc = openApiDocument() as {
      paths: Record<string, Record<string, { responses: Record<string, Answer> }>>;
      components: { responses: Record<string, Answer> };
    };
    type Answer = {
      $ref?: string;
      headers?: Record<string, unknown>;
      content?: Record<string, { schema?: { $ref?: string } }>;
    };
    const problems: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, raw] of Object.entries(op.responses)) {
          const answer = raw.$ref ? doc.components.responses[raw.$ref.split("/").pop()!]! : raw;
          if (!answer.headers?.["X-Request-Id"]) problems.push(`${method} ${path} ${status}: no X-Request-Id`);
          if (
            Number(status) >= 400 &&
            answer.content?.["application/json"]?.schema?.$ref !== "#/components/schemas/ErrorResponse"
          )
            problems.push(`${method} ${path} ${status}: not an ErrorResponse`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});

describe("compileContractValidator", () => {
  const v = compileContractValidator();
  it("accepts the contract's example create body and keeps unknown fields", () => {
    const body = {
      appName: "A",
      appSlug: "590d83b5c05f",
      developer: "d",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
      later: { x: 1 },
    };
    expect(v.createRequest(body)).toBe(body);
  });
  it("reports every problem with where and what", () => {
    try {
      v.createRequest({ appName: "", apis: [] });
      throw new Error("should fail");
    } catch (err) {
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).messages).toEqual([
        "body must have required property 'developer'",
        "body/appName must NOT have fewer than 1 characters",
        "body/apis must NOT have fewer than 1 items",
      ]);
    }
  });
  it("accepts updatedAt with the [GMT] zone suffix and rejects other shapes", () => {
    const ok = { credentialType: "API_KEY", apiKeyId: "k", apis: [], updatedAt: "2023-06-27T21:23:21.523Z[GMT]" };
    expect(v.updateRequest(ok)).toBe(ok);
    expect(() => v.updateRequest({ ...ok, updatedAt: "yesterday" })).toThrow(/body\/updatedAt must match pattern/);
  });
  it("revoke needs the id its credential type uses", () => {
    expect(() => v.revokeRequest({ credentialType: "API_KEY", clientId: "c" })).toThrow(
      "body must have required property 'apiKeyId'",
    );
    expect(v.revokeRequest({ credentialType: "CLIENT_CREDENTIALS", clientId: "c" })).toBeTruthy();
  });
});
