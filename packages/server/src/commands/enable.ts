/** `credhook enable --fingerprint F | --app A [--reason TEXT] [--json]`: turns a disabled credential on again on every gateway. */
import type { Command } from "commander";
import { registerCredentialAction } from "./credential-action.js";

/** Registers `credhook enable` on `program`. */
export function register(program: Command): void {
  registerCredentialAction(
    program,
    "enable",
    "turn a disabled credential on again on every gateway; one not disabled is done, a revoked one cannot be",
  );
}
