/** Test helpers: the gcp provider built by its own factory and pointed at a running API Keys fake. */
import { silentLogger, type CredentialType, type ProviderCredentialRef } from "@credhook/core";
import { memoryStateStore } from "@credhook/provider-testkit";
import factory, { ANNOTATIONS, type GcpApiKeysProvider, type GcpProviderOptions } from "../src/index.js";
import type { ApiKeysFake } from "../src/fake/index.js";

/** Gateway name the tests use. */
export const GATEWAY = "gcp-test";

/** Options reaching `fake` the way a YAML config does (endpoint URL + static token), fast polls. */
export function fakeOptions(fake: ApiKeysFake, overrides: Partial<GcpProviderOptions> = {}): GcpProviderOptions {
  return {
    projectId: fake.projectId,
    endpoint: fake.url,
    credentials: { type: "static-token" },
    serviceTemplate: "{apiId}.apigateway.fake-project.cloud.goog",
    pollInitialDelayMs: 10,
    retry: { initialDelayMs: 5, maxDelayMs: 20 },
    ...overrides,
  };
}

/** A provider from the package's factory, as core builds it. */
export async function makeProvider(fake: ApiKeysFake, overrides: Partial<GcpProviderOptions> = {}, credentialType: CredentialType = "API_KEY"): Promise<GcpApiKeysProvider> {
  return factory.create(fakeOptions(fake, overrides), {
    gateway: GATEWAY,
    configPath: `gateways.${GATEWAY}.options`,
    credentialType,
    logger: silentLogger,
    state: memoryStateStore(),
  }) as Promise<GcpApiKeysProvider>;
}

/** The usage plans a key records in its annotation, flattened and sorted. */
export function recordedPlans(fake: ApiKeysFake, keyId: string): string[] {
  const raw = fake.key(keyId)?.annotations[ANNOTATIONS.usagePlans];
  const rec = raw ? (JSON.parse(raw) as Record<string, string[]>) : {};
  return [...new Set(Object.values(rec).flat())].sort();
}

/** Conformance `inspect`: a key is live when it exists and is not soft-deleted. */
export function inspector(fake: ApiKeysFake) {
  return async (ref: ProviderCredentialRef) => {
    const key = fake.key(ref.nativeId);
    return { live: !!key && !key.deleteTime, usagePlans: key ? recordedPlans(fake, ref.nativeId) : [] };
  };
}

/** Conformance `listNativeIds`: keyIds of the live keys. */
export function liveKeyIds(fake: ApiKeysFake) {
  return async () => fake.keys().filter((k) => !k.deleteTime).map((k) => k.keyId);
}

/** The rejection of `p` (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

/** RPC names the fake received since `from` (an index into its request log). */
export function rpcsSince(fake: ApiKeysFake, from: number): string[] {
  return fake.requests().slice(from).map((r) => r.rpc);
}
