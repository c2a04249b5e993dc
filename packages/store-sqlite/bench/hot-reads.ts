/**
 * The store's hot reads at scale: `seed` writes N credentials and 2N events straight into a SQLite file (through
 * the schema's triggers, not the store's writes: 100,000 in about 25 s), `time` opens it with the store (migrating it
 * first, timed) and prints the median time of each hot read — the outbox's claim, events by app, the counts, the
 * unsettled and list pages, the expiry walk. Figures only; nothing is asserted.
 *
 * The seed: developers `dev<i % 5000>@example.com`, one app each (`app-<i>`, "App number <i>"), gateways `aws-us`,
 * `azure-eu`, `local` in turn; 1 in 1,000 records revoking, 1 in 2,000 pending and abandoned, 1 in 5,000 unsettled;
 * events `created` and `updated` of each, the last 50 updates pending, 1 in 3,000 dead, the rest delivered.
 *
 *   npx tsx --conditions=dev-source packages/store-sqlite/bench/hot-reads.ts /tmp/hot.db seed 100000
 *   npx tsx --conditions=dev-source packages/store-sqlite/bench/hot-reads.ts /tmp/hot.db time 100000
 *
 * Seeding a file with an older credhook (`git stash`, or a checkout of an earlier commit) and timing it with this one
 * measures the migration too.
 */
import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import { credentialEvent } from "@credhook/core";
import { EVENT_INSERT_COLUMNS, eventRow, type CredentialRecord } from "@credhook/core/store";
import { openSqliteStore } from "../src/index.js";

const [file = "/tmp/bench/store.db", mode = "time", nArg = "100000"] = process.argv.slice(2);
const N = Number(nArg);
const DAY = 86_400_000;
const T_END = Date.parse("2026-06-01T00:00:00.000Z");

function recordOf(i: number): CredentialRecord {
  const created = new Date(T_END - 400 * DAY + Math.floor((i / N) * 399 * DAY)).toISOString();
  const gateway = ["aws-us", "azure-eu", "local"][i % 3]!;
  const status = i % 1000 === 1 ? "revoking" : i % 2000 === 3 ? "pending" : i % 2000 === 5 ? "abandoned" : "active";
  const r: CredentialRecord = {
    id: randomUUID(),
    credentialType: "API_KEY",
    appKey: `slug:dev${i % 5000}@example.com/app-${i}`,
    app: { appName: `App number ${i}`, developer: `dev${i % 5000}@example.com`, appSlug: `app-${i}` },
    publicId: `k-${i}`,
    status,
    apis: [{ id: `api-${i % 7}`, gateway, usagePlans: ["gold", "silver"] }],
    bindings: [
      { gateway, nativeId: `n-${i}`, resources: { etag: 'W/"1"', usagePlanKeys: ["gold:abc", "silver:def"] } },
    ],
    keyFingerprint: `sha256:${randomUUID().replace(/-/g, "")}`,
    createdAt: created,
    updatedAt: created,
  };
  if (i % 5000 === 7)
    r.unsettled = {
      gateways: [{ gateway, attempted: [{ id: "x", usagePlans: ["gold"] }] }],
      settleUntil: new Date(Date.parse(created) + 300_000).toISOString(),
      attempts: 0,
    };
  return r;
}

async function seed(): Promise<void> {
  const store = await openSqliteStore({ path: file });
  await store.close();
  const db = new Database(file);
  const insRec = db.prepare(
    "INSERT INTO credentials (id, credential_type, app_key, public_id, status, record, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
  );
  const insEv = db.prepare(
    `INSERT INTO events (${EVENT_INSERT_COLUMNS}, status, attempts, settled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  db.transaction(() => {
    for (let i = 0; i < N; i++) {
      const r = recordOf(i);
      insRec.run(r.id, r.credentialType, r.appKey, r.publicId, r.status, JSON.stringify(r), r.createdAt, r.updatedAt);
      for (const type of ["credential.created", "credential.updated"] as const) {
        const pending = i >= N - 50 && type === "credential.updated";
        const dead = i % 3000 === 11 && type === "credential.updated";
        insEv.run(
          ...eventRow(credentialEvent(type, r, r.createdAt)),
          pending ? "pending" : dead ? "dead" : "delivered",
          pending ? 0 : 1,
          pending ? null : r.createdAt,
        );
      }
    }
  })();
  db.close();
}

/** Median of `runs` timings of `fn`, ms. */
async function time(what: string, fn: () => Promise<unknown>, runs = 20): Promise<void> {
  const ts: number[] = [];
  let out: unknown;
  for (let k = 0; k < runs; k++) {
    const t = process.hrtime.bigint();
    out = await fn();
    ts.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  ts.sort((a, b) => a - b);
  const size = Array.isArray(out)
    ? out.length
    : out !== null && typeof out === "object" && "records" in out
      ? (out as { records: unknown[] }).records.length
      : JSON.stringify(out);
  console.log(
    `${what.padEnd(44)} median ${ts[Math.floor(runs / 2)]!.toFixed(3)} ms  (min ${ts[0]!.toFixed(3)}; result: ${String(size)})`,
  );
}

async function timeAll(): Promise<void> {
  const t0 = process.hrtime.bigint();
  const store = await openSqliteStore({ path: file });
  console.log(
    `open + migrate: ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(0)} ms, schema ${store.schemaVersion()}`,
  );
  const now = "2026-06-01T00:00:00.000Z";
  const i = Math.floor(N / 2);
  await time("claim (64)", () => store.outbox.claim(now, now, "bench", 64));
  await time("events by app key", () => store.outbox.list({ app: `slug:dev${i % 5000}@example.com/app-${i}` }));
  await time("events by app slug", () => store.outbox.list({ app: `app-${i}` }));
  await time("events by app name", () => store.outbox.list({ app: `App number ${i}` }));
  await time("pending events", () => store.outbox.list({ status: "pending" }));
  await time("events since a time", () => store.outbox.list({ since: "2026-05-31T00:00:00.000Z" }));
  await time("outbox.counts", () => store.outbox.counts());
  await time("counts", () => store.counts(now));
  await time("listUnsettled (all)", () => store.listUnsettled());
  await time("listAbandoned (all)", () => store.listAbandoned());
  await time("listUnfinished", () => store.listUnfinished(now));
  await time("requeueDead (an app with none)", () => store.outbox.requeueDead(now, "nobody"));
  await time("list page (100)", () => store.listPage({ limit: 100 }));
  await time("list page (100, after a cursor)", async () => {
    const { next } = await store.listPage({ limit: 100 });
    return store.listPage({ limit: 100, ...(next ? { after: next } : {}) });
  });
  await time("list page (100, state abandoned)", () => store.listPage({ limit: 100, status: "abandoned" }));
  await time("list page (100, app slug)", () => store.listPage({ limit: 100, app: `app-${i}` }));
  await time("list page (100, gateway azure-eu)", () => store.listPage({ limit: 100, gateway: "azure-eu" }));
  await time("list page (100, developer)", () =>
    store.listPage({ limit: 100, developer: `dev${i % 5000}@example.com` }),
  );
  await time("expiry walk page (active, 500)", () => store.listPage({ limit: 500, status: "active" }));
  await time("unsettled page (100)", () => store.listUnsettledPage({ limit: 100 }));
  await time("unsettled page (due, 100)", () => store.listUnsettledPage({ limit: 100, dueAt: now }));
  await time("list() (all)", () => store.list(), 3);
  await store.close();
}

if (mode === "seed") await seed();
else await timeAll();
