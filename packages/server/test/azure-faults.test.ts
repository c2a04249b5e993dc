/**
 * Issue 9 through the public HTTP interface on Azure API Management: the full
 * server on the APIM fake (driven by the unmodified @azure/arm-apimanagement
 * client), two gateways sharing one service with prefixes `credhook-` and
 * `credhook-eu-`, and each fault the fake injects. After each case — once late
 * writes landed and the abandoned-create sweep or `reconcile` ran — zero live
 * subscriptions that no credential the portal holds explains, and the
 * subscription "another tool" made on the service untouched.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApimFake, type ApimFake, type FakeSubscription } from "@credhook/fakes/azure";
import { isSubscriptionOf } from "@credhook/provider-azure";
import {
  apiKeyUpdate,
  errorOf,
  SERVER_YAML,
  startTestServer,
  sweepUntilSettled,
  until,
  type TestServer,
} from "./helpers.js";

const yaml = (fake: ApimFake) => {
  const service = `subscriptionId: "${fake.subscriptionId}", resourceGroup: ${fake.resourceGroup}, serviceName: ${fake.serviceName}, endpoint: "${fake.url}", credential: { type: static-token, token: fake }`;
  return `${SERVER_YAML}reconcile: { abandonedIntervalS: 0, settleS: 1 }
gateways:
  azure:
    provider: azure
    credentialType: API_KEY
    options: { ${service}, timeoutMs: 1000, maxRetries: 1, productMap: { 1el57v: gold, 2plan2: silver } }
  azure-eu:
    provider: azure
    credentialType: API_KEY
    options: { ${service}, subscriptionIdPrefix: credhook-eu-, revokeMode: disable, maxRetries: 0, productMap: { 1el57v: gold, 2plan2: silver } }
routes:
  - { apis: ["eu-*"], gateway: azure-eu }
  - { apis: ["5aba4csvd4", "9xk3m2p7qa"], gateway: azure }
`;
};

let fake: ApimFake;
let s: TestServer;
let foreign: FakeSubscription;

beforeAll(async () => {
  fake = await startApimFake({ products: ["gold", "silver"], apis: ["orders"] });
  // Another tool's subscription on the same service: never touched.
  foreign = fake.addForeignSubscription({
    scope: "/products/gold",
    sid: "partner-portal-1",
    displayName: "Partner (made by hand)",
  });
  s = await startTestServer(yaml(fake));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(() => fake.clearFaults());

const dev = "dev@example.com";
const gold = [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }];
const goldSilver = [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }, { id: "2plan2" }] }];
const LIVE = new Set(["active", "suspended", "submitted"]);
const live = () => fake.listSubscriptions().filter((x) => LIVE.has(x.state) && x.sid !== foreign.sid);
const recordsOf = async (appName: string) => (await s.credhook.store.list()).filter((r) => r.app.appName === appName);
const revoke = (apiKeyId: string) => s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId });
/** The portal's update adding usage plan 2plan2 (APIM product silver) next to 1el57v (gold). */
const addSilver = (appName: string, apiKeyId: string) =>
  apiKeyUpdate(appName, dev, apiKeyId, [
    {
      id: "5aba4csvd4",
      action: "NONE",
      usagePlans: [
        { id: "1el57v", action: "NONE" },
        { id: "2plan2", action: "ADDED" },
      ],
    },
  ]);

/** Live subscriptions that no active credential of the store holds, and whether the foreign one was touched. */
async function invariant(): Promise<void> {
  const active = (await s.credhook.store.list()).filter((r) => r.status === "active");
  // a binding's own id (an adopted subscription), its subscriptions, and those an update added under the record's id
  const stems = active.flatMap((r) => [
    ...r.bindings.map((b) => b.nativeId),
    `credhook-${r.id}`,
    `credhook-eu-${r.id}`,
  ]);
  const explained = (sid: string) =>
    stems.some((n) => n.toLowerCase() === sid.toLowerCase() || isSubscriptionOf(n, sid));
  expect(
    live()
      .filter((x) => !explained(x.sid))
      .map((x) => x.sid),
  ).toEqual([]);
  expect(fake.getSubscription(foreign.sid)).toEqual(foreign);
}

/** The sweep until nothing is abandoned, at most 5 a second (each reads ARM, whose read bucket is 25/s). */
const settle = () => sweepUntilSettled(s, { everyMs: 200 });

describe("Azure API Management faults through HTTP", () => {
  it("a subscription PUT slower than timeoutMs: 504, the record is abandoned (no DELETE races the PUT), the subscription that lands later is revoked by the sweep", async () => {
    fake.inject({ delayMs: 1300, method: "PUT", times: 2 });
    const err = await errorOf(await s.post("/v1/createCredentials", { appName: "Late", developer: dev, apis: gold }));
    expect(err.status).toBe(504);
    const [rec] = await recordsOf("Late");
    expect(rec).toMatchObject({ status: "abandoned" });
    await until("the late PUT to land", () => live().length === 1);
    expect(live()[0]!.sid).toBe(`credhook-${rec!.id}-p-gold`);
    await settle();
    expect(live()).toEqual([]);
    expect(await recordsOf("Late")).toEqual([]);
    // the one DELETE came after the PUT landed (200), never a rollback answered 204 while the PUT was still in flight
    expect(fake.requests.filter((r) => r.method === "DELETE" && r.path.includes(rec!.id)).map((r) => r.status)).toEqual(
      [200],
    );
    await invariant();
  });

  it("the same late PUT cleaned up by `credhook reconcile` instead of the sweep", async () => {
    fake.inject({ delayMs: 1300, method: "PUT", times: 2 });
    expect((await s.post("/v1/createCredentials", { appName: "Late2", developer: dev, apis: gold })).status).toBe(504);
    await until("the late PUT to land", () => live().length === 1);
    const report = await s.credhook.orchestrator.reconcile({ olderThanMs: 0 });
    expect(report.abandoned).toHaveLength(1);
    expect(live()).toEqual([]);
    await settle();
    await invariant();
  });

  it("an update's PUT slower than timeoutMs lands after its rollback; once settled, the sweep takes the key back to what the store says", async () => {
    const created = await s.call("/v1/createCredentials", { appName: "LateUpdate", developer: dev, apis: gold });
    expect(created.status).toBe(200);
    const apiKeyId = created.json!.apiKeyId as string;
    // Both attempts (the SDK retries once) time out after 1 s; ARM applies each 2.5 s after receiving it, after the rollback ran.
    fake.inject({ delayMs: 2500, method: "PUT", path: "-p-silver", times: 2 });
    expect((await errorOf(await s.post("/v1/updateCredentials", addSilver("LateUpdate", apiKeyId)))).status).toBe(504);
    await fake.idle();
    expect(
      live()
        .map((x) => x.scope)
        .sort(),
    ).toEqual(["/products/gold", "/products/silver"]); // silver: a grant the portal never got
    const [rec] = await recordsOf("LateUpdate");
    expect(rec).toMatchObject({ status: "active", unsettled: { gateways: [{ gateway: "azure" }] } });
    expect(rec!.apis.flatMap((a) => a.usagePlans)).toEqual(["1el57v"]);
    await settle();
    expect(live().map((x) => x.scope)).toEqual(["/products/gold"]);
    expect((await recordsOf("LateUpdate"))[0]!.unsettled).toBeUndefined();
    expect((await revoke(apiKeyId)).status).toBe(204);
    await invariant();
  });

  it("a PUT refused 403 after another was accepted: 502 naming the RBAC fix, and no subscription survives", async () => {
    fake.inject({ status: 403, method: "PUT", path: "-p-silver" });
    const err = await errorOf(
      await s.post("/v1/createCredentials", { appName: "Denied", developer: dev, apis: goldSilver }),
    );
    expect(err.status).toBe(502);
    expect(err.messages.join(" ")).toMatch(/AuthorizationFailed.*grant the principal/);
    await settle();
    expect(live()).toEqual([]);
    await invariant();
  });

  it("a PUT applied, then answered 500: the SDK's retry replaces it and the portal gets exactly that key", async () => {
    fake.inject({ status: 500, afterApply: true, method: "PUT", path: "-p-silver" });
    const res = await s.call("/v1/createCredentials", { appName: "Applied", developer: dev, apis: goldSilver });
    expect(res.status).toBe(200);
    const apiKeyId = res.json!.apiKeyId as string;
    expect(live().map((x) => [x.sid, x.primaryKey === res.json!.apiKey])).toEqual([
      [`${apiKeyId}-p-gold`, true],
      [`${apiKeyId}-p-silver`, true],
    ]);
    expect((await revoke(apiKeyId)).status).toBe(204);
    await invariant();
  });

  it("a PUT applied, then answered 500 with no retry (azure-eu): 502, and the applied subscription is revoked", async () => {
    fake.inject({ status: 500, afterApply: true, method: "PUT", path: "-p-silver" });
    const err = await errorOf(
      await s.post("/v1/createCredentials", {
        appName: "AppliedEu",
        developer: dev,
        apis: [{ id: "eu-orders", usagePlans: [{ id: "1el57v" }, { id: "2plan2" }] }],
      }),
    );
    expect(err.status).toBe(502);
    await settle();
    expect(live()).toEqual([]);
    await invariant();
  });

  it("a plan swap whose new product's PUT is refused 403 leaves the key on its old product, as the store says", async () => {
    const created = await s.call("/v1/createCredentials", { appName: "Swap", developer: dev, apis: gold });
    expect(created.status).toBe(200);
    const apiKeyId = created.json!.apiKeyId as string;
    fake.inject({ status: 403, method: "PUT", path: "-p-silver" });
    const swap = apiKeyUpdate("Swap", dev, apiKeyId, [
      {
        id: "5aba4csvd4",
        action: "NONE",
        usagePlans: [
          { id: "1el57v", action: "REMOVED" },
          { id: "2plan2", action: "ADDED" },
        ],
      },
    ]);
    expect((await errorOf(await s.post("/v1/updateCredentials", swap))).status).toBe(502);
    expect(live().map((x) => [x.scope, x.state])).toEqual([["/products/gold", "active"]]);
    expect((await recordsOf("Swap"))[0]!.apis.flatMap((a) => a.usagePlans)).toEqual(["1el57v"]);
    expect((await s.post("/v1/updateCredentials", swap)).status).toBe(204);
    expect(live().map((x) => x.scope)).toEqual(["/products/silver"]);
    expect((await revoke(apiKeyId)).status).toBe(204);
    await invariant();
  });

  it("a read failing (listSecrets 429, then 403): 503 with Retry-After, then 502; nothing is written", async () => {
    const created = await s.call("/v1/createCredentials", { appName: "Reads", developer: dev, apis: gold });
    const apiKeyId = created.json!.apiKeyId as string;
    const add = addSilver("Reads", apiKeyId);
    fake.inject({ status: 429, retryAfterS: 30, method: "POST", path: "/listSecrets" });
    const throttled = await s.post("/v1/updateCredentials", add);
    expect(throttled.status).toBe(503);
    expect(throttled.headers.get("retry-after")).toBe("30");
    fake.inject({ status: 403, method: "POST", path: "/listSecrets", times: 2 });
    expect((await errorOf(await s.post("/v1/updateCredentials", add))).status).toBe(502);
    expect(live().map((x) => x.scope)).toEqual(["/products/gold"]);
    expect((await revoke(apiKeyId)).status).toBe(204);
    await invariant();
  });

  it("revokeMode delete on one gateway never deletes the other gateway's cancelled subscriptions (issue 9, case 5)", async () => {
    const created = await s.call("/v1/createCredentials", {
      appName: "Eu",
      developer: dev,
      apis: [{ id: "eu-orders", usagePlans: [{ id: "1el57v" }] }],
    });
    const apiKeyId = created.json!.apiKeyId as string;
    expect(apiKeyId).toMatch(/^credhook-eu-/);
    expect((await revoke(apiKeyId)).status).toBe(204);
    const cancelled = fake.listSubscriptions().filter((x) => x.sid.startsWith(`${apiKeyId}-`));
    expect(cancelled.map((x) => x.state)).toEqual(["cancelled"]);
    // the store no longer knows the id: every API-key gateway gets the revoke, with no credential id
    expect((await revoke(apiKeyId)).status).toBe(204);
    expect(fake.listSubscriptions().filter((x) => x.sid.startsWith(`${apiKeyId}-`))).toEqual(cancelled);
    await invariant();
  });

  it("a revoke of an id credhook does not know leaves the foreign subscription live (204, a metric); an update of it is a 404", async () => {
    const unowned = async () =>
      Number(
        /credhook_revoke_unowned_total\{gateway="azure"\} (\d+)/.exec(await (await s.get("/metrics")).text())?.[1] ?? 0,
      );
    const before = await unowned();
    expect((await revoke(foreign.sid)).status).toBe(204);
    expect(await unowned()).toBe(before + 1);
    const upd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: foreign.sid,
      apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "1el57v", action: "NONE" }] }],
    });
    expect((await errorOf(upd)).status).toBe(404);
    await invariant();
  });

  it("the store lost the record: an update finds the credential under its mark, records it again with the mark's id; the revoke then removes it", async () => {
    const created = await s.call("/v1/createCredentials", { appName: "Lost", developer: dev, apis: gold });
    const apiKeyId = created.json!.apiKeyId as string;
    const [rec] = await recordsOf("Lost");
    await s.credhook.store.delete(rec!.id);
    expect((await s.post("/v1/updateCredentials", addSilver("Lost", apiKeyId))).status).toBe(204);
    const [again] = await recordsOf("Lost");
    expect(again).toMatchObject({ id: rec!.id, status: "active", publicId: apiKeyId });
    expect(live().map((x) => [x.sid, x.primaryKey === created.json!.apiKey])).toEqual([
      [`${apiKeyId}-p-gold`, true],
      [`${apiKeyId}-p-silver`, true],
    ]);
    await invariant();
    expect((await revoke(apiKeyId)).status).toBe(204);
    expect(live()).toEqual([]);
    await invariant();
  });

  it("a suspended credential stays suspended: an update that ADDs a product creates it suspended (issue 9, case 8)", async () => {
    const created = await s.call("/v1/createCredentials", { appName: "Suspended", developer: dev, apis: gold });
    const apiKeyId = created.json!.apiKeyId as string;
    fake.touchSubscription(`${apiKeyId}-p-gold`, { state: "suspended" });
    const add = addSilver("Suspended", apiKeyId);
    expect((await s.post("/v1/updateCredentials", add)).status).toBe(204);
    expect(live().map((x) => [x.scope, x.state, x.primaryKey === created.json!.apiKey])).toEqual([
      ["/products/gold", "suspended", true],
      ["/products/silver", "suspended", true],
    ]);
    expect((await revoke(apiKeyId)).status).toBe(204);
    await invariant();
  });

  it("credhook adopt brings another tool's subscription under a gateway; the portal then updates and revokes it", async () => {
    const legacy = fake.addForeignSubscription({
      scope: "/products/gold",
      sid: "legacy-app-7",
      primaryKey: "LegacyKeyValue".repeat(3),
    });
    const dry = await s.credhook.orchestrator.adopt(
      [{ credentialType: "API_KEY", apiKeyId: legacy.sid, appName: "Migrated", developer: dev, apis: gold }],
      { dryRun: true },
    );
    expect(dry.map((r) => r.action)).toEqual(["would adopt"]);
    const [result] = await s.credhook.orchestrator.adopt([
      { credentialType: "API_KEY", apiKeyId: legacy.sid, appName: "Migrated", developer: dev, apis: gold },
    ]);
    expect(result).toMatchObject({ action: "adopted", gateway: "azure" });
    expect(fake.getSubscription(legacy.sid)).toEqual(legacy);
    // another credhook gateway's subscription is refused
    const eu = await s.call("/v1/createCredentials", {
      appName: "EuOwned",
      developer: dev,
      apis: [{ id: "eu-orders", usagePlans: [{ id: "1el57v" }] }],
    });
    const refused = await s.credhook.orchestrator.adopt([
      {
        credentialType: "API_KEY",
        apiKeyId: `${eu.json!.apiKeyId}-p-gold`,
        appName: "Thief",
        developer: dev,
        apis: gold,
      },
    ]);
    expect(refused[0]).toMatchObject({ action: "skipped", reason: expect.stringContaining("gateway 'azure-eu'") });
    await invariant();
    const upd = await s.post("/v1/updateCredentials", addSilver("Migrated", legacy.sid));
    expect(upd.status).toBe(204);
    expect(fake.getSubscription(`credhook-${result!.credentialId}-p-silver`)).toMatchObject({
      state: "active",
      primaryKey: legacy.primaryKey,
    });
    await invariant();
    expect((await revoke(legacy.sid)).status).toBe(204);
    expect((await revoke(eu.json!.apiKeyId as string)).status).toBe(204);
    expect(live()).toEqual([]);
    await invariant();
  });
});
