/**
 * Issue 9 through the public HTTP interface on AWS: the full server on the
 * AWS fake (API Gateway + Cognito, driven by the unmodified SDK), with each
 * fault the fake injects. After each case — once late writes landed and the
 * abandoned-create sweep or `reconcile` ran — zero live API keys or app
 * clients that no credential the portal holds explains, and the foreign key
 * and client made by "another tool" in the same account untouched.
 *
 * The fake runs on a {@link ManualClock}: a late write (`lateApply`) is held until a test
 * advances it, never landing while the SDK still waits, so the SDK's time-out (real time)
 * is generous: 1 s a call, which a busy machine does not reach on a local call.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startAwsFake, type AwsFake, type ForeignResource } from "@credhook/fakes/aws";
import { ManualClock } from "@credhook/fakes/clock";
import { apiKeyUpdate, errorOf, SERVER_YAML, startTestServer, sweepUntilSettled, type TestServer } from "./helpers.js";

const POOL = "us-east-1_Credhook1";

const yaml = (fakeUrl: string) => `${SERVER_YAML}reconcile: { abandonedIntervalS: 0, settleS: 1 }
gateways:
  aws-keys:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "${fakeUrl}", credentials: { accessKeyId: fake, secretAccessKey: fake }, timeoutMs: 1000, maxAttempts: 2 }
  aws-m2m:
    provider: aws
    credentialType: CLIENT_CREDENTIALS
    options:
      region: us-east-1
      endpoint: "${fakeUrl}"
      credentials: { accessKeyId: fake, secretAccessKey: fake }
      timeoutMs: 1000
      userPoolId: ${POOL}
      resourceServer: https://api.example.com
      tokenEndpoint: "${fakeUrl}/oauth2/token"
routes:
  - { apis: ["5aba4csvd4", "9xk3m2p7qa"], gateway: aws-keys }
  - { apis: ["7hq2k9xw1m"], gateway: aws-m2m }
`;

let fake: AwsFake;
let s: TestServer;
let foreignKey: ForeignResource;
let foreignClient: ForeignResource;
/**
 * The fake's clock: a late write lands when a test advances it. Its per-second quotas refill only
 * as it moves: a second of it between sweeps, a minute between cases.
 */
const clock = new ManualClock();
/** The sweep until settled, the fake's clock moving a second between sweeps (its quotas refill as in a real second). */
const settle = () => sweepUntilSettled(s, { everyMs: 100, between: () => clock.advance(1000) });

beforeAll(async () => {
  fake = await startAwsFake({ clock });
  fake.apiGateway.addUsagePlan({
    id: "1el57v",
    name: "Orders Gold",
    apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }],
  });
  fake.apiGateway.addUsagePlan({ id: "3gn79x", name: "Catalog", apiStages: [{ apiId: "9xk3m2p7qa", stage: "prod" }] });
  fake.cognito.createUserPool({ id: POOL, domain: "credhook-faults" });
  fake.cognito.createResourceServer(POOL, "https://api.example.com", ["7hq2k9xw1m"]);
  // Another tool's key and client in the same account, named like credhook's would be: never touched.
  foreignKey = fake.createForeign("API_KEY", { name: "credhook/dev@example.com/faults", usagePlanIds: ["1el57v"] });
  foreignClient = fake.createForeign("CLIENT_CREDENTIALS", { name: "credhook-dev@example.com-faults" });
  s = await startTestServer(yaml(fake.url));
});
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
beforeEach(async () => {
  fake.faults.clear();
  await clock.advance(60_000); // every quota of the fake full again
});

const dev = "dev@example.com";
const keyIds = () => [...fake.apiGateway.keys.keys()].filter((id) => id !== foreignKey.nativeId);
const clientIds = () =>
  fake.cognito
    .allClients()
    .map((c) => c.ClientId)
    .filter((id) => id !== foreignClient.nativeId);
const recordsOf = async (appName: string) => (await s.credhook.store.list()).filter((r) => r.app.appName === appName);

/** Live keys and clients that no active credential of the store holds, and whether the foreign ones were touched. */
async function invariant(): Promise<void> {
  const held = new Set(
    (await s.credhook.store.list())
      .filter((r) => r.status === "active")
      .flatMap((r) => r.bindings.map((b) => b.nativeId)),
  );
  expect(keyIds().filter((id) => !held.has(id))).toEqual([]);
  expect(clientIds().filter((id) => !held.has(id))).toEqual([]);
  expect(fake.foreignTouched().filter((id) => id === foreignKey.nativeId || id === foreignClient.nativeId)).toEqual([]);
  expect([await foreignKey.exists(), await foreignClient.exists()]).toEqual([true, true]);
}

describe("AWS faults through HTTP", () => {
  it("CreateApiKey answering after timeoutMs on every attempt: 504, the record is abandoned, the key that lands later is revoked by the sweep", async () => {
    fake.faults.lateApply(700, { operation: "CreateApiKey", count: 2 });
    const err = await errorOf(
      await s.post("/v1/createCredentials", {
        appName: "Late",
        developer: dev,
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
      }),
    );
    expect(err.status).toBe(504);
    const [rec] = await recordsOf("Late");
    expect(rec).toMatchObject({ status: "abandoned" });
    await clock.whenSleeping(2); // both attempts held: nothing to find or revoke yet
    expect([keyIds(), fake.stats().lateWritesPending]).toEqual([[], 2]);
    await clock.advance(700); // both land, in order: the first makes the key, the second meets its value (409)
    expect(fake.stats().lateWritesPending).toBe(0);
    expect(keyIds()).toHaveLength(1);
    expect(fake.apiGateway.keys.get(keyIds()[0]!)!.tags).toMatchObject({
      "credhook:gateway": "aws-keys",
      "credhook:credential-id": rec!.id,
    });
    await settle();
    expect(keyIds()).toEqual([]);
    expect(await recordsOf("Late")).toEqual([]);
    await invariant();
  });

  it("the same late write cleaned up by `credhook reconcile` instead of the sweep", async () => {
    fake.faults.lateApply(700, { operation: "CreateApiKey", count: 2 });
    expect(
      (await s.post("/v1/createCredentials", { appName: "Late2", developer: dev, apis: [{ id: "5aba4csvd4" }] }))
        .status,
    ).toBe(504);
    await clock.whenSleeping(2);
    expect(keyIds()).toEqual([]);
    // the key lands, and the SDK's second attempt is refused (409: the value exists): nothing more can appear
    await clock.advance(700);
    expect(fake.stats().lateWritesPending).toBe(0);
    expect(keyIds()).toHaveLength(1);
    const report = await s.credhook.orchestrator.reconcile({ olderThanMs: 0 });
    expect(report.abandoned).toHaveLength(1);
    expect(keyIds()).toEqual([]);
    await settle();
    await invariant();
  });

  it("usage-plan attach refused 403, then DeleteApiKey failing 500 four times: 502, and no key survives", async () => {
    fake.faults.deny({ operation: "CreateUsagePlanKey" });
    fake.faults.serverError({ operation: "DeleteApiKey", status: 500, count: 4 });
    const err = await errorOf(
      await s.post("/v1/createCredentials", {
        appName: "Denied",
        developer: dev,
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
      }),
    );
    expect(err.status).toBe(502);
    expect(err.messages.join(" ")).toContain("AccessDeniedException");
    await settle();
    expect(keyIds()).toEqual([]);
    expect(fake.stats().calls.DeleteApiKey).toBeGreaterThanOrEqual(5);
    await invariant();
  });

  it("a delete that keeps failing: the record stays abandoned with the key, and a later sweep removes it", async () => {
    fake.faults.deny({ operation: "CreateUsagePlanKey" });
    fake.faults.serverError({ operation: "DeleteApiKey", status: 500, count: 100 });
    expect(
      (
        await s.post("/v1/createCredentials", {
          appName: "Stuck",
          developer: dev,
          apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
        })
      ).status,
    ).toBe(502);
    const [key] = keyIds();
    const [rec] = await recordsOf("Stuck");
    expect(rec).toMatchObject({ status: "abandoned", bindings: [{ gateway: "aws-keys", nativeId: key }] });
    fake.faults.clear();
    await settle();
    expect(keyIds()).toEqual([]);
    await invariant();
  });

  it("a plan swap whose attach is refused 403 leaves the key in its old plan, as the store says", async () => {
    const created = await s.call("/v1/createCredentials", {
      appName: "Swap",
      developer: dev,
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(created.status).toBe(200);
    const apiKeyId = created.json!.apiKeyId as string;
    fake.faults.deny({ operation: "CreateUsagePlanKey" });
    const swap = apiKeyUpdate("Swap", dev, apiKeyId, [
      { id: "5aba4csvd4", action: "REMOVED", usagePlans: [{ id: "1el57v", action: "REMOVED" }] },
      { id: "9xk3m2p7qa", action: "ADDED", usagePlans: [{ id: "3gn79x", action: "ADDED" }] },
    ]);
    expect((await errorOf(await s.post("/v1/updateCredentials", swap))).status).toBe(502);
    expect(fake.apiGateway.plansOfKey(apiKeyId)).toEqual(["1el57v"]);
    expect((await recordsOf("Swap"))[0]!.apis.flatMap((a) => a.usagePlans)).toEqual(["1el57v"]);
    expect((await s.post("/v1/updateCredentials", swap)).status).toBe(204);
    expect(fake.apiGateway.plansOfKey(apiKeyId)).toEqual(["3gn79x"]);
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
    await invariant();
  });

  it("CreateApiKey applied then answered 500: the SDK's retry meets the value it made and the portal gets exactly that key", async () => {
    fake.faults.failAfterApply({ operation: "CreateApiKey", status: 500 });
    const res = await s.call("/v1/createCredentials", {
      appName: "Applied",
      developer: dev,
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(res.status).toBe(200);
    expect(keyIds()).toEqual([res.json!.apiKeyId]);
    expect(fake.apiGateway.keys.get(res.json!.apiKeyId as string)!.value).toBe(res.json!.apiKey);
    expect(
      (await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: res.json!.apiKeyId })).status,
    ).toBe(204);
    await invariant();
  });

  it("a revoke of an id credhook does not know leaves the foreign key live (204, a metric); an update of it is a 404", async () => {
    expect(
      (await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: foreignKey.nativeId })).status,
    ).toBe(204);
    expect(
      (
        await s.call("/v1/revokeCredentials", {
          credentialType: "CLIENT_CREDENTIALS",
          clientId: foreignClient.nativeId,
        })
      ).status,
    ).toBe(204);
    expect(await foreignKey.exists()).toBe(true);
    expect(await foreignClient.exists()).toBe(true);
    const metrics = await (await s.get("/metrics")).text();
    expect(metrics).toMatch(/credhook_revoke_unowned_total\{gateway="aws-keys"\} 1/);
    expect(metrics).toMatch(/credhook_revoke_unowned_total\{gateway="aws-m2m"\} 1/);
    const upd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: foreignKey.nativeId,
      apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "1el57v", action: "NONE" }] }],
    });
    expect((await errorOf(upd)).status).toBe(404);
    await invariant();
  });

  it("CreateUserPoolClient answering after timeoutMs: 504, not retried, and the client that lands is revoked by the sweep", async () => {
    fake.faults.lateApply(700, { operation: "CreateUserPoolClient", count: 4 });
    expect(
      (
        await errorOf(
          await s.post("/v1/createCredentials", {
            appName: "LateClient",
            developer: dev,
            apis: [{ id: "7hq2k9xw1m" }],
          }),
        )
      ).status,
    ).toBe(504);
    expect(fake.stats().calls.CreateUserPoolClient).toBe(1);
    await clock.whenSleeping(1);
    expect(clientIds()).toEqual([]);
    await clock.advance(700);
    expect(clientIds()).toHaveLength(1);
    await settle();
    expect(clientIds()).toEqual([]);
    await invariant();
  });

  it("credhook adopt marks another tool's key and client; the portal then updates and revokes them", async () => {
    const key = fake.createForeign("API_KEY", { name: "legacy/key" });
    const client = fake.createForeign("CLIENT_CREDENTIALS", { name: "legacy-client" });
    const results = await s.credhook.orchestrator.adopt([
      {
        credentialType: "API_KEY",
        apiKeyId: key.nativeId,
        appName: "Migrated",
        developer: dev,
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
      },
      {
        credentialType: "CLIENT_CREDENTIALS",
        clientId: client.nativeId,
        appName: "Migrated M2M",
        developer: dev,
        apis: [{ id: "7hq2k9xw1m" }],
      },
    ]);
    expect(results.map((r) => r.action)).toEqual(["adopted", "adopted"]);
    expect(fake.apiGateway.keys.get(key.nativeId)!.tags).toMatchObject({
      "credhook:gateway": "aws-keys",
      "credhook:credential-id": results[0]!.credentialId,
    });
    expect(fake.apiGateway.plansOfKey(key.nativeId)).toEqual(["1el57v"]);
    expect(fake.cognito.pools.get(POOL)!.clients.get(client.nativeId)!.ClientName).toMatch(
      /^legacy-client@ch\.[0-9a-f]{8}\./,
    );
    await invariant();
    const upd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: key.nativeId,
      apis: [{ id: "9xk3m2p7qa", action: "ADDED", usagePlans: [{ id: "3gn79x", action: "ADDED" }] }],
    });
    expect(upd.status).toBe(204);
    expect(fake.apiGateway.plansOfKey(key.nativeId)).toEqual(["1el57v", "3gn79x"]);
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: key.nativeId })).status).toBe(
      204,
    );
    expect(
      (await s.call("/v1/revokeCredentials", { credentialType: "CLIENT_CREDENTIALS", clientId: client.nativeId }))
        .status,
    ).toBe(204);
    expect(keyIds().filter((id) => id === key.nativeId)).toEqual([]);
    expect(clientIds()).toEqual([]);
    await invariant();
  });
});
