/**
 * End to end: the full credhook server, configured by examples/gcp.yaml, against
 * the API Keys fake — the contract's example flow creates, restricts, changes
 * and deletes exactly the expected key.
 *
 * `provider: gcp` loads the real @credhook/provider-gcp, a dependency of the server:
 * deliberately not mocked, so this also proves the built-in provider resolves.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { startExampleServer, type TestServer } from "./helpers.js";

const SERVICE = "orders-5aba4csvd4.apigateway.fake-project.cloud.goog";

let fake: ApiKeysFake;
let server: TestServer;

const call = (path: string, body?: unknown) => server.call(path, body);

beforeAll(async () => {
  fake = await startApiKeysFake();
  server = await startExampleServer("gcp", { FAKE_URL: fake.url });
});

afterAll(async () => {
  await server?.close();
  await fake?.close();
});

const app = { appName: "My App", appSlug: "590d83b5c05f", developer: "developer@example.com" };

describe("credhook server + examples/gcp.yaml + API Keys fake", () => {
  let apiKeyId = "";
  let apiKey = "";
  const targets = () => fake.key(apiKeyId)!.restrictions.apiTargets;

  it("health answers 204 through the gateway's probe", async () => {
    expect((await call("/v1/health")).status).toBe(204);
    expect(fake.requests().map((r) => r.rpc)).toEqual(["ListKeys"]);
  });

  it("create returns the Google key, restricted to the API's service and its plan's methods", async () => {
    const res = await call("/v1/createCredentials", {
      ...app,
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ credentialType: "API_KEY", apiKeyId: expect.any(String), apiKey: expect.any(String) });
    apiKeyId = res.json!.apiKeyId as string;
    apiKey = res.json!.apiKey as string;
    expect(fake.keys().map((k) => k.keyId)).toEqual([apiKeyId]);
    const key = fake.key(apiKeyId)!;
    expect(apiKey).toBe(key.keyString);
    expect(key.displayName).toBe("My App (developer@example.com)");
    expect(targets()).toEqual([{ service: SERVICE, methods: ["GetOrder", "ListOrders"] }]);
  });

  it("a replayed create returns the same key and creates nothing", async () => {
    const res = await call("/v1/createCredentials", {
      ...app,
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ apiKeyId, apiKey });
    expect(fake.keys()).toHaveLength(1);
    expect(fake.requests().filter((r) => r.rpc === "CreateKey")).toHaveLength(1);
  });

  it("update ADDED then REMOVED changes the key's methods", async () => {
    const base = { updatedAt: "2023-06-27T21:23:21.523Z[GMT]", ...app, credentialType: "API_KEY", apiKeyId };
    let res = await call("/v1/updateCredentials", {
      ...base,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "1el57v", action: "NONE" },
            { id: "2plan2", action: "ADDED" },
          ],
        },
      ],
    });
    expect(res.status).toBe(204);
    expect(targets()).toEqual([{ service: SERVICE, methods: ["CreateOrder", "GetOrder", "ListOrders"] }]);

    res = await call("/v1/updateCredentials", {
      ...base,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "1el57v", action: "REMOVED" },
            { id: "2plan2", action: "NONE" },
          ],
        },
      ],
    });
    expect(res.status).toBe(204);
    expect(targets()).toEqual([{ service: SERVICE, methods: ["CreateOrder"] }]);
  });

  it("an ADDED usage plan the gateway does not know is 422 and changes nothing", async () => {
    const before = fake.key(apiKeyId);
    const res = await call("/v1/updateCredentials", {
      updatedAt: "2023-06-27T21:23:21.523Z[GMT]",
      ...app,
      credentialType: "API_KEY",
      apiKeyId,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "2plan2", action: "NONE" },
            { id: "zzzzzz", action: "ADDED" },
          ],
        },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.json!.messages).toContain("[gateway gcp] usage plan 'zzzzzz' of API '5aba4csvd4' does not exist");
    expect(fake.key(apiKeyId)).toEqual(before);
  });

  it("revoke deletes exactly that key; revoking again is 204 too", async () => {
    const body = { ...app, credentialType: "API_KEY", apiKeyId, apiKey };
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    expect(fake.key(apiKeyId)!.deleteTime).toBeTruthy();
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    const deletes = fake.requests().filter((r) => r.rpc === "DeleteKey");
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.url).toContain(`/keys/${apiKeyId}`);
    expect(fake.keys().map((k) => k.keyId)).toEqual([apiKeyId]);
  });
});
