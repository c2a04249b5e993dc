// providerConformance composes in groups, and reports what a provider lacks as skipped.
// The suite is driven here through its public interface with a recording `test`
// function and a stub provider that only declares capabilities: the skip paths
// end before any cloud call.
import { describe, expect, it } from "vitest";
import type { CredentialType, Provider, ProviderCapabilities } from "@credhook/core/provider";
import {
  CONFORMANCE_GROUPS,
  providerConformance,
  type ConformanceTestContext,
  type ProviderConformanceOptions,
} from "@credhook/provider-testkit";

interface Registered {
  name: string;
  fn: (ctx: ConformanceTestContext) => Promise<void>;
}

const baseOptions: ProviderConformanceOptions = {
  credentialTypes: ["API_KEY"],
  apis: [{ id: "orders", usagePlans: ["gold"] }],
  addPlan: { apiId: "orders", planId: "silver" },
  name: "stub",
};

function register(options: Partial<ProviderConformanceOptions>, capabilities: Partial<ProviderCapabilities> = {}) {
  const registered: Registered[] = [];
  let closed = 0;
  const factory = (type: CredentialType) =>
    ({
      capabilities: { credentialTypes: [type], importsApiKeyValue: false, readsBackSecret: false, ...capabilities },
      close: async () => {
        closed += 1;
      },
    }) as unknown as Provider;
  providerConformance((name, fn) => registered.push({ name, fn }), factory, { ...baseOptions, ...options });
  return { registered, closed: () => closed };
}

/** Runs one registered test with a context whose skip records its note (and throws, as vitest's does). */
async function run(test: Registered | undefined): Promise<{ skipped?: string; error?: unknown }> {
  if (!test) throw new Error("test not registered");
  const marker = new Error("skip");
  let skipped: string | undefined;
  try {
    await test.fn({
      skip: (note?: string) => {
        skipped = note ?? "";
        throw marker;
      },
    });
  } catch (err) {
    if (err !== marker) return { error: err };
  }
  return skipped === undefined ? {} : { skipped };
}

const named = (r: Registered[], part: string) => r.find((t) => t.name.includes(part));

describe("providerConformance groups", () => {
  it("registers every group by default, and only the chosen groups when asked", () => {
    const all = register({}).registered.map((t) => t.name);
    const some = register({ groups: ["create", "revoke"] }).registered.map((t) => t.name);
    expect(all.length).toBeGreaterThan(some.length);
    expect(some).toEqual(
      [
        "create returns a native id and a secret, and stores no secret in resources",
        "create imports the caller's API key value when the provider accepts one",
        "revoke removes the credential, and revoking again succeeds",
        "revoke of a credential that never existed succeeds ('gone')",
        "update after revoke throws NotFound (404)",
        "revoke reports 'gone' for a credential that is gone, and 'revoked' before",
      ].map((n) => `stub [API_KEY] ${n}`),
    );
    for (const n of some) expect(all).toContain(n);
    expect(some.some((n) => n.includes("health()"))).toBe(false);
    expect(register({ groups: ["basics"] }).registered.map((t) => t.name)).toEqual([
      "stub [API_KEY] declares the credential type it is tested for",
      "stub [API_KEY] health() resolves when the gateway is reachable",
    ]);
    expect(CONFORMANCE_GROUPS).toEqual([
      "basics",
      "create",
      "read-back",
      "update",
      "revoke",
      "find",
      "ownership",
      "invalid-reference",
    ]);
  });

  it("refuses a group it does not know", () => {
    expect(() => register({ groups: ["nope" as never] })).toThrow(/unknown group 'nope'/);
  });
});

describe("a capability the provider lacks is skipped with the reason, not passed", () => {
  it("importing an API key value", async () => {
    const { registered, closed } = register({ groups: ["create"] });
    const outcome = await run(named(registered, "imports the caller's API key value"));
    expect(outcome.skipped).toMatch(/importsApiKeyValue is false/);
    expect(closed()).toBe(1);
  });

  it("reading the secret back", async () => {
    const { registered } = register({ groups: ["read-back"] });
    expect((await run(named(registered, "readSecret returns"))).skipped).toMatch(/readsBackSecret is false/);
  });

  it("a readSecret without readsBackSecret still fails", async () => {
    const registered: Registered[] = [];
    const factory = () =>
      ({
        capabilities: { credentialTypes: ["API_KEY"], importsApiKeyValue: false, readsBackSecret: false },
        readSecret: async () => ({}),
        close: async () => {},
      }) as unknown as Provider;
    providerConformance((name, fn) => registered.push({ name, fn }), factory, {
      ...baseOptions,
      groups: ["read-back"],
    });
    expect(String((await run(registered[0])).error)).toMatch(/readsBackSecret is false but readSecret is implemented/);
  });

  it("hooks the options do not give: createForeign, otherGateway, unknownPlan", async () => {
    const { registered } = register({ groups: ["ownership", "invalid-reference"] });
    expect((await run(named(registered, "someone else created"))).skipped).toMatch(/no createForeign hook/);
    expect((await run(named(registered, "another gateway"))).skipped).toMatch(/no otherGateway hook/);
    expect((await run(named(registered, "create with an unknown usage plan"))).skipped).toMatch(/no unknownPlan/);
    expect((await run(named(registered, "update ADDing an unknown usage plan"))).skipped).toMatch(/no unknownPlan/);
  });

  it("a runner whose skip returns does not see the test pass", async () => {
    const { registered } = register({ groups: ["create"] });
    const test = named(registered, "imports the caller's API key value")!;
    await expect(test.fn({ skip: () => undefined })).rejects.toThrow(
      /skipped: the provider does not import API key values/,
    );
  });
});
