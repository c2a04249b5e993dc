/** `credhook init [FILE] [--force]`: writes the commented starter config (the embedded default) to a file. */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { CONFIG_SEARCH_PLACES, embeddedConfigText } from "../config.js";
import { EXIT, run } from "./output.js";

/** Registers `credhook init` on `program`: exit 1 when the file exists (without `--force`) or cannot be written. */
export function register(program: Command): void {
  program
    .command("init")
    .description("write the commented starter config (the embedded default) to ./webhook.config.yaml, or FILE")
    .argument("[file]", "where to write it", CONFIG_SEARCH_PLACES[0])
    .option("-f, --force", "overwrite an existing file")
    .action((file: string, opts: { force?: boolean }) =>
      run(async () => {
        const target = resolve(file);
        try {
          writeFileSync(target, embeddedConfigText(target), { flag: opts.force ? "w" : "wx", mode: 0o644 });
        } catch (err) {
          if ((err as { code?: string }).code === "EEXIST")
            throw new Error(`${target} exists already; pass --force to overwrite it`);
          throw new Error(`cannot write ${target}: ${(err as Error).message}`);
        }
        return {
          out:
            `wrote ${target}\n` +
            `  edit it (gateways:, routes:), check it with \`credhook check-config\`, run it with \`credhook serve\`.\n` +
            `  Set CREDHOOK_PASSWORD (or CREDHOOK_PASSWORD_FILE), or let credhook generate a password on first start.\n`,
          code: EXIT.done,
        };
      }),
    );
}
