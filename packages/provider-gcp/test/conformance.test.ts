import { afterAll, beforeAll, describe, it } from "vitest";
import { providerConformance } from "@credhook/provider-testkit";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { foreignKey, inspector, liveKeyIds, makeProvider } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  // ListKeys in pages of 2 whatever `pageSize` asks: the suite's paging check crosses pages. The
  // contract is what the suite checks, not Google's quotas (faults.test.ts holds those): reading
  // every key's page of 2 would pass 240 reads per minute.
  fake = await startApiKeysFake({ maxPageSize: 2, readsPerMinute: 100_000 });
});
afterAll(() => fake.close());

/**
 * The failure rules: the key exists when polling its create operation is refused (403); createKey
 * is applied and answered 500, every attempt, and so is every getKey that would resume it; the key's one UpdateKey (restrictions and the plan
 * annotation together) is refused. `settled` disarms what retries did not use.
 */
const faults = {
  createFailsAfterWrite: () => fake.control.fail({ rpcs: ["GetOperation"], status: 403 }),
  createAnswerLost: () =>
    fake.control.fail({ rpcs: ["CreateKey", "GetKey"], status: 500, afterApply: true, times: 50 }),
  updateAddFails: () => fake.control.fail({ rpcs: ["UpdateKey"], status: 400 }),
  settled: async () => fake.control.clearFaults(),
};

const apis = [
  { id: "orders", usagePlans: ["gold"] },
  { id: "billing", usagePlans: ["silver"] },
];

describe("with a usage-plan → methods map (plans restrict methods; an unlisted plan is unknown)", () => {
  providerConformance(
    it,
    () => makeProvider(fake, { usagePlans: { gold: [], silver: ["Get*", "List*"], bronze: ["GetOrder"] } }),
    {
      credentialTypes: ["API_KEY"],
      apis,
      addPlan: { apiId: "orders", planId: "bronze" },
      unknownPlan: { apiId: "orders", planId: "platinum" },
      inspect: (ref) => inspector(fake)(ref),
      listNativeIds: () => liveKeyIds(fake)(),
      createForeign: async () => foreignKey(fake),
      otherGateway: () =>
        makeProvider(
          fake,
          { usagePlans: { gold: [], silver: ["Get*", "List*"], bronze: ["GetOrder"] } },
          "API_KEY",
          "gcp-other",
        ),
      name: "gcp conformance (plan map)",
      faults,
      paging: { pageSize: 2 },
    },
  );
});

// Without a usage-plan map the provider cannot tell a plan it does not know:
// plans are only recorded in the key's annotations, so `unknownPlan` is omitted.
describe("without a usage-plan map (plans recorded in annotations only)", () => {
  providerConformance(it, () => makeProvider(fake), {
    credentialTypes: ["API_KEY"],
    apis,
    addPlan: { apiId: "orders", planId: "bronze" },
    inspect: (ref) => inspector(fake)(ref),
    listNativeIds: () => liveKeyIds(fake)(),
    createForeign: async () => foreignKey(fake),
    otherGateway: () => makeProvider(fake, {}, "API_KEY", "gcp-other"),
    name: "gcp conformance (annotations)",
    faults,
    paging: { pageSize: 2 },
  });
});
