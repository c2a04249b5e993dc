// providerConformance composes in groups, and reports what a provider lacks as skipped.
// The suite is driven here through its public interface with a recording `test`
// function and a stub provider that only declares capabilities: the skip paths
// end before any cloud call.
import { describe, expect, it } from "vitest";
import type { CredentialType, Provider, ProviderCapabilities } from "@credhook/core/provider";
import { CONFORMANCE_GROUPS, providerConformance, type ProviderConformanceOptions } from "@credhook/provider-testkit";
import { named, type Registered, run } from "./recorded.js";

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
        "setEnabled turns a credential off and on where declared; another credential's id is 'not-owned'",
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
      "failure-rules",
      "paging",
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

  it("faults and paging the options do not give", async () => {
    const { registered } = register({ groups: ["failure-rules", "paging"] });
    expect((await run(named(registered, "failing after an accepted write"))).skipped).toMatch(
      /no faults.createFailsAfterWrite hook/,
    );
    expect((await run(named(registered, "answer is lost"))).skipped).toMatch(/no faults.createAnswerLost hook/);
    expect((await run(named(registered, "adds before it removes"))).skipped).toMatch(/no faults.updateAddFails hook/);
    expect((await run(named(registered, "beyond a list's first page"))).skipped).toMatch(/no paging option/);
  });

  it("refuses a page size the suite cannot afford", () => {
    expect(() => register({ paging: { pageSize: 100 } })).toThrow(/pageSize must be an integer from 1 to 20/);
  });

  it("a runner whose skip returns does not see the test pass", async () => {
    const { registered } = register({ groups: ["create"] });
    const test = named(registered, "imports the caller's API key value")!;
    await expect(test.fn({ skip: () => undefined })).rejects.toThrow(
      /skipped: the provider does not import API key values/,
    );
  });
});

describe("the credential types tested follow the provider's declared capabilities", () => {
  const apiKeyOnly = { credentialTypes: ["API_KEY" as CredentialType] };

  it("by default every type is registered, and a type the provider does not declare is skipped, not failed", async () => {
    const { registered, closed } = register({ credentialTypes: undefined, groups: ["basics", "create"] }, apiKeyOnly);
    const client = registered.filter((t) => t.name.includes("[CLIENT_CREDENTIALS]"));
    expect(client.map((t) => t.name)).toContain(
      "stub [CLIENT_CREDENTIALS] health() resolves when the gateway is reachable",
    );
    for (const t of client)
      expect((await run(t)).skipped).toMatch(
        /does not declare CLIENT_CREDENTIALS \(capabilities.credentialTypes: \["API_KEY"\]\)/,
      );
    expect(closed()).toBe(client.length);
    expect(await run(named(registered, "[API_KEY] declares the credential type"))).toEqual({});
  });

  it("credentialTypes narrows: only the types it names are registered", () => {
    const names = register({ credentialTypes: ["API_KEY"] }).registered.map((t) => t.name);
    expect(names.length).toBeGreaterThan(0);
    expect(names.every((n) => n.startsWith("stub [API_KEY]"))).toBe(true);
  });

  it("credentialTypes never widens: a type the provider does not declare fails", async () => {
    const { registered } = register({ credentialTypes: ["CLIENT_CREDENTIALS"], groups: ["basics"] }, apiKeyOnly);
    expect(String((await run(registered[0])).error)).toMatch(
      /options.credentialTypes names CLIENT_CREDENTIALS, but capabilities.credentialTypes is \["API_KEY"\]/,
    );
  });
});
