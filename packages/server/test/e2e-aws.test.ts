/**
 * End to end: the full credhook server, configured by examples/aws.yaml, against
 * the AWS fake. The contract's example create / update / revoke produces exactly
 * the expected API key, plan attachments and app client, and leaves nothing behind.
 *
 * `provider: aws` loads the real @credhook/provider-aws, a dependency of the server:
 * deliberately not mocked, so this also proves the built-in provider resolves.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAwsFake, type AwsFake } from "@credhook/fakes/aws";
import { startExampleServer, type TestServer } from "./helpers.js";

const POOL = "us-east-1_Credhook1";
const RS = "https://api.example.com";

let fake: AwsFake;
let server: TestServer;

const call = (path: string, body?: unknown) => server.call(path, body);

beforeAll(async () => {
  fake = await startAwsFake();
  // The operator's AWS side: two REST APIs with usage plans, a user pool with a resource server.
  fake.apiGateway.addUsagePlan({
    id: "1el57v",
    name: "Orders Gold",
    apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }],
  });
  fake.apiGateway.addUsagePlan({
    id: "2plan2",
    name: "Orders Beta",
    apiStages: [{ apiId: "5aba4csvd4", stage: "beta" }],
  });
  fake.apiGateway.addUsagePlan({ id: "3plan3", name: "Catalog", apiStages: [{ apiId: "9xk3m2p7qa", stage: "prod" }] });
  fake.cognito.createUserPool({ id: POOL, domain: "credhook-example" });
  fake.cognito.createResourceServer(POOL, RS, ["payments.read"]);
  server = await startExampleServer("aws", { FAKE_URL: fake.url });
});

afterAll(async () => {
  await server?.close();
  await fake?.close();
});

const app = { appName: "My App", appSlug: "590d83b5c05f", developer: "developer@example.com" };
const updatedAt = "2023-06-27T21:23:21.523Z[GMT]";

describe("credhook server + examples/aws.yaml + AWS fake: API_KEY", () => {
  let apiKeyId = "";
  let apiKey = "";
  const plans = () => fake.apiGateway.plansOfKey(apiKeyId);

  it("health answers 204 after one cheap read per gateway", async () => {
    expect((await call("/v1/health")).status).toBe(204);
    expect(fake.stats().calls).toEqual({ GetApiKeys: 1, DescribeResourceServer: 1 });
  });

  it("create returns exactly one new enabled key, in the request's usage plan", async () => {
    const res = await call("/v1/createCredentials", {
      ...app,
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ credentialType: "API_KEY", apiKeyId: expect.any(String), apiKey: expect.any(String) });
    apiKeyId = res.json!.apiKeyId as string;
    apiKey = res.json!.apiKey as string;
    expect([...fake.apiGateway.keys.keys()]).toEqual([apiKeyId]);
    const key = fake.apiGateway.keys.get(apiKeyId)!;
    expect(key).toMatchObject({ value: apiKey, enabled: true, name: "credhook/developer@example.com/590d83b5c05f" });
    expect(apiKey.length).toBeGreaterThanOrEqual(40);
    expect(plans()).toEqual(["1el57v"]);
  });

  it("a replayed create returns the same key (read back from AWS) and creates nothing", async () => {
    const res = await call("/v1/createCredentials", {
      ...app,
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ apiKeyId, apiKey });
    expect(fake.apiGateway.keys.size).toBe(1);
    expect(fake.stats().calls.CreateApiKey).toBe(1);
  });

  it("update ADDED attaches the plan, REMOVED detaches the other; NONE repairs drift", async () => {
    const base = { updatedAt, ...app, credentialType: "API_KEY", apiKeyId };
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
    expect(plans()).toEqual(["1el57v", "2plan2"]);

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
    expect(plans()).toEqual(["2plan2"]);

    fake.apiGateway.detachKey("2plan2", apiKeyId); // someone edits the plan in the console
    res = await call("/v1/updateCredentials", {
      ...base,
      apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "2plan2", action: "NONE" }] }],
    });
    expect(res.status).toBe(204);
    expect(plans()).toEqual(["2plan2"]);
  });

  it("update ADDED of a second API attaches its plan; an unknown plan is 422 and changes nothing", async () => {
    const base = { updatedAt, ...app, credentialType: "API_KEY", apiKeyId };
    let res = await call("/v1/updateCredentials", {
      ...base,
      apis: [
        { id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "2plan2", action: "NONE" }] },
        { id: "9xk3m2p7qa", action: "ADDED", usagePlans: [{ id: "3plan3", action: "ADDED" }] },
      ],
    });
    expect(res.status).toBe(204);
    expect(plans()).toEqual(["2plan2", "3plan3"]);
    res = await call("/v1/updateCredentials", {
      ...base,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "2plan2", action: "NONE" },
            { id: "zzzzzz", action: "ADDED" },
          ],
        },
        { id: "9xk3m2p7qa", action: "NONE", usagePlans: [{ id: "3plan3", action: "NONE" }] },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.json!.messages).toContain("[gateway aws-keys] usage plan zzzzzz does not exist");
    expect(plans()).toEqual(["2plan2", "3plan3"]);
  });

  it("revoke deletes exactly that key and nothing is left in any plan; revoking again is 204", async () => {
    const body = { ...app, credentialType: "API_KEY", apiKeyId, apiKey };
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    expect(fake.apiGateway.keys.size).toBe(0);
    for (const plan of fake.apiGateway.plans.values()) expect(plan.keys.size).toBe(0);
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
  });

  it("create with an unknown usage plan is 422 and leaves no key behind", async () => {
    const res = await call("/v1/createCredentials", {
      ...app,
      appSlug: "other",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "nope00" }] }],
    });
    expect(res.status).toBe(422);
    expect(res.json!.messages).toContain("[gateway aws-keys] usage plan nope00 (API 5aba4csvd4) does not exist");
    expect(fake.apiGateway.keys.size).toBe(0);
  });
});

describe("credhook server + examples/aws.yaml + AWS fake: CLIENT_CREDENTIALS", () => {
  const m2m = { appName: "Billing Bot", appSlug: "b1ll1ngb0t00", developer: "developer@example.com" };
  let clientId = "";
  let clientSecret = "";
  const client = () => fake.cognito.pools.get(POOL)!.clients.get(clientId);

  it("create returns an app client whose id and secret obtain a token with the API's scopes", async () => {
    const res = await call("/v1/createCredentials", { ...m2m, apis: [{ id: "7hq2k9xw1m", usagePlans: [] }] });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      credentialType: "CLIENT_CREDENTIALS",
      clientId: expect.any(String),
      clientSecret: expect.any(String),
    });
    clientId = res.json!.clientId as string;
    clientSecret = res.json!.clientSecret as string;
    const scopes = `${RS}/payments.read ${RS}/payments.write`;
    expect(res.json!.customCredentials).toMatchObject({ tokenEndpoint: fake.tokenEndpoint, scopes });
    expect(fake.cognito.allClients().map((c) => c.ClientId)).toEqual([clientId]);
    expect(client()).toMatchObject({
      AllowedOAuthFlows: ["client_credentials"],
      AllowedOAuthFlowsUserPoolClient: true,
      ClientSecret: clientSecret,
    });
    // the resource server kept its scope and gained the missing one
    expect(
      fake.cognito.pools
        .get(POOL)!
        .resourceServers.get(RS)!
        .Scopes.map((s) => s.ScopeName),
    ).toEqual(["payments.read", "payments.write"]);

    const token = await fetch(String((res.json!.customCredentials as Record<string, string>).tokenEndpoint), {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString("base64")}`,
      },
      body: "grant_type=client_credentials",
    });
    expect(token.status).toBe(200);
    const { access_token } = (await token.json()) as { access_token: string };
    expect(fake.cognito.verifyAccessToken(access_token)).toMatchObject({ client_id: clientId, scope: scopes });
  });

  it("update ADDED of a second API adds its scope with a full-description update", async () => {
    const res = await call("/v1/updateCredentials", {
      updatedAt,
      ...m2m,
      credentialType: "CLIENT_CREDENTIALS",
      clientId,
      apis: [
        { id: "7hq2k9xw1m", action: "NONE", usagePlans: [] },
        { id: "3vb8n1c4zt", action: "ADDED", usagePlans: [] },
      ],
    });
    expect(res.status).toBe(204);
    expect(client()!.AllowedOAuthScopes).toEqual([`${RS}/3vb8n1c4zt`, `${RS}/payments.read`, `${RS}/payments.write`]);
    expect(client()).toMatchObject({
      AllowedOAuthFlows: ["client_credentials"],
      AllowedOAuthFlowsUserPoolClient: true,
      ClientSecret: clientSecret,
    });
  });

  it("revoke deletes the app client; nothing is left; revoking again is 204", async () => {
    const body = { ...m2m, credentialType: "CLIENT_CREDENTIALS", clientId, clientSecret };
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    expect(fake.cognito.allClients()).toEqual([]);
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    expect(fake.apiGateway.keys.size).toBe(0);
  });

  it("an app whose APIs need both credential types is 422", async () => {
    const res = await call("/v1/createCredentials", {
      ...m2m,
      apis: [
        { id: "7hq2k9xw1m", usagePlans: [] },
        { id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] },
      ],
    });
    expect(res.status).toBe(422);
    expect(fake.cognito.allClients()).toEqual([]);
    expect(fake.apiGateway.keys.size).toBe(0);
  });
});
