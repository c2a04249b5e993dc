// Shared set-up of the provider tests: an APIM fake and a provider pointed at it through the `endpoint` option.
import { afterEach, beforeEach } from "vitest";
import { compensateCreate, createApiKeyRef } from "@credhook/provider-testkit";
import { isCredhookError, type CredhookError } from "@credhook/core/errors";
import { memoryStateStore } from "@credhook/core/provider-kit";
import { silentLogger } from "@credhook/core";
import type { GatewayApi, ProviderStateStore } from "@credhook/core/provider";
import { createAzureProvider, type AzureApimProvider, type AzureProviderOptions } from "../src/index.js";
import { startApimFake, type ApimFake, type ApimFakeOptions } from "@credhook/fakes/azure";

/** The gateway name every test provider uses. */
export const GATEWAY = "azure-test";

/** The app every test uses. */
export const app = { appName: "Orders App", developer: "dev@example.com", appSlug: "590d83b5c05f" };

/** Starts a fake (products gold, silver, bronze; APIs orders, echo-api) and a provider using it. */
export async function setup(
  fakeOptions: ApimFakeOptions = {},
  providerOptions: Partial<AzureProviderOptions> = {},
): Promise<{
  fake: ApimFake;
  provider: AzureApimProvider;
  make: (o?: Partial<AzureProviderOptions>, gateway?: string) => AzureApimProvider;
  state: ProviderStateStore;
}> {
  const fake = await startApimFake({
    products: ["gold", "silver", "bronze"],
    apis: ["orders", "echo-api"],
    ...fakeOptions,
  });
  // One provider state per gateway name, shared by every provider of that gateway (as core's store would).
  const states = new Map<string, ProviderStateStore>();
  const stateOf = (gateway: string) => states.get(gateway) ?? states.set(gateway, memoryStateStore()).get(gateway)!;
  const make = (o: Partial<AzureProviderOptions> = {}, gateway = GATEWAY) =>
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
      {
        gateway,
        configPath: `gateways.${gateway}.options`,
        credentialType: "API_KEY",
        logger: silentLogger,
        state: stateOf(gateway),
      },
    );
  return { fake, provider: make(), make, state: stateOf(GATEWAY) };
}

/** Creates an API key for `app` under a fresh credential id and returns its reference with the key. */
export const createRef = (provider: AzureApimProvider, apis: GatewayApi[], apiKeyValue?: string) =>
  createApiKeyRef(provider, app, apis, apiKeyValue);

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
  return apis.map((a) => ({
    id: a.id,
    action: "NONE" as const,
    usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
  }));
}

/** What {@link useFake} hands a test file: the current fake and provider (fresh for every test). */
export interface FakeContext {
  fake: ApimFake;
  provider: AzureApimProvider;
  make: (o?: Partial<AzureProviderOptions>, gateway?: string) => AzureApimProvider;
  /** The provider state of the default gateway (adoption records). */
  state: ProviderStateStore;
  /** Replaces the fake (and provider) for the rest of the test, e.g. with other options. */
  restart(fakeOptions?: ApimFakeOptions, providerOptions?: Partial<AzureProviderOptions>): Promise<void>;
}

/** Registers beforeEach/afterEach hooks that start a fresh fake and provider for every test of the file. */
export function useFake(
  fakeOptions: ApimFakeOptions = {},
  providerOptions: Partial<AzureProviderOptions> = {},
): FakeContext {
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

/**
 * What core does after a failed create (issue 9): revoke what the error's `partial`
 * reports, then — the outcome may be unknown — find the credential by its mark and
 * revoke what is found. Returns the revoke outcomes, in order.
 */
export const compensate = (provider: AzureApimProvider, credentialId: string, err: CredhookError, apis: GatewayApi[]) =>
  compensateCreate(provider, app, credentialId, err, apis);

/** Subscriptions that still grant access (not cancelled/expired/rejected). */
export function liveSubs(fake: ApimFake) {
  return fake.listSubscriptions().filter((s) => ["active", "suspended", "submitted"].includes(s.state));
}
