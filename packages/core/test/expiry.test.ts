/**
 * Credential expiry (docs/expiry.md): the config's policies (defaults, problems by YAML path), one credential's
 * expiry (the earliest of its gateways' and plans' policies, ties to the strongest action), and the expiry pass on the
 * in-memory store with an injected clock — each event once, the action at the expiry, a failed action retried.
 */
import { describe, expect, it } from "vitest";
import { MemoryCredentialStore, ScriptedProvider } from "@credhook/provider-testkit";
import {
  createRouter,
  credentialExpiry,
  type CredhookConfig,
  expiryState,
  Orchestrator,
  resolveExpiryPolicies,
  validateConfig,
} from "../src/index.js";
import { UpstreamError } from "../src/errors.js";
import type { CredentialRecord } from "../src/credential-record.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();

describe("expiry policies in the config", () => {
  const base = {
    server: { auth: { users: [{ username: "portal", password: "x" }] } },
    routes: [{ default: "aws-us" }],
  };
  const config = (expiry: unknown) =>
    validateConfig({ ...base, gateways: { "aws-us": { provider: "aws", credentialType: "API_KEY", expiry } } });

  it("defaults: no expiry; warnDays 7 (or maxAgeDays − 1), action notify; a plan takes its gateway's action", () => {
    const none = validateConfig({ ...base, gateways: { "aws-us": { provider: "aws", credentialType: "API_KEY" } } });
    expect(resolveExpiryPolicies(none.gateways)).toEqual({ policies: {}, problems: [] });
    expect(none.expiry).toEqual({ intervalS: 3600 });
    const c = config({
      maxAgeDays: 90,
      action: "disable",
      plans: { gold: { maxAgeDays: 3 }, silver: { maxAgeDays: 60, warnDays: 0, action: "revoke" } },
    });
    expect(resolveExpiryPolicies(c.gateways).policies).toEqual({
      "aws-us": {
        policy: { path: "gateways.aws-us.expiry", maxAgeDays: 90, warnDays: 7, action: "disable" },
        plans: {
          gold: { path: "gateways.aws-us.expiry.plans.gold", maxAgeDays: 3, warnDays: 2, action: "disable" },
          silver: { path: "gateways.aws-us.expiry.plans.silver", maxAgeDays: 60, warnDays: 0, action: "revoke" },
        },
      },
    });
  });

  it("refuses a warning not before the expiry, an unknown action and an empty block, naming the YAML path", () => {
    expect(() => config({ maxAgeDays: 10, warnDays: 10 })).toThrow(
      /gateways\.aws-us\.expiry\.warnDays \(10\) must be less than gateways\.aws-us\.expiry\.maxAgeDays \(10\)/,
    );
    expect(() => config({ maxAgeDays: 90, plans: { gold: { maxAgeDays: 5, warnDays: 9 } } })).toThrow(
      /gateways\.aws-us\.expiry\.plans\.gold\.warnDays \(9\) must be less than/,
    );
    expect(() => config({ maxAgeDays: 90, action: "delete" })).toThrow(/gateways\.aws-us\.expiry\.action/);
    expect(() => config({ maxAgeDays: 0 })).toThrow(/gateways\.aws-us\.expiry\.maxAgeDays/);
    expect(() => config({ plans: { gold: { warnDays: 1 } } })).toThrow(/gateways\.aws-us\.expiry\.plans\.gold/);
    expect(() => config({})).toThrow(/gateways\.aws-us\.expiry must set maxAgeDays, or plans/);
  });
});

describe("a credential's expiry", () => {
  const { policies } = resolveExpiryPolicies({
    east: {
      expiry: { maxAgeDays: 30, warnDays: 7, action: "notify", plans: { gold: { maxAgeDays: 10, action: "revoke" } } },
    },
    west: { expiry: { maxAgeDays: 10, warnDays: 3, action: "disable" } },
    north: { expiry: { plans: { bronze: { maxAgeDays: 45 } } } },
  } as Record<string, Pick<CredhookConfig["gateways"][string], "expiry">>);
  const rec = (
    apis: Array<[gateway: string, plans: string[]]>,
  ): Pick<CredentialRecord, "createdAt" | "apis" | "bindings"> => ({
    createdAt: iso(T0),
    apis: apis.map(([gateway, usagePlans], i) => ({ id: `api-${i}`, gateway, usagePlans })),
    bindings: [...new Set(apis.map(([g]) => g))].map((gateway) => ({
      gateway,
      nativeId: `${gateway}-1`,
      resources: {},
    })),
  });

  it("is the gateway's policy, or a plan's earlier one; counted from createdAt", () => {
    expect(credentialExpiry(rec([["east", []]]), policies)).toEqual({
      expiresAt: iso(T0 + 30 * DAY),
      warnAt: iso(T0 + 23 * DAY),
      policy: expect.objectContaining({ path: "gateways.east.expiry", action: "notify" }),
    });
    expect(credentialExpiry(rec([["east", ["gold"]]]), policies)?.policy.path).toBe("gateways.east.expiry.plans.gold");
    // A plan with a later expiry than its gateway's does not lengthen it.
    expect(
      credentialExpiry(
        rec([
          ["north", ["bronze"]],
          ["east", []],
        ]),
        policies,
      )?.expiresAt,
    ).toBe(iso(T0 + 30 * DAY));
    // A plan of another gateway's name does not apply here.
    expect(credentialExpiry(rec([["west", ["bronze"]]]), policies)?.policy.path).toBe("gateways.west.expiry");
  });

  it("is the earliest over every gateway; of equal ones the strongest action (revoke > disable > notify)", () => {
    expect(
      credentialExpiry(
        rec([
          ["east", []],
          ["west", []],
        ]),
        policies,
      )?.policy.path,
    ).toBe("gateways.west.expiry");
    // east's gold plan and west both expire after 10 days: revoke beats disable.
    const tie = credentialExpiry(
      rec([
        ["west", []],
        ["east", ["gold"]],
      ]),
      policies,
    );
    expect([tie?.expiresAt, tie?.policy.action, tie?.policy.path]).toEqual([
      iso(T0 + 10 * DAY),
      "revoke",
      "gateways.east.expiry.plans.gold",
    ]);
  });

  it("is none where no policy applies; its state follows the clock", () => {
    expect(
      credentialExpiry(
        rec([
          ["south", ["gold"]],
          ["north", []],
        ]),
        policies,
      ),
    ).toBeUndefined();
    const mark = { expiresAt: iso(T0 + 10 * DAY), warnAt: iso(T0 + 7 * DAY) };
    expect(expiryState(mark, iso(T0 + 7 * DAY - 1))).toBe("valid");
    expect(expiryState(mark, iso(T0 + 7 * DAY))).toBe("expiring");
    expect(expiryState(mark, iso(T0 + 10 * DAY))).toBe("expired");
    expect(expiryState(undefined, iso(T0))).toBeUndefined();
  });
});

/** A scripted gateway that can turn a key off and on (ScriptedProvider.setEnabled, declared). */
const disablingGateway = (gateway: string) =>
  new ScriptedProvider({ gateway, capabilities: { disables: ["API_KEY"] } });
/** The native ids `p` holds turned off. */
const disabledIds = (p: ScriptedProvider) =>
  new Set(
    p
      .marked()
      .filter((r) => r.enabled === false)
      .map((r) => r.nativeId),
  );

describe("the expiry pass", () => {
  const setUp = () => {
    let now = T0;
    const store = new MemoryCredentialStore();
    const east = disablingGateway("east");
    const west = disablingGateway("west");
    const plain = new ScriptedProvider({ gateway: "plain" }); // cannot disable
    const { policies } = resolveExpiryPolicies({
      east: {
        expiry: {
          maxAgeDays: 30,
          warnDays: 7,
          action: "disable",
          plans: { gold: { maxAgeDays: 10, warnDays: 2, action: "revoke" } },
        },
      },
      plain: { expiry: { maxAgeDays: 30, warnDays: 7, action: "disable" } },
      west: { expiry: { maxAgeDays: 20, warnDays: 0 } },
    });
    const orchestrator = new Orchestrator({
      gateways: new Map(
        [east, west, plain].map((p) => [
          p.gateway,
          { name: p.gateway, providerType: "scripted", credentialType: "API_KEY" as const, provider: p },
        ]),
      ),
      router: createRouter([
        { apis: ["east-*"], gateway: "east" },
        { apis: ["plain-*"], gateway: "plain" },
        { default: "west" },
      ]),
      store,
      compensationAttempts: 1,
      expiry: policies,
      now: () => now,
    });
    const create = async (appName: string, apis: Array<{ id: string; usagePlans?: Array<{ id: string }> }>) =>
      (await orchestrator.create({ appName, developer: "ops@example.com", apis })).credentialId!;
    const events = async (credentialId: string) =>
      (await store.outbox.list()).filter((e) => e.event.data.credentialId === credentialId).map((e) => e.event);
    const types = async (credentialId: string) => (await events(credentialId)).map((e) => e.type);
    return {
      store,
      east,
      west,
      plain,
      orchestrator,
      create,
      events,
      types,
      at: (days: number) => {
        now = T0 + days * DAY;
      },
    };
  };
  const quiet = { warned: 0, expired: 0, acted: 0, failed: 0 };

  it("warns once at the warning time, expires once at the expiry and disables everywhere; a second pass changes nothing", async () => {
    const t = setUp();
    try {
      const id = await t.create("Ledger", [{ id: "east-1" }]);
      t.at(23 - 1 / 24);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ran: true, ...quiet, expiring: 0 });
      expect(await t.types(id)).toEqual(["credential.created"]);
      // The mark is on the record from the first pass, with no event.
      expect((await t.store.get(id))?.expiry).toEqual({
        expiresAt: iso(T0 + 30 * DAY),
        warnAt: iso(T0 + 23 * DAY),
        action: "disable",
        policy: "gateways.east.expiry",
      });

      t.at(23);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, warned: 1, expiring: 1 });
      t.at(29);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, expiring: 1 });
      const expiring = (await t.events(id)).at(-1)!;
      expect([expiring.type, expiring.time]).toEqual(["credential.expiring", iso(T0 + 23 * DAY)]);
      expect(expiring.data.expiry).toEqual({
        expiresAt: iso(T0 + 30 * DAY),
        action: "disable",
        policy: "gateways.east.expiry",
        maxAgeDays: 30,
        warnDays: 7,
      });
      expect(disabledIds(t.east).size).toBe(0);

      t.at(30);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, expired: 1, acted: 1, expiredLive: 1 });
      expect(await t.types(id)).toEqual([
        "credential.created",
        "credential.expiring",
        "credential.expired",
        "credential.disabled",
      ]);
      const [expired, disabled] = (await t.events(id)).slice(2);
      expect(expired!.data).toMatchObject({ reason: "expired", expiry: { action: "disable" } });
      expect(disabled!.data.reason).toBe("expired");
      expect(disabledIds(t.east)).toEqual(new Set([(await t.store.get(id))!.publicId]));
      const rec = (await t.store.get(id))!;
      expect(rec.disabled).toMatchObject({ reason: "expired", gateways: ["east"] });
      expect(rec.expiry).toMatchObject({ expiredAt: iso(T0 + 30 * DAY), actedAt: iso(T0 + 30 * DAY) });

      t.at(31);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, expiredLive: 1 });
      expect(await t.types(id)).toHaveLength(4);
      // An operator's enable of the expired credential stands: the action is not repeated.
      await t.orchestrator.enable(id);
      expect(await t.orchestrator.expiryPass()).toMatchObject(quiet);
      expect(disabledIds(t.east).size).toBe(0);
    } finally {
      await t.orchestrator.close();
    }
  });

  it("reads only records old enough for something to be due, and re-reads under the lock only one with a write due", async () => {
    const t = setUp();
    try {
      const old = await t.create("Old", [{ id: "east-1" }]);
      t.at(20);
      const young = await t.create("Young", [{ id: "east-1" }]);
      const walked: Array<{ createdBefore?: string; ids: string[] }> = [];
      const listPage = t.store.listPage.bind(t.store);
      t.store.listPage = async (query) => {
        const page = await listPage(query);
        walked.push({ createdBefore: query?.createdBefore, ids: page.records.map((r) => r.id) });
        return page;
      };
      let gets = 0;
      const get = t.store.get.bind(t.store);
      t.store.get = (id) => ((gets += 1), get(id));
      t.at(25); // Old warned (23 days); Young is 5 days old, under the shortest warning age (gold: 10 − 2 = 8 days)
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, warned: 1, expiring: 1 });
      expect(walked).toEqual([{ createdBefore: iso(T0 + 17 * DAY + 1), ids: [old] }]);
      expect(gets).toBe(1); // Old, read again under its app's lock for its warning
      walked.length = 0;
      gets = 0;
      t.at(26); // nothing to write: judged from the page, no lock and no read
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, expiring: 1 });
      expect(walked.flatMap((w) => w.ids)).toEqual([old]);
      expect(gets).toBe(0);
      expect((await t.store.get(young))?.expiry).toBeUndefined(); // never walked yet
    } finally {
      await t.orchestrator.close();
    }
  });

  it("a plan's revoke policy wins over its gateway's: off every gateway and the record deleted, reason expired", async () => {
    const t = setUp();
    try {
      const id = await t.create("Gold", [{ id: "east-1", usagePlans: [{ id: "gold" }] }, { id: "west-1" }]);
      t.at(8);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, warned: 1 });
      t.at(10);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, expired: 1, acted: 1, expiredLive: 1 });
      expect(await t.types(id)).toEqual([
        "credential.created",
        "credential.expiring",
        "credential.expired",
        "credential.revoked",
      ]);
      expect((await t.events(id)).at(-1)!.data.reason).toBe("expired");
      expect(await t.store.get(id)).toBeUndefined();
      expect([t.east.marked(), t.west.marked()]).toEqual([[], []]);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, expiredLive: 0 });
    } finally {
      await t.orchestrator.close();
    }
  });

  it("disable on a gateway that cannot disable revokes instead; a failed action is retried by the next pass", async () => {
    const t = setUp();
    try {
      const cannot = await t.create("Plain", [{ id: "plain-1" }, { id: "east-1" }]);
      const flaky = await t.create("Flaky", [{ id: "east-2" }]);
      t.at(40); // first seen past the expiry: no late warning
      t.east.fail({ op: "setEnabled", when: "before", error: new UpstreamError("east is down") }); // Flaky's disable fails once (Plain's is refused before any gateway call: plain cannot disable)
      expect(await t.orchestrator.expiryPass()).toMatchObject({ warned: 0, expired: 2, acted: 1, failed: 1 });
      expect(await t.types(cannot)).toEqual(["credential.created", "credential.expired", "credential.revoked"]);
      expect(await t.store.get(cannot)).toBeUndefined();
      expect([t.plain.marked(), t.east.marked().map((r) => r.appName)]).toEqual([[], ["Flaky"]]);
      expect((await t.store.get(flaky))?.expiry).toMatchObject({ expiredAt: iso(T0 + 40 * DAY) });
      expect((await t.store.get(flaky))?.expiry?.actedAt).toBeUndefined();
      expect(disabledIds(t.east).size).toBe(0);
      t.at(41);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ expired: 0, failed: 0, acted: 1 });
      expect((await t.types(flaky)).filter((x) => x === "credential.expired")).toHaveLength(1);
      expect((await t.store.get(flaky))?.disabled).toMatchObject({ reason: "expired", gateways: ["east"] });
      expect(disabledIds(t.east).size).toBe(1);
    } finally {
      await t.orchestrator.close();
    }
  });

  it("notify: the events only, and no warning with warnDays 0", async () => {
    const t = setUp();
    try {
      const west = await t.create("West", [{ id: "west-1" }]);
      t.at(19);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, expiring: 0 });
      t.at(20);
      expect(await t.orchestrator.expiryPass()).toMatchObject({ ...quiet, expired: 1, expiredLive: 1 });
      expect(await t.types(west)).toEqual(["credential.created", "credential.expired"]);
      expect((await t.store.get(west))?.expiry).toMatchObject({ action: "notify", actedAt: iso(T0 + 20 * DAY) });
      expect(t.west.marked()).toHaveLength(1);
      expect(await t.orchestrator.expiryPass()).toMatchObject(quiet);
    } finally {
      await t.orchestrator.close();
    }
  });
});
