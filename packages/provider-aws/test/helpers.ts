/** Shared test fixtures: SDK clients pointed at the fake, and a seeded fake. */
import { APIGatewayClient } from "@aws-sdk/client-api-gateway";
import { CognitoIdentityProviderClient } from "@aws-sdk/client-cognito-identity-provider";
import { startAwsFake, type AwsFake, type AwsFakeOptions } from "../src/fake/index.js";

/** Dummy static credentials (the fake checks that requests are signed, not the signature). */
export const dummyCredentials = { accessKeyId: "AKIDFAKE", secretAccessKey: "fake-secret" };

/** Unmodified SDK clients pointed at `fake`; `maxAttempts: 1` so the fake's answers are seen as they are. */
export function sdkClients(fake: AwsFake, maxAttempts = 1) {
  const common = { endpoint: fake.url, region: "us-east-1", credentials: dummyCredentials, maxAttempts };
  return { apigw: new APIGatewayClient(common), cognito: new CognitoIdentityProviderClient(common) };
}

/** Ids of the fixtures {@link seededFake} creates. */
export interface Seed {
  apiA: string;
  apiB: string;
  apiC: string;
  planA: string;
  planB: string;
  planC: string;
  /** A plan on the same stage as planA (a key cannot be in both). */
  planA2: string;
  poolId: string;
  resourceServer: string;
}

/** Starts a fake with two APIs in two plans, a third plan (apiC), a user pool and a resource server. */
export async function seededFake(options: AwsFakeOptions = {}): Promise<{ fake: AwsFake; seed: Seed }> {
  const fake = await startAwsFake(options);
  const seed: Seed = {
    apiA: "a1b2c3d4e5",
    apiB: "f6g7h8i9j0",
    apiC: "k1l2m3n4o5",
    planA: "pl4naa",
    planB: "pl4nbb",
    planC: "pl4ncc",
    planA2: "pl4na2",
    poolId: "us-east-1_TestPool1",
    resourceServer: "https://api.example.com",
  };
  fake.apiGateway.addUsagePlan({ id: seed.planA, name: "Gold A", apiStages: [{ apiId: seed.apiA, stage: "prod" }] });
  fake.apiGateway.addUsagePlan({ id: seed.planB, name: "Gold B", apiStages: [{ apiId: seed.apiB, stage: "prod" }] });
  fake.apiGateway.addUsagePlan({ id: seed.planC, name: "Silver C", apiStages: [{ apiId: seed.apiC, stage: "prod" }] });
  fake.apiGateway.addUsagePlan({ id: seed.planA2, name: "Silver A", apiStages: [{ apiId: seed.apiA, stage: "prod" }] });
  fake.cognito.createUserPool({ id: seed.poolId, domain: "credhook-test" });
  fake.cognito.createResourceServer(seed.poolId, seed.resourceServer, [seed.apiA]);
  return { fake, seed };
}
