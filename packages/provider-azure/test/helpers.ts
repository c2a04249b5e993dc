// Shared set-up of the provider tests: an APIM fake and a provider pointed at it through the `endpoint` option.
import { afterEach, beforeEach } from "vitest";
import { randomUUID } from "node:crypto";
import { isCredhookError, silentLogger, type CredhookError, type GatewayApi, type ProviderCredentialRef } from "@credhook/core";
import { createAzureProvider, type AzureApimProvider, type AzureProviderOptions } from "../src/index.js";
import { startApimFake, type ApimFake, type ApimFakeOptions } from "../src/fake/index.js";

/** The gateway name every test provider uses. */
export const GATEWAY = "azure-test";

/** The app every test uses. */
export const app = { appName: "Orders App", developer: "dev@example.com", appSlug: "590d83b5c05f" };

/** Starts a fake (products gold, silver, bronze; APIs orders, echo-api) and a provider using it. */
export async function setup(fakeOptions: ApimFakeOptions = {}, providerOptions: Partial<AzureProviderOptions> = {}): Promise<{ fake: ApimFake; provider: AzureApimProvider; make: (o?: Partial<AzureProviderOptions>) => AzureApimProvider }> {
  const fake = await startApimFake({ products: ["gold", "silver", "bronze"], apis: ["orders", "echo-api"], ...fakeOptions });
  const make = (o: Partial<AzureProviderOptions> = {}) =>
    createAzureProvider(
      {
        subscriptionId: fake.subscriptionId,
        resourceGroup: fake.resourceGroup,
        serviceName: fake.serviceName,
        endpoint: fake.url,
        credential: { type: "static-token", token: "fake" },
        ...providerOptions,
        ...o,
      },
      { gateway: GATEWAY, configPath: `gateways.${GATEWAY}.options`, credentialType: "API_KEY", logger: silentLogger },
    );
  return { fake, provider: make(), make };
}

/** Creates a credential for `apis` and returns its reference with the returned key. */
export async function createRef(provider: AzureApimProvider, apis: GatewayApi[], apiKeyValue?: string): Promise<ProviderCredentialRef & { apiKey: string }> {
  const credentialId = randomUUID();
  const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis, ...(apiKeyValue ? { apiKeyValue } : {}) });
  return { credentialId, credentialType: "API_KEY", nativeId: cred.nativeId, resources: cred.resources, app, apiKey: cred.apiKey! };
}

/** The subscriptions of a credential in the fake. */
export function subsOf(fake: ApimFake, nativeId: string) {
  return fake.listSubscriptions().filter((s) => s.sid.startsWith(`${nativeId}-`));
}

/** Awaits a promise expected to reject with a typed credhook error, and returns it. */
export async function typedError(p: Promise<unknown>): Promise<CredhookError> {
  try {
    await p;
  } catch (err) {
    if (!isCredhookError(err)) throw new Error(`expected a typed error, got ${String(err)}`);
    return err;
  }
  throw new Error("expected an error, but the call succeeded");
}

/** `changes` marking every API/plan of `apis` NONE. */
export function noneChanges(apis: GatewayApi[]) {
  return apis.map((a) => ({ id: a.id, action: "NONE" as const, usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })) }));
}

/** What {@link useFake} hands a test file: the current fake and provider (fresh for every test). */
export interface FakeContext {
  fake: ApimFake;
  provider: AzureApimProvider;
  make: (o?: Partial<AzureProviderOptions>) => AzureApimProvider;
  /** Replaces the fake (and provider) for the rest of the test, e.g. with other options. */
  restart(fakeOptions?: ApimFakeOptions, providerOptions?: Partial<AzureProviderOptions>): Promise<void>;
}

/** Registers beforeEach/afterEach hooks that start a fresh fake and provider for every test of the file. */
export function useFake(fakeOptions: ApimFakeOptions = {}, providerOptions: Partial<AzureProviderOptions> = {}): FakeContext {
  const ctx = {} as FakeContext;
  ctx.restart = async (f = fakeOptions, p = providerOptions) => {
    await ctx.fake?.close();
    Object.assign(ctx, await setup(f, p));
  };
  beforeEach(async () => {
    Object.assign(ctx, await setup(fakeOptions, providerOptions));
  });
  afterEach(async () => {
    await ctx.fake.close();
  });
  return ctx;
}
