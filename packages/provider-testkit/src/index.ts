/**
 * @credhook/provider-testkit: the conformance suite every credhook provider
 * runs (in the style of keyv's test-suite), plus small helpers for the local
 * HTTP fakes of cloud control planes.
 *
 * ```ts
 * import { it } from "vitest";
 * import { providerConformance } from "@credhook/provider-testkit";
 * providerConformance(it, (type) => makeProvider(type), { apis: [...], addPlan: {...} });
 * ```
 */
export { providerConformance, CONFORMANCE_GROUPS } from "./conformance.js";
export type {
  ProviderConformanceOptions,
  ConformanceTest,
  ConformanceTestContext,
  ConformanceGroup,
  InspectedCredential,
  ConformanceFaults,
  ArmFault,
} from "./conformance.js";
export { startFakeServer, readJsonBody, sendJson } from "./fake-server.js";
export type { FakeServer, FakeHandler } from "./fake-server.js";
export { memoryStateStore } from "@credhook/core/provider-kit";
export { storeConformance, type StoreConformanceOptions } from "./store-conformance.js";
export { MemoryCredentialStore, MemoryOutbox } from "./memory-store.js";
export {
  ScriptedProvider,
  type ScriptedFault,
  type ScriptedOperation,
  type ScriptedProviderOptions,
  type ScriptedResource,
} from "./scripted-provider.js";
export { compensateCreate, countLimiterSlots, createApiKeyRef, typedError, freshPerTest } from "./test-helpers.js";
