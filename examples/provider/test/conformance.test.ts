// packages/provider-<cloud>/test/conformance.test.ts
import { it } from "vitest";
import { silentLogger } from "@credhook/core";
import type { CredentialType } from "@credhook/core/provider";
import { memoryStateStore } from "@credhook/core/provider-kit";
import { providerConformance } from "@credhook/provider-testkit";
import factory from "../src/index.js";

// point the SDK at a local fake of your cloud here (`startFakeServer` from the testkit)
const options = { region: "eu-west-1" };
// what core passes `create` for one gateway
const context = (credentialType: CredentialType) => ({
  gateway: "mycloud",
  configPath: "gateways.mycloud.options",
  credentialType,
  logger: silentLogger,
  state: memoryStateStore(),
});

providerConformance(it, (credentialType) => factory.create(options, context(credentialType)), {
  apis: [{ id: "orders", usagePlans: ["gold"] }], // exist on the gateway (or its fake)
  addPlan: { apiId: "orders", planId: "silver" }, // exists, not in apis
  unknownPlan: { apiId: "orders", planId: "platinum" }, // does not exist
  // optional, to look into the cloud: inspect, listNativeIds, createForeign, otherGateway
  // optional, the failure rules and paging: faults: { createFailsAfterWrite, createAnswerLost, updateAddFails },
  // paging: { pageSize: 2 } (see the testkit's README)
});
