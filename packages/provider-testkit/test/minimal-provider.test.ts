// The minimal provider of CONTRIBUTING.md (examples/minimal-provider.ts) passes the whole
// conformance suite, with every optional check on: effects seen in its "cloud", nothing left
// behind, foreign keys and another gateway's keys left alone.
import { it } from "vitest";
import { silentLogger, memoryStateStore, type CredentialType } from "@credhook/core";
import exampleProviderFactory, { accounts } from "../examples/minimal-provider.js";
import { providerConformance } from "../src/index.js";

const options = { account: "conformance", plans: ["gold", "silver", "bronze"] };
const make = (gateway: string) => (credentialType: CredentialType) =>
  exampleProviderFactory.create(options, { gateway, configPath: `gateways.${gateway}.options`, credentialType, logger: silentLogger, state: memoryStateStore() });
const cloud = () => accounts.get(options.account)!;

providerConformance(it, make("example"), {
  credentialTypes: ["API_KEY"],
  apis: [{ id: "orders", usagePlans: ["gold"] }],
  addPlan: { apiId: "orders", planId: "silver" },
  unknownPlan: { apiId: "orders", planId: "platinum" },
  inspect: async (ref) => {
    const key = cloud().keys.get(ref.nativeId);
    return { live: key !== undefined, usagePlans: key?.plans ?? [] };
  },
  listNativeIds: async () => [...cloud().keys.keys()],
  createForeign: async () => {
    const key = await cloud().createKey({ value: "made-by-hand-0123456789", name: "by hand", plans: ["gold"], tags: {} });
    return { nativeId: key.id, exists: async () => JSON.stringify(cloud().keys.get(key.id)) === JSON.stringify(key) };
  },
  otherGateway: make("example-other"),
});
