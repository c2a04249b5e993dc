/**
 * `pnpm schema`: writes every generated file: packages/server/config/webhook.config.schema.json, the
 * JSON Schema of webhook.config.yaml (see config-schema.ts), and
 * packages/core/src/openapi.generated.ts, the contract's TypeScript types (see
 * contract-types.ts), and packages/core/src/{contract,config,meta-schema}.validators.generated.ts, the
 * contract's, the config's and JSON Schema 2020-12's meta-schema's validators compiled ahead of time
 * (see validators.ts). With `--check` it writes nothing and exits 1 when a committed
 * file differs from what it would write.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { buildConfigSchema } from "./config-schema.js";
import { buildContractTypes, CONTRACT_TYPES_FILE } from "./contract-types.js";
import {
  buildConfigValidator,
  buildContractValidators,
  buildMetaSchemaValidator,
  CONFIG_VALIDATOR_FILE,
  CONTRACT_VALIDATORS_FILE,
  META_SCHEMA_VALIDATOR_FILE,
} from "./validators.js";

/** Where the schema is committed; the YAML files reference it by a relative path. */
const SCHEMA_FILE = fileURLToPath(new URL("../packages/server/config/webhook.config.schema.json", import.meta.url));

const outputs: Array<[file: string, text: string]> = [
  [SCHEMA_FILE, `${JSON.stringify(await buildConfigSchema(), null, 2)}\n`],
  [CONTRACT_TYPES_FILE, await buildContractTypes()],
  [CONTRACT_VALIDATORS_FILE, buildContractValidators()],
  [CONFIG_VALIDATOR_FILE, buildConfigValidator()],
  [META_SCHEMA_VALIDATOR_FILE, buildMetaSchemaValidator()],
];
let stale = false;
for (const [file, text] of outputs) {
  if (process.argv.includes("--check")) {
    let current = "";
    try {
      current = readFileSync(file, "utf8");
    } catch {
      // missing: stale
    }
    if (current !== text) {
      process.stderr.write(`${file} is stale: run \`pnpm schema\`\n`);
      stale = true;
    } else {
      process.stdout.write(`${file} is up to date\n`);
    }
  } else {
    writeFileSync(file, text);
    process.stdout.write(`wrote ${file}\n`);
  }
}
process.exit(stale ? 1 : 0);
