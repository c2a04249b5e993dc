/** @credhook/core: the contract, error model, provider/store interfaces, routing and orchestration. */
export * from "./errors.js";
export * from "./contract.js";
export * from "./provider.js";
export * from "./logger.js";
