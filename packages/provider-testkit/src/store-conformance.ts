/**
 * The store conformance suite (keyv's `storeTestSuite` idea): every
 * {@link CredentialStore} — the built-in SQLite and PostgreSQL stores and a
 * third party's — runs the same cases against a real database.
 *
 * This file composes the suite; each topic is a file of `store-conformance/` (records, paged reads, counts,
 * provider state, health and locks, the event outbox) on the shared harness of `store-conformance/harness.ts`.
 */
import type { CredentialStore } from "@credhook/core/store";
import type { ConformanceTest } from "./conformance/options.js";
import { countTests } from "./store-conformance/counts.js";
import { storeSuite } from "./store-conformance/harness.js";
import { lockTests } from "./store-conformance/locks.js";
import { outboxTests } from "./store-conformance/outbox.js";
import { pageTests } from "./store-conformance/pages.js";
import { providerStateTests } from "./store-conformance/provider-state.js";
import { recordTests } from "./store-conformance/records.js";

/** Options of {@link storeConformance}. */
export interface StoreConformanceOptions {
  /** Prefix of every test name. @default "store conformance" */
  name?: string;
}

/**
 * Registers the store conformance tests with `test`, each named `<options.name>: <what it checks>`: records, paged
 * reads, counts, provider state, health and locks, then the event outbox (whose tests pass at once on a store without one).
 * @param test vitest's `it`
 * @param factory opens a fresh, migrated, empty store; called once per test (closed by the suite)
 */
export function storeConformance(
  test: ConformanceTest,
  factory: () => Promise<CredentialStore>,
  options: StoreConformanceOptions = {},
): void {
  const s = storeSuite(test, factory, options.name ?? "store conformance");
  for (const c of [...recordTests, ...pageTests, ...countTests, ...providerStateTests, ...lockTests])
    s.test(c.name, (store, ctx) => c.check(s, store, ctx));
  for (const c of outboxTests) s.outboxTest(c.name, (store, outbox) => c.check(s, store, outbox));
}
