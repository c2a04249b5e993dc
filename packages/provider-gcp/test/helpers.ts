/** Test helpers: the gcp provider built by its own factory and pointed at a running API Keys fake. */
import { silentLogger } from "@credhook/core";
import type {
  AppIdentity,
  CredentialType,
  GatewayApi,
  ProviderCredentialRef,
  RevokeOutcome,
} from "@credhook/core/provider";
import { memoryStateStore } from "@credhook/provider-testkit";
import { ANNOTATIONS } from "../src/mapping.js";
import factory, { type GcpApiKeysProvider, type GcpProviderOptions } from "../src/index.js";
import type { ApiKeysFake } from "@credhook/fakes/gcp";

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

/** A provider from the package's factory, as core builds it (gateway `gateway`, default {@link GATEWAY}). */
export async function makeProvider(
  fake: ApiKeysFake,
  overrides: Partial<GcpProviderOptions> = {},
  credentialType: CredentialType = "API_KEY",
  gateway = GATEWAY,
): Promise<GcpApiKeysProvider> {
  return factory.create(fakeOptions(fake, overrides), {
    gateway,
    configPath: `gateways.${gateway}.options`,
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

/**
 * A key someone else made in the project (no credhook annotations), and a
 * probe that it still exists unchanged (live, same etag) — the conformance
 * suite's `createForeign`.
 */
export function foreignKey(
  fake: ApiKeysFake,
  spec: Parameters<ApiKeysFake["createForeignKey"]>[0] = {},
): { nativeId: string; exists: () => Promise<boolean> } {
  const made = fake.createForeignKey(spec);
  return {
    nativeId: made.keyId,
    exists: async () => {
      const now = fake.key(made.keyId);
      return !!now && !now.deleteTime && now.etag === made.etag;
    },
  };
}

/** Conformance `listNativeIds`: keyIds of the live keys. */
export function liveKeyIds(fake: ApiKeysFake) {
  return async () =>
    fake
      .keys()
      .filter((k) => !k.deleteTime)
      .map((k) => k.keyId);
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
  return fake
    .requests()
    .slice(from)
    .map((r) => r.rpc);
}

/** What a failed create reported (core reads these fields). */
interface FailedCreate {
  status?: number;
  partial?: { nativeId: string; resources: Record<string, unknown> };
  outcomeUnknown?: boolean;
}

/**
 * Core's compensation after a failed create, as the orchestrator does it
 * (issue 9): revoke the reported `partial`, then — when the outcome is
 * unknown (or, unset, a 5xx) — find the credential's key by its mark and
 * revoke what is found. Returns what each revoke reported.
 */
export async function compensate(
  provider: GcpApiKeysProvider,
  credentialId: string,
  err: unknown,
  app: AppIdentity,
  apis: GatewayApi[],
): Promise<RevokeOutcome[]> {
  const e = err as FailedCreate;
  const outcomes: RevokeOutcome[] = [];
  const ref = { credentialId, credentialType: "API_KEY" as const, app, resources: {} };
  if (e.partial)
    outcomes.push(
      await provider.revoke({
        ...ref,
        nativeId: e.partial.nativeId,
        resources: e.partial.resources as ProviderCredentialRef["resources"],
      }),
    );
  if (e.outcomeUnknown ?? (e.status ?? 0) >= 500) outcomes.push(...(await sweep(provider, credentialId, app, apis)));
  return outcomes;
}

/** Core's later sweep of an abandoned record: findByCredential, then revoke each key found. */
export async function sweep(
  provider: GcpApiKeysProvider,
  credentialId: string,
  app: AppIdentity,
  apis: GatewayApi[],
): Promise<RevokeOutcome[]> {
  const outcomes: RevokeOutcome[] = [];
  for (const found of await provider.findByCredential({ credentialId, credentialType: "API_KEY", app, apis })) {
    outcomes.push(
      await provider.revoke({ credentialId, credentialType: "API_KEY", nativeId: found.nativeId, resources: {}, app }),
    );
  }
  return outcomes;
}

/** Live keys carrying credhook's credential-id annotation whose keyId is not in `held` (what the portal holds): orphans. */
export function liveOrphans(fake: ApiKeysFake, held: Iterable<string> = []): string[] {
  const keep = new Set(held);
  return fake
    .keys()
    .filter((k) => !k.deleteTime && k.annotations[ANNOTATIONS.credentialId] !== undefined && !keep.has(k.keyId))
    .map((k) => k.keyId);
}

/** Resolves once `check()` is true; fails after `timeoutMs`. */
export async function eventually(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}
