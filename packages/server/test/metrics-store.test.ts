/**
 * The store's gauges at `/metrics` (issue 35): each scrape reads the store's counts — counters kept as the writes
 * happen, indexed counts of the unsettled and interrupted records — and never a record, so its cost does not grow
 * with the store. Through the HTTP API: credentials created and revoked by the contract's requests, then scraped.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CredentialRecord, CredentialStore } from "@credhook/core/store";
import { AUTH, LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(LOCAL_YAML);
});
afterAll(() => s.close());

/** One scrape's text. */
const scrape = async () => (await fetch(`${s.url}/metrics`, { headers: { authorization: AUTH } })).text();

/** The value of the sample `name` (with its labels, as written) in `text`, or undefined. */
const sample = (text: string, name: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
};

/** Creates an API key for the app `slug` through the contract's request; its apiKeyId and apiKey. */
const create = async (slug: string) => {
  const res = await s.post("/v1/createCredentials", {
    appName: `App ${slug}`,
    appSlug: slug,
    developer: "dev@example.com",
    apis: [{ id: "orders-v1", usagePlans: [{ id: "1el57v" }] }],
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { apiKeyId: string; apiKey: string };
};

/** The store methods that read records; a scrape must call none of them. */
const RECORD_READS = [
  "list",
  "listAbandoned",
  "listUnsettled",
  "listUnfinished",
  "listPage",
  "listUnsettledPage",
] as const satisfies ReadonlyArray<keyof CredentialStore>;

describe("the store's gauges", () => {
  it("count the records by state, the abandoned, unsettled and unfinished ones and the events, from counts alone", async () => {
    const store = s.credhook.store;
    const keys = [await create("m-one"), await create("m-two"), await create("m-three")];
    const revoke = await s.post("/v1/revokeCredentials", {
      appName: "App m-one",
      developer: "dev@example.com",
      credentialType: "API_KEY",
      apiKeyId: keys[0]!.apiKeyId,
      apiKey: keys[0]!.apiKey,
    });
    expect(revoke.status).toBe(204);
    // Records in the states a crash or a failed update leaves, made from a live one (only their ids and apps differ).
    const live = (await store.findByPublicId("API_KEY", keys[1]!.apiKeyId))!;
    const variant = (n: string, change: Partial<CredentialRecord>): CredentialRecord => ({
      ...structuredClone(live),
      id: `metrics-${n}`,
      appKey: `slug:dev@example.com/m-${n}`,
      publicId: `pk-${n}`,
      ...change,
    });
    const old = new Date(Date.now() - 3600_000).toISOString();
    const later = new Date(Date.now() + 3600_000).toISOString(); // no sweep acts on them during the test
    await store.insert(
      variant("abandoned", {
        status: "abandoned",
        abandoned: { reason: "test", at: old, uncertain: [], settleUntil: later, attempts: 0 },
      }),
    );
    await store.insert(variant("pending", { status: "pending", updatedAt: old }));
    await store.insert(variant("fresh-pending", { status: "pending" }));
    await store.insert(
      variant("unsettled", {
        unsettled: { gateways: [], settleUntil: later, attempts: 0 },
      }),
    );

    // Every read of records fails from here: the scrape must not need one.
    const called: string[] = [];
    const saved = new Map(RECORD_READS.map((m) => [m, store[m]]));
    for (const m of RECORD_READS)
      Object.assign(store, {
        [m]: () => {
          called.push(m);
          return Promise.reject(new Error(`${m} read during a scrape`));
        },
      });
    let text: string;
    try {
      text = await scrape();
    } finally {
      for (const [m, f] of saved) Object.assign(store, { [m]: f });
    }
    expect(called).toEqual([]);
    expect(sample(text, "credhook_store_up")).toBe(1);
    expect(sample(text, 'credhook_records{status="active"}')).toBe(3); // two left of three, and the unsettled one
    expect(sample(text, 'credhook_records{status="pending"}')).toBe(2);
    expect(sample(text, 'credhook_records{status="revoking"}')).toBe(0);
    expect(sample(text, 'credhook_records{status="abandoned"}')).toBe(1);
    expect(sample(text, "credhook_records_abandoned")).toBe(1);
    expect(sample(text, "credhook_records_unsettled")).toBe(1);
    expect(sample(text, "credhook_records_unfinished")).toBe(1); // the fresh pending one is not interrupted yet
    const events = ["pending", "delivered", "dead"].map((st) => sample(text, `credhook_events{status="${st}"}`) ?? 0);
    expect(events.reduce((a, b) => a + b, 0)).toBe(4); // three created, one revoked
  });
});
