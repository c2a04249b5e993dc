/**
 * Two scripted API-key gateways, `east` (API ids `east-*`) and `west` (the rest), on an in-memory store, for the
 * orchestration tests of operator actions (leaked-revoke, disable).
 */
import { MemoryCredentialStore, ScriptedProvider } from "@credhook/provider-testkit";
import type { ProviderCapabilities } from "../src/provider.js";
import { createRouter, Orchestrator } from "../src/index.js";

/** The gateways, their store and the orchestrator; `capabilities` per gateway name (merged over the scripted defaults). */
export function eastWest(capabilities: Partial<Record<"east" | "west", Partial<ProviderCapabilities>>> = {}) {
  const store = new MemoryCredentialStore();
  const [east, west] = (["east", "west"] as const).map(
    (gateway) => new ScriptedProvider({ gateway, capabilities: capabilities[gateway] ?? {} }),
  ) as [ScriptedProvider, ScriptedProvider];
  const orchestrator = new Orchestrator({
    gateways: new Map(
      [east, west].map((p) => [
        p.gateway,
        { name: p.gateway, providerType: "scripted", credentialType: "API_KEY" as const, provider: p },
      ]),
    ),
    router: createRouter([{ apis: ["east-*"], gateway: "east" }, { default: "west" }]),
    store,
    compensationAttempts: 1,
  });
  /** The types of the events in the store's outbox, oldest first. */
  const types = async () => (await store.outbox.list()).map((e) => e.event.type);
  return { store, east, west, orchestrator, types };
}
