/**
 * An operator's revoke of a leaked key (`Orchestrator.revoke` with `leaked`): `credential.leaked` is committed with
 * the record's move to `revoking`, before any gateway is called — so a gateway that fails leaves the leak announced,
 * the record `revoking` with what is left, and no `credential.revoked` until a retry finishes it.
 */
import { describe, expect, it } from "vitest";
import { MemoryCredentialStore, ScriptedProvider } from "@credhook/provider-testkit";
import { eastWest } from "./east-west.js";
import { createRouter, isCredhookKey, Orchestrator, secretFingerprint } from "../src/index.js";
import { UpstreamError } from "../src/errors.js";

describe("revoke of a leaked key", () => {
  it("announces the leak first; a failing gateway leaves it revoking, and the retry ends with credential.revoked", async () => {
    const { store, east, west, orchestrator, types } = eastWest();
    try {
      const identity = { appName: "Ledger", developer: "ops@example.com" };
      const created = await orchestrator.create({ ...identity, apis: [{ id: "east-1" }, { id: "west-1" }] });
      const { apiKey, apiKeyId } = created.response as { apiKey: string; apiKeyId: string };
      expect(isCredhookKey(apiKey, "credhook")).toBe(true);

      west.fail({ op: "revoke", when: "before", error: new UpstreamError("west is down") });
      const revoke = () =>
        orchestrator.revoke({ credentialType: "API_KEY", apiKeyId, ...identity }, { leaked: true, reason: "leaked" });
      await expect(revoke()).rejects.toThrow(/west is down/);
      expect(await types()).toEqual(["credential.created", "credential.leaked"]);
      const leaked = (await store.outbox.list())[1]!.event;
      expect(leaked.data).toMatchObject({ reason: "leaked", keyFingerprint: secretFingerprint(apiKey) });
      expect(leaked.data.gateways.map((g) => g.gateway)).toEqual(["east", "west"]);
      const rec = await store.get(created.credentialId!);
      expect([rec?.status, rec?.bindings.map((b) => b.gateway)]).toEqual(["revoking", ["west"]]);
      expect(east.marked()).toEqual([]);

      await revoke();
      // The retry announces no second leak: one credential.leaked per credential.
      expect(await types()).toEqual(["credential.created", "credential.leaked", "credential.revoked"]);
      expect(west.marked()).toEqual([]);
      expect(await store.get(created.credentialId!)).toBeUndefined();
    } finally {
      await orchestrator.close();
    }
  });

  it("without a leak, no credential.leaked: the portal's revoke, and an operator's other reason on credential.revoked", async () => {
    const store = new MemoryCredentialStore();
    const only = new ScriptedProvider({ gateway: "only" });
    const orchestrator = new Orchestrator({
      gateways: new Map([
        ["only", { name: "only", providerType: "scripted", credentialType: "API_KEY", provider: only }],
      ]),
      router: createRouter([{ default: "only" }]),
      store,
    });
    try {
      for (const [appName, options] of [
        ["Plain", undefined],
        ["Retired", { reason: "app retired" }],
      ] as const) {
        const created = await orchestrator.create({ appName, developer: "ops@example.com", apis: [{ id: "x" }] });
        const { apiKeyId } = created.response as { apiKeyId: string };
        await orchestrator.revoke(
          { credentialType: "API_KEY", apiKeyId, appName, developer: "ops@example.com" },
          options,
        );
      }
      const events = (await store.outbox.list()).map((e) => [e.event.type, e.event.data.reason]);
      expect(events).toEqual([
        ["credential.created", undefined],
        ["credential.revoked", undefined],
        ["credential.created", undefined],
        ["credential.revoked", "app retired"],
      ]);
    } finally {
      await orchestrator.close();
    }
  });
});
