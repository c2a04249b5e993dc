// defineProvider(): the options schema is the one source of the options' type and defaults.
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  applyOptionDefaults,
  defineProvider,
  type OptionsOf,
  type Provider,
  type ProviderContext,
  type ResolvedOptionsOf,
  resolveOptions,
} from "../src/entry/provider.js";
import { memoryStateStore } from "../src/entry/provider-kit.js";
import { ConfigError } from "../src/entry/errors.js";
import { type CredhookConfig, loadGateways, silentLogger } from "../src/index.js";

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

describe("defaults applied once", () => {
  it("resolveOptions copies, defaults and checks the options; what it made comes back as it is", () => {
    const given = { region: "eu", timeoutMs: "7" };
    const first = resolveOptions<Record<string, unknown>>(schema, given, { coerceTypes: true });
    expect(first.options).toEqual({ region: "eu", timeoutMs: 7, mode: "delete", limits: { perSecond: 10 } });
    expect(first.errors).toEqual([]);
    expect(given).toEqual({ region: "eu", timeoutMs: "7" });
    const again = resolveOptions(schema, first.options);
    expect(again.options).toBe(first.options);
    // against another schema they are options as written again
    expect(resolveOptions({ ...schema }, first.options).options).not.toBe(first.options);
    expect(resolveOptions(schema, { region: 1, mode: "x" }).errors.map((e) => e.instancePath)).toEqual([
      "/region",
      "/mode",
    ]);
  });

  it("core's loader (check-config and serve) resolves a gateway's options, and create gets that very object", async () => {
    const seen: unknown[] = [];
    const defined = defineProvider({
      type: "example",
      optionsSchema: schema,
      create: (options) => {
        seen.push(options);
        return provider(options);
      },
    });
    // what the loader hands the package's factory, before defineProvider's create runs
    const handed: unknown[] = [];
    const factory = {
      ...defined,
      create: (options: OptionsOf<typeof schema>, ctx: ProviderContext) => {
        handed.push(options);
        return defined.create(options, ctx);
      },
    };
    const gateways = {
      g: { provider: "example-pkg", credentialType: "API_KEY", options: { region: "eu", timeoutMs: "9" } },
    };
    await loadGateways({ gateways } as unknown as CredhookConfig, {
      importModule: async () => ({ default: factory }),
      logger: silentLogger,
      stateFor: () => memoryStateStore(),
    });
    expect(seen).toEqual([{ region: "eu", timeoutMs: 9, mode: "delete", limits: { perSecond: 10 } }]);
    expect(seen[0]).toBe(handed[0]); // resolved by the loader, not a second time by the factory
  });
});

describe("the scaffold every provider's index repeated: credential types and option problems", () => {
  const factory = (created: string[]) =>
    defineProvider({
      type: "example",
      optionsSchema: schema,
      credentialTypes: ["API_KEY"],
      problems: (options, ctx) => (options.timeoutMs > 1000 ? [`${ctx.configPath}.timeoutMs: above 1000 ms`] : []),
      create: (options) => {
        created.push(options.region);
        return provider(options);
      },
    });

  it("refuses another credential type and every problem in one ConfigError naming the YAML paths, before create runs", () => {
    const created: string[] = [];
    let err: unknown;
    try {
      factory(created).create({ region: "eu" }, { ...context, credentialType: "CLIENT_CREDENTIALS" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).messages).toEqual([
      "[provider-example] gateways.g.credentialType: provider 'example' issues API_KEY credentials only, not CLIENT_CREDENTIALS",
      "[provider-example] gateways.g.options.timeoutMs: above 1000 ms",
    ]);
    expect(created).toEqual([]);
  });

  it("builds the provider when the type is declared and the options have no problem", async () => {
    const created: string[] = [];
    await factory(created).create({ region: "eu", timeoutMs: 10 }, context);
    expect(created).toEqual(["eu"]);
  });
});
