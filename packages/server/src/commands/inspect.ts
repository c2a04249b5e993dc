/**
 * `credhook inspect APP | --fingerprint F [--json]`: where each matching credential lives — gateways, native ids,
 * plans, age, last change, state, expiry — read from the store (docs/leak-response.md). The views and their text
 * are credential-views.ts's.
 */
import type { Command } from "commander";
import { resolveExpiryPolicies } from "@credhook/core";
import { formatCredentialDetails, inspectCredentials } from "../credential-views.js";
import { CONFIG_OPTION, withStore } from "./common.js";
import { EXIT, jsonOut, linesOut, run } from "./output.js";

/** Registers `credhook inspect` on `program`: exit 1 when no credential matches. */
export function register(program: Command): void {
  program
    .command("inspect")
    .description(
      "show where a credential lives: its gateways, native ids, plans, age, last change and state (exit 1 when none matches)",
    )
    .argument("[app]", "the app: its slug, its name, or its app key (slug:…, app:…)")
    .option(...CONFIG_OPTION)
    .option("--fingerprint <fp>", "the credential whose key has this fingerprint (sha256:…, as events show it)")
    .option("--json", "print the credentials as JSON")
    .action((app: string | undefined, opts: { config?: string; fingerprint?: string; json?: boolean }) =>
      run(async () => {
        if (app === undefined && opts.fingerprint === undefined) throw new Error("give an app, or --fingerprint F");
        const views = await withStore(opts.config, (store, config) =>
          inspectCredentials(
            store,
            { ...(app !== undefined ? { app } : {}), ...(opts.fingerprint ? { fingerprint: opts.fingerprint } : {}) },
            Date.now(),
            resolveExpiryPolicies(config.gateways).policies,
          ),
        );
        return {
          out: opts.json ? jsonOut(views) : linesOut(formatCredentialDetails(views)),
          code: views.length > 0 ? EXIT.done : EXIT.error,
        };
      }),
    );
}
