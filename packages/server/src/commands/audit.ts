/**
 * `credhook audit [--app A] [--since T] [--undelivered] [--limit N] [--json]`: the credential events the store keeps
 * (the audit trail), oldest first, with their delivery state; `--redeliver [--app A]` makes the dead ones pending
 * again (docs/events.md). The lines are operations-cli.ts's.
 */
import type { Command } from "commander";
import { CREDENTIAL_EVENT_TYPES } from "@credhook/core";
import { formatAuditLines, parseSince } from "../operations-cli.js";
import { CONFIG_OPTION, withStore } from "./common.js";
import { EXIT, jsonOut, linesOut, run } from "./output.js";

/** Every event type the outbox writes, in words: `created`, …, `drift found`, … (from core's list). */
const EVENT_TYPES_IN_WORDS = CREDENTIAL_EVENT_TYPES.map((t) => t.replace(/^credential\./, "").replace(/_/g, " "));

/** Registers `credhook audit` on `program`: exit 2 when `--undelivered` lists a dead event. */
export function register(program: Command): void {
  program
    .command("audit")
    .description(
      `list the credential events the store keeps (the audit trail: ${EVENT_TYPES_IN_WORDS.join(", ")}), oldest first, with their delivery state`,
    )
    .option(...CONFIG_OPTION)
    .option("--app <app>", "only this app's events: its slug, its name, or its app key (slug:…, app:…)")
    .option(
      "--since <time>",
      "only events at or after this time: ISO 8601 (2026-05-01) or a duration back from now (24h, 7d)",
    )
    .option(
      "--undelivered",
      "only events not delivered yet: pending, and dead (refused by a sink too often; exit code 2 when any)",
    )
    .option("--limit <n>", "at most this many, the newest", "1000")
    .option("--json", "print the events as JSON (each: the CloudEvent and its delivery state)")
    .option(
      "--redeliver",
      "make the dead events (of --app, when given) pending again, due now, for the serving instances to deliver once the sink is fixed; prints how many",
    )
    .action(
      (opts: {
        config?: string;
        app?: string;
        since?: string;
        undelivered?: boolean;
        limit: string;
        json?: boolean;
        redeliver?: boolean;
      }) =>
        run(async () => {
          if (opts.redeliver && (opts.since !== undefined || opts.undelivered))
            throw new Error("--redeliver takes --app only (it requeues every dead event of the app, or all)");
          const limit = Number(opts.limit);
          if (!Number.isInteger(limit) || limit < 1)
            throw new Error(`--limit must be an integer ≥ 1 (got '${opts.limit}')`);
          const since = opts.since === undefined ? undefined : parseSince(opts.since, Date.now());
          return withStore(opts.config, async (store) => {
            if (!store.outbox) throw new Error("this store keeps no events (its package has no outbox)");
            if (opts.redeliver) {
              const n = await store.outbox.requeueDead(new Date().toISOString(), opts.app);
              return {
                out: opts.json
                  ? `${JSON.stringify({ requeued: n })}\n`
                  : `${n} dead event${n === 1 ? "" : "s"} made pending again\n`,
                code: EXIT.done,
              };
            }
            const filter = { ...(opts.app ? { app: opts.app } : {}), ...(since ? { since } : {}), limit };
            const events = opts.undelivered
              ? [
                  ...(await store.outbox.list({ ...filter, status: "pending" })),
                  ...(await store.outbox.list({ ...filter, status: "dead" })),
                ].sort((a, b) => a.seq - b.seq)
              : await store.outbox.list(filter);
            return {
              out: opts.json ? jsonOut(events) : linesOut(formatAuditLines(events)),
              code: opts.undelivered && events.some((e) => e.status === "dead") ? EXIT.changes : EXIT.done,
            };
          });
        }),
    );
}
