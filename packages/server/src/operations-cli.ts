/**
 * What the operator commands `credhook reconcile` and `credhook adopt` read and
 * print: the reconcile report in words, and the adoption file, validated.
 */
import { readFile } from "node:fs/promises";
import {
  compileSchema,
  formatAjvErrors,
  type AdoptionRequest,
  type ReconcileReport,
  type StoredEvent,
} from "@credhook/core";
import { ConfigError } from "@credhook/core/errors";

/** Units of a `--since` duration, in ms. */
const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `credhook audit --since`: an ISO 8601 time (`2026-05-01`, `2026-05-01T12:00:00Z`) or a duration back
 * from `nowMs` (`90s`, `30m`, `24h`, `7d`, `2w`).
 * @returns the ISO 8601 time it means
 * @throws Error naming the accepted forms
 */
export function parseSince(value: string, nowMs: number): string {
  const m = /^(\d+)([smhdw])$/.exec(value.trim());
  if (m) return new Date(nowMs - Number(m[1]) * DURATION_UNITS[m[2]!]!).toISOString();
  const t = Date.parse(value);
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && Number.isFinite(t)) return new Date(t).toISOString();
  throw new Error(
    `--since must be an ISO 8601 time (2026-05-01, 2026-05-01T12:00:00Z) or a duration (90s, 30m, 24h, 7d, 2w); got '${value}'`,
  );
}

/** `credhook audit`'s lines: one per event, oldest first — time, type, app, credential, where, delivery state. */
export function formatAuditLines(events: StoredEvent[]): string[] {
  if (events.length === 0) return ["no events"];
  return events.map(({ event, status, attempts, lastError }) => {
    const d = event.data;
    const where = d.gateways.map((g) => `${g.gateway}:${g.nativeId}`).join(",") || "-";
    const delivery =
      status === "delivered"
        ? "delivered"
        : `${status}${attempts > 0 ? ` after ${attempts} attempt(s)` : ""}${lastError ? ` (${lastError})` : ""}`;
    return [
      event.time,
      event.type,
      event.subject,
      d.credentialId ?? "-",
      where,
      d.keyFingerprint ?? "-",
      delivery,
      ...(d.reason ? [`reason: ${d.reason}`] : []),
      `id ${event.id}`,
    ].join("  ");
  });
}

/**
 * The reconcile report as lines for a terminal: unfinished operations, records
 * skipped as too recent (and how to include them), abandoned creates, garbage
 * revoked, unsettled updates brought back, drift reported.
 * @param olderThanS the `--older-than` the report was made with, seconds
 */
export function formatReconcileReport(report: ReconcileReport, olderThanS: number): string[] {
  const dry = report.dryRun ? "[dry run] " : "";
  const out: string[] = [`${dry}unfinished credentials: ${report.unfinished.length}`];
  for (const u of report.unfinished) {
    out.push(
      `  - ${u.credentialId} (${u.appKey}, interrupted ${u.op}) on ${u.gateways.join(", ") || "no gateway"}: ${u.action}`,
    );
    for (const e of u.errors) out.push(`      error: ${e}`);
  }
  if (report.skippedRecent > 0) {
    out.push(
      `skipped as too recent: ${report.skippedRecent} unfinished record(s) written in the last ${olderThanS} s (possibly a running server's requests in flight); ` +
        `run again later, or with --older-than 0 when no server is running`,
    );
  }
  out.push(`abandoned creates (the portal never received them): ${report.abandoned.length}`);
  for (const a of report.abandoned) {
    out.push(`  - ${a.credentialId} (${a.appKey}) on ${a.gateways.join(", ") || "no gateway"}: ${a.action}`);
    for (const e of a.errors) out.push(`      error: ${e}`);
  }
  out.push(
    `updates whose late writes may have landed (each gateway brought back to the record once settled): ${report.unsettled.length}`,
  );
  for (const u of report.unsettled) {
    out.push(`  - ${u.credentialId} (${u.appKey}) on ${u.gateways.join(", ")}: ${u.action}`);
    for (const e of u.errors) out.push(`      error: ${e}`);
  }
  out.push(
    `${report.dryRun ? "garbage to revoke" : "garbage revoked"} (marked with a credential id whose record says it is not there): ${report.garbage.length}`,
  );
  for (const g of report.garbage)
    out.push(
      `  - ${g.gateway}: ${g.nativeId} ${g.description}${g.credentialId ? ` [credential ${g.credentialId}]` : ""}`,
    );
  out.push(`resources no credential record explains (drift, not deleted): ${report.orphans.length}`);
  for (const o of report.orphans)
    out.push(
      `  - ${o.gateway}: ${o.nativeId} ${o.description}${o.credentialId ? ` [credential ${o.credentialId}]` : ""}`,
    );
  if (report.unlistable.length > 0)
    out.push(`gateways that cannot list their resources: ${report.unlistable.join(", ")}`);
  return out;
}

/** JSON Schema of `credhook adopt`'s input file. Unknown fields are tolerated, like the portal's. */
const adoptionFileSchema = {
  type: "array",
  items: {
    type: "object",
    required: ["credentialType", "appName", "developer", "apis"],
    properties: {
      credentialType: { enum: ["API_KEY", "CLIENT_CREDENTIALS"] },
      apiKeyId: { type: "string", minLength: 1 },
      clientId: { type: "string", minLength: 1 },
      appName: { type: "string", minLength: 1 },
      developer: { type: "string", minLength: 1 },
      appSlug: { type: "string", minLength: 1 },
      apis: {
        type: "array",
        minItems: 1,
        items: {
          type: "object",
          required: ["id"],
          properties: {
            id: { type: "string", minLength: 1 },
            usagePlans: {
              type: "array",
              items: { type: "object", required: ["id"], properties: { id: { type: "string", minLength: 1 } } },
            },
          },
        },
      },
    },
  },
} as const;

/**
 * Reads and validates `credhook adopt`'s JSON file.
 * @throws ConfigError naming the file and each problem's place (`file[0].apis must …`), or that it is not JSON
 */
export async function readAdoptionFile(file: string): Promise<AdoptionRequest[]> {
  let data: unknown;
  try {
    data = JSON.parse(await readFile(file, "utf8"));
  } catch (err) {
    throw new ConfigError([
      `${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : `not valid JSON (${(err as Error).message})`}`,
    ]);
  }
  const validate = compileSchema(adoptionFileSchema);
  if (!validate(data))
    throw new ConfigError(
      formatAjvErrors(validate.errors, (path) => `${file}${path.replace(/\/(\d+)/g, "[$1]").replace(/\//g, ".")}`),
    );
  return data as AdoptionRequest[];
}
