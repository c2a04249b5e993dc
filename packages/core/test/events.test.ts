/**
 * Credential events from the orchestrator: one event per change, in order per app, committed with
 * the record change, and never a secret — on the in-memory store and scripted gateways.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryCredentialStore, ScriptedProvider } from "@credhook/provider-testkit";
import {
  createRouter,
  type EventFilter,
  type EventOwner,
  newestEventsOf,
  Orchestrator,
  secretFingerprint,
  type StoredEvent,
} from "../src/index.js";
import type { EventOutbox } from "../src/events.js";
import { UpstreamError } from "../src/errors.js";

describe("credential events", () => {
  let store: MemoryCredentialStore;
  let a: ScriptedProvider;
  let b: ScriptedProvider;
  let orch: Orchestrator;
  const setup = () => {
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
      store,
      abandonSettleMs: 0,
      compensationAttempts: 1,
    });
  };
  afterEach(async () => {
    await orch.close();
  });
  const app = { appName: "Shop", developer: "d@example.com", appSlug: "shop" };
  const apis = (...ids: string[]) => ids.map((id) => ({ id, usagePlans: [{ id: "gold" }] }));

  it("writes one event per change, in order, with where the credential lives and its fingerprint, never its value", async () => {
    setup();
    const created = await orch.create({ ...app, apis: apis("a-1", "b-1") });
    const apiKey = (created.response as { apiKey: string }).apiKey;
    const apiKeyId = (created.response as { apiKeyId: string }).apiKeyId;
    const onB = b.marked()[0]!.nativeId;
    await orch.create({ ...app, apis: apis("a-1", "b-1") }); // a replay that reads the key back: no change, no event
    await orch.update({
      credentialType: "API_KEY",
      apiKeyId,
      ...app,
      apis: [{ id: "b-2", action: "ADDED", usagePlans: [{ id: "silver", action: "ADDED" }] }],
    });
    await orch.revoke({ credentialType: "API_KEY", apiKeyId, ...app });

    const events = await store.outbox.list();
    expect(events.map((e) => e.event.type)).toEqual(["credential.created", "credential.updated", "credential.revoked"]);
    for (const { event } of events) {
      expect(event).toMatchObject({
        specversion: "1.0",
        source: "/credhook",
        subject: "slug:d@example.com/shop",
        datacontenttype: "application/json",
        data: { credentialId: created.credentialId, publicId: apiKeyId, keyFingerprint: secretFingerprint(apiKey) },
      });
      expect(JSON.stringify(event)).not.toContain(apiKey);
    }
    expect(events[0]!.event.data.gateways).toEqual([
      { gateway: "a", nativeId: apiKeyId, plans: ["gold"] },
      { gateway: "b", nativeId: onB, plans: ["gold"] },
    ]);
    expect(events[1]!.event.data.gateways.find((g) => g.gateway === "b")!.plans).toEqual(["gold", "silver"]);
    expect(new Set(events.map((e) => e.event.id)).size).toBe(3);
    expect(events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq)].sort((x, y) => x - y));
  });

  it("newestEventsOf: each credential's newest event, in one outbox read when the store has newestEvents, else one list per credential", async () => {
    setup();
    const first = await orch.create({ ...app, apis: apis("a-1") });
    const second = await orch.create({ ...app, appName: "Till", appSlug: "till", apis: apis("b-1") });
    const apiKeyId = (first.response as { apiKeyId: string }).apiKeyId;
    await orch.update({
      credentialType: "API_KEY",
      apiKeyId,
      ...app,
      apis: [{ id: "a-2", action: "ADDED", usagePlans: [{ id: "gold", action: "ADDED" }] }],
    });
    const owners: EventOwner[] = (await store.list()).map((r) => ({ credentialId: r.id, appKey: r.appKey }));
    expect(owners.map((o) => o.credentialId).sort()).toEqual([first.credentialId, second.credentialId].sort());
    owners.push({ credentialId: "no-such-credential", appKey: owners[0]!.appKey });
    const typesOf = (found: Map<string, StoredEvent>) =>
      Object.fromEntries([...found].map(([id, e]) => [id, e.event.type]));
    const expected = { [first.credentialId!]: "credential.updated", [second.credentialId!]: "credential.created" };

    // The memory store has no newestEvents: a list per credential.
    const lists: EventFilter[] = [];
    const outbox = store.outbox;
    const listing = { ...outbox, list: (f?: EventFilter) => (lists.push(f ?? {}), outbox.list(f)) } as EventOutbox;
    expect(typesOf(await newestEventsOf(listing, owners))).toEqual(expected);
    expect(lists).toEqual(owners.map((o) => ({ app: o.appKey, credentialId: o.credentialId, limit: 1 })));

    // A store's newestEvents answers for all of them in one call, and list is not read.
    const batches: EventOwner[][] = [];
    const batched: EventOutbox = {
      ...listing,
      newestEvents: async (credentials) => {
        batches.push([...credentials]);
        return newestEventsOf(outbox, credentials);
      },
    };
    lists.length = 0;
    expect(typesOf(await newestEventsOf(batched, owners))).toEqual(expected);
    expect(batches).toEqual([owners]);
    expect(lists).toEqual([]);
  });

  it("a failed create is abandoned, then cleaned up: two events, and no created event", async () => {
    setup();
    b.fail({ op: "create", when: "before", error: new UpstreamError("b is down") });
    await expect(orch.create({ ...app, apis: apis("a-1", "b-1") })).rejects.toThrow();
    const events = await store.outbox.list();
    expect(events.map((e) => e.event.type)).toEqual(["credential.abandoned", "credential.cleaned_up"]);
    expect(events[0]!.event.data.reason).toContain("b is down");
    expect(a.marked()).toHaveLength(0);
  });

  it("a record write that fails writes no event (the change did not commit)", async () => {
    setup();
    const save = store.save.bind(store);
    let failed = 0;
    store.save = async (record, events) => {
      // The create's last write (its record turning active, with its created event) fails once.
      if (record.status === "active" && events?.length && failed++ === 0) throw new Error("disk full");
      return save(record, events);
    };
    await expect(orch.create({ ...app, apis: apis("a-1") })).rejects.toThrow("disk full");
    expect((await store.outbox.list()).map((e) => e.event.type)).not.toContain("credential.created");
  });
});
