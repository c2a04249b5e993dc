/** @credhook/core: the contract, error model, provider/store interfaces, routing and orchestration. */
export * from "./errors.js";
export * from "./contract.js";
export * from "./provider.js";
export * from "./logger.js";
export * from "./validation.js";
export * from "./config.js";
export * from "./routing.js";
export * from "./registry.js";
export * from "./store.js";
export * from "./secrets.js";
export * from "./keyed-lock.js";
export * from "./fence.js";
export * from "./availability.js";
export * from "./orchestrator.js";
export * from "./shared-pool.js";
export * from "./memory-state.js";
export * from "./provider-kit/index.js";
