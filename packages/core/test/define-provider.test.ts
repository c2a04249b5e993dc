// defineProvider(): the options schema is the one source of the options' type and defaults.
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  applyOptionDefaults,
  defineProvider,
  type OptionsOf,
  type Provider,
  type ProviderContext,
  type ResolvedOptionsOf,
} from "../src/entry/provider.js";
import { memoryStateStore } from "../src/entry/provider-kit.js";
import { silentLogger } from "../src/index.js";

const schema = {
  type: "object",
  additionalProperties: false,
  required: ["region"],
  properties: {
    region: { type: "string", description: "region" },
    timeoutMs: { type: "integer", minimum: 1, default: 5000, description: "time-out (ms)" },
    mode: { enum: ["delete", "disable"], default: "delete" },
    limits: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: { perSecond: { type: "number", default: 10 }, burst: { type: "integer" } },
    },
    tags: { type: "array", items: { type: "string" } },
  },
} as const;

const context: ProviderContext = {
  gateway: "g",
  configPath: "gateways.g.options",
  credentialType: "API_KEY",
  logger: silentLogger,
  state: memoryStateStore(),
};
const provider = (seen: unknown): Provider & { seen: unknown } => ({
  seen,
  capabilities: { credentialTypes: ["API_KEY"], importsApiKeyValue: true, readsBackSecret: false },
  create: async () => ({ nativeId: "n", resources: {} }),
  update: async () => ({ resources: {} }),
  revoke: async () => "gone",
  health: async () => {},
});

describe("defineProvider", () => {
  it("types the options from the schema: defaulted options optional as written, present once resolved", () => {
    expectTypeOf<OptionsOf<typeof schema>>().toEqualTypeOf<{
      region: string;
      timeoutMs?: number;
      mode?: "delete" | "disable";
      limits?: { perSecond?: number; burst?: number };
      tags?: string[];
    }>();
    expectTypeOf<ResolvedOptionsOf<typeof schema>>().toEqualTypeOf<{
      region: string;
      timeoutMs: number;
      mode: "delete" | "disable";
      limits: { perSecond: number; burst?: number };
      tags?: string[];
    }>();
  });

  it("hands create the options with the schema's defaults applied (nested ones too), without changing the caller's object", async () => {
    const factory = defineProvider({
      type: "example",
      optionsSchema: schema,
      create: (options) => {
        expectTypeOf(options).toEqualTypeOf<ResolvedOptionsOf<typeof schema>>();
        expectTypeOf(options.timeoutMs).toEqualTypeOf<number>();
        return provider(options);
      },
    });
    expectTypeOf(factory.create).parameter(0).toEqualTypeOf<OptionsOf<typeof schema>>();
    const given = { region: "eu", limits: { burst: 3 } };
    const made = await factory.create(given, context);
    expect(made.seen).toEqual({ region: "eu", timeoutMs: 5000, mode: "delete", limits: { perSecond: 10, burst: 3 } });
    expect(given).toEqual({ region: "eu", limits: { burst: 3 } });
    expect((await factory.create({ region: "us", timeoutMs: 7, mode: "disable" }, context)).seen).toEqual({
      region: "us",
      timeoutMs: 7,
      mode: "disable",
      limits: { perSecond: 10 },
    });
  });

  it("is a ProviderFactory: its type and schema as given, and the context passed through", async () => {
    let seenContext: ProviderContext | undefined;
    const factory = defineProvider({
      type: "example",
      optionsSchema: schema,
      create: (options, ctx) => {
        seenContext = ctx;
        return provider(options);
      },
    });
    expect(factory.type).toBe("example");
    expect(factory.optionsSchema).toBe(schema);
    await factory.create({ region: "eu" }, context);
    expect(seenContext).toBe(context);
  });

  it("lets create's ConfigError-style throws through as they are (synchronously for a synchronous create)", () => {
    const factory = defineProvider({
      type: "example",
      optionsSchema: schema,
      create: () => {
        throw new Error("unusable");
      },
    });
    expect(() => factory.create({ region: "eu" }, context)).toThrow("unusable");
  });
});

describe("applyOptionDefaults", () => {
  it("fills what the schema defaults and leaves invalid options for the caller to refuse", () => {
    expect(applyOptionDefaults(schema, { region: "eu" })).toEqual({
      region: "eu",
      timeoutMs: 5000,
      mode: "delete",
      limits: { perSecond: 10 },
    });
    expect(applyOptionDefaults(schema, { region: 42 } as never)).toEqual({
      region: 42,
      timeoutMs: 5000,
      mode: "delete",
      limits: { perSecond: 10 },
    });
  });
});
