/**
 * Disable and enable (`Orchestrator.disable` / `enable`) on scripted gateways: the decision is recorded first
 * (with `credential.leaked` once), every gateway is switched, the record is kept; a gateway that fails leaves the
 * decision for a retry; a gateway without a switch refuses the whole disable before anything changes; the
 * portal's update and replayed create are refused while disabled.
 */
import { describe, expect, it } from "vitest";
import type { ScriptedProvider } from "@credhook/provider-testkit";
import { eastWest } from "./east-west.js";
import { Conflict, PolicyViolation, UpstreamError } from "../src/errors.js";

const identity = { appName: "Ledger", developer: "ops@example.com" };

function setUp(westDisables = true) {
  const disables = { disables: ["API_KEY" as const] };
  const gateways = eastWest({ east: disables, west: westDisables ? disables : {} });
  const enabled = (p: ScriptedProvider) => p.marked().map((r) => r.enabled !== false);
  return { ...gateways, enabled };
}

describe("disable and enable across gateways", () => {
  it("disables on every gateway keeping the record; a failing gateway leaves the decision, the retry completes it; enable undoes it", async () => {
    const { store, east, west, orchestrator, types, enabled } = setUp();
    try {
      const created = await orchestrator.create({ ...identity, apis: [{ id: "east-1" }, { id: "west-1" }] });
      const id = created.credentialId!;
      const { apiKeyId } = created.response as { apiKeyId: string };

      west.fail({ op: "setEnabled", when: "before", error: new UpstreamError("west is down") });
      await expect(orchestrator.disable(id, { leaked: true, reason: "leaked" })).rejects.toThrow(/west is down/);
      // The decision and the leak are recorded before any gateway; east is off, west still on.
      expect(await types()).toEqual(["credential.created", "credential.leaked"]);
      const half = await store.get(id);
      expect(half?.disabled).toMatchObject({ reason: "leaked", gateways: [] });
      expect([enabled(east), enabled(west)]).toEqual([[false], [true]]);
      // The portal's update is refused from the decision on, and its replayed create too.
      const update = orchestrator.update({ credentialType: "API_KEY", apiKeyId, ...identity, apis: [] });
      await expect(update).rejects.toBeInstanceOf(Conflict);
      await expect(update).rejects.toThrow(/disabled since .*\(leaked\).*credhook enable/);
      await expect(
        orchestrator.create({ ...identity, apis: [{ id: "east-1" }, { id: "west-1" }] }),
      ).rejects.toBeInstanceOf(Conflict);

      // The retry completes it: no second leak, one credential.disabled with both gateways.
      expect(await orchestrator.disable(id, { leaked: true, reason: "leaked" })).toEqual({
        gateways: ["east", "west"],
        credentialId: id,
      });
      expect([enabled(east), enabled(west)]).toEqual([[false], [false]]);
      expect(await types()).toEqual(["credential.created", "credential.leaked", "credential.disabled"]);
      const done = await store.get(id);
      expect([done?.status, done?.disabled?.gateways, done?.bindings.length]).toEqual(["active", ["east", "west"], 2]);
      await orchestrator.disable(id); // again: nothing new
      expect(await types()).toHaveLength(3);

      // Enable: a failure keeps the record disabled; the retry turns every gateway on and clears the mark.
      east.fail({ op: "setEnabled", when: "before", error: new UpstreamError("east is down") });
      await expect(orchestrator.enable(id, { reason: "rotated upstream" })).rejects.toThrow(/east is down/);
      expect((await store.get(id))?.disabled).toBeDefined();
      await orchestrator.enable(id, { reason: "rotated upstream" });
      expect([enabled(east), enabled(west)]).toEqual([[true], [true]]);
      expect((await store.get(id))?.disabled).toBeUndefined();
      expect((await store.outbox.list()).at(-1)?.event).toMatchObject({
        type: "credential.enabled",
        data: { reason: "rotated upstream" },
      });
      await orchestrator.update({ credentialType: "API_KEY", apiKeyId, ...identity, apis: [] }); // allowed again
    } finally {
      await orchestrator.close();
    }
  });

  it("a gateway without a switch refuses the disable before any change, naming it; revoke still works", async () => {
    const { store, east, west, orchestrator, types, enabled } = setUp(false);
    try {
      const created = await orchestrator.create({ ...identity, apis: [{ id: "east-1" }, { id: "west-1" }] });
      const id = created.credentialId!;
      const refused = orchestrator.disable(id, { leaked: true, reason: "leaked" });
      await expect(refused).rejects.toBeInstanceOf(PolicyViolation);
      await expect(refused).rejects.toThrow(
        /gateway 'west' \(scripted\) cannot turn API_KEY credentials off and on — revoke it instead/,
      );
      expect([enabled(east), enabled(west)]).toEqual([[true], [true]]);
      expect(await types()).toEqual(["credential.created"]);
      expect((await store.get(id))?.disabled).toBeUndefined();
      expect(east.calls.some((c) => c.op === "setEnabled")).toBe(false);
      await expect(orchestrator.disable("no-such-id")).rejects.toThrow(/does not exist/);
    } finally {
      await orchestrator.close();
    }
  });
});
