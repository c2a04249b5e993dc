/** The Cognito fake, driven by the unmodified SDK: client flows, reset-on-update, scopes, pagination, token endpoint, faults. */
import {
  type CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  DeleteUserPoolClientCommand,
  DescribeResourceServerCommand,
  DescribeUserPoolClientCommand,
  ListUserPoolClientsCommand,
  UpdateResourceServerCommand,
  UpdateUserPoolClientCommand,
} from "@aws-sdk/client-cognito-identity-provider";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AwsFake } from "@credhook/fakes/aws";
import { seededFake, sdkClients, type Seed } from "./helpers.js";

let fake: AwsFake;
let seed: Seed;
let cognito: CognitoIdentityProviderClient;

beforeEach(async () => {
  ({ fake, seed } = await seededFake({ enforceQuotas: false }));
  ({ cognito } = sdkClients(fake));
});
afterEach(async () => {
  cognito.destroy();
  await fake.close();
});

function m2mClient(scopes: string[], extra: Record<string, unknown> = {}) {
  return new CreateUserPoolClientCommand({
    UserPoolId: seed.poolId,
    ClientName: "credhook-dev@example.com-app",
    GenerateSecret: true,
    AllowedOAuthFlows: ["client_credentials"],
    AllowedOAuthScopes: scopes,
    AllowedOAuthFlowsUserPoolClient: true,
    ...extra,
  });
}

async function token(clientId: string, secret: string, scope?: string) {
  const res = await fetch(fake.tokenEndpoint, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ grant_type: "client_credentials", ...(scope ? { scope } : {}) }).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("Cognito fake: app clients", () => {
  it("creates a client_credentials client with a secret that Describe reads back", async () => {
    const scope = `${seed.resourceServer}/${seed.apiA}`;
    const { UserPoolClient: c } = await cognito.send(m2mClient([scope]));
    expect(c?.ClientId).toMatch(/^[a-z0-9]{26}$/);
    expect(c?.ClientSecret?.length).toBeGreaterThanOrEqual(40);
    const { UserPoolClient: d } = await cognito.send(
      new DescribeUserPoolClientCommand({ UserPoolId: seed.poolId, ClientId: c!.ClientId }),
    );
    expect(d).toMatchObject({
      ClientSecret: c!.ClientSecret,
      AllowedOAuthFlows: ["client_credentials"],
      AllowedOAuthScopes: [scope],
      AllowedOAuthFlowsUserPoolClient: true,
    });
    expect(d?.CreationDate).toBeInstanceOf(Date);
  });

  it("refuses a scope missing from the resource server (ScopeDoesNotExistException)", async () => {
    await expect(cognito.send(m2mClient([`${seed.resourceServer}/nope`]))).rejects.toMatchObject({
      name: "ScopeDoesNotExistException",
      $metadata: { httpStatusCode: 400 },
    });
  });

  it("requires client_credentials to be the only flow and the client to have a secret", async () => {
    const scope = `${seed.resourceServer}/${seed.apiA}`;
    await expect(
      cognito.send(m2mClient([scope], { AllowedOAuthFlows: ["client_credentials", "code"] })),
    ).rejects.toMatchObject({ name: "InvalidOAuthFlowException" });
    await expect(cognito.send(m2mClient([scope], { GenerateSecret: false }))).rejects.toMatchObject({
      name: "InvalidOAuthFlowException",
    });
  });

  it("refuses a client name outside [\\w\\s+=,.@-]", async () => {
    await expect(
      cognito.send(m2mClient([], { ClientName: "a/b", AllowedOAuthFlowsUserPoolClient: false, AllowedOAuthFlows: [] })),
    ).rejects.toMatchObject({
      name: "InvalidParameterException",
    });
  });

  it("UpdateUserPoolClient resets every omitted field to its default", async () => {
    const scope = `${seed.resourceServer}/${seed.apiA}`;
    const { UserPoolClient: c } = await cognito.send(
      m2mClient([scope], { AccessTokenValidity: 5, TokenValidityUnits: { AccessToken: "minutes" } }),
    );
    const { UserPoolClient: u } = await cognito.send(
      new UpdateUserPoolClientCommand({ UserPoolId: seed.poolId, ClientId: c!.ClientId, ClientName: "renamed" }),
    );
    expect(u?.ClientName).toBe("renamed");
    expect(u?.AllowedOAuthScopes).toBeUndefined();
    expect(u?.AllowedOAuthFlows).toBeUndefined();
    expect(u?.AllowedOAuthFlowsUserPoolClient).toBe(false);
    expect(u?.AccessTokenValidity).toBe(60);
    expect(u?.ClientSecret).toBe(c?.ClientSecret);
  });

  it("deletes a client; Describe and Delete then answer ResourceNotFoundException", async () => {
    const { UserPoolClient: c } = await cognito.send(m2mClient([`${seed.resourceServer}/${seed.apiA}`]));
    await cognito.send(new DeleteUserPoolClientCommand({ UserPoolId: seed.poolId, ClientId: c!.ClientId }));
    await expect(
      cognito.send(new DescribeUserPoolClientCommand({ UserPoolId: seed.poolId, ClientId: c!.ClientId })),
    ).rejects.toMatchObject({ name: "ResourceNotFoundException" });
    await expect(
      cognito.send(new DeleteUserPoolClientCommand({ UserPoolId: seed.poolId, ClientId: c!.ClientId })),
    ).rejects.toMatchObject({ name: "ResourceNotFoundException" });
  });

  it("paginates ListUserPoolClients with MaxResults and NextToken", async () => {
    for (let i = 0; i < 7; i++)
      await cognito.send(
        m2mClient([], {
          ClientName: `c${i}`,
          AllowedOAuthFlowsUserPoolClient: false,
          AllowedOAuthFlows: [],
          GenerateSecret: false,
        }),
      );
    const seen: string[] = [];
    let next: string | undefined;
    let pages = 0;
    do {
      const page = await cognito.send(
        new ListUserPoolClientsCommand({
          UserPoolId: seed.poolId,
          MaxResults: 3,
          ...(next ? { NextToken: next } : {}),
        }),
      );
      seen.push(...page.UserPoolClients!.map((c) => c.ClientId!));
      next = page.NextToken;
      pages++;
    } while (next);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(7);
  });
});

describe("Cognito fake: resource servers", () => {
  it("UpdateResourceServer replaces the whole scope list", async () => {
    await cognito.send(
      new UpdateResourceServerCommand({
        UserPoolId: seed.poolId,
        Identifier: seed.resourceServer,
        Name: "api",
        Scopes: [{ ScopeName: "only", ScopeDescription: "only" }],
      }),
    );
    const { ResourceServer } = await cognito.send(
      new DescribeResourceServerCommand({ UserPoolId: seed.poolId, Identifier: seed.resourceServer }),
    );
    expect(ResourceServer?.Scopes).toEqual([{ ScopeName: "only", ScopeDescription: "only" }]);
  });
});

describe("Cognito fake: token endpoint", () => {
  it("issues a Bearer token with the client's scopes for client_credentials", async () => {
    fake.cognito.createResourceServer(seed.poolId, seed.resourceServer, [seed.apiA, seed.apiB]);
    const scopes = [`${seed.resourceServer}/${seed.apiA}`, `${seed.resourceServer}/${seed.apiB}`];
    const { UserPoolClient: c } = await cognito.send(m2mClient(scopes));
    const all = await token(c!.ClientId!, c!.ClientSecret!);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(fake.cognito.verifyAccessToken(String(all.body.access_token))).toMatchObject({
      client_id: c!.ClientId,
      scope: scopes.join(" "),
      token_use: "access",
    });
    const one = await token(c!.ClientId!, c!.ClientSecret!, scopes[1]);
    expect(fake.cognito.verifyAccessToken(String(one.body.access_token))?.scope).toBe(scopes[1]);
  });

  it("answers invalid_client for a wrong secret and invalid_scope for a scope not granted", async () => {
    const { UserPoolClient: c } = await cognito.send(m2mClient([`${seed.resourceServer}/${seed.apiA}`]));
    expect(await token(c!.ClientId!, "wrong")).toEqual({ status: 400, body: { error: "invalid_client" } });
    expect(await token(c!.ClientId!, c!.ClientSecret!, `${seed.resourceServer}/other`)).toEqual({
      status: 400,
      body: { error: "invalid_scope" },
    });
  });
});

describe("Cognito fake: faults and quotas", () => {
  it("injects TooManyRequestsException with Retry-After", async () => {
    fake.faults.throttle({ service: "cognito", operation: "DescribeUserPoolClient", retryAfterS: 3 });
    const err = await cognito
      .send(new DescribeUserPoolClientCommand({ UserPoolId: seed.poolId, ClientId: "x" }))
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "TooManyRequestsException" });
    expect((err as { $response?: { headers: Record<string, string> } }).$response?.headers["retry-after"]).toBe("3");
  });

  it("enforces 5 rps per operation and pool", async () => {
    const strict = await seededFake();
    const { cognito: c } = sdkClients(strict.fake);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        c.send(new DescribeResourceServerCommand({ UserPoolId: seed.poolId, Identifier: seed.resourceServer })),
      ),
    );
    const refused = results.filter((r) => r.status === "rejected");
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused)
      expect((r as PromiseRejectedResult).reason).toMatchObject({ name: "TooManyRequestsException" });
    c.destroy();
    await strict.fake.close();
  });
});
