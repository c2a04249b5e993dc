/** CLIENT_CREDENTIALS on Cognito: flows, scopes (mapping, read-modify-write), token issuance, full-description updates, drift, rename. */
import { DescribeUserPoolClientCommand, UpdateUserPoolClientCommand } from "@aws-sdk/client-cognito-identity-provider";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GatewayApi, Provider, ProviderUpdateInput } from "@credhook/core/provider";
import type { AwsFake } from "@credhook/fakes/aws";
import { gatewayMark } from "../src/naming.js";
import { createCredential, makeProvider, sdkClients, seededFake, type Seed } from "./helpers.js";

let fake: AwsFake;
let seed: Seed;
let provider: Provider;

beforeEach(async () => {
  ({ fake, seed } = await seededFake());
  provider = await makeProvider(fake, seed, "CLIENT_CREDENTIALS");
});
afterEach(async () => {
  await provider.close?.();
  await fake.close();
});

const apisAB = (s: Seed): GatewayApi[] => [
  { id: s.apiA, usagePlans: [s.planA] },
  { id: s.apiB, usagePlans: [] },
];
const none = (apis: GatewayApi[]): ProviderUpdateInput["changes"] =>
  apis.map((a) => ({ id: a.id, action: "NONE", usagePlans: [] }));

async function getToken(endpoint: string, clientId: string, secret: string, scope?: string) {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ grant_type: "client_credentials", ...(scope ? { scope } : {}) }).toString(),
  });
  return {
    status: res.status,
    body: (await res.json()) as { access_token?: string; error?: string; token_type?: string; expires_in?: number },
  };
}

describe("CLIENT_CREDENTIALS create", () => {
  it("creates a client with a secret, only client_credentials, and one scope per API; missing scopes are added, existing kept", async () => {
    const { cred } = await createCredential(provider, "CLIENT_CREDENTIALS", apisAB(seed));
    const rs = seed.resourceServer;
    const client = fake.cognito.pools.get(seed.poolId)!.clients.get(cred.nativeId)!;
    expect(client).toMatchObject({
      ClientName: expect.stringMatching(/^credhook-dev@example\.com-590d83b5c05f@ch\.[0-9a-f]{8}\.[0-9a-f-]{36}$/),
      AllowedOAuthFlows: ["client_credentials"],
      AllowedOAuthFlowsUserPoolClient: true,
      AllowedOAuthScopes: [`${rs}/${seed.apiA}`, `${rs}/${seed.apiB}`],
    });
    expect(cred.clientSecret).toBe(client.ClientSecret);
    const server = fake.cognito.pools.get(seed.poolId)!.resourceServers.get(rs)!;
    expect(server.Scopes.map((s) => s.ScopeName)).toEqual([seed.apiA, seed.apiB]);
    expect(cred.customCredentials).toEqual({
      tokenEndpoint: "https://credhook-test.auth.us-east-1.amazoncognito.com/oauth2/token",
      grantType: "client_credentials",
      scopes: `${rs}/${seed.apiA} ${rs}/${seed.apiB}`,
    });
    expect(cred.resources).toEqual({
      kind: "cognitoClient",
      region: "us-east-1",
      userPoolId: seed.poolId,
      clientId: cred.nativeId,
      clientName: client.ClientName,
      scopes: [`${rs}/${seed.apiA}`, `${rs}/${seed.apiB}`],
    });
  });

  it("the created client really obtains a token with the granted scopes at the token endpoint it was given", async () => {
    const p = await makeProvider(fake, seed, "CLIENT_CREDENTIALS", { tokenEndpoint: fake.tokenEndpoint });
    const { cred } = await createCredential(p, "CLIENT_CREDENTIALS", apisAB(seed));
    expect(cred.customCredentials?.tokenEndpoint).toBe(fake.tokenEndpoint);
    const all = await getToken(cred.customCredentials!.tokenEndpoint!, cred.nativeId, cred.clientSecret!);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(fake.cognito.verifyAccessToken(all.body.access_token!)?.scope).toBe(cred.customCredentials!.scopes);
    const scoped = await getToken(
      fake.tokenEndpoint,
      cred.nativeId,
      cred.clientSecret!,
      `${seed.resourceServer}/${seed.apiB}`,
    );
    expect(fake.cognito.verifyAccessToken(scoped.body.access_token!)?.scope).toBe(
      `${seed.resourceServer}/${seed.apiB}`,
    );
    expect(
      (await getToken(fake.tokenEndpoint, cred.nativeId, cred.clientSecret!, `${seed.resourceServer}/${seed.apiC}`))
        .body.error,
    ).toBe("invalid_scope");
    await p.close?.();
  });

  it("uses the configured scope mapping and defaultScopes template", async () => {
    const p = await makeProvider(fake, seed, "CLIENT_CREDENTIALS", {
      scopes: { [seed.apiA]: ["orders.read", "orders.write"] },
      defaultScopes: ["api.{apiId}"],
    });
    const { cred } = await createCredential(p, "CLIENT_CREDENTIALS", apisAB(seed));
    const rs = seed.resourceServer;
    expect(cred.resources.scopes).toEqual([`${rs}/api.${seed.apiB}`, `${rs}/orders.read`, `${rs}/orders.write`]);
    await p.close?.();
  });

  it("concurrent creates needing different new scopes all keep theirs (serialised read-modify-write)", async () => {
    const ids = ["api00001", "api00002", "api00003", "api00004", "api00005", "api00006"];
    await Promise.all(ids.map((id) => createCredential(provider, "CLIENT_CREDENTIALS", [{ id, usagePlans: [] }])));
    const names = fake.cognito.pools
      .get(seed.poolId)!
      .resourceServers.get(seed.resourceServer)!
      .Scopes.map((s) => s.ScopeName);
    expect(names.sort()).toEqual([seed.apiA, ...ids].sort());
    expect(fake.cognito.allClients()).toHaveLength(ids.length);
  });

  it("with createMissingScopes false a missing scope is a 422 and nothing is created", async () => {
    const p = await makeProvider(fake, seed, "CLIENT_CREDENTIALS", { createMissingScopes: false });
    await expect(createCredential(p, "CLIENT_CREDENTIALS", apisAB(seed))).rejects.toMatchObject({
      status: 422,
      message: `[gateway aws-test] scope ${seed.resourceServer}/${seed.apiB} (API ${seed.apiB}) does not exist on the resource server`,
    });
    expect(fake.cognito.allClients()).toHaveLength(0);
    await p.close?.();
  });

  it("a scope removed by another writer between ensure and create is added again (one retry)", async () => {
    // The scope check passes, then the scope vanishes while CreateUserPoolClient is in flight.
    fake.faults.latency(300, { operation: "CreateUserPoolClient", count: 1 });
    const pending = createCredential(provider, "CLIENT_CREDENTIALS", [{ id: "vanishing", usagePlans: [] }]);
    while (fake.stats().calls.CreateUserPoolClient !== 1) await new Promise((r) => setTimeout(r, 5));
    fake.cognito.createResourceServer(seed.poolId, seed.resourceServer, [seed.apiA]);
    const { cred } = await pending;
    expect(cred.resources.scopes).toEqual([`${seed.resourceServer}/vanishing`]);
    expect(fake.stats().calls.CreateUserPoolClient).toBe(2);
    expect(fake.stats().calls.UpdateResourceServer).toBe(2);
  });
});

describe("CLIENT_CREDENTIALS update", () => {
  it("changes scopes with the full description, keeping fields set outside credhook", async () => {
    const { cred, ref } = await createCredential(provider, "CLIENT_CREDENTIALS", apisAB(seed));
    const { cognito } = sdkClients(fake);
    const { UserPoolClient: d } = await cognito.send(
      new DescribeUserPoolClientCommand({ UserPoolId: seed.poolId, ClientId: cred.nativeId }),
    );
    // an operator shortens the token lifetime by hand (with a full update, as they must)
    await cognito.send(
      new UpdateUserPoolClientCommand({
        UserPoolId: seed.poolId,
        ClientId: cred.nativeId,
        ClientName: d!.ClientName,
        AllowedOAuthFlows: d!.AllowedOAuthFlows,
        AllowedOAuthScopes: d!.AllowedOAuthScopes,
        AllowedOAuthFlowsUserPoolClient: true,
        AccessTokenValidity: 5,
        TokenValidityUnits: { AccessToken: "minutes" },
      }),
    );
    const desired = [...apisAB(seed), { id: seed.apiC, usagePlans: [] }];
    const res = await provider.update({
      ...ref,
      previous: apisAB(seed),
      desired,
      changes: [...none(apisAB(seed)), { id: seed.apiC, action: "ADDED", usagePlans: [] }],
    });
    const client = fake.cognito.pools.get(seed.poolId)!.clients.get(cred.nativeId)!;
    const rs = seed.resourceServer;
    expect(client.AllowedOAuthScopes).toEqual([`${rs}/${seed.apiA}`, `${rs}/${seed.apiB}`, `${rs}/${seed.apiC}`]);
    expect(client.AccessTokenValidity).toBe(5);
    expect(client.TokenValidityUnits).toEqual({ AccessToken: "minutes" });
    expect(client.AllowedOAuthFlowsUserPoolClient).toBe(true);
    expect(client.ClientSecret).toBe(cred.clientSecret);
    expect(res.resources.scopes).toEqual(client.AllowedOAuthScopes);
    // REMOVED drops the scope again
    await provider.update({
      ...ref,
      previous: desired,
      desired: apisAB(seed),
      changes: [...none(apisAB(seed)), { id: seed.apiC, action: "REMOVED", usagePlans: [] }],
    });
    expect(fake.cognito.pools.get(seed.poolId)!.clients.get(cred.nativeId)!.AllowedOAuthScopes).toEqual([
      `${rs}/${seed.apiA}`,
      `${rs}/${seed.apiB}`,
    ]);
    cognito.destroy();
  });

  it("NONE with nothing changed makes no write; NONE after drift restores the scopes and flow", async () => {
    const { cred, ref } = await createCredential(provider, "CLIENT_CREDENTIALS", apisAB(seed));
    fake.faults.resetStats();
    await provider.update({ ...ref, previous: apisAB(seed), desired: apisAB(seed), changes: none(apisAB(seed)) });
    expect(fake.stats().calls.UpdateUserPoolClient).toBeUndefined();
    // someone "updates" the client the naive way (name kept): Cognito resets scopes and flows
    const { cognito } = sdkClients(fake);
    const marked = String(ref.resources.clientName);
    await cognito.send(
      new UpdateUserPoolClientCommand({ UserPoolId: seed.poolId, ClientId: cred.nativeId, ClientName: marked }),
    );
    expect(fake.cognito.pools.get(seed.poolId)!.clients.get(cred.nativeId)!.AllowedOAuthScopes).toBeUndefined();
    await provider.update({ ...ref, previous: apisAB(seed), desired: apisAB(seed), changes: none(apisAB(seed)) });
    const client = fake.cognito.pools.get(seed.poolId)!.clients.get(cred.nativeId)!;
    expect(client).toMatchObject({
      ClientName: marked,
      AllowedOAuthFlows: ["client_credentials"],
      AllowedOAuthFlowsUserPoolClient: true,
    });
    expect(client.AllowedOAuthScopes).toHaveLength(2);
    expect((await getToken(fake.tokenEndpoint, cred.nativeId, cred.clientSecret!)).status).toBe(200);
    cognito.destroy();
  });

  it("a rename renames the client", async () => {
    const app = { appName: "Old Name", developer: "dev@example.com" };
    const { ref } = await createCredential(provider, "CLIENT_CREDENTIALS", apisAB(seed), { app });
    await provider.update({
      ...ref,
      app: { ...app, appName: "New/Name" },
      previous: apisAB(seed),
      desired: apisAB(seed),
      changes: none(apisAB(seed)),
      previousAppName: "Old Name",
    });
    expect(fake.cognito.pools.get(seed.poolId)!.clients.get(ref.nativeId)!.ClientName).toBe(
      `credhook-dev@example.com-New_Name@ch.${gatewayMark("aws-test")}.${ref.credentialId}`,
    );
  });

  it("a missing client is a 404", async () => {
    await expect(
      provider.update({
        credentialId: "c",
        credentialType: "CLIENT_CREDENTIALS",
        nativeId: "nosuchclient",
        resources: {},
        app: { appName: "a", developer: "d" },
        previous: [],
        desired: [],
        changes: [],
      }),
    ).rejects.toMatchObject({
      status: 404,
      message: `[gateway aws-test] app client nosuchclient does not exist in user pool ${seed.poolId}`,
    });
  });
});
