// The provider-testkit conformance suite against the Kong Admin API fake: self-hosted (no auth), RBAC token, Konnect path + bearer.
import { afterAll, beforeAll, describe, it } from "vitest";
import { providerConformance } from "@credhook/provider-testkit";
import type { KongFake, KongFakeOptions } from "@credhook/fakes/kong";
import type { KongProvider, KongProviderOptions } from "../src/index.js";
import { accessOf, setup } from "./helpers.js";

const variants: Array<{ name: string; fake: KongFakeOptions; auth: KongProviderOptions["auth"] }> = [
  { name: "self-hosted, no auth", fake: {}, auth: { type: "none" } },
  {
    name: "Kong Enterprise workspace + RBAC token",
    fake: { basePath: "/team-a", adminToken: "rbac-secret" },
    auth: { type: "rbac-token", token: "rbac-secret" },
  },
  {
    name: "Konnect control plane + bearer",
    fake: { basePath: "/v2/control-planes/3f6e5b1c-0000-4000-8000-000000000001/core-entities", bearerToken: "kpat_x" },
    auth: { type: "bearer", token: "kpat_x" },
  },
];

for (const v of variants) {
  describe(`kong conformance (${v.name})`, () => {
    let fake: KongFake;
    let make: (o?: Partial<KongProviderOptions>, gateway?: string) => KongProvider;
    beforeAll(async () => {
      // Lists in pages of 2 whatever `size` asks: the suite's paging check crosses pages.
      ({ fake, make } = await setup({ ...v.fake, maxPageSize: 2 }));
    });
    afterAll(async () => {
      await fake.close();
    });
    providerConformance(it, () => make({ auth: v.auth }), {
      name: "kong",
      credentialTypes: ["API_KEY"],
      apis: [
        { id: "orders-api", usagePlans: ["gold"] },
        { id: "echo", usagePlans: [] },
      ],
      addPlan: { apiId: "orders-api", planId: "silver" },
      unknownPlan: { apiId: "orders-api", planId: "platinum" },
      inspect: async (ref) => {
        const live =
          fake.consumers().some((c) => c.id === ref.nativeId) &&
          fake.keyAuths().some((k) => k.consumer.id === ref.nativeId);
        return { live, usagePlans: live ? accessOf(fake, ref.nativeId).plans : [] };
      },
      listNativeIds: async () => fake.consumers().map((c) => c.id),
      createForeign: async () => {
        const c = fake.addForeignConsumer({
          username: `partner-${Math.random().toString(36).slice(2)}`,
          key: `PartnerKey${Date.now()}`,
          groups: ["orders"],
          tags: ["team-b"],
        });
        const before = JSON.stringify([
          c,
          fake.keyAuths().filter((k) => k.consumer.id === c.id),
          fake.acls().filter((a) => a.consumer.id === c.id),
        ]);
        return {
          nativeId: c.id,
          exists: async () =>
            JSON.stringify([
              fake.consumers().find((x) => x.id === c.id),
              fake.keyAuths().filter((k) => k.consumer.id === c.id),
              fake.acls().filter((a) => a.consumer.id === c.id),
            ]) === before,
        };
      },
      otherGateway: () => make({ auth: v.auth }, "kong-other"),
      // The failure rules: the consumer exists when adding its key fails; the consumer's POST is
      // applied and answered 500 (a POST is not resent); setting the plan's rate-limiting plugin fails.
      faults: {
        createFailsAfterWrite: () => fake.inject({ status: 400, method: "POST", path: /\/key-auth$/ }),
        createAnswerLost: () => fake.inject({ status: 500, afterApply: true, method: "POST", path: /^\/consumers$/ }),
        updateAddFails: () => fake.inject({ status: 400, method: "PATCH", path: "/plugins/" }),
      },
      paging: { pageSize: 2 },
    });
  });
}
