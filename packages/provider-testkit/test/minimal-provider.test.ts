// The minimal provider of CONTRIBUTING.md (examples/minimal-provider.ts) passes the
// conformance suite with its ownership checks on: effects seen in its "cloud", nothing left
// behind, foreign keys and another gateway's keys left alone. (Its create is one write and its
// cloud's lists have no pages: the failure rules and paging run in failure-rules.test.ts.) Its options come from one
// schema (defineProvider): core's loader checks them with it and applies its defaults.
import { describe, expect, expectTypeOf, it } from "vitest";
import { ConfigError } from "@credhook/core/errors";
import { loadGateways, silentLogger, type CredhookConfig } from "@credhook/core";
import { memoryStateStore } from "@credhook/core/provider-kit";
import type { CredentialType } from "@credhook/core/provider";
import exampleProviderFactory, { accounts, type ExampleOptions } from "../examples/minimal-provider.js";
import { providerConformance } from "../src/index.js";

const options = { account: "conformance", plans: ["gold", "silver", "bronze"] };
const make = (gateway: string) => (credentialType: CredentialType) =>
  exampleProviderFactory.create(options, {
    gateway,
    configPath: `gateways.${gateway}.options`,
    credentialType,
    logger: silentLogger,
    state: memoryStateStore(),
  });
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
    const key = await cloud().createKey({
      value: "made-by-hand-0123456789",
      name: "by hand",
      plans: ["gold"],
      tags: {},
    });
    return { nativeId: key.id, exists: async () => JSON.stringify(cloud().keys.get(key.id)) === JSON.stringify(key) };
  },
  otherGateway: make("example-other"),
});

describe("the minimal provider's options, from its one schema", () => {
  /** Loads one `example` gateway with `options` the way credhook start-up does. */
  const load = (options: Record<string, unknown>) =>
    loadGateways(
      {
        gateways: { ex: { provider: "example-package", credentialType: "API_KEY", options } },
      } as unknown as CredhookConfig,
      {
        importModule: async () => ({ default: exampleProviderFactory }),
        logger: silentLogger,
        stateFor: () => memoryStateStore(),
      },
    );
  const keyOf = async (options: Record<string, unknown>) => {
    const provider = (await load(options)).get("ex")!.provider;
    return (
      await provider.create({
        credentialId: "c1",
        credentialType: "API_KEY",
        app: { appName: "a", developer: "d" },
        apis: [{ id: "orders", usagePlans: [] }],
      })
    ).apiKey!;
  };

  it("types them from the schema: required options required, defaulted ones optional", () => {
    expectTypeOf<ExampleOptions>().toEqualTypeOf<{ account: string; plans: string[]; keyBytes?: number }>();
  });

  it("applies the schema's default (24 random bytes: 32 characters) and honours the option", async () => {
    expect(await keyOf({ account: "options", plans: [] })).toMatch(/^[\w-]{32}$/);
    expect(await keyOf({ account: "options", plans: [], keyBytes: 48 })).toMatch(/^[\w-]{64}$/);
  });

  it("refuses options the schema refuses, naming the YAML path", async () => {
    await expect(load({ account: "options", plans: [], keyBytes: 8 })).rejects.toBeInstanceOf(ConfigError);
    await expect(load({ plans: [] })).rejects.toMatchObject({
      messages: [expect.stringContaining("gateways.ex.options")],
    });
  });
});
