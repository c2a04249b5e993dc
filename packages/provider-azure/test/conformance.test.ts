// The provider-testkit conformance suite against the APIM fake.
import { afterAll, beforeAll, it } from "vitest";
import { providerConformance } from "@credhook/provider-testkit";
import type { ApimFake } from "@credhook/fakes/azure";
import type { AzureApimProvider, AzureProviderOptions } from "../src/index.js";
import { setup, subsOf } from "./helpers.js";

let fake: ApimFake;
let make: (o?: Partial<AzureProviderOptions>, gateway?: string) => AzureApimProvider;

beforeAll(async () => {
  // Lists in pages of 2: the suite's paging check crosses pages.
  ({ fake, make } = await setup({ pageSize: 2 }));
});
afterAll(async () => {
  await fake.close();
});

const options = {
  credentialTypes: ["API_KEY" as const],
  apis: [
    { id: "orders", usagePlans: ["gold"] },
    { id: "echo-api", usagePlans: [] },
  ],
  addPlan: { apiId: "orders", planId: "silver" },
  unknownPlan: { apiId: "orders", planId: "platinum" },
  inspect: async (ref: { nativeId: string }) => {
    const active = subsOf(fake, ref.nativeId).filter((s) => s.state === "active");
    return {
      live: active.length > 0,
      usagePlans: active.filter((s) => s.scope.startsWith("/products/")).map((s) => s.scope.slice("/products/".length)),
    };
  },
  // What still grants access: a cancelled subscription (revokeMode disable) is a revoked one.
  listNativeIds: async () =>
    fake
      .listSubscriptions()
      .filter((s) => s.state !== "cancelled")
      .map((s) => s.sid),
  // A subscription made by hand in the same service, with no credhook mark.
  createForeign: async () => {
    const made = fake.addForeignSubscription({ scope: "/products/gold", displayName: "Made in the Azure portal" });
    return {
      nativeId: made.sid,
      exists: async () => JSON.stringify(fake.getSubscription(made.sid)) === JSON.stringify(made),
    };
  },
  // The failure rules: the product's subscription exists when the API's (the second PUT) is refused;
  // the subscription of the added product is refused. (A lost answer: the first suite below.)
  faults: {
    createFailsAfterWrite: () => fake.inject({ status: 400, method: "PUT", path: /-a-echo-api/ }),
    updateAddFails: () => fake.inject({ status: 400, method: "PUT", path: /-p-silver/ }),
  },
  paging: { pageSize: 2 },
  // Another credhook gateway on the same service, with a longer prefix that starts with this one's (issue 9, case 5).
  otherGateway: () => make({ subscriptionIdPrefix: "credhook-eu-" }, "azure-other"),
};

providerConformance(it, () => make(), {
  ...options,
  // A subscription PUT applied and answered 500 on every attempt (the SDK resends a PUT: about
  // 2.5 s of its back-off, so once, not in every suite); `settled` disarms what retries did not use.
  faults: {
    ...options.faults,
    createAnswerLost: () => fake.inject({ status: 500, afterApply: true, method: "PUT", times: 20 }),
    settled: async () => {
      await fake.idle();
      fake.clearFaults();
    },
  },
  name: "azure conformance (revokeMode delete)",
});
providerConformance(it, () => make({ revokeMode: "disable" }), {
  ...options,
  name: "azure conformance (revokeMode disable)",
});
// The other direction: the gateway with the longer prefix, the one with the shorter as "another gateway".
providerConformance(it, () => make({ subscriptionIdPrefix: "credhook-eu-" }, "azure-other"), {
  ...options,
  otherGateway: () => make(),
  name: "azure conformance (prefix credhook-eu-)",
});
