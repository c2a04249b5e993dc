/**
 * Delivery of credential events to HTTP sinks: signed per Standard Webhooks (checked with the
 * `standardwebhooks` package's own verifier), CloudEvents structured mode (read back with the
 * `cloudevents` package), in order per app, retried with backoff on an injected clock, and kept as
 * dead after the last attempt — on the in-memory outbox and a local sink, no process.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { HTTP } from "cloudevents";
import { Webhook } from "standardwebhooks";
import { MemoryOutbox } from "@credhook/provider-testkit";
import { credentialEvent, PRUNE_BATCH_SIZE, silentLogger, type EventsConfig } from "@credhook/core";
import type { CredentialRecord } from "@credhook/core/store";
import { EventDeliverer, retryDelayMs, signedRequest } from "../src/events.js";
import { formatAuditLines, parseSince } from "../src/operations-cli.js";

const SECRET = `whsec_${Buffer.from("a-32-byte-secret-for-the-tests!!").toString("base64")}`;
const T0 = Date.parse("2026-03-01T00:00:00.000Z");

/** A sink on a free port: records each request; answers with what `answer` says (200 by default). */
async function sink(answer: (body: string) => number = () => 200) {
  const received: Array<{ headers: IncomingHttpHeaders; body: string; status: number }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const status = answer(body);
      received.push({ headers: req.headers, body, status });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return { url, received, close: () => new Promise((r) => server.close(r)) };
}

const record = (slug: string): CredentialRecord => ({
  id: `cred-${slug}`,
  credentialType: "API_KEY",
  appKey: `slug:d@example.com/${slug}`,
  app: { appName: slug, developer: "d@example.com", appSlug: slug },
  publicId: `key-${slug}`,
  status: "active",
  apis: [{ id: "api", gateway: "aws", usagePlans: ["gold"] }],
  bindings: [{ gateway: "aws", nativeId: `key-${slug}`, resources: {} }],
  keyFingerprint: "sha256:0123456789abcdef0123456789abcdef",
  createdAt: new Date(T0).toISOString(),
  updatedAt: new Date(T0).toISOString(),
});

const config = (url: string, retry: Partial<EventsConfig["retry"]> = {}): EventsConfig => ({
  sinks: [{ url, secret: SECRET, timeoutMs: 5000 }],
  retentionDays: 90,
  pollIntervalMs: 1000,
  batchSize: 200,
  retry: { maxAttempts: 3, initialDelayMs: 1000, maxDelayMs: 60_000, ...retry },
});

describe("event delivery", () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  it("signs each delivery per Standard Webhooks: the verifier accepts it, and refuses it altered", async () => {
    const s = await sink();
    closers.push(s.close);
    const outbox = new MemoryOutbox();
    const event = credentialEvent("credential.created", record("shop"), new Date(T0).toISOString());
    outbox.add([event]);
    // The default clock: the verifier checks the signed timestamp against its own (5 minutes' tolerance).
    const deliverer = new EventDeliverer(outbox, config(s.url), { logger: silentLogger });
    expect(await deliverer.pass()).toEqual({ claimed: 1, delivered: 1, retried: 0, dead: 0 });
    const [got] = s.received;
    const headers = got!.headers as Record<string, string>;
    expect(headers["webhook-id"]).toBe(event.id);
    expect(headers["content-type"]).toMatch(/^application\/cloudevents\+json/);
    expect(new Webhook(SECRET).verify(got!.body, headers)).toEqual(JSON.parse(got!.body));
    expect(() => new Webhook(SECRET).verify(got!.body.replace("shop", "shoq"), headers)).toThrow();
    // The body is the CloudEvent, as the cloudevents package reads it back.
    const read = HTTP.toEvent({ headers, body: got!.body });
    expect(read).toMatchObject({ id: event.id, type: "credential.created", source: "/credhook", specversion: "1.0" });
    expect((read as { data: unknown }).data).toEqual(event.data);
    expect((await outbox.list())[0]).toMatchObject({
      status: "delivered",
      attempts: 1,
      sinksDone: [`${new URL(s.url).origin}/hooks`],
    });
  });

  it("delivers in order per app: a refused event holds back its app's later ones, not other apps'", async () => {
    let refuse = true;
    const s = await sink((body) =>
      refuse && body.includes('"credential.created"') && body.includes("shop") ? 503 : 200,
    );
    closers.push(s.close);
    const outbox = new MemoryOutbox();
    const at = new Date(T0).toISOString();
    const shop1 = credentialEvent("credential.created", record("shop"), at);
    const shop2 = credentialEvent("credential.updated", record("shop"), at);
    const other = credentialEvent("credential.created", record("other"), at);
    outbox.add([shop1, shop2, other]);
    let now = T0;
    const deliverer = new EventDeliverer(outbox, config(s.url), { logger: silentLogger, now: () => now });
    expect(await deliverer.pass()).toMatchObject({ claimed: 2, delivered: 1, retried: 1 });
    expect(await deliverer.pass()).toMatchObject({ claimed: 0 }); // shop1 waits for its next attempt; shop2 behind it
    expect((await outbox.list({ status: "pending" }))[0]).toMatchObject({
      attempts: 1,
      lastError: expect.stringContaining("HTTP 503"),
      nextAttemptAt: new Date(T0 + 1000).toISOString(),
    });
    refuse = false;
    now = T0 + 1000;
    expect(await deliverer.pass()).toMatchObject({ claimed: 1, delivered: 1 });
    expect(await deliverer.pass()).toMatchObject({ claimed: 1, delivered: 1 });
    expect(s.received.map((r) => r.headers["webhook-id"]).sort()).toEqual(
      [shop1.id, shop1.id, shop2.id, other.id].sort(),
    );
    // shop's events arrived in order, the retry with the same webhook-id
    const shopIds = s.received.filter((r) => r.body.includes('"shop"')).map((r) => r.headers["webhook-id"]);
    expect(shopIds).toEqual([shop1.id, shop1.id, shop2.id]);
  });

  it("keeps an event refused maxAttempts times as dead, visible, goes on with the app's next event, and delivers it once requeued", async () => {
    let fixed = false;
    const s = await sink((body) => (body.includes('"credential.created"') && !fixed ? 500 : 200));
    closers.push(s.close);
    const outbox = new MemoryOutbox();
    const at = new Date(T0).toISOString();
    const first = credentialEvent("credential.created", record("shop"), at);
    const second = credentialEvent("credential.revoked", record("shop"), at);
    outbox.add([first, second]);
    let now = T0;
    const outcomes: string[] = [];
    const deliverer = new EventDeliverer(outbox, config(s.url), {
      logger: silentLogger,
      now: () => now,
      onAttempt: (o) => outcomes.push(o),
    });
    for (const delay of [0, 1000, 2000]) {
      now += delay;
      await deliverer.pass();
    }
    expect(outcomes).toEqual(["retry", "retry", "dead"]);
    const [dead] = await outbox.list({ status: "dead" });
    expect(dead).toMatchObject({
      attempts: 3,
      event: { id: first.id },
      lastError: expect.stringContaining("HTTP 500"),
    });
    expect(formatAuditLines([dead!])[0]).toContain("dead after 3 attempt(s)");
    expect(await deliverer.pass()).toMatchObject({ delivered: 1 });
    expect((await outbox.list({ status: "delivered" })).map((e) => e.event.id)).toEqual([second.id]);
    // The sink is fixed: `credhook audit --redeliver` makes the dead event pending again, due now, and it goes out.
    fixed = true;
    expect(await outbox.requeueDead(new Date(now).toISOString())).toBe(1);
    expect(await deliverer.pass()).toMatchObject({ claimed: 1, delivered: 1, dead: 0 });
    expect((await outbox.list({ status: "delivered" })).map((e) => e.event.id).sort()).toEqual(
      [first.id, second.id].sort(),
    );
    expect(s.received.filter((r) => r.headers["webhook-id"] === first.id)).toHaveLength(4);
  });

  it("drains a backlog of many batches at once, in order per app, each event once, every batch settled in one write", async () => {
    const s = await sink();
    closers.push(s.close);
    const outbox = new MemoryOutbox();
    const at = new Date(T0).toISOString();
    // 3 apps × 25 events, 2 claimed a pass (each of another app): 38 passes, more than the old loop's 20.
    const apps = ["a", "b", "c"].map((x) => record(x));
    const backlog = Array.from({ length: 25 }, (_, i) =>
      apps.map((r) => credentialEvent(i === 0 ? "credential.created" : "credential.updated", r, at)),
    ).flat();
    outbox.add(backlog);
    let settleAlls = 0;
    const settleAll = outbox.settleAll.bind(outbox);
    outbox.settleAll = (...args) => ((settleAlls += 1), settleAll(...args));
    const c = { ...config(s.url), batchSize: 2 };
    const deliverer = new EventDeliverer(outbox, c, { logger: silentLogger, now: () => T0 });
    expect(await deliverer.drain()).toEqual({ claimed: 75, delivered: 75, retried: 0, dead: 0 });
    expect(settleAlls).toBe(38); // one write a pass, the last one (one event) included
    const received = s.received.map((r) => r.headers["webhook-id"]);
    expect([...received].sort()).toEqual(backlog.map((e) => e.id).sort()); // nothing lost, nothing twice
    for (const r of apps) {
      const mine = s.received.filter((x) => x.body.includes(`"${r.appKey}"`)).map((x) => x.headers["webhook-id"]);
      expect(mine).toEqual(backlog.filter((e) => e.subject === r.appKey).map((e) => e.id));
    }
    expect(await outbox.counts()).toEqual({ pending: 0, delivered: 75, dead: 0 });
    // stopped: no pass at all
    outbox.add([credentialEvent("credential.revoked", apps[0]!, at)]);
    expect(await deliverer.drain(() => true)).toMatchObject({ claimed: 0 });
  });

  it("sends an event only to the sinks whose types want it; with none, it is delivered at once", async () => {
    const s = await sink();
    closers.push(s.close);
    const outbox = new MemoryOutbox();
    outbox.add([credentialEvent("credential.updated", record("shop"), new Date(T0).toISOString())]);
    const c = config(s.url);
    c.sinks[0]!.types = ["credential.revoked"];
    const deliverer = new EventDeliverer(outbox, c, { logger: silentLogger, now: () => T0 });
    expect(await deliverer.pass()).toMatchObject({ delivered: 1 });
    expect(s.received).toHaveLength(0);
  });

  it("with no sink, settles pending events a batch per write, for audit only, and claims none; drain settles the backlog", async () => {
    const outbox = new MemoryOutbox();
    const apps = ["a", "b", "c", "d", "e"].map((x) => record(x));
    outbox.add(apps.map((r) => credentialEvent("credential.created", r, new Date(T0).toISOString())));
    let claims = 0;
    const claim = outbox.claim.bind(outbox);
    outbox.claim = (...args) => ((claims += 1), claim(...args));
    const limits: Array<number | undefined> = [];
    const settleUnsent = outbox.settleUnsent.bind(outbox);
    outbox.settleUnsent = (now, limit) => (limits.push(limit), settleUnsent(now, limit));
    const deliverer = new EventDeliverer(
      outbox,
      { ...config("http://unused"), sinks: [], batchSize: 2 },
      {
        logger: silentLogger,
        now: () => T0,
      },
    );
    expect(await deliverer.pass()).toMatchObject({ delivered: 2, retried: 0, dead: 0 });
    expect(await outbox.counts()).toMatchObject({ pending: 3, delivered: 2 });
    expect(await deliverer.drain()).toMatchObject({ delivered: 3 });
    expect(limits).toEqual([2, 2, 2]); // one write of at most events.batchSize a pass; the short one ends the drain
    expect(claims).toBe(0);
    expect((await outbox.list({ status: "delivered" })).map((e) => e.attempts)).toEqual([0, 0, 0, 0, 0]);
    expect(await outbox.counts()).toMatchObject({ pending: 0, delivered: 5 });
  });

  it("prunes events older than retentionDays a batch of PRUNE_BATCH_SIZE per write until a short one; stops when told", async () => {
    const outbox = new MemoryOutbox();
    const old = new Date(T0 - 91 * 86_400_000).toISOString();
    const count = 2 * PRUNE_BATCH_SIZE + 7;
    outbox.add(Array.from({ length: count }, (_, i) => credentialEvent("credential.created", record(`o${i}`), old)));
    outbox.add([credentialEvent("credential.created", record("new"), new Date(T0).toISOString())]);
    await new EventDeliverer(outbox, { ...config("http://unused"), sinks: [] }, { logger: silentLogger }).drain();
    const limits: Array<number | undefined> = [];
    const prune = outbox.prune.bind(outbox);
    outbox.prune = (before, limit) => (limits.push(limit), prune(before, limit));
    const deliverer = new EventDeliverer(outbox, config("http://unused"), { logger: silentLogger, now: () => T0 });
    expect(await deliverer.prune(() => limits.length >= 1)).toBe(PRUNE_BATCH_SIZE); // told to stop after the first
    expect(await deliverer.prune()).toBe(PRUNE_BATCH_SIZE + 7);
    expect(limits).toEqual([PRUNE_BATCH_SIZE, PRUNE_BATCH_SIZE, PRUNE_BATCH_SIZE]);
    expect((await outbox.list()).map((e) => e.event.subject)).toEqual([record("new").appKey]); // the new one kept
  });

  it("backs off exponentially up to the cap; signs with the secret with or without its whsec_ prefix", () => {
    const retry = { maxAttempts: 10, initialDelayMs: 1000, maxDelayMs: 5000 };
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(retry, n))).toEqual([1000, 2000, 4000, 5000, 5000]);
    const event = credentialEvent("credential.created", record("shop"), new Date(T0).toISOString());
    const one = signedRequest(event, SECRET, T0);
    const two = signedRequest(event, SECRET.slice("whsec_".length), T0);
    expect(one.headers["webhook-signature"]).toBe(two.headers["webhook-signature"]);
    expect(one.headers["webhook-timestamp"]).toBe(String(T0 / 1000));
  });

  it("audit's --since takes an ISO time or a duration back from now", () => {
    expect(parseSince("2026-05-01", T0)).toBe("2026-05-01T00:00:00.000Z");
    expect(parseSince("24h", T0)).toBe(new Date(T0 - 86_400_000).toISOString());
    expect(parseSince("7d", T0)).toBe(new Date(T0 - 7 * 86_400_000).toISOString());
    expect(() => parseSince("yesterday", T0)).toThrow(/--since must be/);
  });
});
