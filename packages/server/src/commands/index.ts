/**
 * The `credhook` program, assembled from the commands of this folder: one module per command, each registering its
 * options and action (`register(program)`); how every command ends is output.ts's. `cli.ts` (what bin/credhook.mjs
 * runs) hands {@link main} and {@link credhookProgram} on; no other module outside this folder imports from it.
 */
import { Command } from "commander";
import * as adopt from "./adopt.js";
import * as apply from "./apply.js";
import * as audit from "./audit.js";
import * as checkConfig from "./check-config.js";
import * as demo from "./demo.js";
import * as disable from "./disable.js";
import * as enable from "./enable.js";
import * as expire from "./expire.js";
import * as hashPassword from "./hash-password.js";
import * as init from "./init.js";
import * as inspect from "./inspect.js";
import * as list from "./list.js";
import { endQuietlyWhenReaderGoes, exitCodesHelp } from "./output.js";
import * as reconcile from "./reconcile.js";
import * as revoke from "./revoke.js";
import * as serve from "./serve.js";
import { VERSION } from "../version.js";

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
