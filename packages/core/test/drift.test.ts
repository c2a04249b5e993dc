/**
 * Drift between the config and the stored credentials (drift.ts), and the gateway lifecycle around it: a retired
 * gateway takes no new credential but keeps serving what it holds, and a store shared with an instance whose config
 * lacks a gateway never answers a 4xx that leaves a key live there.
 */
import { describe, expect, it } from "vitest";
import { MemoryCredentialStore, ScriptedProvider } from "@credhook/provider-testkit";
import {
  createRouter,
  credentialDrift,
  driftTopology,
  Orchestrator,
  type RouteRule,
  strandedProblems,
  summarizeDrift,
} from "../src/index.js";
import { planFingerprint } from "../src/drift.js";
import type { JsonValue } from "../src/provider.js";
import type { Gateway } from "../src/registry.js";

/** A scripted API-key gateway whose plans are defined by `plans` (as Kong's `plans` option). */
function gateway(name: string, plans: Record<string, JsonValue> = {}): Gateway {
  const provider = new ScriptedProvider({ gateway: name });
  Object.assign(provider, { planDefinition: (id: string) => plans[id] });
  return { name, providerType: "scripted", credentialType: "API_KEY", provider };
}

/** An orchestrator over `gateways` and `routes` on `store`. */
function orchestrator(store: MemoryCredentialStore, gateways: Gateway[], routes: RouteRule[]): Orchestrator {
  return new Orchestrator({
    gateways: new Map(gateways.map((g) => [g.name, g])),
    router: createRouter(routes),
    store,
    compensationAttempts: 1,
  });
}

const app = { appName: "Shop", developer: "dev@example.com" };

describe("drift", () => {
  it("reports an API routed elsewhere, a gateway the config lacks and a changed plan, by kind", async () => {
    const store = new MemoryCredentialStore();
    const gold = { minute: 100 };
    const before = [gateway("old", { gold }), gateway("new", { gold })];
    const routes: RouteRule[] = [{ apis: ["orders"], gateway: "old" }, { default: "new" }];
    const o = orchestrator(store, before, routes);
    await o.create({ ...app, apis: [{ id: "orders", usagePlans: [{ id: "gold" }] }, { id: "billing" }] });
    const [rec] = await store.list();
    // The binding keeps the fingerprint of the plan it was made with.
    expect(rec!.bindings.find((b) => b.gateway === "old")?.planFingerprints).toEqual({ gold: planFingerprint(gold) });

    const same = driftTopology(new Map(before.map((g) => [g.name, g])), createRouter(routes));
    expect(credentialDrift(same, rec!).kinds).toEqual([]);

    // orders now routes to new; old's gold plan is raised; then old is dropped from the config altogether.
    const raised = [gateway("old", { gold: { minute: 500 } }), gateway("new", { gold })];
    const moved = driftTopology(new Map(raised.map((g) => [g.name, g])), createRouter([{ default: "new" }]));
    const drift = credentialDrift(moved, rec!);
    expect(drift.kinds).toEqual(["moved", "plans-changed"]);
    expect(drift.moves).toEqual([{ apiId: "orders", from: "old", to: "new", usagePlans: ["gold"] }]);
    expect(drift.changedPlans).toEqual([{ gateway: "old", planId: "gold" }]);

    const dropped = driftTopology(new Map([["new", raised[1]!]]), createRouter([{ default: "new" }]));
    const summary = await summarizeDrift(dropped, await store.list());
    expect(summary).toMatchObject({ live: 1, counts: { moved: 1, "gateway-missing": 1 }, stranded: { old: 1 } });
    expect(strandedProblems(summary)).toEqual([
      expect.stringMatching(
        /gateway 'old', but 1 live credential is still on it.*retired: true.*credhook apply --dry-run/,
      ),
    ]);
    await o.close();
  });

  it("a plan's fingerprint ignores key order, and a record without fingerprints is unknown, not drift", async () => {
    expect(planFingerprint({ minute: 1, hour: 2 })).toBe(planFingerprint({ hour: 2, minute: 1 }));
    expect(planFingerprint({ minute: 1 })).not.toBe(planFingerprint({ minute: 2 }));
    const store = new MemoryCredentialStore();
    const kong = gateway("kong", { gold: { minute: 1 } });
    const o = orchestrator(store, [kong], [{ default: "kong" }]);
    await o.create({ ...app, apis: [{ id: "orders", usagePlans: [{ id: "gold" }] }] });
    const [rec] = await store.list();
    delete rec!.bindings[0]!.planFingerprints; // as a record written before credhook kept them
    const changed = gateway("kong", { gold: { minute: 9 } });
    const drift = credentialDrift(
      driftTopology(new Map([["kong", changed]]), createRouter([{ default: "kong" }])),
      rec!,
    );
    expect([drift.kinds, drift.plansUnknown]).toEqual([[], true]);
    await o.close();
  });
});

describe("gateway lifecycle", () => {
  it("a retired gateway refuses a new credential (422 naming it and the way out) but updates and revokes what it holds", async () => {
    const store = new MemoryCredentialStore();
    const routes: RouteRule[] = [{ default: "old" }];
    const old = gateway("old");
    const before = orchestrator(store, [old], routes);
    const created = await before.create({ ...app, apis: [{ id: "orders" }] });
    const { apiKeyId } = created.response as { apiKeyId: string };
    await before.close();

    const retired = orchestrator(store, [{ ...old, retired: true }], routes);
    await expect(
      retired.create({ appName: "Other", developer: "x@example.com", apis: [{ id: "orders" }] }),
    ).rejects.toMatchObject({
      status: 422,
      messages: [
        expect.stringMatching(/gateway 'old' is retired \(gateways\.old\.retired: true\)/),
        expect.stringMatching(/route the app's APIs to another gateway under routes:.*credhook apply/),
      ],
    });
    expect((await store.list()).length).toBe(1); // nothing written for the refused create
    const update = { credentialType: "API_KEY" as const, apiKeyId, ...app };
    await retired.update({ ...update, apis: [{ id: "orders", action: "NONE" as const, usagePlans: [] }] });
    await retired.revoke(update);
    expect(await store.list()).toEqual([]);
    await retired.close();
  });

  it("a revoke on an instance whose config lacks a gateway answers 503, keeps it recorded, and an instance with it finishes", async () => {
    const store = new MemoryCredentialStore();
    const oldGw = gateway("old");
    const full = orchestrator(
      store,
      [oldGw, gateway("new")],
      [{ apis: ["orders"], gateway: "old" }, { default: "new" }],
    );
    const created = await full.create({ ...app, apis: [{ id: "orders" }, { id: "billing" }] });
    const revoke = {
      credentialType: "API_KEY" as const,
      apiKeyId: (created.response as { apiKeyId: string }).apiKeyId,
      ...app,
    };

    const lacking = orchestrator(store, [gateway("new")], [{ default: "new" }]);
    const err = await lacking.revoke(revoke).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({
      status: 503,
      retryAfterS: 60,
      messages: [
        "gateway 'old' holds this credential but is not in this instance's config (gateways:)",
        expect.stringMatching(/put 'old' back under gateways: \(retired: true\)/),
      ],
    });
    const [left] = await store.list();
    expect([left!.status, left!.bindings.map((b) => b.gateway)]).toEqual(["revoking", ["old"]]);
    expect((oldGw.provider as ScriptedProvider).marked()).toHaveLength(1); // still live on old: not given up

    await full.revoke(revoke);
    expect(await store.list()).toEqual([]);
    expect((oldGw.provider as ScriptedProvider).marked()).toEqual([]);
    await Promise.all([full.close(), lacking.close()]);
  });
});
