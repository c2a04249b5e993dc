import { credhookVitestConfig } from "./vitest.shared.ts";

// The whole workspace in one run (`pnpm test` at the root). Each package's own
// vitest.config.ts runs that package's tests alone (`pnpm test` in its folder).
export default credhookVitestConfig(["packages/*/test/**/*.test.ts"]);
