import { afterAll, it } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "@credhook/core";
import { providerConformance } from "@credhook/provider-testkit";
import { openSqliteStore } from "@credhook/store-sqlite";
import localProviderFactory, { type LocalProvider } from "../src/index.js";

const store = await openSqliteStore({ path: join(mkdtempSync(join(tmpdir(), "credhook-local-")), "t.db") });
afterAll(() => store.close());

const make = async (credentialType: "API_KEY" | "CLIENT_CREDENTIALS") =>
  (await localProviderFactory.create(
    { usagePlans: ["1el57v", "2plan2"] },
    {
      gateway: "local",
      configPath: "gateways.local.options",
      credentialType,
      logger: silentLogger,
      state: store.stateFor("local"),
    },
  )) as LocalProvider;

providerConformance(it, make, {
  apis: [{ id: "5aba4csvd4", usagePlans: ["1el57v"] }],
  addPlan: { apiId: "5aba4csvd4", planId: "2plan2" },
  unknownPlan: { apiId: "5aba4csvd4", planId: "nope00" },
  inspect: async (ref) => {
    const s = (await store.stateFor("local").get(`cred:${ref.nativeId}`)) as
      | { enabled: boolean; apis: Array<{ usagePlans: string[] }> }
      | undefined;
    return { live: !!s?.enabled, usagePlans: s ? s.apis.flatMap((a) => a.usagePlans) : [] };
  },
  listNativeIds: async () => (await store.stateFor("local").list("cred:")).map((e) => e.key),
  // The embedded provider writes credhook's own store, each create and update in one transaction:
  // no write follows a create's, none lands unseen, no update removes before it adds. Its state is
  // listed whole (ProviderStateStore.list has no pages): no paging option.
  faults: {
    createFailsAfterWrite: () => "a create is one atomic write of credhook's store: no write follows it",
    updateAddFails: () => "an update is one atomic write of credhook's store: nothing is removed before the add",
  },
});
