import { packageVitestConfig } from "../../vitest.shared.ts";

// This package's tests alone: `pnpm test` in this folder (the root's `pnpm test` runs every package).
export default packageVitestConfig(import.meta.url);
