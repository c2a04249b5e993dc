/** Small helpers the provider packages' own tests share. */
import { randomUUID } from "node:crypto";
import type { AppIdentity, CredentialType, GatewayApi, Provider, ProviderCredentialRef } from "@credhook/core/provider";
import { type CredhookError, isCredhookError } from "@credhook/core/errors";
import { SlidingWindowLimiter } from "@credhook/core/provider-kit";

/**
 * Awaits a promise expected to reject with a typed credhook error, and returns that error.
 * @throws Error the promise resolved, or rejected with something that is not a credhook error
 */
export async function typedError(p: Promise<unknown>): Promise<CredhookError> {
  try {
    await p;
  } catch (err) {
    if (!isCredhookError(err)) throw new Error(`expected a typed error, got ${String(err)}`);
    return err;
  }
  throw new Error("expected an error, but the call succeeded");
}

/**
 * Registers `beforeEach`/`afterEach` hooks (vitest's, passed in) that give every test a fresh
 * context from `setup` — a fake and providers on it — and close the fake after the test.
 * The returned object is filled in before each test; a test may replace its fields.
 */
export function freshPerTest<C extends { fake: { close(): Promise<void> } }>(
  hooks: { beforeEach(fn: () => Promise<void>): void; afterEach(fn: () => Promise<void>): void },
  setup: () => Promise<C>,
): C {
  const ctx = {} as C;
  hooks.beforeEach(async () => {
    Object.assign(ctx, await setup());
  });
  hooks.afterEach(async () => {
    await ctx.fake.close();
  });
  return ctx;
}

/**
 * Runs `fn` and counts the slots the sliding-window limiters named `name` (e.g. "CreateApiKey",
 * "Kong Admin API") handed out meanwhile: a test compares it with the requests a fake received,
 * so that "every attempt, retries included, went through the limiter" is counted, not inferred
 * from the fake's wall-clock quota window (where an attempt released on time can arrive late on
 * a busy machine). Wraps `SlidingWindowLimiter.prototype.acquire` while `fn` runs, so no other
 * code of the process should use such limiters meanwhile.
 * @returns what `fn` resolved to, and the count
 */
export async function countLimiterSlots<T>(name: string, fn: () => Promise<T>): Promise<{ result: T; slots: number }> {
  const proto = SlidingWindowLimiter.prototype;
  const original = proto.acquire;
  let slots = 0;
  proto.acquire = function (this: SlidingWindowLimiter, ...args: Parameters<SlidingWindowLimiter["acquire"]>) {
    if (this.name === name) slots++;
    return original.apply(this, args);
  };
  try {
    const result = await fn();
    return { result, slots };
  } finally {
    proto.acquire = original;
  }
}

/**
 * Creates an API key for `app` on `provider` under a fresh credential id (a UUID), as core would,
 * and returns the reference core would record, with the key the provider returned.
 * @param apiKeyValue the value to import; absent, the provider (or its cloud) generates one
 * @throws whatever `provider.create` throws (core's typed errors)
 */
export async function createApiKeyRef(
  provider: Pick<Provider, "create">,
  app: AppIdentity,
  apis: GatewayApi[],
  apiKeyValue?: string,
): Promise<ProviderCredentialRef & { apiKey: string }> {
  const credentialId = randomUUID();
  const cred = await provider.create({
    credentialId,
    credentialType: "API_KEY",
    app,
    apis,
    ...(apiKeyValue ? { apiKeyValue } : {}),
  });
  return {
    credentialId,
    credentialType: "API_KEY",
    nativeId: cred.nativeId,
    resources: cred.resources,
    app,
    apiKey: cred.apiKey!,
  };
}

/**
 * What core does after a create failed: revokes what the error's `partial` reports, then
 * finds the credential by its mark (`findByCredential`) and revokes what is found.
 * @param credentialType the failed create's credential type @default "API_KEY"
 * @returns each revoke's outcome, in order
 * @throws whatever the provider's `revoke` or `findByCredential` throws
 */
export async function compensateCreate<Outcome>(
  provider: Pick<Provider, "findByCredential"> & { revoke(ref: ProviderCredentialRef): Promise<Outcome> },
  app: AppIdentity,
  credentialId: string,
  err: CredhookError,
  apis: GatewayApi[],
  credentialType: CredentialType = "API_KEY",
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const ref = { credentialId, credentialType, app };
  if (err.partial)
    outcomes.push(
      await provider.revoke({
        ...ref,
        nativeId: err.partial.nativeId,
        resources: err.partial.resources as ProviderCredentialRef["resources"],
      }),
    );
  for (const found of (await provider.findByCredential?.({ ...ref, apis })) ?? [])
    outcomes.push(await provider.revoke({ ...ref, nativeId: found.nativeId, resources: {} }));
  return outcomes;
}
