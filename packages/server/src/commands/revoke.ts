/**
 * `credhook revoke --fingerprint F | --app A [--reason leaked|TEXT] [--json]`: revokes the credential on every gateway
 * at once, as the portal's revoke does; `--reason leaked` also writes `credential.leaked` (docs/leak-response.md).
 */
import type { Command } from "commander";
import { registerCredentialAction } from "./credential-action.js";

/** Registers `credhook revoke` on `program`. */
export function register(program: Command): void {
  registerCredentialAction(
    program,
    "revoke",
    "revoke a credential on every gateway at once (as the portal's revoke does); --reason leaked also emits credential.leaked; one revoked already (also by the audit trail) is done",
  );
}
