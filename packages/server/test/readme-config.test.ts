/**
 * The README's "One configuration" block, as written: it loads, passes `check-config` (every
 * provider loaded with its options) and routes as its comments say.
 */
import { expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRouter } from "@credhook/core";
import { checkConfig } from "../src/check-config.js";
import { importProviderModule, loadConfigFile } from "../src/index.js";

const README = readFileSync(fileURLToPath(new URL("../../../README.md", import.meta.url)), "utf8");
const SECTION = README.slice(README.indexOf("## One configuration"), README.indexOf("## Documentation"));
const YAML_BLOCKS = [...SECTION.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);

it("the README's configuration passes check-config and routes a1b2c3d4e5 and orders-* to AWS, the rest to the embedded provider", async () => {
  expect(YAML_BLOCKS).toHaveLength(1);
  const dir = mkdtempSync(join(tmpdir(), "credhook-readme-config-"));
  try {
    const file = join(dir, "webhook.config.yaml");
    writeFileSync(file, YAML_BLOCKS[0]!);
    const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: "readme-config-password" } });
    const gateways = await checkConfig(config, importProviderModule);
    try {
      expect([...gateways.keys()].sort()).toEqual(["aws-us", "local"]);
      expect(config.store).toEqual({ sqlite: join(dir, "data", "credhook.db") });
      const router = createRouter(config.routes);
      expect(["a1b2c3d4e5", "orders-7", "5aba4csvd4"].map((id) => router.resolve(id))).toEqual([
        "aws-us",
        "aws-us",
        "local",
      ]);
    } finally {
      await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
