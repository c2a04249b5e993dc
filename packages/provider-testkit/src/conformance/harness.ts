/**
 * What every topic of the conformance suite builds on: the suite of one credential type
 * ({@link TypeSuite}: registering a test in its group, a fresh provider, a credential made
 * through it) and the checks that fail or skip a test with a message naming the rule.
 */
import { randomUUID } from "node:crypto";
import { type CredhookError, isCredhookError } from "@credhook/core/errors";
import type {
  AppIdentity,
  CredentialType,
  GatewayApi,
  OwnedResource,
  Provider,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderUpdateInput,
  RevokeOutcome,
} from "@credhook/core/provider";
import type { ConformanceGroup, ConformanceTestContext, ProviderConformanceOptions } from "./options.js";

/** The suite of one credential type: what each topic file registers its tests with. */
export interface TypeSuite {
  /** The credential type under test. */
  readonly credentialType: CredentialType;
  /** The harness's options, as given to `providerConformance`. */
  readonly options: ProviderConformanceOptions;
  /** Registers one test of `group` as `<prefix> [<type>] <name>`, unless the options leave the group out. */
  test(group: ConformanceGroup, name: string, fn: (ctx: ConformanceTestContext) => Promise<void>): void;
  /**
   * A fresh provider for this test. A credential type the provider does not declare is skipped when
   * the suite chose it (every type, by default) and fails when `options.credentialTypes` named it:
   * the option narrows, never widens.
   */
  make(ctx: ConformanceTestContext): Promise<Provider>;
  /** Creates a credential of the suite's app `suffix` over `options.apis` under a fresh credential id; returns it and its reference. */
  created(provider: Provider, suffix: string): Promise<{ cred: ProviderCredential; ref: ProviderCredentialRef }>;
  /**
   * What `provider.findByCredential` returns for `ref`'s app over the suite's APIs, searching by
   * `credentialId` (default: `ref`'s own). Call only where the provider has `findByCredential`.
   */
  findFor(provider: Provider, ref: ProviderCredentialRef, credentialId?: string): Promise<OwnedResource[]>;
}

/** One test of the suite: its group, its name (after `<prefix> [<type>] `), and the check it runs. */
export interface ConformanceCase {
  group: ConformanceGroup;
  name: string;
  /** Registered for this credential type only (a check that means nothing for the others). */
  only?: CredentialType;
  /** The test's body, on the suite of one credential type. */
  check(s: TypeSuite, ctx: ConformanceTestContext): Promise<void>;
}

/** The suite's app `suffix`: its name, developer and slug (at most 24 characters) carry the suffix. */
export function app(suffix: string): AppIdentity {
  return {
    appName: `Conformance App ${suffix}`,
    developer: "conformance@example.com",
    appSlug: `conf${suffix}`.slice(0, 24),
  };
}

/**
 * The suite of `credentialType`.
 * @param test registers one named test (vitest's `it`)
 * @param explicitTypes true when `options.credentialTypes` named the types (an undeclared one then fails instead of skipping)
 */
export function typeSuite(
  test: (name: string, fn: (ctx: ConformanceTestContext) => Promise<void>) => void,
  factory: (credentialType: CredentialType) => Provider | Promise<Provider>,
  options: ProviderConformanceOptions,
  credentialType: CredentialType,
  groups: ReadonlySet<ConformanceGroup>,
  explicitTypes: boolean,
): TypeSuite {
  const prefix = options.name ?? "provider conformance";
  return {
    credentialType,
    options,
    test(group, name, fn) {
      if (groups.has(group)) test(`${prefix} [${credentialType}] ${name}`, fn);
    },
    async make(ctx) {
      const provider = await factory(credentialType);
      const declared = provider.capabilities.credentialTypes;
      if (declared.includes(credentialType)) return provider;
      await provider.close?.();
      if (explicitTypes)
        fail(
          `options.credentialTypes names ${credentialType}, but capabilities.credentialTypes is ${JSON.stringify(declared)}`,
        );
      skip(
        ctx,
        `the provider does not declare ${credentialType} (capabilities.credentialTypes: ${JSON.stringify(declared)})`,
      );
    },
    async created(provider, suffix) {
      const credentialId = randomUUID();
      const cred = await provider.create({ credentialId, credentialType, app: app(suffix), apis: options.apis });
      const ref: ProviderCredentialRef = {
        credentialId,
        credentialType,
        nativeId: cred.nativeId,
        resources: cred.resources,
        app: app(suffix),
      };
      return { cred, ref };
    },
    findFor(provider, ref, credentialId = ref.credentialId) {
      return provider.findByCredential!({ credentialId, credentialType, app: ref.app, apis: options.apis });
    },
  };
}

/** The update of `ref` from `previous` to `desired` with `changes`. */
export function updateInput(
  ref: ProviderCredentialRef,
  previous: GatewayApi[],
  desired: GatewayApi[],
  changes: ProviderUpdateInput["changes"],
): ProviderUpdateInput {
  return { ...ref, previous, desired, changes };
}

/** The changes of an update that changes nothing: every API of `apis` and each of its plans `NONE`. */
export function unchanged(apis: GatewayApi[]): ProviderUpdateInput["changes"] {
  return apis.map((a) => ({
    id: a.id,
    action: "NONE" as const,
    usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
  }));
}

/** What {@link Provider.revoke} reported, `revoked` when it returned nothing. */
export async function revokeOutcome(provider: Provider, ref: ProviderCredentialRef): Promise<RevokeOutcome> {
  return (await provider.revoke(ref)) ?? "revoked";
}

/** Every usage plan of `apis`, once each, sorted. */
export function plansOf(apis: GatewayApi[]): string[] {
  return [...new Set(apis.flatMap((a) => a.usagePlans))].sort();
}

/**
 * Ends the test as skipped with `reason`: a capability (or a hook of the
 * options) the provider lacks is reported as skipped, never as passed.
 */
export function skip(ctx: ConformanceTestContext, reason: string): never {
  ctx.skip(reason);
  // vitest's skip throws; a runner whose skip returns must not see the test pass
  throw new Error(`conformance: skipped: ${reason}`);
}

/** Fails the test: throws an Error whose message starts with `conformance: `. */
export function fail(message: string): never {
  throw new Error(`conformance: ${message}`);
}

/** Fails unless `actual` and `expected` are the same JSON; the message names `what`. */
export function expectEqual(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

/** The typed credhook error `promise` rejects with; fails when it resolves or rejects with anything else. */
export async function rejection(promise: Promise<unknown>, what: string): Promise<CredhookError> {
  try {
    await promise;
  } catch (err) {
    if (!isCredhookError(err)) fail(`${what}: expected a typed credhook error, got ${String(err)}`);
    return err;
  }
  fail(`${what}: expected an error, but it succeeded`);
}

/** Fails unless `promise` rejects with a typed credhook error of HTTP status `status`. */
export async function expectTyped(promise: Promise<unknown>, status: number, what: string): Promise<void> {
  const err = await rejection(promise, `${what} (status ${status})`);
  if (err.status !== status) fail(`${what}: expected status ${status}, got ${err.status} (${err.message})`);
}
