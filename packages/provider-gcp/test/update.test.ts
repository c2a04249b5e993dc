import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { GatewayApi, ProviderCredentialRef, ProviderUpdateInput } from "@credhook/core/provider";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { ANNOTATIONS, NO_ACCESS_METHOD } from "../src/mapping.js";
import { rawClient } from "./fake-client.js";
import { makeProvider, rejection, rpcsSince } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Update App", developer: "dev@example.com" };
const plans = { gold: [], silver: ["Get*"] };

function input(
  ref: ProviderCredentialRef,
  previous: GatewayApi[],
  desired: GatewayApi[],
  extra: Partial<ProviderUpdateInput> = {},
): ProviderUpdateInput {
  return { ...ref, previous, desired, changes: [], ...extra };
}

async function created(apis: GatewayApi[]) {
  const provider = await makeProvider(fake, { usagePlans: plans });
  const credentialId = randomUUID();
  const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
  const ref: ProviderCredentialRef = {
    credentialId,
    credentialType: "API_KEY",
    nativeId: cred.nativeId,
    resources: cred.resources,
    app,
  };
  return { provider, ref, cred };
}

describe("update", () => {
  it("writes only the restrictions (and the plans annotation) when the plan set changes", async () => {
    const before = [{ id: "orders", usagePlans: ["silver"] }];
    const { provider, ref } = await created(before);
    const after = [
      { id: "orders", usagePlans: ["silver"] },
      { id: "billing", usagePlans: ["gold"] },
    ];
    const mark = fake.requests().length;
    await provider.update(input(ref, before, after));
    const key = fake.key(ref.nativeId)!;
    expect(key.restrictions.apiTargets).toEqual([
      { service: "billing.apigateway.fake-project.cloud.goog" },
      { service: "orders.apigateway.fake-project.cloud.goog", methods: ["Get*"] },
    ]);
    const patch = fake
      .requests()
      .slice(mark)
      .find((r) => r.rpc === "UpdateKey")!;
    expect(new URL(patch.url, "http://x").searchParams.get("updateMask")).toBe("restrictions,annotations");
    expect(JSON.parse(key.annotations[ANNOTATIONS.usagePlans]!)).toEqual({ billing: ["gold"], orders: ["silver"] });
    await provider.close();
  });

  it("updates the displayName on a rename", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const { provider, ref } = await created(apis);
    const renamed = { ...app, appName: "Renamed App" };
    const mark = fake.requests().length;
    await provider.update(input({ ...ref, app: renamed }, apis, apis, { previousAppName: app.appName }));
    expect(fake.key(ref.nativeId)!.displayName).toBe("Renamed App (dev@example.com)");
    const patch = fake
      .requests()
      .slice(mark)
      .find((r) => r.rpc === "UpdateKey")!;
    expect(new URL(patch.url, "http://x").searchParams.get("updateMask")).toBe("displayName,annotations");
    await provider.close();
  });

  it("writes nothing when nothing differs (one getKey)", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const { provider, ref } = await created(apis);
    const mark = fake.requests().length;
    await provider.update(input(ref, apis, apis));
    expect(rpcsSince(fake, mark)).toEqual(["GetKey"]);
    await provider.close();
  });

  it("repairs drift: restrictions changed outside credhook are restored, other annotations and IP restrictions kept", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const { provider, ref } = await created(apis);
    const client = rawClient(fake);
    const [op] = await client.updateKey({
      key: {
        name: `projects/fake-project/locations/global/keys/${ref.nativeId}`,
        restrictions: {
          apiTargets: [{ service: "everything.example.com" }],
          serverKeyRestrictions: { allowedIps: ["10.0.0.0/8"] },
        },
        annotations: { ...fake.key(ref.nativeId)!.annotations, "ops/owner": "team-a" },
      },
      updateMask: { paths: ["restrictions", "annotations"] },
    });
    await op.promise();
    await client.close();
    await provider.update(input(ref, apis, apis));
    const key = fake.key(ref.nativeId)!;
    expect(key.restrictions.apiTargets).toEqual([{ service: "orders.apigateway.fake-project.cloud.goog" }]);
    expect(key.restrictions.serverKeyRestrictions).toEqual({ allowedIps: ["10.0.0.0/8"] });
    expect(key.annotations["ops/owner"]).toBe("team-a");
    await provider.close();
  });

  it("retries the read-modify-write when the etag is stale (409 ABORTED)", async () => {
    const before = [{ id: "orders", usagePlans: ["gold"] }];
    const { provider, ref } = await created(before);
    fake.control.fail({ status: 409, grpcStatus: "ABORTED", rpcs: ["UpdateKey"] });
    const mark = fake.requests().length;
    await provider.update(input(ref, before, [{ id: "orders", usagePlans: ["silver"] }]));
    expect(rpcsSince(fake, mark).filter((r) => r !== "GetOperation")).toEqual([
      "GetKey",
      "UpdateKey",
      "GetKey",
      "UpdateKey",
    ]);
    expect(fake.key(ref.nativeId)!.restrictions.apiTargets).toEqual([
      { service: "orders.apigateway.fake-project.cloud.goog", methods: ["Get*"] },
    ]);
    await provider.close();
  });

  it("never leaves a key unrestricted: with no API left it allows a non-existent method only", async () => {
    const before = [{ id: "orders", usagePlans: ["gold"] }];
    const { provider, ref } = await created(before);
    await provider.update(input(ref, before, []));
    expect(fake.key(ref.nativeId)!.restrictions.apiTargets).toEqual([
      { service: "orders.apigateway.fake-project.cloud.goog", methods: [NO_ACCESS_METHOD] },
    ]);
    await provider.close();
  });

  it("an ADDED unknown plan is 422 and changes nothing", async () => {
    const before = [{ id: "orders", usagePlans: ["gold"] }];
    const { provider, ref } = await created(before);
    const snapshot = fake.key(ref.nativeId);
    const mark = fake.requests().length;
    const err = await rejection(
      provider.update(input(ref, before, [{ id: "orders", usagePlans: ["gold", "platinum"] }])),
    );
    expect(err).toMatchObject({ status: 422 });
    expect((err as Error).message).toBe("[gateway gcp-test] usage plan 'platinum' of API 'orders' does not exist");
    expect(rpcsSince(fake, mark)).toEqual([]);
    expect(fake.key(ref.nativeId)).toEqual(snapshot);
    await provider.close();
  });

  it("works from the request's ids alone (store lost, credential id ''): the gateway's mark suffices and the key keeps its credential id", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const { provider, ref } = await created(apis);
    await provider.update(
      input({ ...ref, credentialId: "", resources: {} }, apis, [{ id: "orders", usagePlans: ["silver"] }]),
    );
    const key = fake.key(ref.nativeId)!;
    expect(key.annotations[ANNOTATIONS.credentialId]).toBe(ref.credentialId);
    expect(key.restrictions.apiTargets).toEqual([
      { service: "orders.apigateway.fake-project.cloud.goog", methods: ["Get*"] },
    ]);
    await provider.close();
  });

  it("an update naming another credential id is NotFound (404) and writes nothing", async () => {
    const apis = [{ id: "orders", usagePlans: ["gold"] }];
    const { provider, ref } = await created(apis);
    const before = fake.key(ref.nativeId);
    const err = await rejection(
      provider.update(
        input({ ...ref, credentialId: randomUUID(), resources: {} }, apis, [{ id: "orders", usagePlans: ["silver"] }]),
      ),
    );
    expect(err).toMatchObject({ status: 404, code: "NOT_FOUND" });
    expect((err as { messages: string[] }).messages).toContain(
      "bring a key made outside credhook under it with `credhook adopt`",
    );
    expect(fake.key(ref.nativeId)).toEqual(before);
    await provider.close();
  });

  it("an unknown or malformed key id is NotFound (404)", async () => {
    const { provider, ref } = await created([{ id: "orders", usagePlans: [] }]);
    expect(
      await rejection(
        provider.update(input({ ...ref, nativeId: "missing-key" }, [], [{ id: "orders", usagePlans: [] }])),
      ),
    ).toMatchObject({ status: 404 });
    expect(
      await rejection(
        provider.update(input({ ...ref, nativeId: "Not A Key!" }, [], [{ id: "orders", usagePlans: [] }])),
      ),
    ).toMatchObject({ status: 404 });
    await provider.close();
  });
});
