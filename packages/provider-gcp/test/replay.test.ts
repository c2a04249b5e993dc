import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { ANNOTATIONS } from "../src/mapping.js";
import { makeProvider, rejection, rpcsSince } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Replay App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: ["gold"] }];

describe("replayed create (ALREADY_EXISTS adopts the key)", () => {
  it("a create replayed with the same credential id returns the same key and string, and creates nothing", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const first = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    const mark = fake.requests().length;
    const again = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    expect(again.nativeId).toBe(first.nativeId);
    expect(again.apiKey).toBe(first.apiKey);
    expect(fake.keys()).toHaveLength(1);
    // createKey (409), getKey, nothing to update, getKeyString
    expect(rpcsSince(fake, mark)).toEqual(["CreateKey", "GetKey", "GetKeyString"]);
    await provider.close();
  });

  it("a replay with other APIs brings the adopted key to the new state", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const first = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    await provider.create({
      credentialId,
      credentialType: "API_KEY",
      app,
      apis: [...apis, { id: "billing", usagePlans: [] }],
    });
    expect(fake.key(first.nativeId)!.restrictions.apiTargets!.map((t) => t.service)).toEqual([
      "billing.apigateway.fake-project.cloud.goog",
      "orders.apigateway.fake-project.cloud.goog",
    ]);
    expect(fake.keys()).toHaveLength(1);
    await provider.close();
  });

  it("a replay after a revoke undeletes the soft-deleted key", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const first = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    await provider.revoke({
      credentialId,
      credentialType: "API_KEY",
      nativeId: first.nativeId,
      resources: first.resources,
      app,
    });
    expect(fake.key(first.nativeId)!.deleteTime).toBeTruthy();
    const again = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    expect(again.apiKey).toBe(first.apiKey);
    expect(fake.key(first.nativeId)!.deleteTime).toBeUndefined();
    await provider.close();
  });

  it("a keyId held by a key of another credential is a Conflict, and that key is left untouched", async () => {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const first = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    // someone re-annotates the key (e.g. an operator's tooling)
    const client = (await import("./fake-client.js")).rawClient(fake);
    const [op] = await client.updateKey({
      key: {
        name: `projects/fake-project/locations/global/keys/${first.nativeId}`,
        annotations: { [ANNOTATIONS.credentialId]: "someone-else" },
      },
      updateMask: { paths: ["annotations"] },
    });
    await op.promise();
    await client.close();
    const before = fake.key(first.nativeId);
    const err = await rejection(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 409, code: "CONFLICT" });
    expect(fake.key(first.nativeId)).toEqual(before);
    await provider.close();
  });
});

describe("replayed create, transient failures", () => {
  /** Creates and revokes a key, injects `fault`, replays the create; the replay's UndeleteKey and GetOperation statuses. */
  async function replayAfterRevoke(fault: Parameters<ApiKeysFake["control"]["fail"]>[0]) {
    const provider = await makeProvider(fake);
    const credentialId = randomUUID();
    const first = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    await provider.revoke({
      credentialId,
      credentialType: "API_KEY",
      nativeId: first.nativeId,
      resources: first.resources,
      app,
    });
    fake.control.fail(fault);
    const mark = fake.requests().length;
    const again = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    expect(again.apiKey).toBe(first.apiKey);
    expect(fake.key(first.nativeId)!.deleteTime).toBeUndefined();
    await provider.close();
    const statuses = (rpc: string) =>
      fake
        .requests()
        .slice(mark)
        .filter((r) => r.rpc === rpc)
        .map((r) => r.status);
    return { undeletes: statuses("UndeleteKey"), polls: statuses("GetOperation") };
  }

  it("an undelete whose poll failed is polled again, not sent again", async () => {
    const { undeletes, polls } = await replayAfterRevoke({ status: 503, rpcs: ["GetOperation"] });
    expect(undeletes).toEqual([200]);
    expect(polls[0]).toBe(503);
  });

  it("an undelete sent again after a lost answer meets FAILED_PRECONDITION (already undeleted) and goes on", async () => {
    const { undeletes } = await replayAfterRevoke({ status: 503, rpcs: ["UndeleteKey"], afterApply: true });
    expect(undeletes).toEqual([503, 400]);
  });
});
