// The provider-testkit conformance suite against the APIM fake.
import { afterAll, beforeAll, it } from "vitest";
import { providerConformance } from "@credhook/provider-testkit";
import type { ApimFake } from "../src/fake/index.js";
import type { AzureApimProvider, AzureProviderOptions } from "../src/index.js";
import { setup, subsOf } from "./helpers.js";

let fake: ApimFake;
let make: (o?: Partial<AzureProviderOptions>) => AzureApimProvider;

beforeAll(async () => {
  ({ fake, make } = await setup());
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
    return { live: active.length > 0, usagePlans: active.filter((s) => s.scope.startsWith("/products/")).map((s) => s.scope.slice("/products/".length)) };
  },
  listNativeIds: async () => fake.listSubscriptions().map((s) => s.sid),
};

providerConformance(it, () => make(), { ...options, name: "azure conformance (revokeMode delete)" });
providerConformance(it, () => make({ revokeMode: "disable" }), { ...options, name: "azure conformance (revokeMode disable)" });
