// Shared set-up of the Apigee provider tests: the management API fake, and providers pointed at it
// through the `endpoint` option with a local credential (`static-token`).
import { afterEach, beforeEach } from "vitest";
import { compensateCreate, createApiKeyRef, freshPerTest } from "@credhook/provider-testkit";
export { typedError } from "@credhook/provider-testkit";
import type { CredentialType, GatewayApi } from "@credhook/core/provider";
import type { CredhookError } from "@credhook/core/errors";
import { silentLogger } from "@credhook/core";
import { startApigeeFake, type ApigeeFake, type ApigeeFakeOptions } from "@credhook/fakes/apigee";
import { createApigeeProvider, type ApigeeProvider, type ApigeeProviderOptions } from "../src/index.js";

/** The gateway name every test provider uses. */
export const GATEWAY = "apigee-test";

/** The app every test uses. */
export const app = { appName: "Orders App", developer: "dev@example.com", appSlug: "590d83b5c05f" };

/** What a test file gets (fresh for every test with {@link useFake}). */
export interface ApigeeContext {
  fake: ApigeeFake;
  provider: ApigeeProvider;
  make: (o?: Partial<ApigeeProviderOptions>, gateway?: string, type?: CredentialType) => ApigeeProvider;
}

/** Starts a fake (API products orders-gold, orders-silver, echo) and a maker of providers on it. */
export async function setup(fakeOptions: ApigeeFakeOptions = {}): Promise<ApigeeContext> {
  const fake = await startApigeeFake({ apiProducts: ["orders-gold", "orders-silver", "echo"], ...fakeOptions });
  const make = (o: Partial<ApigeeProviderOptions> = {}, gateway = GATEWAY, type: CredentialType = "API_KEY") =>
    createApigeeProvider(
      {
        organization: fake.organization,
        endpoint: fake.url,
        credentials: { type: "static-token", token: "fake" },
        productMap: { gold: "orders-gold", silver: "orders-silver" },
        ...o,
      },
      { gateway, configPath: `gateways.${gateway}.options`, credentialType: type, logger: silentLogger },
    );
  return { fake, provider: make(), make };
}

/** Registers hooks that start a fresh fake and provider for every test of the file. */
export function useFake(fakeOptions: ApigeeFakeOptions = {}): ApigeeContext {
  return freshPerTest({ beforeEach, afterEach }, () => setup(fakeOptions));
}

/** Creates an API key for `app` under a fresh credential id and returns its reference with the key. */
export const createRef = (provider: ApigeeProvider, apis: GatewayApi[], apiKeyValue?: string) =>
  createApiKeyRef(provider, app, apis, apiKeyValue);

/** What core does after a failed create: revoke the error's `partial`, then what the search by the mark finds. */
export const compensate = (provider: ApigeeProvider, credentialId: string, err: CredhookError, apis: GatewayApi[]) =>
  compensateCreate(provider, app, credentialId, err, apis);

/** Consumer keys that hold at least one API product (what grants access), across the organisation. */
export function liveKeys(fake: ApigeeFake): string[] {
  return fake
    .apps()
    .flatMap((a) =>
      a.credentials.filter((c) => c.status === "approved" && c.apiProducts.length > 0).map((c) => c.consumerKey),
    );
}
