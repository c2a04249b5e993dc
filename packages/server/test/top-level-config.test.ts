/**
 * The repository's top-level `webhook.config.yaml` is the embedded default as `credhook init`
 * writes it at the root (its `$schema` line pointing at the shipped schema), and it is the file
 * `pnpm start` serves: an edit to the embedded default that is not copied there fails here.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { embeddedConfigText, loadConfigFile } from "../src/index.js";

const ROOT_CONFIG = fileURLToPath(new URL("../../../webhook.config.yaml", import.meta.url));
const ROOT_PACKAGE = fileURLToPath(new URL("../../../package.json", import.meta.url));

it("the top-level webhook.config.yaml equals the embedded default as `credhook init` writes it there", () => {
  expect(readFileSync(ROOT_CONFIG, "utf8")).toBe(embeddedConfigText(ROOT_CONFIG));
});

it("`pnpm start` serves the top-level webhook.config.yaml, which loads as a config file", async () => {
  const scripts = (JSON.parse(readFileSync(ROOT_PACKAGE, "utf8")) as { scripts: Record<string, string> }).scripts;
  expect(scripts.start).toBe("node packages/server/bin/credhook.mjs serve --config webhook.config.yaml");
  const config = await loadConfigFile(ROOT_CONFIG, { env: { CREDHOOK_PASSWORD: "top-level-config" } });
  expect(config.configFile).toBe(ROOT_CONFIG);
  expect(config.embeddedDefault).toBeFalsy();
});
