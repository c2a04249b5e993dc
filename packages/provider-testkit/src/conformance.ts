/**
 * The provider conformance suite. Every provider package runs it against its
 * cloud's local fake (or, for the embedded provider, for real):
 *
 * create → update (ADDED / REMOVED / NONE) → revoke → revoke again, read-back,
 * health, and the error contract of the interface (typed errors only, no
 * secret in stored resources, NotFound after revoke, InvalidReference with
 * nothing left behind).
 *
 * The failure rules of `core/src/provider.ts` ("Never an orphan"): a create that
 * fails after an accepted write reports `partial` and deletes nothing, a lost
 * answer is `outcomeUnknown`, an update adds before it removes — each proven by
 * a fault the harness arms in the fake (`options.faults`); and paging: what
 * lies beyond a list's first page is found (`options.paging`).
 *
 * The credential types tested are the ones the provider declares
 * (`capabilities.credentialTypes`); `options.credentialTypes` narrows them and
 * fails a type the provider does not declare.
 *
 * The suite is composed of groups ({@link CONFORMANCE_GROUPS}); a provider may
 * run some of them (`options.groups`). A capability the provider lacks
 * (importing API key values, reading secrets back, a credential type) or a
 * hook the options do not give (createForeign, otherGateway, unknownPlan, a
 * fault, paging) is reported as a skipped test with the reason, never as a
 * passed one.
 */
import { randomUUID } from "node:crypto";
import { type CredhookError, isCredhookError } from "@credhook/core/errors";
import {
  CREDENTIAL_TYPES,
  type CredentialSearch,
  type CredentialType,
  type GatewayApi,
  type OwnedResource,
  type Provider,
  type ProviderCredentialRef,
  type ProviderUpdateInput,
  type RevokeOutcome,
} from "@credhook/core/provider";
import { compensateCreate } from "./test-helpers.js";

/** What the suite needs of a test's context: vitest's `TestContext.skip(note)` (reports the test as skipped, with the note). */
export interface ConformanceTestContext {
  /** Ends the test as skipped; `note` says why (vitest shows it). */
  skip(note?: string): void;
}

/** vitest's `it`/`test` (or any function of that shape): registers one test whose body receives the test context. */
export type ConformanceTest = (name: string, fn: (ctx: ConformanceTestContext) => Promise<void>) => void;

/**
 * The groups of the suite, each a set of behaviours a provider can be tested
 * for on its own (`options.groups`):
 * - `basics`: declares its credential type; `health()` resolves;
 * - `create`: a native id and a secret, no secret in resources; importing the caller's API key value;
 * - `read-back`: `readSecret` returns the live secret, 404 after revoke;
 * - `update`: ADDED / REMOVED / NONE usage plans; a renamed app;
 * - `revoke`: revoke and revoke again, `revoked` / `gone` outcomes, update after revoke is 404; `setEnabled` off and on
 *   for the types `capabilities.disables` names;
 * - `find`: `findByCredential` finds what create made by the credential id alone;
 * - `ownership`: another credential's id, a resource made outside credhook, another gateway — never touched;
 * - `invalid-reference`: an unknown usage plan is 422 on create and update, nothing left behind;
 * - `failure-rules`: with faults armed in the fake (`options.faults`), a create failing after a write
 *   reports `partial` and deletes nothing, a lost answer is `outcomeUnknown`, an update adds before it removes;
 * - `paging`: with the fake's lists paged small (`options.paging`), `findByCredential` and `listOwned`
 *   find what lies beyond the first page.
 */
export const CONFORMANCE_GROUPS = [
  "basics",
  "create",
  "read-back",
  "update",
  "revoke",
  "find",
  "ownership",
  "invalid-reference",
  "failure-rules",
  "paging",
] as const;

/** One of {@link CONFORMANCE_GROUPS}. */
export type ConformanceGroup = (typeof CONFORMANCE_GROUPS)[number];

/** What `inspect` reports of a credential in the (fake) cloud. */
export interface InspectedCredential {
  /** The native credential exists and is usable (not deleted, not disabled). */
  live: boolean;
  /** Usage plan ids (or products/targets) the credential is attached to now. */
  usagePlans?: string[];
}

/**
 * Arms one fault in the (fake) cloud for the next matching call of a provider
 * issuing `credentialType` (each fake has its own fault API: `inject`,
 * `faults.deny`, `control.fail`…). The suite calls it right before the call it targets.
 * Returns a reason (a string) instead when the fault cannot happen for that
 * credential type (e.g. a create that is one write has no "after the first
 * write"): the test is then skipped with that reason.
 */
export type ArmFault = (credentialType: CredentialType) => void | string | Promise<void | string>;

/**
 * The faults the suite's `failure-rules` group needs, each armed by the
 * harness in its fake. A fault the harness does not give, or whose hook returns
 * a reason (a create that is one write has no call after its first write), is a
 * skipped test with that reason. A hook that arms nothing fails its test: the
 * call it targets must fail.
 */
export interface ConformanceFaults {
  /**
   * The next create fails with a definite error (an answered 4xx/5xx that
   * applied nothing of that call) at a call AFTER its first write was
   * accepted: the key exists, attaching it to a usage plan fails. The
   * provider must throw a typed error with `partial` and leave what it made
   * (core compensates).
   */
  createFailsAfterWrite?: ArmFault;
  /**
   * The next create's write is applied but its answer is lost — a 5xx after
   * the apply, a dropped connection or an answer held past the provider's
   * time-out — on every attempt the provider (or its SDK) makes, so that the
   * create fails. The provider must throw with `outcomeUnknown: true`.
   */
  createAnswerLost?: ArmFault;
  /**
   * The next call that attaches a usage plan (product, ACL group, scope) to an
   * existing credential fails with a definite error, applying nothing, on every
   * attempt. An update that swaps plans must then still hold every plan it had
   * before (add before remove). Needs `inspect` with `usagePlans`.
   */
  updateAddFails?: ArmFault;
  /**
   * Resolves once every write the fake holds back has landed, and disarms the faults the
   * provider's retries did not use up; the suite calls it after each faulted call, before it
   * checks what is left.
   */
  settled?: () => Promise<void>;
}

/** Options of {@link providerConformance}. */
export interface ProviderConformanceOptions {
  /**
   * Narrows the credential types to exercise. A type the provider does not
   * declare in `capabilities.credentialTypes` fails ("narrows, never widens").
   * @default every credential type; those the provider does not declare are skipped, with the reason
   */
  credentialTypes?: CredentialType[];
  /** APIs (with usage plans) that exist on the gateway; the suite's app uses them. */
  apis: GatewayApi[];
  /** A usage plan that exists and is NOT in `apis`, to ADD and then REMOVE. */
  addPlan: { apiId: string; planId: string };
  /** A usage plan the gateway does not know: create must throw InvalidReference (422). Omit when the gateway has no notion of plans. */
  unknownPlan?: { apiId: string; planId: string };
  /** Reads the credential's state from the cloud (fake) by its reference; lets the suite assert effects. */
  inspect?: (ref: ProviderCredentialRef) => Promise<InspectedCredential>;
  /** Lists every native credential id the gateway holds now (to prove nothing is left behind). */
  listNativeIds?: () => Promise<string[]>;
  /**
   * Creates, directly in the (fake) cloud and without credhook's mark, a
   * resource of this credential type — as another tool or a person would in
   * the same account/service — and returns its native id (what `revoke` would
   * take) and a probe of whether it still exists unchanged. The suite proves
   * that revoke and update never touch it (docs/architecture.md, "Never an orphan, never someone else's resource": ownership before any write).
   */
  createForeign?: (credentialType: CredentialType) => Promise<{ nativeId: string; exists: () => Promise<boolean> }>;
  /**
   * Builds a provider of ANOTHER gateway (another name, and prefix where the
   * provider has one) on the same cloud account/service. The suite proves a
   * gateway never revokes or updates what another gateway made.
   */
  otherGateway?: (credentialType: CredentialType) => Provider | Promise<Provider>;
  /** Faults the harness arms in its fake for the `failure-rules` group (see {@link ConformanceFaults}). */
  faults?: ConformanceFaults;
  /**
   * The fake answers every list (by tag, by name prefix, of all credentials) in
   * pages of at most `pageSize` items — the harness set it small (≤ 20). The
   * `paging` group creates `2 × pageSize + 1` credentials and finds each of them.
   */
  paging?: { pageSize: number };
  /** Prefix of every test name. @default "provider conformance" */
  name?: string;
  /** The groups to register (see {@link CONFORMANCE_GROUPS}). @default every group */
  groups?: readonly ConformanceGroup[];
}

/** What {@link Provider.revoke} reported, `revoked` when it returned nothing. */
async function revokeOutcome(provider: Provider, ref: ProviderCredentialRef): Promise<RevokeOutcome> {
  return (await provider.revoke(ref)) ?? "revoked";
}

function plansOf(apis: GatewayApi[]): string[] {
  return [...new Set(apis.flatMap((a) => a.usagePlans))].sort();
}

/**
 * Ends the test as skipped with `reason`: a capability (or a hook of the
 * options) the provider lacks is reported as skipped, never as passed.
 */
function skip(ctx: ConformanceTestContext, reason: string): never {
  ctx.skip(reason);
  // vitest's skip throws; a runner whose skip returns must not see the test pass
  throw new Error(`conformance: skipped: ${reason}`);
}

function fail(message: string): never {
  throw new Error(`conformance: ${message}`);
}

function expectEqual(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

/** The typed credhook error `promise` rejects with; fails when it resolves or rejects with anything else. */
async function rejection(promise: Promise<unknown>, what: string): Promise<CredhookError> {
  try {
    await promise;
  } catch (err) {
    if (!isCredhookError(err)) fail(`${what}: expected a typed credhook error, got ${String(err)}`);
    return err;
  }
  fail(`${what}: expected an error, but it succeeded`);
}

async function expectTyped(promise: Promise<unknown>, status: number, what: string): Promise<void> {
  const err = await rejection(promise, `${what} (status ${status})`);
  if (err.status !== status) fail(`${what}: expected status ${status}, got ${err.status} (${err.message})`);
}

/**
 * Registers the conformance tests with `test`.
 *
 * @param test vitest's `it` (each case is one test)
 * @param factory builds a fresh provider issuing `credentialType`; called once per test
 * @param options the gateway's existing APIs/plans and optional inspection hooks
 */
export function providerConformance(
  test: ConformanceTest,
  factory: (credentialType: CredentialType) => Provider | Promise<Provider>,
  options: ProviderConformanceOptions,
): void {
  const prefix = options.name ?? "provider conformance";
  const explicitTypes = options.credentialTypes !== undefined;
  const types: readonly CredentialType[] = options.credentialTypes ?? CREDENTIAL_TYPES;
  const groups = new Set<ConformanceGroup>(options.groups ?? CONFORMANCE_GROUPS);
  for (const g of groups)
    if (!CONFORMANCE_GROUPS.includes(g)) fail(`unknown group '${g}' (groups: ${CONFORMANCE_GROUPS.join(", ")})`);
  if (
    options.paging &&
    !(Number.isInteger(options.paging.pageSize) && options.paging.pageSize >= 1 && options.paging.pageSize <= 20)
  )
    fail(`paging.pageSize must be an integer from 1 to 20, got ${options.paging.pageSize}`);
  const app = (suffix: string) => ({
    appName: `Conformance App ${suffix}`,
    developer: "conformance@example.com",
    appSlug: `conf${suffix}`.slice(0, 24),
  });

  for (const credentialType of types) {
    const t = (group: ConformanceGroup, name: string, fn: (ctx: ConformanceTestContext) => Promise<void>) => {
      if (groups.has(group)) test(`${prefix} [${credentialType}] ${name}`, fn);
    };

    /**
     * A fresh provider for this test. A credential type the provider does not
     * declare is skipped when the suite chose it (every type, by default) and
     * fails when `options.credentialTypes` named it: the option narrows, never widens.
     */
    async function make(ctx: ConformanceTestContext): Promise<Provider> {
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
    }

    async function created(provider: Provider, suffix: string) {
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
    }

    /**
     * What `provider.findByCredential` returns for `ref`'s app over the suite's APIs, searching by
     * `credentialId` (default: `ref`'s own). Call only where the provider has `findByCredential`.
     */
    function findFor(provider: Provider, ref: ProviderCredentialRef, credentialId = ref.credentialId) {
      return provider.findByCredential!({ credentialId, credentialType, app: ref.app, apis: options.apis });
    }

    function updateInput(
      ref: ProviderCredentialRef,
      previous: GatewayApi[],
      desired: GatewayApi[],
      changes: ProviderUpdateInput["changes"],
    ): ProviderUpdateInput {
      return { ...ref, previous, desired, changes };
    }

    t("basics", "declares the credential type it is tested for", async (ctx) => {
      const provider = await make(ctx);
      await provider.close?.();
    });

    t("basics", "health() resolves when the gateway is reachable", async (ctx) => {
      const provider = await make(ctx);
      await provider.health();
      await provider.close?.();
    });

    t("create", "create returns a native id and a secret, and stores no secret in resources", async (ctx) => {
      const provider = await make(ctx);
      const { cred, ref } = await created(provider, "a");
      if (typeof cred.nativeId !== "string" || cred.nativeId.length === 0) fail("nativeId must be a non-empty string");
      const secret = credentialType === "API_KEY" ? cred.apiKey : cred.clientSecret;
      if (typeof secret !== "string" || secret.length < 20)
        fail(`the ${credentialType === "API_KEY" ? "apiKey" : "clientSecret"} must be a string of ≥ 20 characters`);
      if (credentialType === "API_KEY" && cred.clientSecret !== undefined)
        fail("an API_KEY credential carries no clientSecret");
      if (credentialType === "CLIENT_CREDENTIALS" && cred.apiKey !== undefined)
        fail("a CLIENT_CREDENTIALS credential carries no apiKey");
      const stored = JSON.stringify(cred.resources);
      if (stored.includes(secret)) fail("resources (stored by core) contain the secret in plaintext");
      if (cred.customCredentials) {
        for (const [k, v] of Object.entries(cred.customCredentials)) {
          if (typeof v !== "string") fail(`customCredentials.${k} must be a string`);
          if (v.includes(secret)) fail(`customCredentials.${k} contains the secret`);
        }
      }
      if (options.inspect) {
        const seen = await options.inspect(ref);
        if (!seen.live) fail("the created credential is not live in the cloud");
        if (seen.usagePlans)
          expectEqual([...seen.usagePlans].sort(), plansOf(options.apis), "usage plans after create");
      }
      await provider.revoke(ref);
      await provider.close?.();
    });

    if (credentialType === "API_KEY") {
      t("create", "create imports the caller's API key value when the provider accepts one", async (ctx) => {
        const provider = await make(ctx);
        if (!provider.capabilities.importsApiKeyValue) {
          await provider.close?.();
          skip(ctx, "the provider does not import API key values (capabilities.importsApiKeyValue is false)");
        }
        const value = `Conf${randomUUID().replace(/-/g, "")}Value`;
        const credentialId = randomUUID();
        const cred = await provider.create({
          credentialId,
          credentialType,
          app: app("v"),
          apis: options.apis,
          apiKeyValue: value,
        });
        expectEqual(cred.apiKey, value, "apiKey of an imported value");
        await provider.revoke({
          credentialId,
          credentialType,
          nativeId: cred.nativeId,
          resources: cred.resources,
          app: app("v"),
        });
        await provider.close?.();
      });
    }

    t("read-back", "readSecret returns the live secret when the provider reads back", async (ctx) => {
      const provider = await make(ctx);
      if (!provider.capabilities.readsBackSecret) {
        await provider.close?.();
        if (provider.readSecret) fail("readsBackSecret is false but readSecret is implemented");
        skip(ctx, "the provider does not read secrets back (capabilities.readsBackSecret is false)");
      }
      if (!provider.readSecret) fail("readsBackSecret is true but readSecret is missing");
      const { cred, ref } = await created(provider, "r");
      const back = await provider.readSecret(ref);
      if (credentialType === "API_KEY") expectEqual(back.apiKey, cred.apiKey, "read-back apiKey");
      else expectEqual(back.clientSecret, cred.clientSecret, "read-back clientSecret");
      await provider.revoke(ref);
      await expectTyped(provider.readSecret(ref), 404, "readSecret after revoke");
      await provider.close?.();
    });

    t("update", "update applies ADDED, then REMOVED, then NONE to the usage-plan set", async (ctx) => {
      const provider = await make(ctx);
      const { ref } = await created(provider, "u");
      const { apiId, planId } = options.addPlan;
      const before = options.apis;
      const hasApi = before.some((a) => a.id === apiId);
      const withPlan: GatewayApi[] = hasApi
        ? before.map((a) => (a.id === apiId ? { id: a.id, usagePlans: [...a.usagePlans, planId] } : a))
        : [...before, { id: apiId, usagePlans: [planId] }];
      const noneChanges = (apis: GatewayApi[]): ProviderUpdateInput["changes"] =>
        apis.map((a) => ({
          id: a.id,
          action: "NONE",
          usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" })),
        }));

      // ADDED
      const addChanges = noneChanges(before).filter((c) => c.id !== apiId);
      const apiBefore = before.find((a) => a.id === apiId);
      addChanges.push({
        id: apiId,
        action: hasApi ? "NONE" : "ADDED",
        usagePlans: [
          ...(apiBefore?.usagePlans ?? []).map((p) => ({ id: p, action: "NONE" as const })),
          { id: planId, action: "ADDED" as const },
        ],
      });
      let res = await provider.update(updateInput(ref, before, withPlan, addChanges));
      ref.resources = res.resources;
      if (options.inspect) {
        const seen = await options.inspect(ref);
        if (!seen.live) fail("credential not live after update ADDED");
        if (seen.usagePlans) expectEqual([...seen.usagePlans].sort(), plansOf(withPlan), "usage plans after ADDED");
      }

      // REMOVED
      const removeChanges: ProviderUpdateInput["changes"] = addChanges.map((c) =>
        c.id === apiId
          ? {
              ...c,
              action: "NONE" as const,
              usagePlans: c.usagePlans.map((p) =>
                p.id === planId ? { id: p.id, action: "REMOVED" as const } : { id: p.id, action: "NONE" as const },
              ),
            }
          : c,
      );
      res = await provider.update(updateInput(ref, withPlan, before, removeChanges));
      ref.resources = res.resources;
      if (options.inspect) {
        const seen = await options.inspect(ref);
        if (seen.usagePlans) expectEqual([...seen.usagePlans].sort(), plansOf(before), "usage plans after REMOVED");
      }

      // NONE: nothing changes, and it succeeds
      res = await provider.update(updateInput(ref, before, before, noneChanges(before)));
      ref.resources = res.resources;
      if (options.inspect) {
        const seen = await options.inspect(ref);
        if (!seen.live) fail("credential not live after update NONE");
        if (seen.usagePlans) expectEqual([...seen.usagePlans].sort(), plansOf(before), "usage plans after NONE");
      }
      await provider.revoke(ref);
      await provider.close?.();
    });

    t("update", "update of a renamed app succeeds", async (ctx) => {
      const provider = await make(ctx);
      const { ref } = await created(provider, "n");
      const renamed = { ...ref, app: { ...ref.app, appName: `${ref.app.appName} Renamed` } };
      const res = await provider.update({
        ...renamed,
        previous: options.apis,
        desired: options.apis,
        changes: options.apis.map((a) => ({
          id: a.id,
          action: "NONE",
          usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" })),
        })),
        previousAppName: ref.app.appName,
      });
      await provider.revoke({ ...renamed, resources: res.resources });
      await provider.close?.();
    });

    t("revoke", "revoke removes the credential, and revoking again succeeds", async (ctx) => {
      const provider = await make(ctx);
      const { ref } = await created(provider, "x");
      await provider.revoke(ref);
      if (options.inspect) {
        const seen = await options.inspect(ref);
        if (seen.live) fail("credential still live after revoke");
      }
      await provider.revoke(ref);
      await provider.close?.();
    });

    t("revoke", "revoke of a credential that never existed succeeds ('gone')", async (ctx) => {
      const provider = await make(ctx);
      const outcome = await revokeOutcome(provider, {
        credentialId: randomUUID(),
        credentialType,
        nativeId: "doesnotexist0",
        resources: {},
        app: app("z"),
      });
      if (outcome !== "gone") fail(`revoke of a credential that never existed reported '${outcome}', expected 'gone'`);
      await provider.close?.();
    });

    t("revoke", "update after revoke throws NotFound (404)", async (ctx) => {
      const provider = await make(ctx);
      const { ref } = await created(provider, "g");
      await provider.revoke(ref);
      const noop = options.apis.map((a) => ({
        id: a.id,
        action: "NONE" as const,
        usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
      }));
      await expectTyped(
        provider.update(updateInput(ref, options.apis, options.apis, noop)),
        404,
        "update after revoke",
      );
      await provider.close?.();
    });

    t("revoke", "revoke reports 'gone' for a credential that is gone, and 'revoked' before", async (ctx) => {
      const provider = await make(ctx);
      const { ref } = await created(provider, "o");
      const first = await revokeOutcome(provider, ref);
      if (first !== "revoked") fail(`first revoke reported '${first}', expected 'revoked'`);
      const second = await revokeOutcome(provider, ref);
      if (second !== "gone") fail(`second revoke reported '${second}', expected 'gone'`);
      await provider.close?.();
    });

    t(
      "revoke",
      "setEnabled turns a credential off and on where declared; another credential's id is 'not-owned'",
      async (ctx) => {
        const provider = await make(ctx);
        if (!(provider.capabilities.disables ?? []).includes(credentialType))
          skip(ctx, `capabilities.disables does not name ${credentialType}: the gateway has no switch`);
        if (!provider.setEnabled) fail(`capabilities.disables names ${credentialType} but setEnabled is missing`);
        const { ref } = await created(provider, "d");
        expectEqual(await provider.setEnabled(ref, false), "revoked", "setEnabled(false)");
        expectEqual(await provider.setEnabled(ref, false), "revoked", "setEnabled(false) again (idempotent)");
        expectEqual(
          await provider.setEnabled({ ...ref, credentialId: randomUUID() }, true),
          "not-owned",
          "setEnabled naming another credential id",
        );
        expectEqual(await provider.setEnabled(ref, true), "revoked", "setEnabled(true)");
        expectEqual(await revokeOutcome(provider, ref), "revoked", "revoke of an enabled-again credential");
        expectEqual(await provider.setEnabled(ref, false), "gone", "setEnabled after revoke");
        await provider.close?.();
      },
    );

    t(
      "find",
      "findByCredential finds what create made by the credential id alone, and nothing after revoke",
      async (ctx) => {
        const provider = await make(ctx);
        if (!provider.findByCredential)
          fail("findByCredential is missing: core cannot find a create whose outcome is unknown");
        const { ref } = await created(provider, "f");
        const found = await findFor(provider, ref);
        if (!found.some((r) => r.nativeId === ref.nativeId))
          fail(`findByCredential did not return ${ref.nativeId} (got ${JSON.stringify(found.map((r) => r.nativeId))})`);
        for (const r of found)
          if (r.credentialId !== undefined && r.credentialId !== ref.credentialId)
            fail(`findByCredential returned another credential's resource ${r.nativeId}`);
        const other = await findFor(provider, ref, randomUUID());
        if (other.length > 0)
          fail(`findByCredential of an unknown credential id returned ${JSON.stringify(other.map((r) => r.nativeId))}`);
        for (const r of found)
          await provider.revoke({
            ...ref,
            nativeId: r.nativeId,
            resources: r.nativeId === ref.nativeId ? ref.resources : {},
          });
        const after = await findFor(provider, ref);
        if (after.length > 0)
          fail(`findByCredential after revoke still returned ${JSON.stringify(after.map((r) => r.nativeId))}`);
        await provider.close?.();
      },
    );

    t("ownership", "revoke naming another credential id leaves the resource alone ('not-owned')", async (ctx) => {
      const provider = await make(ctx);
      const { ref } = await created(provider, "c");
      const outcome = await revokeOutcome(provider, { ...ref, credentialId: randomUUID() });
      if (outcome !== "not-owned")
        fail(`revoke with another credential's id reported '${outcome}', expected 'not-owned'`);
      if (options.inspect && !(await options.inspect(ref)).live)
        fail("the credential was revoked through another credential's id");
      await provider.revoke(ref);
      await provider.close?.();
    });
    t("ownership", "a resource someone else created survives a revoke and an update of its id", async (ctx) => {
      const createForeign =
        options.createForeign ??
        skip(ctx, "no createForeign hook: the suite cannot make a resource outside credhook on this gateway");
      const provider = await make(ctx);
      const foreign = await createForeign(credentialType);
      for (const credentialId of ["", randomUUID()]) {
        const ref: ProviderCredentialRef = {
          credentialId,
          credentialType,
          nativeId: foreign.nativeId,
          resources: {},
          app: app("e"),
        };
        const outcome = await revokeOutcome(provider, ref);
        if (outcome === "revoked")
          fail(`revoke of a foreign resource (credentialId '${credentialId}') reported 'revoked'`);
        if (!(await foreign.exists()))
          fail(`revoke of a foreign resource (credentialId '${credentialId}') removed or changed it`);
        const noop = options.apis.map((a) => ({
          id: a.id,
          action: "NONE" as const,
          usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
        }));
        await expectTyped(
          provider.update(updateInput(ref, options.apis, options.apis, noop)),
          404,
          "update of a foreign resource",
        );
        if (!(await foreign.exists())) fail("update of a foreign resource changed it");
      }
      await provider.close?.();
    });
    t(
      "ownership",
      "another gateway on the same cloud never revokes or updates this gateway's credential",
      async (ctx) => {
        const otherGateway =
          options.otherGateway ??
          skip(ctx, "no otherGateway hook: the suite cannot build a second gateway on the same cloud");
        const provider = await make(ctx);
        const other = await otherGateway(credentialType);
        const { ref } = await created(provider, "w");
        for (const credentialId of ["", ref.credentialId]) {
          const outcome = await revokeOutcome(other, { ...ref, credentialId, resources: {} });
          if (outcome === "revoked")
            fail(`another gateway's revoke (credentialId '${credentialId}') reported 'revoked'`);
          if (options.inspect && !(await options.inspect(ref)).live)
            fail("another gateway revoked this gateway's credential");
        }
        const noop = options.apis.map((a) => ({
          id: a.id,
          action: "NONE" as const,
          usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" as const })),
        }));
        await expectTyped(
          other.update(updateInput({ ...ref, credentialId: "", resources: {} }, options.apis, options.apis, noop)),
          404,
          "another gateway's update",
        );
        if (other.findByCredential) {
          const seen = await findFor(other, ref);
          if (seen.length > 0)
            fail(
              `another gateway's findByCredential returned this gateway's ${JSON.stringify(seen.map((r) => r.nativeId))}`,
            );
        }
        await provider.revoke(ref);
        await other.close?.();
        await provider.close?.();
      },
    );

    {
      const noUnknownPlan = "no unknownPlan: the gateway has no notion of a usage plan it does not know";
      t(
        "invalid-reference",
        "create with an unknown usage plan throws InvalidReference (422) and reports whatever it left behind",
        async (ctx) => {
          const unknown = options.unknownPlan ?? skip(ctx, noUnknownPlan);
          const provider = await make(ctx);
          const before = options.listNativeIds ? await options.listNativeIds() : undefined;
          const apis: GatewayApi[] = [
            ...options.apis.filter((a) => a.id !== unknown.apiId),
            { id: unknown.apiId, usagePlans: [unknown.planId] },
          ];
          const credentialId = randomUUID();
          const err = await rejection(
            provider.create({ credentialId, credentialType, app: app("i"), apis }),
            "create with an unknown usage plan",
          );
          if (err.status !== 422)
            fail(`create with an unknown usage plan: expected status 422, got ${err.status} (${err.message})`);
          // Providers never clean up alone: what the failed create made is reported, and core (here: the suite) revokes it.
          await compensateCreate(provider, app("i"), credentialId, err, apis, credentialType);
          if (options.listNativeIds && before) {
            const after = await options.listNativeIds();
            expectEqual([...after].sort(), [...before].sort(), "native credentials after a failed create");
          }
          await provider.close?.();
        },
      );

      t("invalid-reference", "update ADDing an unknown usage plan throws InvalidReference (422)", async (ctx) => {
        const unknown = options.unknownPlan ?? skip(ctx, noUnknownPlan);
        const provider = await make(ctx);
        const { ref } = await created(provider, "j");
        const desired: GatewayApi[] = [
          ...options.apis.filter((a) => a.id !== unknown.apiId),
          { id: unknown.apiId, usagePlans: [unknown.planId] },
        ];
        await expectTyped(
          provider.update(
            updateInput(ref, options.apis, desired, [
              { id: unknown.apiId, action: "ADDED", usagePlans: [{ id: unknown.planId, action: "ADDED" }] },
            ]),
          ),
          422,
          "update with an unknown usage plan",
        );
        await provider.revoke(ref);
        await provider.close?.();
      });
    }

    /** Arms `arm`'s fault; a reason it returns ends the test as skipped (after revoking `made` and closing `provider`). */
    async function armed(
      ctx: ConformanceTestContext,
      provider: Provider,
      arm: ArmFault,
      made?: ProviderCredentialRef,
    ): Promise<void> {
      const reason = await arm(credentialType);
      if (typeof reason !== "string") return;
      if (made) await provider.revoke(made);
      await provider.close?.();
      skip(ctx, reason);
    }

    /** What carries `credentialId`'s mark: `findByCredential`, else `listOwned` filtered (as core falls back). */
    async function findMarked(provider: Provider, search: CredentialSearch): Promise<OwnedResource[]> {
      if (provider.findByCredential) return provider.findByCredential(search);
      if (provider.listOwned) return (await provider.listOwned()).filter((r) => r.credentialId === search.credentialId);
      fail("neither findByCredential nor listOwned: core cannot find what a failed create left");
    }

    /**
     * Compensates a failed create as core does, then proves nothing is left:
     * nothing carries the credential's mark, and (with `listNativeIds`) the
     * gateway holds what it held `before`.
     */
    async function compensatedCleanly(
      provider: Provider,
      credentialId: string,
      suffix: string,
      err: CredhookError,
      before: string[] | undefined,
    ): Promise<void> {
      await options.faults?.settled?.();
      await compensateCreate(provider, app(suffix), credentialId, err, options.apis, credentialType);
      const left = await findMarked(provider, { credentialId, credentialType, app: app(suffix), apis: options.apis });
      if (left.length > 0)
        fail(`after core's compensation the failed create still left ${JSON.stringify(left.map((r) => r.nativeId))}`);
      if (options.listNativeIds && before) {
        const after = await options.listNativeIds();
        expectEqual([...after].sort(), [...before].sort(), "native credentials after a compensated create");
      }
    }

    t(
      "failure-rules",
      "a create failing after an accepted write reports `partial` and deletes nothing: core compensates",
      async (ctx) => {
        const arm =
          options.faults?.createFailsAfterWrite ??
          skip(ctx, "no faults.createFailsAfterWrite hook: the suite cannot fail a create after its first write");
        const provider = await make(ctx);
        const before = options.listNativeIds ? await options.listNativeIds() : undefined;
        const credentialId = randomUUID();
        await armed(ctx, provider, arm);
        const err = await rejection(
          provider.create({ credentialId, credentialType, app: app("p"), apis: options.apis }),
          "create with a fault after its first write",
        );
        if (!err.partial)
          fail(
            `a create that failed after an accepted write threw without \`partial\` (${err.message}): core cannot compensate what it made`,
          );
        const found = await findMarked(provider, { credentialId, credentialType, app: app("p"), apis: options.apis });
        if (found.length === 0)
          fail(
            `the provider deleted what its failing create made (partial ${err.partial.nativeId} carries no mark any more): providers never clean up alone`,
          );
        await compensatedCleanly(provider, credentialId, "p", err, before);
        await provider.close?.();
      },
    );

    t(
      "failure-rules",
      "a create whose answer is lost after the write reports `outcomeUnknown`, and core finds what it made",
      async (ctx) => {
        const arm: ArmFault =
          options.faults?.createAnswerLost ??
          (() => "no faults.createAnswerLost hook: the suite cannot lose a create's answer");
        const provider = await make(ctx);
        if (provider.capabilities.writesLandLate === false) {
          await provider.close?.();
          skip(ctx, "the provider declares writesLandLate: false: no write of its lands unseen");
        }
        const before = options.listNativeIds ? await options.listNativeIds() : undefined;
        const credentialId = randomUUID();
        await armed(ctx, provider, arm);
        const err = await rejection(
          provider.create({ credentialId, credentialType, app: app("q"), apis: options.apis }),
          "create whose answer is lost",
        );
        if (err.outcomeUnknown !== true)
          fail(
            `a create whose write was applied but whose answer was lost threw without \`outcomeUnknown: true\` (${err.message}): core would trust that nothing exists`,
          );
        await options.faults?.settled?.();
        const found = await findMarked(provider, { credentialId, credentialType, app: app("q"), apis: options.apis });
        if (found.length === 0 && !err.partial)
          fail("the create's write landed, but findByCredential does not find it and the error carries no `partial`");
        await compensatedCleanly(provider, credentialId, "q", err, before);
        await provider.close?.();
      },
    );

    t(
      "failure-rules",
      "an update that swaps usage plans adds before it removes: a failing add leaves every plan it had",
      async (ctx) => {
        const arm =
          options.faults?.updateAddFails ??
          skip(ctx, "no faults.updateAddFails hook: the suite cannot fail the attaching of a usage plan");
        const inspect =
          options.inspect ?? skip(ctx, "no inspect hook: the suite cannot see the credential's usage plans");
        const from =
          options.apis.find((a) => a.usagePlans.length > 0) ??
          skip(ctx, "no usage plan in options.apis to swap for addPlan");
        const removed = from.usagePlans[0]!;
        const provider = await make(ctx);
        const { ref } = await created(provider, "s");
        const had = (await inspect(ref)).usagePlans;
        if (!had) {
          await provider.revoke(ref);
          await provider.close?.();
          skip(ctx, "inspect reports no usagePlans: the suite cannot see what the credential holds");
        }
        const { apiId, planId } = options.addPlan;
        const desired: GatewayApi[] = options.apis.map((a) =>
          a.id === from.id ? { id: a.id, usagePlans: a.usagePlans.filter((p) => p !== removed) } : a,
        );
        const target = desired.find((a) => a.id === apiId);
        if (target) target.usagePlans = [...target.usagePlans, planId];
        else desired.push({ id: apiId, usagePlans: [planId] });
        const changes: ProviderUpdateInput["changes"] = desired.map((a) => {
          const prior = options.apis.find((p) => p.id === a.id);
          return {
            id: a.id,
            action: prior ? "NONE" : "ADDED",
            usagePlans: [
              ...a.usagePlans.map((p) => ({
                id: p,
                action: prior?.usagePlans.includes(p) ? ("NONE" as const) : ("ADDED" as const),
              })),
              ...(a.id === from.id ? [{ id: removed, action: "REMOVED" as const }] : []),
            ],
          };
        });
        await armed(ctx, provider, arm, ref);
        const err = await rejection(
          provider.update(updateInput(ref, options.apis, desired, changes)),
          "update whose usage-plan add fails",
        );
        const seen = await inspect(ref);
        if (!seen.live) fail(`the credential is not live after a failing update (${err.message})`);
        const lost = had.filter((p) => !(seen.usagePlans ?? []).includes(p));
        if (lost.length > 0)
          fail(
            `after an update whose add failed the credential lost ${JSON.stringify(lost)}: the provider removed before it added (never less access than before)`,
          );
        await options.faults?.settled?.();
        await provider.revoke({
          ...ref,
          resources: (err.partial?.resources as ProviderCredentialRef["resources"]) ?? ref.resources,
        });
        await provider.close?.();
      },
    );

    t("paging", "findByCredential and listOwned find credentials beyond a list's first page", async (ctx) => {
      const { pageSize } =
        options.paging ?? skip(ctx, "no paging option: the harness does not page the fake's lists small");
      const provider = await make(ctx);
      if (!provider.findByCredential && !provider.listOwned) {
        await provider.close?.();
        fail("neither findByCredential nor listOwned: core cannot find a credential by its mark");
      }
      const refs: ProviderCredentialRef[] = [];
      for (let i = 0; i < 2 * pageSize + 1; i++) refs.push((await created(provider, `pg${i}`)).ref);
      if (provider.findByCredential) {
        for (const ref of refs) {
          const found = await findFor(provider, ref);
          if (!found.some((r) => r.nativeId === ref.nativeId))
            fail(
              `findByCredential did not find ${ref.nativeId}, one of ${refs.length} credentials in lists of pages of ${pageSize}: it reads only part of the pages`,
            );
        }
      }
      if (provider.listOwned) {
        const owned = await provider.listOwned();
        const missing = refs.filter(
          (ref) => !owned.some((r) => r.nativeId === ref.nativeId || r.credentialId === ref.credentialId),
        );
        if (missing.length > 0)
          fail(
            `listOwned misses ${missing.length} of ${refs.length} credentials in lists of pages of ${pageSize}: it reads only part of the pages`,
          );
      }
      for (const ref of refs) await provider.revoke(ref);
      await provider.close?.();
    });
  }
}
