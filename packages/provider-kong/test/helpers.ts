// Shared set-up of the Kong provider tests: a Kong Admin API fake and providers pointed at it through `adminUrl`.
import { afterEach, beforeEach } from "vitest";
import { compensateCreate, createApiKeyRef, freshPerTest } from "@credhook/provider-testkit";
export { typedError } from "@credhook/provider-testkit";
import { silentLogger } from "@credhook/core";
import type { CredhookError } from "@credhook/core/errors";
import type { GatewayApi } from "@credhook/core/provider";
import { startKongFake, type KongFake, type KongFakeOptions } from "@credhook/fakes/kong";
import { createKongProvider, type KongProvider, type KongProviderOptions } from "../src/index.js";

/** The gateway name every test provider uses. */
export const GATEWAY = "kong-test";

/** The app every test uses. */
export const app = { appName: "Orders App", developer: "dev@example.com", appSlug: "590d83b5c05f" };

/** Plans the tests' gateways define. */
export const plans = { gold: { minute: 600, hour: 20000 }, silver: { minute: 60 }, bronze: { second: 1 } };

/** What a test file gets: the current fake, a provider, and a maker of others (fresh for every test). */
export interface KongContext {
  fake: KongFake;
  provider: KongProvider;
  make: (o?: Partial<KongProviderOptions>, gateway?: string) => KongProvider;
}

/** Starts a fake and returns a maker of providers on it. */
export async function setup(fakeOptions: KongFakeOptions = {}): Promise<KongContext> {
  const fake = await startKongFake(fakeOptions);
  const make = (o: Partial<KongProviderOptions> = {}, gateway = GATEWAY) =>
    createKongProvider(
      { adminUrl: fake.url, plans, apiMap: { "orders-api": "orders" }, ...o },
      { gateway, configPath: `gateways.${gateway}.options`, credentialType: "API_KEY", logger: silentLogger },
    );
  return { fake, provider: make(), make };
}

/** Registers hooks that start a fresh fake and provider for every test of the file. */
export function useFake(fakeOptions: KongFakeOptions = {}): KongContext {
  return freshPerTest({ beforeEach, afterEach }, () => setup(fakeOptions));
}

/** Creates an API key for `app` under a fresh credential id and returns its reference with the key. */
export const createRef = (provider: KongProvider, apis: GatewayApi[], apiKeyValue?: string) =>
  createApiKeyRef(provider, app, apis, apiKeyValue);

/**
 * What core does after a failed create: revoke what the error's `partial` reports,
 * then find the credential by its mark and revoke what is found. Returns the outcomes.
 */
export const compensate = (provider: KongProvider, credentialId: string, err: CredhookError, apis: GatewayApi[]) =>
  compensateCreate(provider, app, credentialId, err, apis);

/** The ACL groups and rate-limit plan tags of a consumer in the fake. */
export function accessOf(fake: KongFake, consumerId: string) {
  const groups = fake
    .acls()
    .filter((a) => a.consumer.id === consumerId)
    .map((a) => a.group)
    .sort();
  const rl = fake.plugins().find((p) => p.consumer?.id === consumerId && p.name === "rate-limiting");
  return {
    groups,
    plans: (rl?.tags ?? [])
      .filter((t) => t.startsWith("credhook-plan:"))
      .map((t) => t.slice("credhook-plan:".length))
      .sort(),
    config: rl?.config,
  };
}
