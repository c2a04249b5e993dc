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
 *
 * This file composes the suite; each topic is a file of `conformance/` (basics, create and
 * read-back, update, revoke, disable, find, ownership, invalid-reference, faults, paging) on
 * the shared harness of `conformance/harness.ts`, and the options' shapes are
 * `conformance/options.ts`.
 */
import type { CredentialType, Provider } from "@credhook/core/provider";
import { CREDENTIAL_TYPES } from "@credhook/core/provider";
import { basicsTests } from "./conformance/basics.js";
import { createTests } from "./conformance/create.js";
import { disableTests } from "./conformance/disable.js";
import { failureRuleTests } from "./conformance/faults.js";
import { findTests } from "./conformance/find.js";
import { type ConformanceCase, fail, typeSuite } from "./conformance/harness.js";
import { invalidReferenceTests } from "./conformance/invalid-reference.js";
import {
  CONFORMANCE_GROUPS,
  type ConformanceGroup,
  type ConformanceTest,
  type ProviderConformanceOptions,
} from "./conformance/options.js";
import { ownershipTests } from "./conformance/ownership.js";
import { pagingTests } from "./conformance/paging.js";
import { revokeTests } from "./conformance/revoke.js";
import { updateTests } from "./conformance/update.js";

export {
  type ArmFault,
  CONFORMANCE_GROUPS,
  type ConformanceFaults,
  type ConformanceGroup,
  type ConformanceTest,
  type ConformanceTestContext,
  type InspectedCredential,
  type ProviderConformanceOptions,
} from "./conformance/options.js";

/**
 * The topics' tests, in the order they are registered for each credential type (a test's place in
 * a run's list does not change when a topic moves to a file of its own).
 */
const TOPICS: ReadonlyArray<readonly ConformanceCase[]> = [
  basicsTests,
  createTests,
  updateTests,
  revokeTests,
  disableTests,
  findTests,
  ownershipTests,
  invalidReferenceTests,
  failureRuleTests,
  pagingTests,
];

/**
 * Registers the conformance tests with `test`: for each credential type (the provider's, narrowed by
 * `options.credentialTypes`), the tests of every group `options.groups` names, each named
 * `<options.name> [<type>] <what it checks>`.
 *
 * @param test vitest's `it` (each case is one test)
 * @param factory builds a fresh provider issuing `credentialType`; called once per test
 * @param options the gateway's existing APIs/plans and optional inspection hooks
 * @throws Error (at registration) an unknown group, or a `paging.pageSize` that is not an integer from 1 to 20
 */
export function providerConformance(
  test: ConformanceTest,
  factory: (credentialType: CredentialType) => Provider | Promise<Provider>,
  options: ProviderConformanceOptions,
): void {
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
  for (const credentialType of types) {
    const suite = typeSuite(test, factory, options, credentialType, groups, explicitTypes);
    for (const c of TOPICS.flat())
      if (c.only === undefined || c.only === credentialType) suite.test(c.group, c.name, (ctx) => c.check(suite, ctx));
  }
}
