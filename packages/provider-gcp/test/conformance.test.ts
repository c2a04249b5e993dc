import { afterAll, beforeAll, describe, it } from "vitest";
import { providerConformance } from "@credhook/provider-testkit";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { foreignKey, inspector, liveKeyIds, makeProvider } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());

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
  });
});
