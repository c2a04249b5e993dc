// The failure-rule and paging checks of the conformance suite, proven able to fail: a provider
// that keeps every rule (test/paged-provider.ts) passes the whole suite, and each deliberately
// wrong variant — one rule broken — fails the check of that rule, with a message naming it.
import { describe, expect, it } from "vitest";
import { providerConformance, type ProviderConformanceOptions } from "@credhook/provider-testkit";
import {
  DeletesAfterFailingCreate,
  DropsOutcomeUnknown,
  DropsPartial,
  FindsOnFirstPage,
  ListsFirstPage,
  PagedCloud,
  PagedProvider,
  RemovesBeforeAdd,
} from "./paged-provider.js";
import { named, recorder, run } from "./recorded.js";

const PLANS = new Set(["gold", "silver", "bronze"]);

/** The suite's options on `cloud`: every optional check on, faults armed in the cloud, its lists paged by 2. */
function optionsFor(cloud: PagedCloud, Variant: typeof PagedProvider): ProviderConformanceOptions {
  return {
    apis: [{ id: "orders", usagePlans: ["gold"] }],
    addPlan: { apiId: "orders", planId: "silver" },
    unknownPlan: { apiId: "orders", planId: "platinum" },
    inspect: async (ref) => {
      const key = cloud.keys.get(ref.nativeId);
      return { live: key !== undefined, usagePlans: key?.plans ?? [] };
    },
    listNativeIds: async () => [...cloud.keys.keys()],
    createForeign: async () => {
      const key = cloud.createKey({ value: "by-hand-0123456789abcdef", gateway: "", credentialId: "" });
      return { nativeId: key.id, exists: async () => cloud.keys.has(key.id) };
    },
    otherGateway: () => new Variant(cloud, "paged-other"),
    faults: {
      createFailsAfterWrite: () => cloud.arm("attach"),
      createAnswerLost: () => cloud.arm("lost"),
      updateAddFails: () => cloud.arm("attach"),
    },
    paging: { pageSize: cloud.pageSize },
    name: Variant.name,
  };
}

// The correct provider passes every check, as vitest tests (its CLIENT_CREDENTIALS tests are
// skipped: it declares API_KEY alone and the options do not name a type).
const cloud = new PagedCloud(PLANS);
providerConformance(it, () => new PagedProvider(cloud), optionsFor(cloud, PagedProvider));

/** Registers the suite for `Variant` on a fresh cloud and runs the one test named by `part`. */
async function runCheck(Variant: typeof PagedProvider, part: string) {
  const variantCloud = new PagedCloud(PLANS);
  const { test, registered } = recorder();
  providerConformance(test, () => new Variant(variantCloud), {
    ...optionsFor(variantCloud, Variant),
    credentialTypes: ["API_KEY"],
  });
  return run(named(registered, part));
}

describe("each failure-rule and paging check fails a provider that breaks its rule", () => {
  const cases: Array<[string, typeof PagedProvider, string, RegExp]> = [
    [
      "deletes what a failing create made",
      DeletesAfterFailingCreate,
      "failing after an accepted write",
      /the provider deleted what its failing create made/,
    ],
    [
      "drops `partial` from a failing create's error",
      DropsPartial,
      "failing after an accepted write",
      /threw without `partial`/,
    ],
    [
      "drops `outcomeUnknown` from a lost answer",
      DropsOutcomeUnknown,
      "answer is lost",
      /without `outcomeUnknown: true`/,
    ],
    ["removes a plan before it adds the new one", RemovesBeforeAdd, "adds before it removes", /lost \["gold"\]/],
    [
      "reads only the first page in findByCredential",
      FindsOnFirstPage,
      "beyond a list's first page",
      /findByCredential did not find .* pages of 2/,
    ],
    ["reads only the first page in listOwned", ListsFirstPage, "beyond a list's first page", /listOwned misses 3 of 5/],
  ];

  for (const [what, Variant, check, message] of cases) {
    it(`a provider that ${what} fails '${check}'`, async () => {
      const outcome = await runCheck(Variant, check);
      expect(String(outcome.error)).toMatch(message);
    });
  }

  it("a fault hook that arms nothing fails its check instead of passing it", async () => {
    const idle = new PagedCloud(PLANS);
    const { test, registered } = recorder();
    providerConformance(test, () => new PagedProvider(idle), {
      ...optionsFor(idle, PagedProvider),
      faults: { createFailsAfterWrite: () => {}, createAnswerLost: () => {}, updateAddFails: () => {} },
      credentialTypes: ["API_KEY"],
    });
    for (const check of ["failing after an accepted write", "answer is lost", "adds before it removes"])
      expect(String((await run(named(registered, check))).error)).toMatch(/expected an error, but it succeeded/);
  });

  it("the correct provider passes the same checks run the same way (the failures above are the variants')", async () => {
    for (const [, , check] of cases) expect(await runCheck(PagedProvider, check)).toEqual({});
  });
});
