/**
 * What every topic of the store conformance suite builds on: the suite ({@link StoreSuite}: registering a test on
 * a fresh store, the app and records it writes) and the checks that fail a test with a message naming what differs.
 */
import { randomUUID } from "node:crypto";
import { credentialEvent, type CredentialEvent, type CredentialEventType } from "@credhook/core";
import type { CredentialRecord, CredentialStore, EventOutbox } from "@credhook/core/store";
import type { ConformanceTest, ConformanceTestContext } from "../conformance/options.js";

/** Ends a test as skipped with its reason (the provider suite's): an optional method a store lacks is never a pass. */
export { skip } from "../conformance/harness.js";

/** The suite: what each topic file registers its tests with. */
export interface StoreSuite {
  /**
   * Registers one test, `<prefix>: <name>`, that runs `fn` on a fresh store and closes the store after it; `ctx` is
   * the test's context, to skip a check of an optional method the store lacks ({@link skip}).
   */
  test(name: string, fn: (store: CredentialStore, ctx: ConformanceTestContext) => Promise<void>): void;
  /** Registers one test of the store's event outbox, `<prefix>: outbox: <name>`: it passes at once on a store without one. */
  outboxTest(name: string, fn: (store: CredentialStore, outbox: EventOutbox) => Promise<void>): void;
  /** The app key (`slug:<8 characters>`) of the suite's records, one per suite. */
  readonly app: string;
  /** A record of {@link app} with a fresh id and public id, active, with one API and binding; `over` replaces fields. */
  rec(over?: Partial<CredentialRecord>): CredentialRecord;
}

/** One test of the store suite: its name (after `<prefix>: `) and the check it runs on a fresh store. */
export interface StoreCase {
  name: string;
  /** @param ctx the test's context: a check of an optional method the store lacks ends it as skipped ({@link skip}) */
  check(s: StoreSuite, store: CredentialStore, ctx: ConformanceTestContext): Promise<void>;
}

/** One test of a store's event outbox, named `<prefix>: outbox: <name>`: it passes at once on a store without one. */
export interface OutboxCase {
  name: string;
  check(s: StoreSuite, store: CredentialStore, outbox: EventOutbox): Promise<void>;
}

/**
 * The suite registering with `test`.
 * @param factory opens a fresh, migrated, empty store; called once per test
 * @param prefix the start of every test name
 */
export function storeSuite(test: ConformanceTest, factory: () => Promise<CredentialStore>, prefix: string): StoreSuite {
  const run = (name: string, fn: (store: CredentialStore, ctx: ConformanceTestContext) => Promise<void>) =>
    test(`${prefix}: ${name}`, async (ctx) => {
      const store = await factory();
      try {
        await fn(store, ctx);
      } finally {
        await store.close();
      }
    });
  const app = `slug:${randomUUID().slice(0, 8)}`;
  return {
    test: run,
    outboxTest: (name, fn) =>
      run(`outbox: ${name}`, async (store) => {
        if (store.outbox) await fn(store, store.outbox);
      }),
    app,
    rec: (over = {}) => ({
      id: randomUUID(),
      credentialType: "API_KEY",
      appKey: app,
      app: { appName: "Conformance — ünïcode ‘quotes’", developer: "d@example.com", appSlug: app.slice(5) },
      publicId: `k${randomUUID().slice(0, 8)}`,
      status: "active",
      apis: [{ id: "a", gateway: "local", usagePlans: ["p1", "p2"] }],
      bindings: [{ gateway: "local", nativeId: "n1", resources: { etag: 'W/"1"', nested: { list: [1, true, null] } } }],
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
      ...over,
    }),
  };
}

/** Fails the test: throws an Error whose message starts with `store conformance: `. */
export function fail(message: string): never {
  throw new Error(`store conformance: ${message}`);
}

/** JSON with object keys sorted: a store may keep a record's keys in another order (PostgreSQL's JSONB does). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** Fails unless `actual` and `expected` are the same JSON, whatever the order of object keys; the message names `what`. */
export function expectEqual(actual: unknown, expected: unknown, what: string): void {
  const a = canonical(actual);
  const e = canonical(expected);
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`);
}

/** Fails unless `promise` rejects with an instance of `type`. */
export async function expectRejects(
  promise: Promise<unknown>,
  type: new (...args: never[]) => Error,
  what: string,
): Promise<void> {
  try {
    await promise;
  } catch (err) {
    if (!(err instanceof type)) fail(`${what}: expected ${type.name}, got ${String(err)}`);
    return;
  }
  fail(`${what}: expected ${type.name}, but it succeeded`);
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The time the outbox tests' events start at (ISO 8601). */
export const T0 = "2026-01-01T00:00:00.000Z";

/** The event of `type` for `r` at `time` (default {@link T0}). */
export const ev = (type: CredentialEventType, r: CredentialRecord, time = T0): CredentialEvent =>
  credentialEvent(type, r, time);

/** {@link T0} plus `s` seconds (ISO 8601). */
export const later = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();

/** The event ids of stored (or claimed) events, in their order. */
export const ids = (events: Array<{ event: { id: string } }>) => events.map((e) => e.event.id);
