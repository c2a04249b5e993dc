/**
 * The orchestrator on its own: an in-memory store and scripted gateways from
 * the testkit, no HTTP. Planning is tested with capabilities alone; the
 * operations with a cloud's unpleasant answers scripted call by call.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryCredentialStore, ScriptedProvider } from "@credhook/provider-testkit";
import { createRouter, Orchestrator } from "../src/index.js";
import { InvalidReference, PolicyViolation, Unroutable } from "../src/entry/errors.js";
import { planCreate, planUpdate } from "../src/orchestration/plan.js";
import { type CredentialRecord, type CredentialStore, PAGE_LIMIT_MAX } from "../src/entry/store.js";
import type { GatewayTopology } from "../src/orchestration/context.js";
import type { ProviderCapabilities } from "../src/entry/provider.js";

const base: ProviderCapabilities = { credentialTypes: ["API_KEY"], importsApiKeyValue: true, readsBackSecret: true };

/** A topology from capabilities alone: gateway name → type and capabilities; API id prefix before '-' routes. */
function topology(
  gateways: Record<
    string,
    { credentialType?: "API_KEY" | "CLIENT_CREDENTIALS"; capabilities?: Partial<ProviderCapabilities> }
  >,
): GatewayTopology {
  return {
    resolveAll: (ids) => {
      const missing = ids.filter((id) => !(id.split("-")[0]! in gateways));
      if (missing.length > 0) throw new Unroutable(`no route matches ${missing.join(", ")}`);
      return new Map(ids.map((id) => [id, id.split("-")[0]!]));
    },
    describe: (g) => ({
      credentialType: gateways[g]!.credentialType ?? "API_KEY",
      capabilities: { ...base, ...gateways[g]!.capabilities },
    }),
  };
}
const req = (...ids: string[]) => ({
  appName: "App",
  developer: "d@example.com",
  apis: ids.map((id) => ({ id, usagePlans: [{ id: "gold" }] })),
});

describe("planCreate (capabilities alone)", () => {
  it("routes, merges duplicate ids and plans, groups by gateway in first-seen order", () => {
    const plan = planCreate(topology({ a: {}, b: {} }), {
      ...req("b-1", "a-1"),
      apis: [
        { id: "b-1", usagePlans: [{ id: "p" }] },
        { id: "a-1" },
        { id: "b-1", usagePlans: [{ id: "q" }, { id: "p" }] },
      ],
    });
    expect([...plan.groups.keys()]).toEqual(["b", "a"]);
    expect(plan.groups.get("b")).toEqual([{ id: "b-1", usagePlans: ["p", "q"] }]);
    expect(plan).toMatchObject({ credentialType: "API_KEY", appKey: "app:d@example.com/App" });
    expect(plan.generator).toBeUndefined();
  });
  it("puts the one key-generating gateway first as the generator", () => {
    const plan = planCreate(topology({ a: {}, g: { capabilities: { importsApiKeyValue: false } } }), req("a-1", "g-1"));
    expect(plan.generator).toBe("g");
  });
  it("raises each 422 of the multi-gateway rules as a PolicyViolation, and an unrouted id as Unroutable", () => {
    const t = topology({
      a: {},
      c: { credentialType: "CLIENT_CREDENTIALS" },
      d: { credentialType: "CLIENT_CREDENTIALS" },
      g: { capabilities: { importsApiKeyValue: false, generatedApiKeyFormat: { characters: "AZaz09-_", length: 39 } } },
      h: { capabilities: { importsApiKeyValue: false } },
      strict: { capabilities: { apiKeyValuePattern: "^[A-Za-z0-9]+$" } },
    });
    expect(() => planCreate(t, req("a-1", "c-1"))).toThrow(PolicyViolation); // mixed types
    expect(() => planCreate(t, req("c-1", "d-1"))).toThrow(/one gateway per app/);
    expect(() => planCreate(t, req("g-1", "h-1"))).toThrow(/both generate their own API key values/);
    expect(() => planCreate(t, req("g-1", "strict-1"))).toThrow(/'-', '_'/);
    expect(() => planCreate(t, req("zz-1"))).toThrow(Unroutable);
  });
});

describe("planUpdate (capabilities alone)", () => {
  const rec = (over: Partial<CredentialRecord> = {}): CredentialRecord => ({
    id: "c1",
    credentialType: "API_KEY",
    appKey: "app:d/App",
    app: { appName: "App", developer: "d" },
    publicId: "k1",
    status: "active",
    apis: [{ id: "a-1", gateway: "a", usagePlans: ["gold"] }],
    bindings: [{ gateway: "a", nativeId: "k1", resources: {} }],
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    ...over,
  });
  it("plans creates on newly reached gateways, removal where the last API went, updates elsewhere", () => {
    const plan = planUpdate(topology({ a: {}, b: {} }), rec(), {
      credentialType: "API_KEY",
      apiKeyId: "k1",
      apis: [
        { id: "a-1", action: "REMOVED" },
        { id: "b-1", action: "ADDED", usagePlans: [{ id: "gold", action: "ADDED" }] },
      ],
    });
    expect(plan).toMatchObject({ toCreate: ["b"], toRemove: ["a"], toUpdate: [], desiredGateways: ["b"] });
    expect(plan.changesFor("b")).toEqual([
      { id: "b-1", action: "ADDED", usagePlans: [{ id: "gold", action: "ADDED" }] },
    ]);
  });
  it("an app left with no API keeps its credential on its first gateway", () => {
    const plan = planUpdate(topology({ a: {} }), rec(), {
      credentialType: "API_KEY",
      apiKeyId: "k1",
      apis: [{ id: "a-1", action: "REMOVED" }],
    });
    expect(plan).toMatchObject({ toCreate: [], toRemove: [], toUpdate: ["a"], desiredGateways: ["a"] });
  });
  it("refuses a key-generating gateway newly reached, and client credentials reaching a second gateway", () => {
    const t = topology({
      a: {},
      g: { capabilities: { importsApiKeyValue: false } },
      c: { credentialType: "CLIENT_CREDENTIALS" },
      d: { credentialType: "CLIENT_CREDENTIALS" },
    });
    expect(() =>
      planUpdate(t, rec(), { credentialType: "API_KEY", apiKeyId: "k1", apis: [{ id: "g-1", action: "ADDED" }] }),
    ).toThrow(PolicyViolation);
    const cc = rec({
      credentialType: "CLIENT_CREDENTIALS",
      apis: [{ id: "c-1", gateway: "c", usagePlans: [] }],
      bindings: [{ gateway: "c", nativeId: "cl1", resources: {} }],
    });
    expect(() =>
      planUpdate(t, cc, {
        credentialType: "CLIENT_CREDENTIALS",
        clientId: "cl1",
        apis: [{ id: "d-1", action: "ADDED" }],
      }),
    ).toThrow(/one gateway per app/);
    expect(() =>
      planUpdate(t, rec(), { credentialType: "API_KEY", apiKeyId: "k1", apis: [{ id: "c-1", action: "ADDED" }] }),
    ).toThrow(/different credential types/);
  });
});

describe("Orchestrator on an in-memory store and scripted gateways", () => {
  let store: MemoryCredentialStore;
  let a: ScriptedProvider;
  let b: ScriptedProvider;
  let orch: Orchestrator;
  /** The orchestrator's clock: real time plus what a test moved it forward by, ms. */
  let skewMs = 0;
  /** @param storeOf the store the orchestrator is given, over {@link store} (default: the memory store itself) */
  const setup = (settleMs = 0, storeOf: (inner: MemoryCredentialStore) => CredentialStore = (inner) => inner) => {
    skewMs = 0;
    store = new MemoryCredentialStore();
    a = new ScriptedProvider({ gateway: "a" });
    b = new ScriptedProvider({ gateway: "b" });
    const gateways = new Map(
      [a, b].map((p) => [
        p.gateway,
        { name: p.gateway, providerType: "scripted", credentialType: "API_KEY" as const, provider: p },
      ]),
    );
    orch = new Orchestrator({
      gateways,
      router: createRouter([{ apis: ["a-*"], gateway: "a" }, { default: "b" }]),
      store: storeOf(store),
      abandonSettleMs: settleMs,
      compensationAttempts: 1,
      now: () => Date.now() + skewMs,
    });
  };
  afterEach(async () => {
    await orch.close();
  });

  it("creates one key value on both gateways; a replay returns the same credential and creates nothing", async () => {
    setup();
    const first = await orch.create(req("a-1", "b-1"));
    expect(a.marked()).toHaveLength(1);
    expect(b.marked()).toHaveLength(1);
    expect(a.marked()[0]!.secret).toBe(b.marked()[0]!.secret);
    expect(first.response).toMatchObject({ apiKeyId: a.marked()[0]!.nativeId, apiKey: a.marked()[0]!.secret });
    const again = await orch.create(req("a-1", "b-1"));
    expect(again).toMatchObject({ replayed: true, response: first.response });
    expect(a.calls.filter((c) => c.op === "create")).toHaveLength(1);
  });

  it("tells each gateway that the key value it imports was generated by core (so it need not look it up)", async () => {
    setup();
    const seen: Array<boolean | undefined> = [];
    for (const p of [a, b]) {
      const create = p.create.bind(p);
      p.create = (input) => (seen.push(input.apiKeyValueGenerated), create(input));
    }
    await orch.create(req("a-1", "b-1"));
    expect(seen).toEqual([true, true]);
  });

  it("an update that moves the credential says where it was created and removed (the request line's fields)", async () => {
    setup();
    const { response } = await orch.create(req("a-1"));
    const apiKeyId = (response as { apiKeyId: string }).apiKeyId;
    const moved = await orch.update({
      credentialType: "API_KEY",
      apiKeyId,
      apis: [
        { id: "a-1", action: "REMOVED" },
        { id: "b-1", action: "ADDED", usagePlans: [{ id: "gold", action: "ADDED" }] },
      ],
    });
    expect(moved).toMatchObject({ gateways: ["b", "a"], created: ["b"], removed: ["a"] });
    expect(b.marked()).toHaveLength(1);
    const planOnly = await orch.update({
      credentialType: "API_KEY",
      apiKeyId,
      apis: [{ id: "b-1", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] }],
    });
    expect(planOnly).toEqual({ gateways: ["b"], credentialId: moved.credentialId });
  });

  it("a failure on one gateway abandons the create: the other's key is revoked, the record goes once settled", async () => {
    setup();
    b.fail({ op: "create", when: "before", error: new InvalidReference("[gateway b] no usage plan 'gold'") });
    await expect(orch.create(req("a-1", "b-1"))).rejects.toThrow(InvalidReference);
    expect(a.marked()).toEqual([]);
    expect(await store.list()).toEqual([]);
  });

  it("a create whose write lands after the timeout is found by its mark and revoked; the record waits out the settle window", async () => {
    setup(60_000);
    b.fail({ op: "create", when: "late", lateMs: 30 });
    await expect(orch.create(req("a-1", "b-1"))).rejects.toMatchObject({ status: 504 });
    await b.settled(); // the late write lands: a live key nobody was told about
    expect(b.marked()).toHaveLength(1);
    const [abandoned] = await store.list();
    expect(abandoned).toMatchObject({ status: "abandoned", abandoned: { uncertain: ["b"] } });
    const swept = await orch.sweepAbandoned();
    expect(swept).toMatchObject({ swept: 1, revoked: 1, deleted: 0 }); // found by the mark, revoked; record kept to settle
    expect(b.marked()).toEqual([]);
    expect(a.marked()).toEqual([]);
  });

  it("a failed update runs the inverse update on every gateway it touched, the failing one too", async () => {
    setup();
    const { response } = await orch.create(req("a-1", "b-1"));
    b.fail({ op: "update", when: "after" }); // applied, answer lost
    await expect(
      orch.update({
        credentialType: "API_KEY",
        apiKeyId: (response as { apiKeyId: string }).apiKeyId,
        apis: [
          { id: "a-1", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] },
          { id: "b-1", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] },
        ],
      }),
    ).rejects.toMatchObject({ status: 504 });
    expect(a.marked()[0]!.apis).toEqual([{ id: "a-1", usagePlans: ["gold"] }]);
    expect(b.marked()[0]!.apis).toEqual([{ id: "b-1", usagePlans: ["gold"] }]);
    expect((await store.list())[0]).toMatchObject({
      status: "active",
      apis: [
        { id: "a-1", usagePlans: ["gold"] },
        { id: "b-1", usagePlans: ["gold"] },
      ],
    });
  });

  it("an update whose write lands after its rollback is brought back to the record once the settle window ends", async () => {
    setup(60_000);
    const { response } = await orch.create(req("a-1", "b-1"));
    const apiKeyId = (response as { apiKeyId: string }).apiKeyId;
    b.fail({ op: "update", when: "late", lateMs: 30 });
    await expect(
      orch.update({
        credentialType: "API_KEY",
        apiKeyId,
        apis: [{ id: "b-1", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] }],
      }),
    ).rejects.toMatchObject({ status: 504 });
    await b.settled(); // the update lands after the rollback: 'silver' attached, the record says gold only
    expect(b.marked()[0]!.apis).toEqual([{ id: "b-1", usagePlans: ["gold", "silver"] }]);
    const [rec] = await store.list();
    expect(rec).toMatchObject({
      status: "active",
      unsettled: { gateways: [{ gateway: "b", attempted: [{ id: "b-1", usagePlans: ["gold", "silver"] }] }] },
    });
    expect(await orch.sweepAbandoned()).toMatchObject({ settled: 0 }); // the window is still open
    skewMs = 60_000; // a minute later, by the orchestrator's clock: the window has closed
    expect(await orch.sweepAbandoned()).toMatchObject({ settled: 1 });
    expect(b.marked()[0]!.apis).toEqual([{ id: "b-1", usagePlans: ["gold"] }]);
    expect((await store.list())[0]!.unsettled).toBeUndefined();
  });

  it("a credential created late on a gateway a failed update was adding is revoked by the settle pass", async () => {
    setup(0);
    const { response } = await orch.create(req("a-1"));
    b.fail({ op: "create", when: "late", lateMs: 30 });
    await expect(
      orch.update({
        credentialType: "API_KEY",
        apiKeyId: (response as { apiKeyId: string }).apiKeyId,
        apis: [{ id: "b-1", action: "ADDED" }],
      }),
    ).rejects.toMatchObject({ status: 504 });
    await b.settled();
    expect(b.marked()).toHaveLength(1); // landed after the rollback searched for it: live, and not the record's
    expect(await orch.sweepAbandoned()).toMatchObject({ settled: 1, revoked: 1 });
    expect(b.marked()).toEqual([]);
    expect(a.marked()).toHaveLength(1);
  });

  it("the app's next update first brings an unsettled gateway back, then applies its own change", async () => {
    setup(0);
    const { response } = await orch.create(req("a-1", "b-1"));
    const apiKeyId = (response as { apiKeyId: string }).apiKeyId;
    b.fail({ op: "update", when: "late", lateMs: 10 });
    await expect(
      orch.update({
        credentialType: "API_KEY",
        apiKeyId,
        apis: [{ id: "b-1", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] }],
      }),
    ).rejects.toThrow();
    await b.settled();
    await orch.update({
      credentialType: "API_KEY",
      apiKeyId,
      apis: [{ id: "a-1", action: "NONE", usagePlans: [{ id: "bronze", action: "ADDED" }] }],
    });
    expect(b.marked()[0]!.apis).toEqual([{ id: "b-1", usagePlans: ["gold"] }]);
    expect(a.marked()[0]!.apis).toEqual([{ id: "a-1", usagePlans: ["gold", "bronze"] }]);
    expect((await store.list())[0]!.unsettled).toBeUndefined();
  });

  it("reconcile tells held, orphaned and garbage resources apart without reading every record at once", async () => {
    setup();
    const keys: string[] = [];
    for (const appName of ["One", "Two", "Three"])
      keys.push(((await orch.create({ ...req("a-1"), appName })).response as { apiKeyId: string }).apiKeyId);
    const owner = (await store.findByPublicId("API_KEY", keys[1]!))!;
    const app = { appName: "Two", developer: "d@example.com" };
    // On b, where no record binds them: one marked with no known credential, one with a live one bound on a only.
    const ghost = await b.create({ credentialId: "ghost", credentialType: "API_KEY", app, apis: [] });
    const late = await b.create({ credentialId: owner.id, credentialType: "API_KEY", app, apis: [] });
    await new Promise((r) => setTimeout(r, 2)); // the records were written before the reconcile's cut-off
    for (const k of Object.keys(store.calls)) delete store.calls[k]; // the creates' own reads (of one app each) aside
    const report = await orch.reconcile({ dryRun: true, olderThanMs: 0 });
    expect(report.orphans.map((o) => [o.gateway, o.nativeId])).toEqual([["b", ghost.nativeId]]);
    expect(report.garbage.map((g) => [g.gateway, g.nativeId])).toEqual([["b", late.nativeId]]);
    // The three held on a were told apart by reading their records by id; no read of every record at once.
    expect([store.calls.list, store.calls.listAbandoned, store.calls.listUnsettled]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("reconcile reads each listing page's records in one getMany where the store has it, never a get per resource, and reports what a get per resource does", async () => {
    // The memory store has no getMany; this wrapper adds one while `batching`, and logs every get and every batch.
    let batching = false;
    const gets: string[] = [];
    const batches: string[][] = [];
    setup(
      0,
      (inner) =>
        new Proxy(inner, {
          get: (target, prop) => {
            if (prop === "get") return (id: string) => (gets.push(id), target.get(id));
            if (prop === "getMany")
              return batching
                ? async (ids: readonly string[]) => {
                    batches.push([...ids]);
                    const found = new Map<string, CredentialRecord>();
                    for (const id of ids) {
                      const rec = await target.get(id);
                      if (rec) found.set(id, rec);
                    }
                    return found;
                  }
                : undefined;
            const value = Reflect.get(target, prop, target) as unknown;
            return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
          },
        }),
    );
    for (const appName of ["One", "Two", "Three", "Four", "Five"]) await orch.create({ ...req("a-1"), appName });
    const owner = (await store.list()).find((r) => r.app.appName === "Two")!;
    const app = { appName: "Two", developer: "d@example.com" };
    // On b, where no record binds them: two marked with one unknown credential, one with a live credential bound on a only.
    const ghosts = [
      await b.create({ credentialId: "ghost", credentialType: "API_KEY", app, apis: [] }),
      await b.create({ credentialId: "ghost", credentialType: "API_KEY", app, apis: [] }),
    ];
    const late = await b.create({ credentialId: owner.id, credentialType: "API_KEY", app, apis: [] });
    // Each gateway lists in pages of two: a's five resources in three pages, b's three in two.
    const pages: string[][] = [];
    for (const p of [a, b]) {
      const all = await p.listOwned();
      for (let i = 0; i < all.length; i += 2) pages.push([...new Set(all.slice(i, i + 2).map((r) => r.credentialId!))]);
      Object.assign(p, {
        listOwnedPages: async function* () {
          for (let i = 0; i < all.length; i += 2) yield all.slice(i, i + 2);
        },
      });
    }
    expect(pages.map((ids) => ids.length)).toEqual([2, 2, 1, 1, 1]); // b's first page: the ghost's two resources

    gets.length = 0;
    const byGet = await orch.reconcile({ dryRun: true, olderThanMs: 0 });
    expect(byGet.orphans.map((o) => [o.gateway, o.nativeId])).toEqual(ghosts.map((g) => ["b", g.nativeId]));
    expect(byGet.garbage.map((g) => [g.gateway, g.nativeId])).toEqual([["b", late.nativeId]]);
    expect(gets).toEqual(pages.flat()); // without getMany: a get per credential a page names, one after the other
    expect(batches).toEqual([]);

    batching = true;
    gets.length = 0;
    const byBatch = await orch.reconcile({ dryRun: true, olderThanMs: 0 });
    expect(byBatch).toEqual(byGet);
    expect(batches).toEqual(pages); // one getMany per page, each id once
    expect(gets).toEqual([]);

    // A page larger than a store page (a provider's listOwned, one page) is read PAGE_LIMIT_MAX ids at a time.
    const many = Array.from({ length: PAGE_LIMIT_MAX + 1 }, (_, i) => ({
      nativeId: `n-${i}`,
      credentialId: `gone-${i}`,
    }));
    Object.assign(b, {
      listOwnedPages: async function* () {
        yield many;
      },
    });
    batches.length = 0;
    const big = await orch.reconcile({ dryRun: true, olderThanMs: 0 });
    expect(batches.map((ids) => ids.length)).toEqual([2, 2, 1, PAGE_LIMIT_MAX, 1]);
    expect(big.orphans.map((o) => o.nativeId)).toEqual(many.map((r) => r.nativeId));
    expect(gets).toEqual([]);
  });

  it("reconcile with olderThanMs 0 includes a record written in the same millisecond", async () => {
    setup();
    const { response } = await orch.create(req("a-1"));
    const rec = (await store.findByPublicId("API_KEY", (response as { apiKeyId: string }).apiKeyId))!;
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(new Date("2026-11-23T12:00:00.000Z"));
      await store.save({ ...rec, status: "revoking", updatedAt: new Date().toISOString() });
      const report = await orch.reconcile({ olderThanMs: 0 });
      expect(report.unfinished).toEqual([
        expect.objectContaining({ credentialId: rec.id, op: "revoke", action: "revoked and deleted" }),
      ]);
      expect(report.skippedRecent).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    expect(a.marked()).toEqual([]);
  });

  it("a revoke while a failed update's write may still land keeps the record abandoned, and the sweep revokes the late write", async () => {
    setup(60_000);
    const { response } = await orch.create(req("a-1"));
    const apiKeyId = (response as { apiKeyId: string }).apiKeyId;
    b.fail({ op: "create", when: "late", lateMs: 30 });
    await expect(
      orch.update({ credentialType: "API_KEY", apiKeyId, apis: [{ id: "b-1", action: "ADDED" }] }),
    ).rejects.toMatchObject({ status: 504 });
    await orch.revoke({ credentialType: "API_KEY", apiKeyId });
    expect(a.marked()).toEqual([]);
    await b.settled(); // the update's create on b lands after the revoke
    expect(b.marked()).toHaveLength(1);
    const [kept] = await store.list();
    expect(kept).toMatchObject({ status: "abandoned", bindings: [], abandoned: { uncertain: ["b"] } });
    expect(await store.findByPublicId("API_KEY", apiKeyId)).toBeUndefined(); // revoked, for the portal
    expect((await orch.revoke({ credentialType: "API_KEY", apiKeyId })).unowned).toBeUndefined(); // a repeated revoke is a no-op
    expect(await orch.sweepAbandoned()).toMatchObject({ swept: 1, revoked: 1, deleted: 0 });
    expect(b.marked()).toEqual([]);
  });

  it("a revoke of an id the store does not know leaves a resource without credhook's mark alone", async () => {
    setup();
    a.putForeign("someone-elses");
    const out = await orch.revoke({ credentialType: "API_KEY", apiKeyId: "someone-elses" });
    expect(out.unowned).toEqual(["a"]);
    expect(a.resources.has("someone-elses")).toBe(true);
  });

  it("reconcile turns a create a crash left pending into an abandoned one and revokes what it made, recorded or not", async () => {
    setup();
    const app = { appName: "App", developer: "d" };
    const apis = [
      { id: "a-1", gateway: "a", usagePlans: [] },
      { id: "b-1", gateway: "b", usagePlans: [] },
    ];
    const recorded = await a.create({
      credentialId: "crashed",
      credentialType: "API_KEY",
      app,
      apis: [{ id: "a-1", usagePlans: [] }],
      apiKeyValue: "v".repeat(40),
    });
    await b.create({
      credentialId: "crashed",
      credentialType: "API_KEY",
      app,
      apis: [{ id: "b-1", usagePlans: [] }],
      apiKeyValue: "v".repeat(40),
    }); // landed; the store never heard
    const at = new Date(Date.now() - 1000).toISOString();
    await store.insert({
      id: "crashed",
      credentialType: "API_KEY",
      appKey: "app:d/App",
      app,
      publicId: "",
      status: "pending",
      apis,
      bindings: [{ gateway: "a", nativeId: recorded.nativeId, resources: {} }],
      pending: {
        op: "create",
        startedAt: at,
        createOn: ["a", "b"],
        removeFrom: [],
        previousApis: [],
        desiredApis: apis,
      },
      createdAt: at,
      updatedAt: at,
    });
    const report = await orch.reconcile({ olderThanMs: 0 });
    expect(report.unfinished).toEqual([expect.objectContaining({ credentialId: "crashed", op: "create", errors: [] })]);
    expect(a.marked()).toEqual([]);
    expect(b.marked()).toEqual([]);
    expect(report.orphans).toEqual([]);
    expect(await store.list()).toEqual([]);
  });
});
