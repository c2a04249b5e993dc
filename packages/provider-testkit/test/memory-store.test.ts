import { it } from "vitest";
import { MemoryCredentialStore, storeConformance } from "../src/index.js";

// The in-memory store of orchestration tests keeps the contract of the real ones.
storeConformance(it, async () => new MemoryCredentialStore(), { name: "memory store conformance" });
