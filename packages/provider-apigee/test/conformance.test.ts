// The provider-testkit conformance suite against the Apigee management API fake: API keys and client credentials.
import { afterAll, beforeAll, it } from "vitest";
import { providerConformance } from "@credhook/provider-testkit";
import type { ApigeeFake } from "@credhook/fakes/apigee";
import type { ProviderCredentialRef } from "@credhook/core/provider";
import type { ApigeeContext } from "./helpers.js";
import { setup } from "./helpers.js";

let fake: ApigeeFake;
let make: ApigeeContext["make"];
beforeAll(async () => {
  // apps.list in pages of 2 whatever `rows` asks: the suite's paging check crosses pages.
  ({ fake, make } = await setup({ maxRows: 2 }));
});
afterAll(async () => {
  await fake.close();
});

/** The app a reference names in the fake, and the keys that are this credential's. */
function keysOf(ref: ProviderCredentialRef) {
  const app = fake
    .apps()
    .find((a) => a.appId === ref.nativeId || a.credentials.some((c) => c.consumerKey === ref.nativeId));
  return app ? app.credentials.filter((c) => ref.credentialType === "API_KEY" || c.consumerKey === ref.nativeId) : [];
}

providerConformance(it, (type) => make({}, "apigee-test", type), {
  name: "apigee",
  credentialTypes: ["API_KEY", "CLIENT_CREDENTIALS"],
  apis: [
    { id: "orders", usagePlans: ["gold"] },
    { id: "echo", usagePlans: [] },
  ],
  addPlan: { apiId: "orders", planId: "silver" },
  unknownPlan: { apiId: "orders", planId: "platinum" },
  inspect: async (ref) => {
    const keys = keysOf(ref).filter((k) => k.status === "approved");
    return {
      live: keys.length > 0,
      usagePlans: [...new Set(keys.flatMap((k) => k.apiProducts.map((p) => p.apiproduct)))]
        .map((p) => ({ "orders-gold": "gold", "orders-silver": "silver" })[p] ?? p)
        .filter((p) => p !== "echo"),
    };
  },
  listNativeIds: async () => fake.apps().map((a) => a.appId),
  createForeign: async () => {
    const made = fake.addForeignApp({
      developer: "partner@example.com",
      name: `partner-app-${Math.random().toString(36).slice(2)}`,
      apiProducts: ["orders-gold"],
    });
    const before = JSON.stringify(made);
    return {
      nativeId: made.appId,
      exists: async () => JSON.stringify(fake.apps().find((a) => a.appId === made.appId)) === before,
    };
  },
  otherGateway: (type) => make({}, "apigee-other", type),
  // The failure rules: the app exists when importing its key fails (a client-credentials app is
  // one POST, products included: nothing follows it); the app's POST is applied and answered 500
  // (a POST is not resent); associating the new API product with the key fails.
  faults: {
    createFailsAfterWrite: (type) =>
      type === "API_KEY"
        ? fake.inject({ status: 400, method: "POST", path: /\/keys$/ })
        : "a client-credentials app is one POST (its API products included): no write follows it",
    createAnswerLost: () => fake.inject({ status: 500, afterApply: true, method: "POST", path: /\/apps$/ }),
    updateAddFails: () => fake.inject({ status: 400, method: "POST", path: /\/keys\/[^/]+$/ }),
  },
  paging: { pageSize: 2 },
});
