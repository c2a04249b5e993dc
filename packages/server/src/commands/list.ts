/**
 * `credhook list [--app A] [--gateway G] [--developer D] [--state S] [--type T] [--fingerprint F] [--limit N]
 * [--after CURSOR] [--json]`: the store's credentials, oldest first, filtered (docs/leak-response.md), read and
 * printed a page at a time (docs/operations.md#listing-credentials): memory and each store read stay one page,
 * whatever the store holds. The views and their lines are credential-views.ts's.
 */
import type { Command } from "commander";
import {
  CREDENTIAL_STATES,
  type CredentialQuery,
  EXPIRY_STATES,
  type ExpiryPolicies,
  resolveExpiryPolicies,
} from "@credhook/core";
import { type CredentialStore, PAGE_LIMIT_MAX } from "@credhook/core/store";
import { type CredentialView, formatCredentialLines, inspectCredentialPage } from "../credential-views.js";
import { CONFIG_OPTION, withStore } from "./common.js";
import { EXIT, run, written } from "./output.js";

/** What `credhook list` is asked: the filters, and where the listing starts and stops. */
interface ListRequest {
  query: CredentialQuery;
  /** The most credentials to print; absent: every one. */
  limit?: number;
  /** The cursor a `--limit` listing printed, to continue after it. */
  after?: string;
  json: boolean;
}

/** The text of `views` on stdout: a line each, or (JSON) array elements, `first` telling whether any came before. */
function pageText(views: readonly CredentialView[], json: boolean, first: boolean): string {
  if (!json) return views.length > 0 ? `${formatCredentialLines([...views]).join("\n")}\n` : "";
  return views
    .map((v, i) => `${first && i === 0 ? "[\n" : ",\n"}  ${JSON.stringify(v, null, 2).replace(/\n/g, "\n  ")}`)
    .join("");
}

/**
 * Prints the credentials `request` asks for, page by page (each page written before the next is read), the JSON
 * array or the lines exactly as one write of them all would; with `limit`, stops there and, when more may follow,
 * writes `next: <cursor>` on stderr (pass it as `--after`).
 */
async function printList(
  store: CredentialStore,
  request: ListRequest,
  policies: ExpiryPolicies | undefined,
): Promise<void> {
  const now = Date.now();
  let remaining = request.limit ?? Number.POSITIVE_INFINITY;
  let after = request.after;
  let shown = 0;
  do {
    const page = await inspectCredentialPage(store, request.query, now, policies, {
      limit: Math.min(remaining, PAGE_LIMIT_MAX),
      ...(after !== undefined ? { after } : {}),
    });
    await written(process.stdout, pageText(page.views, request.json, shown === 0));
    shown += page.views.length;
    remaining -= page.views.length;
    after = page.next;
  } while (after !== undefined && remaining > 0);
  if (request.json) await written(process.stdout, shown === 0 ? "[]\n" : "\n]\n");
  else if (shown === 0) await written(process.stdout, "no credentials\n");
  if (after !== undefined) await written(process.stderr, `next: ${after}\n`);
}

/**
 * `--limit`'s value as a number.
 * @throws Error a value that is not an integer ≥ 1
 */
function parseLimit(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1) throw new Error(`--limit must be an integer ≥ 1 (got '${raw}')`);
  return n;
}

/** Registers `credhook list` on `program`: exit 0 also when nothing matches the filters. */
export function register(program: Command): void {
  program
    .command("list")
    .description("list the credentials the store keeps, oldest first, filtered; printed a page at a time")
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
    .option(
      "--limit <n>",
      "at most this many; when more may follow, prints 'next: <cursor>' on stderr (default: every credential)",
    )
    .option("--after <cursor>", "continue after the cursor a --limit listing printed (same filters)")
    .option("--json", "print the credentials as JSON")
    .action((opts: CredentialQuery & { config?: string; json?: boolean; limit?: string; after?: string }) =>
      run(async () => {
        if (opts.type !== undefined && opts.type !== "API_KEY" && opts.type !== "CLIENT_CREDENTIALS")
          throw new Error(`--type must be API_KEY or CLIENT_CREDENTIALS (got '${opts.type}')`);
        const { config: file, json, limit, after, ...query } = opts;
        const request: ListRequest = {
          query,
          json: json === true,
          ...(limit !== undefined ? { limit: parseLimit(limit) } : {}),
          ...(after !== undefined ? { after } : {}),
        };
        await withStore(file, (store, config) =>
          printList(store, request, resolveExpiryPolicies(config.gateways).policies),
        );
        return { out: "", code: EXIT.done };
      }),
    );
}
