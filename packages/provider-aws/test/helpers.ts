/** Shared test fixtures: SDK clients and providers pointed at the fake, and a seeded fake. */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach } from "vitest";
import { silentLogger } from "@credhook/core";
import type { CredentialType, GatewayApi, Logger, Provider, ProviderCredentialRef } from "@credhook/core/provider";
import { memoryStateStore } from "@credhook/provider-testkit";
import awsProviderFactory, { type AwsProviderOptions } from "../src/index.js";
import { APIGatewayClient } from "@aws-sdk/client-api-gateway";
import { CognitoIdentityProviderClient } from "@aws-sdk/client-cognito-identity-provider";
import { startAwsFake, type AwsFake, type AwsFakeOptions } from "@credhook/fakes/aws";

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

/** A logger that records every line (to prove no secret is logged). */
export function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const make = (bindings: Record<string, unknown>): Logger & { lines: string[] } => {
    const log = (obj: object, msg?: string) => void lines.push(JSON.stringify({ ...bindings, ...obj, msg }));
    return { lines, debug: log, info: log, warn: log, error: log, child: (b) => make({ ...bindings, ...b }) };
  };
  return make({});
}

/** Options pointing a provider at `fake`, for `type`. */
export function fakeOptions(
  fake: AwsFake,
  seed: Seed,
  type: CredentialType,
  extra: Partial<AwsProviderOptions> = {},
): AwsProviderOptions {
  return {
    region: "us-east-1",
    endpoint: fake.url,
    credentials: dummyCredentials,
    ...(type === "CLIENT_CREDENTIALS" ? { userPoolId: seed.poolId, resourceServer: seed.resourceServer } : {}),
    ...extra,
  };
}

/** A provider of `type` against `fake` (gateway name `aws-test` unless given). */
export async function makeProvider(
  fake: AwsFake,
  seed: Seed,
  type: CredentialType,
  extra: Partial<AwsProviderOptions> = {},
  logger: Logger = silentLogger,
  gateway = "aws-test",
): Promise<Provider> {
  return awsProviderFactory.create(fakeOptions(fake, seed, type, extra), {
    gateway,
    configPath: `gateways.${gateway}.options`,
    credentialType: type,
    logger,
    state: memoryStateStore(),
  });
}

/** The app the behaviour tests use. */
export const testApp = { appName: "Orders Dashboard", developer: "dev@example.com", appSlug: "590d83b5c05f" };

/** Creates a credential and returns it with the ref update/revoke take. */
export async function createCredential(
  provider: Provider,
  type: CredentialType,
  apis: GatewayApi[],
  extra: { apiKeyValue?: string; app?: typeof testApp | { appName: string; developer: string } } = {},
) {
  const credentialId = randomUUID();
  const app = extra.app ?? testApp;
  const cred = await provider.create({
    credentialId,
    credentialType: type,
    app,
    apis,
    ...(extra.apiKeyValue ? { apiKeyValue: extra.apiKeyValue } : {}),
  });
  const ref: ProviderCredentialRef = {
    credentialId,
    credentialType: type,
    nativeId: cred.nativeId,
    resources: cred.resources,
    app,
  };
  return { cred, ref };
}

/** Starts a seeded fake before each test of the file and closes it after; read `env.fake` / `env.seed` inside tests. */
export function useSeededFake(options: AwsFakeOptions = {}): { fake: AwsFake; seed: Seed } {
  const env = {} as { fake: AwsFake; seed: Seed };
  beforeEach(async () => {
    Object.assign(env, await seededFake(options));
  });
  afterEach(async () => {
    await env.fake.close();
  });
  return env;
}
