/**
 * `credhook disable --fingerprint F | --app A [--reason leaked|TEXT] [--json]`: turns the credential off on every
 * gateway at once, keeping its record and resources, until `credhook enable` (docs/leak-response.md).
 */
import type { Command } from "commander";
import { registerCredentialAction } from "./credential-action.js";

/** Registers `credhook disable` on `program`. */
export function register(program: Command): void {
  registerCredentialAction(
    program,
    "disable",
    "turn a credential off on every gateway at once, keeping its record and resources (the portal's update answers 409 until `credhook enable`); --reason leaked also emits credential.leaked; one disabled or revoked already is done",
  );
}
