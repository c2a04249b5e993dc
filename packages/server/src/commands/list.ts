/**
 * `credhook list [--app A] [--gateway G] [--developer D] [--state S] [--type T] [--fingerprint F] [--limit N] [--json]`:
 * the store's credentials, oldest first, filtered; `--limit N`: the oldest N, read without walking the rest
 * (docs/leak-response.md). The views and their lines are credential-views.ts's.
 */
import type { Command } from "commander";
import { CREDENTIAL_STATES, type CredentialQuery, EXPIRY_STATES, resolveExpiryPolicies } from "@credhook/core";
import { formatCredentialList, inspectCredentials } from "../credential-views.js";
import { CONFIG_OPTION, withStore } from "./common.js";
import { EXIT, jsonOut, linesOut, run } from "./output.js";

/** Registers `credhook list` on `program`: exit 0 also when nothing matches the filters. */
export function register(program: Command): void {
  program
    .command("list")
    .description("list the credentials the store keeps, oldest first, filtered")
    .option(...CONFIG_OPTION)
    .option("--app <app>", "only this app: its slug, its name, or its app key")
    .option("--gateway <name>", "only credentials on this gateway")
    .option("--developer <developer>", "only this developer's apps")
    .option(
      "--state <state>",
      `only records in this state: ${CREDENTIAL_STATES.join(", ")}; or only credentials ${EXPIRY_STATES.join(" or ")} (docs/expiry.md)`,
    )
    .option("--type <type>", "only this credential type: API_KEY, CLIENT_CREDENTIALS")
    .option("--fingerprint <fp>", "only the credential whose key has this fingerprint")
    .option("--limit <n>", "at most this many, the oldest")
    .option("--json", "print the credentials as JSON")
    .action((opts: Omit<CredentialQuery, "limit"> & { config?: string; json?: boolean; limit?: string }) =>
      run(async () => {
        if (opts.type !== undefined && opts.type !== "API_KEY" && opts.type !== "CLIENT_CREDENTIALS")
          throw new Error(`--type must be API_KEY or CLIENT_CREDENTIALS (got '${opts.type}')`);
        const { config: file, json, limit: given, ...filters } = opts;
        const limit = given === undefined ? undefined : Number(given);
        if (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
          throw new Error(`--limit must be an integer ≥ 1 (got '${given}')`);
        const query = { ...filters, ...(limit !== undefined ? { limit } : {}) };
        const views = await withStore(file, (store, config) =>
          inspectCredentials(store, query, Date.now(), resolveExpiryPolicies(config.gateways).policies),
        );
        return { out: json ? jsonOut(views) : linesOut(formatCredentialList(views)), code: EXIT.done };
      }),
    );
}
