/**
 * `pnpm schema`: writes packages/server/config/webhook.config.schema.json, the JSON Schema of
 * webhook.config.yaml (see config-schema.ts). With `--check` it writes nothing and
 * exits 1 when the committed file differs from what it would write.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildConfigSchema } from "./config-schema.js";

/** Where the schema is committed; the YAML files reference it by a relative path. */
const SCHEMA_FILE = fileURLToPath(new URL("../packages/server/config/webhook.config.schema.json", import.meta.url));

const text = `${JSON.stringify(await buildConfigSchema(), null, 2)}\n`;
if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(SCHEMA_FILE, "utf8");
  } catch {
    // missing: stale
  }
  if (current !== text) {
    process.stderr.write(`${SCHEMA_FILE} is stale: run \`pnpm schema\`\n`);
    process.exit(1);
  }
  process.stdout.write(`${SCHEMA_FILE} is up to date\n`);
} else {
  writeFileSync(SCHEMA_FILE, text);
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
process.exit(0);
