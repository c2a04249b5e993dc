/**
 * The conformance suite's public shapes: the test function it registers with, the options a
 * harness gives (the gateway's APIs and plans, hooks into the cloud's fake, faults), and the
 * groups it is made of. `providerConformance` (conformance.ts) takes them.
 */
import type { CredentialType, GatewayApi, Provider, ProviderCredentialRef } from "@credhook/core/provider";

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
