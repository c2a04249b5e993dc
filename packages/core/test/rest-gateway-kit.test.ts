// The provider kit's pieces for REST gateways, through core's public exports: credhook's mark and the
// ownership rule, usage plans defined in options (merge, unknown plans, refused merges), the "nothing to
// write" check, and the options every REST provider has. (MarkedResourceProvider and RestGatewayProvider
// run under the conformance suite: the testkit's minimal provider, provider-kong, provider-apigee.)
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  attributeMarker,
  definedPlansOf,
  GatewayErrors,
  holds,
  keyValueMarker,
  mergeLimits,
  ownsMark,
  type PlanRule,
  planLimitsOf,
  refusedPairs,
  restClientOptions,
  restClientSettings,
  tagMarker,
  windowPlansOption,
} from "@credhook/core/provider-kit";
import { type OptionsOf, type ResolvedOptionsOf, resolveOptions } from "@credhook/core/provider";

const id = "0F0E4C6A-2B3D-4E5F-8A9B-0C1D2E3F4A5B";
const lower = id.toLowerCase();

describe("credhook's mark and the ownership rule", () => {
  it("as tags: written, read back per gateway and credential, and added to a foreign entity's tags", () => {
    const m = tagMarker("kong eu");
    expect(m.mark(id)).toEqual(["credhook", "credhook-gw:kong%20eu", `credhook-cred:${lower}`]);
    expect(m.gatewayMark()).toEqual(["credhook-gw:kong%20eu"]);
    expect(m.credentialOf(m.mark(id))).toBe(lower);
    expect(m.credentialOf(["credhook-gw:kong%20eu"])).toBe("");
    expect(m.credentialOf(tagMarker("other").mark(id))).toBeUndefined();
    expect(m.credentialOf(null)).toBeUndefined();
    expect(m.withMark(["team-b", "credhook"], id)).toEqual(["team-b", "credhook", ...m.mark(id).slice(1)]);
    expect(m.anyMarkOf(["x", ...tagMarker("other").mark(id)])).toBe("credhook-gw:other");
    expect(m.anyMarkOf(["credhook", "x"])).toBeUndefined();
  });

  it("as name/value attributes and as a tag map, under the default names or the cloud's", () => {
    const a = attributeMarker("apigee-eu");
    expect(a.mark(id)).toEqual([
      { name: "credhook-gateway", value: "apigee-eu" },
      { name: "credhook-credential", value: lower },
    ]);
    expect(a.credentialOf([{ name: "team", value: "b" }, ...a.mark(id)])).toBe(lower);
    expect(a.credentialOf(attributeMarker("apigee-us").mark(id))).toBeUndefined();
    expect(a.withMark([{ name: "team", value: "b" }], id)).toEqual([{ name: "team", value: "b" }, ...a.mark(id)]);
    expect(a.anyMarkOf([{ name: "team", value: "b" }, ...attributeMarker("x").mark(id)])).toBe("credhook-gateway=x");
    const k = keyValueMarker("aws-us", { gateway: "credhook:gateway", credential: "credhook:credential-id" });
    expect(k.mark(id)).toEqual({ "credhook:gateway": "aws-us", "credhook:credential-id": lower });
    expect(k.gatewayMark()).toEqual({ "credhook:gateway": "aws-us" });
    expect(k.credentialOf({ "credhook:gateway": "aws-us" })).toBe("");
    expect(k.withMark({ team: "b" }, id)).toEqual({ team: "b", ...k.mark(id) });
    expect(k.anyMarkOf({ team: "b" })).toBeUndefined();
  });

  it("owns what carries this gateway's mark and, unless the reference's credential id is empty, that credential's", () => {
    expect(ownsMark(lower, id)).toBe(true);
    expect(ownsMark(lower, "")).toBe(true);
    expect(ownsMark("", "")).toBe(true);
    expect(ownsMark("", id)).toBe(false);
    expect(ownsMark("another", id)).toBe(false);
    expect(ownsMark(undefined, "")).toBe(false);
  });
});

describe("usage plans defined in options", () => {
  const windows = ["second", "minute", "hour"] as const;
  type W = (typeof windows)[number];
  /** A toy rule: a longer window never allows fewer requests than a shorter one. */
  const rule: PlanRule<W> = {
    windows,
    refusal: (l, source) => {
      const bad = windows.flatMap((s, i) =>
        windows
          .slice(i + 1)
          .filter((g) => (l[g] ?? Number.POSITIVE_INFINITY) < (l[s] ?? 0))
          .map((g) => `${s}>${g}`),
      );
      return bad.length > 0 ? `${bad.join(",")}${source ? ` from ${JSON.stringify(source)}` : ""}` : undefined;
    },
    rule: "the toy rule",
  };
  const defs = { fast: { second: 50 }, slow: { minute: 30, hour: 1000 }, gold: { minute: 600, hour: 20000 } };
  const errors = new GatewayErrors("toy");
  const apis = (...plans: string[]) => [
    { id: "a", usagePlans: plans },
    { id: "b", usagePlans: [] },
  ];

  it("are an app's plans, each once and sorted; an unknown one is a 422 naming what the option defines", () => {
    expect(definedPlansOf([...apis("slow", "fast"), { id: "c", usagePlans: ["fast"] }], defs, errors)).toEqual([
      "fast",
      "slow",
    ]);
    expect(() => definedPlansOf(apis("platinum"), defs, errors)).toThrow(
      expect.objectContaining({
        status: 422,
        message:
          "[gateway toy] usage plan 'platinum' is not defined in this gateway's 'plans' option; known: fast, slow, gold",
      }),
    );
  });

  it("merge into each window's largest limit, each from the first plan that sets it", () => {
    expect(mergeLimits(["gold", "slow", "fast"], defs, windows)).toEqual({
      limits: { second: 50, minute: 600, hour: 20000 },
      source: { second: "fast", minute: "gold", hour: "gold" },
    });
    expect(planLimitsOf(apis(), defs, rule, errors)).toEqual({ plans: [] });
    expect(planLimitsOf(apis("gold", "slow"), defs, rule, errors)).toEqual({
      plans: ["gold", "slow"],
      limits: { minute: 600, hour: 20000 },
    });
  });

  it("refuse, before any write, plans each accepted whose merge the gateway refuses (422), and list such pairs", () => {
    expect(() => planLimitsOf(apis("fast", "slow"), defs, rule, errors)).toThrow(
      expect.objectContaining({
        status: 422,
        code: "POLICY_VIOLATION",
        message: `[gateway toy] usage plans 'fast', 'slow' cannot be combined on this gateway: merged (each window the largest limit of the plans) they give second>minute from {"second":"fast","minute":"slow","hour":"slow"}, and the toy rule; give the app plans that fit together, or change the gateway's 'plans' option`,
      }),
    );
    expect(refusedPairs(defs, rule)).toEqual([
      ["fast", "slow", 'second>minute from {"second":"fast","minute":"slow","hour":"slow"}'],
    ]);
  });

  it("have a schema option: plan id → requests per window, typed from it", () => {
    const schema = {
      type: "object",
      additionalProperties: false,
      properties: { plans: windowPlansOption(windows, "Plans.") },
    } as const;
    expectTypeOf<ResolvedOptionsOf<typeof schema>["plans"]>().toEqualTypeOf<{
      [plan: string]: { second?: number; minute?: number; hour?: number };
    }>();
    expect(resolveOptions(schema, {}).options).toEqual({ plans: {} });
    expect(resolveOptions(schema, { plans: { gold: { minute: 1 } } }).errors).toEqual([]);
    expect(resolveOptions(schema, { plans: { gold: {} } }).errors).not.toEqual([]);
    expect(resolveOptions(schema, { plans: { gold: { week: 1 } } }).errors).not.toEqual([]);
  });
});

describe("holds: a write the entity already holds changes nothing", () => {
  const plugin = { id: "p", config: { second: null, minute: 100, policy: "local", extra: 1 }, tags: ["b", "a"] };
  it("compares the written fields only (null and absent alike), arrays as sets", () => {
    expect(
      holds(plugin, { config: { minute: 100, second: null, hour: null, policy: "local" }, tags: ["a", "b"] }),
    ).toBe(true);
    expect(holds(plugin, { config: { minute: 101 } })).toBe(false);
    expect(holds(plugin, { tags: ["a"] })).toBe(false);
    expect(holds(plugin, { tags: ["a", "b", "c"] })).toBe(false);
    expect(holds({ tags: null }, { tags: ["a"] })).toBe(false);
  });
});

describe("the options every REST provider has", () => {
  const schema = {
    type: "object",
    additionalProperties: false,
    properties: {
      ...restClientOptions({
        call: "API call",
        timeoutMs: 5000,
        rateLimit: { requests: 0, windowMs: 1000, description: "Client-side limit." },
      }),
    },
  } as const;

  it("are typed from the fragment, defaulted once, bounded, and hand the client its settings", () => {
    expectTypeOf<OptionsOf<typeof schema>>().toEqualTypeOf<{
      timeoutMs?: number;
      maxRetries?: number;
      maxRetryAfterS?: number;
      rateLimit?: { requests?: number; windowMs?: number };
      healthCacheMs?: number;
    }>();
    const { options, errors } = resolveOptions<ResolvedOptionsOf<typeof schema>>(schema, {
      rateLimit: { requests: 5 },
    });
    expect(errors).toEqual([]);
    expect(options).toEqual({
      timeoutMs: 5000,
      maxRetries: 2,
      maxRetryAfterS: 10,
      rateLimit: { requests: 5, windowMs: 1000 },
      healthCacheMs: 30000,
    });
    expect(restClientSettings(options)).toEqual({
      timeoutMs: 5000,
      maxRetries: 2,
      maxRetryAfterS: 10,
      rateLimit: { requests: 5, windowMs: 1000 },
    });
    expect(schema.properties.timeoutMs.description).toBe(
      "Time limit of one API call (ms), retries included; exceeded: 504. Default 5000.",
    );
    expect(resolveOptions(schema, { timeoutMs: 99 }).errors).not.toEqual([]);
  });
});
