import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "@credhook/core";
import { memoryStateStore } from "@credhook/provider-testkit";
import factory, { type GcpApiKeysProvider } from "../src/index.js";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { rawClient } from "./fake-client.js";
import { fakeOptions, makeProvider } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());

describe("listOwned", () => {
  it("lists the live keys of this gateway only (not deleted ones, another gateway's, or hand-made ones)", async () => {
    const provider = await makeProvider(fake);
    const other = (await factory.create(fakeOptions(fake), {
      gateway: "gcp-other",
      configPath: "gateways.gcp-other.options",
      credentialType: "API_KEY",
      logger: silentLogger,
      state: memoryStateStore(),
    })) as GcpApiKeysProvider;
    const app = { appName: "Listed", developer: "dev@example.com" };
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const mine = [randomUUID(), randomUUID(), randomUUID()];
    const creds = [];
    for (const credentialId of mine)
      creds.push(await provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    await other.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis });
    await provider.revoke({
      credentialId: mine[2]!,
      credentialType: "API_KEY",
      nativeId: creds[2]!.nativeId,
      resources: {},
      app,
    });
    const client = rawClient(fake);
    const [op] = await client.createKey({
      parent: "projects/fake-project/locations/global",
      keyId: "hand-made",
      key: {},
    });
    await op.promise();
    await client.close();

    const owned = await provider.listOwned();
    expect(owned.map((o) => o.credentialId).sort()).toEqual([mine[0], mine[1]].sort());
    expect(owned.map((o) => o.nativeId).sort()).toEqual([creds[0]!.nativeId, creds[1]!.nativeId].sort());
    expect(owned[0]!.description).toContain("Listed (dev@example.com)");
    await provider.close();
    await other.close();
  });
});
