/**
 * End to end: the full credhook server, configured by examples/kong.yaml and
 * examples/apigee.yaml as shipped, against the Kong Admin API and Apigee management
 * API fakes — `provider: kong` / `provider: apigee` resolve to the real packages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApigeeFake, type ApigeeFake } from "@credhook/fakes/apigee";
import { startKongFake, type KongFake } from "@credhook/fakes/kong";
import { startExampleServer, type TestServer } from "./helpers.js";

const app = { appName: "My App", appSlug: "590d83b5c05f", developer: "developer@example.com" };

describe("credhook server + examples/kong.yaml + Kong Admin API fake (RBAC token)", () => {
  let kong: KongFake;
  let server: TestServer;
  beforeAll(async () => {
    kong = await startKongFake({ adminToken: "rbac-token-from-env" });
    server = await startExampleServer("kong", { KONG_ADMIN_URL: kong.url, KONG_ADMIN_TOKEN: "rbac-token-from-env" });
  });
  afterAll(async () => {
    await server?.close();
    await kong?.close();
  });

  it("create → update → revoke: one consumer with the returned key, ACL groups per API, the plan's rate limit", async () => {
    expect((await server.call("/v1/health")).status).toBe(204);
    const created = await server.call("/v1/createCredentials", {
      ...app,
      apis: [{ id: "orders-v1", usagePlans: [{ id: "gold" }] }, { id: "inventory" }],
    });
    expect(created.status).toBe(200);
    const { apiKeyId, apiKey } = created.json as { apiKeyId: string; apiKey: string };
    expect(kong.consumers().map((c) => c.id)).toEqual([apiKeyId]);
    expect(kong.keyAuths().map((k) => k.key)).toEqual([apiKey]);
    expect(
      kong
        .acls()
        .map((a) => a.group)
        .sort(),
    ).toEqual(["inventory", "orders"]);
    expect(kong.plugins().map((p) => [p.name, p.config.minute, p.config.hour])).toEqual([
      ["rate-limiting", 600, 20000],
    ]);
    const updated = await server.call("/v1/updateCredentials", {
      ...app,
      credentialType: "API_KEY",
      apiKeyId,
      apis: [
        {
          id: "orders-v1",
          action: "NONE",
          usagePlans: [
            { id: "gold", action: "REMOVED" },
            { id: "silver", action: "ADDED" },
          ],
        },
        { id: "inventory", action: "REMOVED" },
      ],
    });
    expect(updated.status).toBe(204);
    expect(kong.acls().map((a) => a.group)).toEqual(["orders"]);
    expect(kong.plugins().map((p) => [p.config.minute, p.config.hour])).toEqual([[60, null]]);
    const unknown = await server.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId,
      apis: [{ id: "orders-v1", action: "NONE", usagePlans: [{ id: "platinum", action: "ADDED" }] }],
    });
    expect(unknown.status).toBe(422);
    expect((await server.call("/v1/revokeCredentials", { ...app, credentialType: "API_KEY", apiKeyId })).status).toBe(
      204,
    );
    expect([kong.consumers(), kong.keyAuths(), kong.acls(), kong.plugins()]).toEqual([[], [], [], []]);
  });
});

describe("credhook server + examples/apigee.yaml + Apigee fake", () => {
  let apigee: ApigeeFake;
  let server: TestServer;
  beforeAll(async () => {
    apigee = await startApigeeFake({ apiProducts: ["orders-gold", "orders-silver", "inventory", "m2m-reports"] });
    server = await startExampleServer("apigee", { APIGEE_ENDPOINT: apigee.url });
  });
  afterAll(async () => {
    await server?.close();
    await apigee?.close();
  });

  it("an API key: one developer app whose only key is the returned value, with the plans' API products; update and revoke follow", async () => {
    const created = await server.call("/v1/createCredentials", {
      ...app,
      apis: [{ id: "orders", usagePlans: [{ id: "gold" }] }, { id: "inventory" }],
    });
    expect(created.status).toBe(200);
    const { apiKeyId, apiKey } = created.json as { apiKeyId: string; apiKey: string };
    const [made] = apigee.apps();
    expect(made).toMatchObject({ appId: apiKeyId, developerEmail: "developer@example.com" });
    expect(made!.credentials.map((c) => [c.consumerKey, c.apiProducts.map((p) => p.apiproduct)])).toEqual([
      [apiKey, ["inventory", "orders-gold"]],
    ]);
    const updated = await server.call("/v1/updateCredentials", {
      ...app,
      credentialType: "API_KEY",
      apiKeyId,
      apis: [{ id: "orders", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] }],
    });
    expect(updated.status).toBe(204);
    expect(
      apigee
        .apps()[0]!
        .credentials[0]!.apiProducts.map((p) => p.apiproduct)
        .sort(),
    ).toEqual(["inventory", "orders-gold", "orders-silver"]);
    expect((await server.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
    expect(apigee.apps()).toEqual([]);
  });

  it("client credentials: the app's consumer key and secret, and the token URL for Apigee's OAuthV2 proxy", async () => {
    const created = await server.call("/v1/createCredentials", { ...app, apis: [{ id: "m2m-reports" }] });
    expect(created.status).toBe(200);
    const { clientId, clientSecret, customCredentials } = created.json as {
      clientId: string;
      clientSecret: string;
      customCredentials: unknown;
    };
    const [made] = apigee.apps();
    expect(made!.credentials).toEqual([
      expect.objectContaining({
        consumerKey: clientId,
        consumerSecret: clientSecret,
        apiProducts: [{ apiproduct: "m2m-reports", status: "approved" }],
      }),
    ]);
    expect(JSON.stringify(customCredentials)).toContain("https://api.example.com/oauth/token");
    // a replayed create reads the secret back: the same client, nothing new
    const again = await server.call("/v1/createCredentials", { ...app, apis: [{ id: "m2m-reports" }] });
    expect(again.json).toMatchObject({ clientId, clientSecret });
    expect(apigee.apps()).toHaveLength(1);
    expect(
      (await server.call("/v1/revokeCredentials", { credentialType: "CLIENT_CREDENTIALS", clientId })).status,
    ).toBe(204);
    expect(apigee.apps()).toEqual([]);
  });
});
