/**
 * `credhook apply`'s moves in core (orchestration/move.ts, docs/gateway-migration.md) on an in-memory store and
 * scripted gateways: an API re-routed from gateway `a` to gateway `b` gets the credential on `b` with the same key
 * value while `a` keeps it (dual-homed); the portal's update keeps the dual-homed binding and its revoke removes it;
 * drift no longer counts it as moved; a prune removes it from `a`; and a process killed at every store write of a
 * move or a prune leaves no resource the record does not know and never the credential on neither gateway — a rerun
 * finishes the job.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryCredentialStore, ScriptedProvider } from "@credhook/provider-testkit";
import { createRouter, Orchestrator } from "../src/index.js";
import { StoreUnavailable, UpstreamUnavailable } from "../src/entry/errors.js";
import { credentialDrift, driftTopology } from "../src/drift.js";
import type { CredentialRecord } from "../src/entry/store.js";
import type { CredentialEvent } from "../src/events.js";

/** A memory store that "dies" at its `killAt`-th write: that write and every later one fail, as after a kill -9. */
class KillableStore extends MemoryCredentialStore {
  writes = 0;
  killAt = Number.POSITIVE_INFINITY;
  private check(): void {
    this.writes += 1;
    if (this.writes >= this.killAt) throw new StoreUnavailable("killed (test)");
  }
  override async insert(record: CredentialRecord, events?: readonly CredentialEvent[]): Promise<void> {
    this.check();
    return super.insert(record, events);
  }
  override async save(record: CredentialRecord, events?: readonly CredentialEvent[]): Promise<void> {
    this.check();
    return super.save(record, events);
  }
  override async delete(id: string, events?: readonly CredentialEvent[]): Promise<boolean> {
    this.check();
    return super.delete(id, events);
  }
  /** The process starts again: writes work. */
  restart(): void {
    this.killAt = Number.POSITIVE_INFINITY;
    this.writes = 0;
  }
}

const BEFORE = [{ apis: ["x"], gateway: "a" }, { default: "a" }];
const AFTER = [{ apis: ["x"], gateway: "b" }, { default: "a" }];

describe("moves: dual-home, prune, and a kill at any point", () => {
  let store: KillableStore;
  let a: ScriptedProvider;
  let b: ScriptedProvider;
  const orchestrators: Orchestrator[] = [];
  const gateways = () =>
    new Map(
      [a, b].map((p) => [
        p.gateway,
        { name: p.gateway, providerType: "scripted", credentialType: "API_KEY" as const, provider: p },
      ]),
    );
  /** An orchestrator with `routes` (a new process of a config); writes land at once (no settle window). */
  const orchestrator = (routes: Parameters<typeof createRouter>[0]) => {
    const o = new Orchestrator({
      gateways: gateways(),
      router: createRouter(routes),
      store,
      abandonSettleMs: 0,
      compensationAttempts: 1,
    });
    orchestrators.push(o);
    return o;
  };
  /** A credential of app `name` for API `x` (and `y` when asked), made under BEFORE: on `a` only. */
  const made = async (name = "App", apis = ["x"]) => {
    store = store ?? new KillableStore();
    const { response } = await orchestrator(BEFORE).create({
      appName: name,
      developer: "d@example.com",
      apis: apis.map((id) => ({ id, usagePlans: [{ id: "gold" }] })),
    });
    const apiKeyId = (response as { apiKeyId: string }).apiKeyId;
    const rec = (await store.findByPublicId("API_KEY", apiKeyId))!;
    return { apiKeyId, id: rec.id, secret: (response as { apiKey: string }).apiKey };
  };
  const fresh = () => {
    store = new KillableStore();
    a = new ScriptedProvider({ gateway: "a" });
    b = new ScriptedProvider({ gateway: "b" });
  };
  /** Every resource carrying a credential's mark on `p` is one its record knows (no orphan). */
  const noOrphans = async () => {
    const records = await store.list();
    for (const p of [a, b])
      for (const r of p.marked()) {
        const rec = records.find((x) => x.id === r.credentialId);
        expect(
          rec?.bindings.some((x) => x.gateway === p.gateway && x.nativeId === r.nativeId),
          `${p.gateway}:${r.nativeId}`,
        ).toBe(true);
      }
  };
  afterEach(async () => {
    for (const o of orchestrators.splice(0)) await o.close();
  });

  it("moves x from a to b with the same key value and its plans, keeps a (dual-homed), and says so in the event", async () => {
    fresh();
    const { id, secret } = await made();
    const result = await orchestrator(AFTER).moveCredential(id);
    expect(result).toMatchObject({ outcome: "moved", created: ["b"], dualHomed: ["a"] });
    expect(b.marked()).toEqual([expect.objectContaining({ secret, apis: [{ id: "x", usagePlans: ["gold"] }] })]);
    expect(a.marked()).toEqual([expect.objectContaining({ secret, apis: [{ id: "x", usagePlans: ["gold"] }] })]);
    const rec = (await store.get(id))!;
    expect(rec.apis).toEqual([{ id: "x", gateway: "b", usagePlans: ["gold"] }]);
    expect(rec.bindings.find((x) => x.gateway === "a")!.dualHomed).toMatchObject({ apiIds: ["x"] });
    // Drift: not moved again; prune pending.
    const drift = credentialDrift(driftTopology(gateways(), createRouter(AFTER)), rec);
    expect(drift).toMatchObject({ kinds: [], dualHomed: [{ gateway: "a", apiIds: ["x"] }] });
    const plan = await orchestrator(AFTER).planApply({ prune: true });
    expect(plan.counts).toMatchObject({ movable: 0, prunePending: 1 });
    expect(plan.entries[0]!.calls).toEqual([{ gateway: "a", operation: "revoke" }]);
    // Its event: where it was before and after.
    const updated = (await store.outbox.list({})).filter((e) => e.event.type === "credential.updated");
    expect(updated.map((e) => [e.event.data.previousGateways, e.event.data.gateways])).toEqual([
      [
        [{ gateway: "a", nativeId: expect.any(String), plans: ["gold"] }],
        [
          { gateway: "a", nativeId: expect.any(String), plans: ["gold"], dualHomed: true },
          { gateway: "b", nativeId: expect.any(String), plans: ["gold"] },
        ],
      ],
    ]);
    // Run again: nothing to do.
    expect(await orchestrator(AFTER).moveCredential(id)).toMatchObject({ outcome: "unchanged", dualHomed: ["a"] });
  });

  it("the portal's update keeps the dual-homed binding (a plan added reaches both), its revoke removes every binding", async () => {
    fresh();
    const { id, apiKeyId } = await made();
    const o = orchestrator(AFTER);
    await o.moveCredential(id);
    await o.update({
      credentialType: "API_KEY",
      apiKeyId,
      apis: [{ id: "x", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] }],
    });
    expect(a.marked()[0]!.apis).toEqual([{ id: "x", usagePlans: ["gold", "silver"] }]);
    expect(b.marked()[0]!.apis).toEqual([{ id: "x", usagePlans: ["gold", "silver"] }]);
    expect((await store.get(id))!.bindings.find((x) => x.gateway === "a")!.dualHomed?.apiIds).toEqual(["x"]);
    await o.revoke({ credentialType: "API_KEY", apiKeyId, appName: "App", developer: "d@example.com" });
    expect([...a.marked(), ...b.marked()]).toEqual([]);
    expect(await store.get(id)).toBeUndefined();
  });

  it("a portal update of the app during its move is served in turn (the app's lock): both complete, the plan on both gateways", async () => {
    fresh();
    const { id, apiKeyId } = await made();
    const o = orchestrator(AFTER);
    const [move, update] = await Promise.all([
      o.moveCredential(id),
      o.update({
        credentialType: "API_KEY",
        apiKeyId,
        apis: [{ id: "x", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] }],
      }),
    ]);
    expect(move.outcome).toBe("moved");
    expect(update.credentialId).toBe(id);
    for (const p of [a, b])
      expect(p.marked().map((r) => r.apis)).toEqual([[{ id: "x", usagePlans: ["gold", "silver"] }]]);
    expect((await store.get(id))!).toMatchObject({ status: "active", apis: [{ id: "x", gateway: "b" }] });
  });

  it("the portal removing the moved API takes it off the gateway it left too; another API stays there", async () => {
    fresh();
    const { id, apiKeyId } = await made("Two", ["x", "y"]);
    const o = orchestrator(AFTER);
    await o.moveCredential(id);
    expect(
      a
        .marked()[0]!
        .apis.map((x) => x.id)
        .sort(),
    ).toEqual(["x", "y"]);
    await o.update({ credentialType: "API_KEY", apiKeyId, apis: [{ id: "x", action: "REMOVED" }] });
    expect(a.marked()[0]!.apis).toEqual([{ id: "y", usagePlans: ["gold"] }]);
    const rec = (await store.get(id))!;
    expect(rec.bindings.find((x) => x.gateway === "a")!.dualHomed).toBeUndefined();
  });

  it("--prune removes it from the gateway it left (moved in an earlier run); a gateway with another API keeps that one", async () => {
    fresh();
    const one = await made("One");
    const two = await made("Two", ["x", "y"]);
    const o = orchestrator(AFTER);
    await o.moveCredential(one.id);
    await o.moveCredential(two.id);
    const summary = await orchestrator(AFTER).runApply({ prune: true });
    expect(summary).toMatchObject({ considered: 2, outcomes: { pruned: 2, failed: 0 }, limited: false });
    expect(a.marked().map((r) => [r.credentialId, r.apis])).toEqual([[two.id, [{ id: "y", usagePlans: ["gold"] }]]]);
    expect(
      b
        .marked()
        .map((r) => r.secret)
        .sort(),
    ).toEqual([one.secret, two.secret].sort());
    expect((await store.get(one.id))!.bindings.map((x) => x.gateway)).toEqual(["b"]);
    expect((await store.get(two.id))!.bindings.every((x) => !x.dualHomed)).toBe(true);
  });

  it("a route pointed back (roll back) moves it back without a call on the gateway that kept it; --prune then removes the new one", async () => {
    fresh();
    const { id, secret } = await made();
    await orchestrator(AFTER).moveCredential(id);
    const calls = a.calls.length;
    const back = await orchestrator(BEFORE).moveCredential(id);
    expect(back).toMatchObject({ outcome: "moved", dualHomed: ["b"] });
    expect(a.calls.length).toBe(calls);
    await orchestrator(BEFORE).moveCredential(id, { prune: true });
    expect(b.marked()).toEqual([]);
    expect(a.marked()).toEqual([expect.objectContaining({ secret })]);
  });

  it("a gateway whose breaker opens pauses the run: the credentials after the failure wait and are moved, not failed", async () => {
    fresh();
    for (const name of ["One", "Two", "Three"]) await made(name);
    b.fail({ op: "create", when: "before", error: new UpstreamUnavailable("gateway b is down", 1) });
    const o = new Orchestrator({
      gateways: gateways(),
      router: createRouter(AFTER),
      store,
      abandonSettleMs: 0,
      compensationAttempts: 1,
      circuitBreakers: { b: { threshold: 1, halfOpenAfterMs: 50 } },
    });
    orchestrators.push(o);
    const waits: number[] = [];
    const results: string[] = [];
    const summary = await o.runApply({
      concurrency: 1,
      sleep: (ms) => (waits.push(ms), new Promise((r) => setTimeout(r, 60))),
      onResult: (r) => results.push(r.outcome),
    });
    // The first credential the walk reaches (records of one millisecond come in id order) meets the failure.
    expect(results).toEqual(["failed", "moved", "moved"]);
    expect(summary).toMatchObject({ outcomes: { failed: 1, moved: 2 } });
    expect(summary.paused).toBeGreaterThanOrEqual(1);
    expect(waits.every((ms) => ms >= 1000)).toBe(true); // the breaker's Retry-After, at least 1 s
    await noOrphans();
  });

  it("a credential whose value cannot be read back is not movable and left untouched", async () => {
    fresh();
    a = new ScriptedProvider({ gateway: "a", capabilities: { readsBackSecret: false } });
    const { id } = await made();
    const before = await store.get(id);
    expect(await orchestrator(AFTER).moveCredential(id)).toMatchObject({
      outcome: "not-movable",
      reason: expect.stringMatching(/cannot be read back from 'a'/),
    });
    expect(await store.get(id)).toEqual(before);
    expect(b.marked()).toEqual([]);
  });

  it("killed at each store write of a move and of a prune: never an orphan, never on neither gateway; a rerun finishes", async () => {
    // How many writes a whole move + prune makes, to kill at each one.
    fresh();
    const probe = await made();
    store.writes = 0;
    await orchestrator(AFTER).moveCredential(probe.id, { prune: true });
    const total = store.writes;
    expect(total).toBeGreaterThan(4);
    for (let killAt = 1; killAt <= total; killAt++) {
      fresh();
      const { id, secret } = await made();
      store.writes = 0;
      store.killAt = killAt;
      await expect(orchestrator(AFTER).moveCredential(id, { prune: true })).rejects.toThrow();
      await Promise.all([a.settled(), b.settled()]);
      store.restart();
      // After the kill, before any recovery: the key works somewhere; whatever is unrecorded is found by its mark.
      expect(
        [...a.marked(), ...b.marked()].some((r) => r.secret === secret),
        `kill at ${killAt}`,
      ).toBe(true);
      // The rerun (recovery first, then the move and prune again).
      await orchestrator(AFTER).moveCredential(id, { prune: true });
      await noOrphans();
      expect(a.marked(), `kill at ${killAt}`).toEqual([]);
      expect(b.marked(), `kill at ${killAt}`).toEqual([expect.objectContaining({ secret })]);
      expect((await store.get(id))!).toMatchObject({
        status: "active",
        bindings: [expect.objectContaining({ gateway: "b" })],
      });
    }
  });
});
