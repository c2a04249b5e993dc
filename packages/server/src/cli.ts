/**
 * The `credhook` command line (bin/credhook.mjs runs {@link main}): the commander program, built from one module per
 * command under commands/ — each registers its options and action; how every command ends (its output written
 * completely, its exit code from one table, a reader gone) is commands/output.ts's.
 *
 * - `credhook serve`: runs the webhook until SIGTERM/SIGINT; `credhook init`: writes the starter config;
 *   `credhook check-config`: validates it and prints the routing table;
 * - `credhook reconcile`, `credhook adopt`: finishing what a crash left, bringing existing credentials under credhook;
 * - `credhook apply`: bringing the stored credentials to the config (gateway migration);
 * - `credhook audit`: the credential events (the audit trail); `credhook expire`: one expiry pass;
 * - `credhook inspect`, `list`, `revoke`, `disable`, `enable`: where a credential lives, and acting on it everywhere
 *   at once when it leaks;
 * - `credhook demo`: the multi-cloud demo on cloud fakes (repository only); `credhook hash-password`: a password's
 *   scrypt hash.
 */
import { Command } from "commander";
import * as adopt from "./commands/adopt.js";
import * as apply from "./commands/apply.js";
import * as audit from "./commands/audit.js";
import * as checkConfig from "./commands/check-config.js";
import * as demo from "./commands/demo.js";
import * as disable from "./commands/disable.js";
import * as enable from "./commands/enable.js";
import * as expire from "./commands/expire.js";
import * as hashPassword from "./commands/hash-password.js";
import * as init from "./commands/init.js";
import * as inspect from "./commands/inspect.js";
import * as list from "./commands/list.js";
import { endQuietlyWhenReaderGoes, exitCodesHelp } from "./commands/output.js";
import * as reconcile from "./commands/reconcile.js";
import * as revoke from "./commands/revoke.js";
import * as serve from "./commands/serve.js";
import { VERSION } from "./version.js";

/** The commands, in the order `credhook --help` lists them. */
const COMMANDS = [
  serve,
  init,
  checkConfig,
  reconcile,
  apply,
  adopt,
  audit,
  inspect,
  list,
  revoke,
  disable,
  enable,
  expire,
  demo,
  hashPassword,
];

/** The `credhook` program: every command registered, and the exit-code table at the end of every `--help`. */
export function credhookProgram(): Command {
  const program = new Command();
  program
    .name("credhook")
    .description("Multi-cloud credential-provisioning webhook for developer portals")
    .version(VERSION, "-V, --version", "print credhook's version")
    .showHelpAfterError()
    .addHelpText("afterAll", exitCodesHelp());
  for (const command of COMMANDS) command.register(program);
  return program;
}

/** Runs the `credhook` command line on `argv` (`process.argv`: node, the script, then the arguments). */
export async function main(argv: readonly string[]): Promise<void> {
  endQuietlyWhenReaderGoes();
  await credhookProgram().parseAsync([...argv]);
}
