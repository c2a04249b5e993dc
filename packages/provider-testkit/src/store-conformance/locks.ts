/** Health, and the store's locks (`locks`): one key at a time, other keys in parallel, `tryRun` skipping a held key. */
import { NotFound } from "@credhook/core/errors";
import type { CredentialStore } from "@credhook/core/store";
import { expectEqual, expectRejects, fail, sleep, type StoreCase, type StoreSuite } from "./harness.js";

/** The health and lock tests, in their order. */
export const lockTests: StoreCase[] = [
  { name: "health resolves on an open store", check: healthResolves },
  {
    name: "locks serialise one key and let other keys run in parallel; tryRun skips a held key",
    check: locksSerialiseOneKey,
  },
];

/** Health resolves on an open store. */
async function healthResolves(_s: StoreSuite, store: CredentialStore): Promise<void> {
  await store.health();
}

/** Locks serialise one key and let other keys run in parallel; tryRun skips a held key. */
async function locksSerialiseOneKey(_s: StoreSuite, store: CredentialStore): Promise<void> {
  if (!store.locks) return; // a single-instance store without locks: core serialises in process
  const locks = store.locks;
  const order: string[] = [];
  const job = (key: string, name: string, ms: number) =>
    locks.run(key, async () => {
      order.push(`start ${name}`);
      await sleep(ms);
      order.push(`end ${name}`);
      return name;
    });
  const first = job("app-1", "a1", 150);
  await sleep(40);
  const busy: { ran: boolean } | undefined = await locks.tryRun("app-1", async () => "x");
  const results = await Promise.all([first, job("app-1", "a2", 1), job("app-2", "b", 5)]);
  expectEqual(results, ["a1", "a2", "b"], "results");
  if (order.indexOf("end a1") > order.indexOf("start a2")) fail(`same key overlapped: ${order.join(", ")}`);
  if (order.indexOf("start b") > order.indexOf("end a1"))
    fail(`different keys did not run in parallel: ${order.join(", ")}`);
  if (busy?.ran !== false) fail("tryRun ran while the key was held");
  expectEqual(await locks.tryRun("app-1", async () => 7), { ran: true, value: 7 }, "tryRun of a free key");
  await expectRejects(
    locks.run("app-3", async () => Promise.reject(new NotFound("boom"))),
    NotFound,
    "an error inside run",
  );
  expectEqual(
    await locks.tryRun("app-3", async () => 1),
    { ran: true, value: 1 },
    "tryRun after an error released the key",
  );
}
