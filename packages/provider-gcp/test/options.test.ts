import { describe, expect, it } from "vitest";
import { createAjv, silentLogger } from "@credhook/core";
import { memoryStateStore } from "@credhook/provider-testkit";
import factory from "../src/index.js";
import { keyIdFor } from "../src/mapping.js";
import { parseEndpoint } from "../src/client.js";

const ctx = (credentialType: "API_KEY" | "CLIENT_CREDENTIALS" = "API_KEY") => ({
  gateway: "gcp",
  configPath: "gateways.gcp.options",
  credentialType,
  logger: silentLogger,
  state: memoryStateStore(),
});

describe("options", () => {
  it("the schema accepts a minimal block, fills defaults, and refuses typos and a bad prefix", () => {
    const validate = createAjv({ useDefaults: true, coerceTypes: true }).compile(factory.optionsSchema);
    const opts: Record<string, unknown> = { projectId: "p", serviceTemplate: "{apiId}.apigateway.p.cloud.goog" };
    expect(validate(opts)).toBe(true);
    expect(opts).toMatchObject({
      keyIdPrefix: "credhook-",
      operationTimeoutMs: 60000,
      requestTimeoutMs: 15000,
      rateLimit: { writesPerMinute: 100, writeBurst: 20 },
    });
    expect(opts).toMatchObject({ retry: { maxAttempts: 3, throttleInitialDelayMs: 1000, budgetMs: 10000 } });
    expect(validate({ projectId: "p", serviceTemplate: "{apiId}.x", retry: { budgetMs: 0 } })).toBe(true);
    expect(validate({ projectId: "p", serviceTemplate: "{apiId}.x", retry: { budgetMs: -1 } })).toBe(false);
    expect(validate({ projectId: "p", projectID: "typo" })).toBe(false);
    expect(validate({ projectId: "p", keyIdPrefix: "Bad_" })).toBe(false);
    expect(validate({ projectId: "p", credentials: { type: "key-file" } })).toBe(false);
    expect(validate({ projectId: "p", credentials: { type: "static-token" } })).toBe(true);
    expect(validate({ projectId: "p", serviceTemplate: "no-placeholder" })).toBe(false);
    expect(validate({})).toBe(false);
  });

  it("parses every endpoint form into host, port and protocol", () => {
    expect(parseEndpoint(undefined, "e")).toEqual({ host: "apikeys.googleapis.com", port: 443, protocol: "https" });
    expect(parseEndpoint("apikeys-psc.p.googleapis.com", "e")).toEqual({
      host: "apikeys-psc.p.googleapis.com",
      port: 443,
      protocol: "https",
    });
    expect(parseEndpoint("apikeys.internal:8443", "e")).toEqual({
      host: "apikeys.internal",
      port: 8443,
      protocol: "https",
    });
    expect(parseEndpoint("http://127.0.0.1:4010", "e")).toEqual({ host: "127.0.0.1", port: 4010, protocol: "http" });
    expect(parseEndpoint("http://localhost", "e")).toEqual({ host: "localhost", port: 80, protocol: "http" });
    expect(parseEndpoint("https://[::1]:9000/", "e")).toEqual({ host: "::1", port: 9000, protocol: "https" });
    expect(() => parseEndpoint("http://127.0.0.1:4010/v2", "gateways.gcp.options.endpoint")).toThrow(
      /gateways\.gcp\.options\.endpoint: .* without a path/,
    );
    expect(() => parseEndpoint("ftp://host", "e")).toThrow(/protocol 'ftp' is not supported/);
  });

  it("create refuses CLIENT_CREDENTIALS, a missing key file, and a block mapping no API, naming the YAML path", async () => {
    const base = { projectId: "p", serviceTemplate: "{apiId}.x.cloud.goog" };
    // what the options' values alone show is refused before create runs, synchronously
    expect(() => factory.create(base, ctx("CLIENT_CREDENTIALS"))).toThrow(
      expect.objectContaining({
        messages: [
          "[provider-gcp] gateways.gcp.credentialType: provider 'gcp' issues API_KEY credentials only, not CLIENT_CREDENTIALS",
        ],
      }),
    );
    await expect(
      factory.create({ ...base, credentials: { type: "key-file", path: "/nonexistent/sa.json" } }, ctx()),
    ).rejects.toMatchObject({
      messages: [
        "[provider-gcp] gateways.gcp.options.credentials.path: cannot read the key file '/nonexistent/sa.json'",
      ],
    });
    expect(() => factory.create({ projectId: "p" }, ctx())).toThrow(
      expect.objectContaining({
        status: 500,
        code: "CONFIG_INVALID",
        messages: [
          "[provider-gcp] gateways.gcp.options: set services (API id -> Google service name) or serviceTemplate, else no API can be mapped",
        ],
      }),
    );
  });

  it("derives keyIds that Google accepts and that are not UUID-like", () => {
    const ids = Array.from({ length: 50 }, (_, i) =>
      keyIdFor(`00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, "credhook-"),
    );
    for (const id of ids) expect(id).toMatch(/^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/);
    expect(new Set(ids).size).toBe(50);
    expect(keyIdFor("same", "x-")).toBe(keyIdFor("same", "x-"));
  });
});
