/**
 * Leak response (docs/leak-response.md) on the fakes: one key, in credhook's recognisable format, on two AWS
 * fakes (two gateways), an Azure fake and the embedded gateway; `inspect` and `list` find it by its fingerprint
 * and its app in the real SQLite file; one `revoke --reason leaked` takes it off every gateway, the embedded
 * gateway's key check refuses it at once, and the audit trail says `credential.leaked`, then `credential.revoked`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findCredentials, isCredhookKey, secretFingerprint } from "@credhook/core";
import type { AwsFake } from "@credhook/fakes/aws";
import { formatCredentialDetails, inspectCredentials } from "../src/credential-views.js";
import { SERVER_YAML, startTestServer, type TestServer } from "./helpers.js";
import {
  checkKey,
  closeLeakFakes,
  createKey,
  EVERYWHERE,
  type LeakFakes,
  leakGatewaysYaml,
  startLeakFakes,
} from "./leak-fixtures.js";

let fakes: LeakFakes;
let s: TestServer;

beforeAll(async () => {
  fakes = await startLeakFakes();
  s = await startTestServer(`${SERVER_YAML}keys: { prefix: chk }\n${leakGatewaysYaml(fakes)}`);
}, 60_000);
afterAll(async () => {
  await s?.close();
  await closeLeakFakes(fakes);
});

const check = (key: string) => checkKey(s, key);
const create = (appName: string, apis: typeof EVERYWHERE) => createKey(s, appName, apis);
describe("a leaked key, killed everywhere at once", () => {
  let key: { apiKeyId: string; apiKey: string };
  let fingerprint: string;
  let bystander: { apiKeyId: string; apiKey: string };

  beforeAll(async () => {
    key = await create("Leaky", EVERYWHERE);
    bystander = await create("Bystander", [{ id: "usapi00001", usagePlans: [{ id: "us-gold" }] }, { id: "weather" }]);
    fingerprint = secretFingerprint(key.apiKey);
  });

  it("the key credhook generated carries the configured prefix and a valid checksum, and every gateway took it", async () => {
    expect(key.apiKey).toMatch(/^chk[0-9A-Za-z]{46}$/);
    expect(isCredhookKey(key.apiKey, "chk")).toBe(true);
    expect([...fakes.us.apiGateway.keys.values()].map((k) => k.value)).toContain(key.apiKey);
    expect([...fakes.eu.apiGateway.keys.values()].map((k) => k.value)).toEqual([key.apiKey]);
    expect(fakes.azure.listSubscriptions().map((x) => x.primaryKey)).toEqual([key.apiKey]);
    expect(await check(key.apiKey)).toBe(200);
  });

  it("inspect finds it by fingerprint and by app: its four gateways, native ids, plans, age, last change and state", async () => {
    const byFingerprint = await inspectCredentials(s.credhook.store, { fingerprint }, Date.now());
    expect(byFingerprint).toHaveLength(1);
    const [view] = byFingerprint;
    expect(view).toMatchObject({
      publicId: key.apiKeyId,
      appKey: "slug:dev@example.com/leaky",
      state: "active",
      keyFingerprint: fingerprint,
      lastEvent: { type: "credential.created" },
    });
    expect(view!.ageS).toBeGreaterThanOrEqual(0);
    const usKey = [...fakes.us.apiGateway.keys.values()].find((k) => k.value === key.apiKey)!;
    expect(Object.fromEntries(view!.gateways.map((g) => [g.gateway, g]))).toMatchObject({
      "aws-us": { nativeId: usKey.id, apis: ["usapi00001"], plans: ["us-gold"] },
      "aws-eu": { nativeId: [...fakes.eu.apiGateway.keys.values()][0]!.id, plans: ["eu-gold"] },
      azure: { apis: ["orders-eu-1"], plans: ["gold"] },
      local: { apis: ["weather"], plans: [] },
    });
    // The bare hex digits and the app's slug find the same credential; the text shows no secret.
    expect((await inspectCredentials(s.credhook.store, { fingerprint: fingerprint.slice(7) }, Date.now()))[0]).toEqual(
      view,
    );
    expect((await inspectCredentials(s.credhook.store, { app: "leaky" }, Date.now()))[0]).toEqual(view);
    const text = formatCredentialDetails(byFingerprint).join("\n");
    expect(text).toContain(`aws-us: ${usKey.id}`);
    expect(text).not.toContain(key.apiKey);
    await expect(inspectCredentials(s.credhook.store, { fingerprint: "sha256:nothex" }, 0)).rejects.toThrow(
      /32 hex digits/,
    );
  });

  it("list filters by gateway, developer and state", async () => {
    const ids = async (q: Parameters<typeof findCredentials>[1]) =>
      (await findCredentials(s.credhook.store, q)).map((r) => r.publicId).sort();
    expect(await ids({ gateway: "aws-eu" })).toEqual([key.apiKeyId]);
    expect(await ids({ gateway: "aws-us" })).toEqual([key.apiKeyId, bystander.apiKeyId].sort());
    expect(await ids({ developer: "dev@example.com", state: "active" })).toEqual(
      [key.apiKeyId, bystander.apiKeyId].sort(),
    );
    expect(await ids({ developer: "someone@else" })).toEqual([]);
    expect(await ids({ state: "revoking" })).toEqual([]);
  });

  it("revoke --fingerprint --reason leaked: off both AWS fakes, Azure and the embedded gateway in one call; the key check refuses it at once", async () => {
    const results = await s.credhook.orchestrator.actOnCredentials(
      "revoke",
      { fingerprint },
      { leaked: true, reason: "leaked" },
    );
    expect(results).toEqual([
      expect.objectContaining({ publicId: key.apiKeyId, outcome: "revoked", gateways: expect.any(Array) }),
    ]);
    expect([...results[0]!.gateways].sort()).toEqual(["aws-eu", "aws-us", "azure", "local"]);
    expect(await check(key.apiKey)).toBe(401);
    expect([...fakes.us.apiGateway.keys.values()].map((k) => k.value)).toEqual([bystander.apiKey]);
    expect([...fakes.eu.apiGateway.keys.values()]).toEqual([]);
    expect(fakes.azure.listSubscriptions()).toEqual([]);
    expect(await findCredentials(s.credhook.store, { fingerprint })).toEqual([]);
    // The other app's key is untouched.
    expect(await check(bystander.apiKey)).toBe(200);
  });

  it("the audit trail says credential.leaked, then credential.revoked, with the fingerprint and the reason, never the key", async () => {
    const events = (await s.credhook.store.outbox!.list({ app: "slug:dev@example.com/leaky" })).map((e) => e.event);
    expect(events.map((e) => e.type)).toEqual(["credential.created", "credential.leaked", "credential.revoked"]);
    const [, leaked, revoked] = events;
    expect(leaked!.data).toMatchObject({ keyFingerprint: fingerprint, reason: "leaked", publicId: key.apiKeyId });
    expect(leaked!.data.gateways.map((g) => g.gateway).sort()).toEqual(["aws-eu", "aws-us", "azure", "local"]);
    expect(revoked!.data).toMatchObject({ keyFingerprint: fingerprint, reason: "leaked" });
    expect(JSON.stringify(events)).not.toContain(key.apiKey);
  });

  it("revoking again answers from the audit trail: revoked already, since the revoke; no query at all is refused", async () => {
    const revokedAt = (await s.credhook.store.outbox!.list({ fingerprint })).find(
      (e) => e.event.type === "credential.revoked",
    )!.event.time;
    expect(await s.credhook.orchestrator.actOnCredentials("revoke", { fingerprint })).toEqual([
      expect.objectContaining({ publicId: key.apiKeyId, outcome: "revoked", already: true, since: revokedAt }),
    ]);
    expect(
      await s.credhook.orchestrator.actOnCredentials("revoke", { fingerprint: `sha256:${"0".repeat(32)}` }),
    ).toEqual([]);
    await expect(s.credhook.orchestrator.actOnCredentials("revoke", {})).rejects.toThrow(/--fingerprint/);
  });
});

describe("a leaked key disabled everywhere at once, its record kept, and enabled again", () => {
  let key: { apiKeyId: string; apiKey: string };
  let fingerprint: string;
  const awsKey = (fake: AwsFake) => [...fake.apiGateway.keys.values()].find((k) => k.value === key.apiKey)!;
  const azureStates = () =>
    fakes.azure
      .listSubscriptions()
      .filter((x) => x.primaryKey === key.apiKey)
      .map((x) => x.state);
  const types = async () =>
    (await s.credhook.store.outbox!.list({ app: "slug:dev@example.com/suspect" })).map((e) => e.event.type);
  /** The portal's update of the app's `weather` API with `action`. */
  const updateWeather = (action: "NONE" | "REMOVED") =>
    s.call("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: key.apiKeyId,
      appName: "Suspect",
      developer: "dev@example.com",
      apis: [{ id: "weather", usagePlans: [], action }],
    });

  beforeAll(async () => {
    key = await create("Suspect", EVERYWHERE);
    fingerprint = secretFingerprint(key.apiKey);
  });

  it("disable --fingerprint --reason leaked: off on both AWS fakes, Azure and the embedded gateway in one call; the key check refuses it at once", async () => {
    expect(await check(key.apiKey)).toBe(200);
    const results = await s.credhook.orchestrator.actOnCredentials(
      "disable",
      { fingerprint },
      { leaked: true, reason: "leaked" },
    );
    expect(results).toEqual([expect.objectContaining({ publicId: key.apiKeyId, outcome: "disabled" })]);
    expect([...results[0]!.gateways].sort()).toEqual(["aws-eu", "aws-us", "azure", "local"]);
    expect(await check(key.apiKey)).toBe(401);
    expect([awsKey(fakes.us).enabled, awsKey(fakes.eu).enabled]).toEqual([false, false]);
    expect(azureStates()).toEqual(["suspended"]);
    // The record is kept, marked, and inspect says so.
    const [view] = await inspectCredentials(s.credhook.store, { fingerprint }, Date.now());
    expect(view).toMatchObject({ state: "active", disabled: { reason: "leaked" }, leakedAt: expect.any(String) });
    expect([...view!.disabled!.gateways].sort()).toEqual(["aws-eu", "aws-us", "azure", "local"]);
    expect(formatCredentialDetails([view!]).join("\n")).toMatch(/state: active, disabled since .* \(leaked\)/);
    expect(await types()).toEqual(["credential.created", "credential.leaked", "credential.disabled"]);
  });

  it("the portal's update and replayed create answer 409 while it is disabled; a second leak report changes nothing", async () => {
    const update = await updateWeather("REMOVED");
    expect(update.status).toBe(409);
    expect(update.json).toMatchObject({ status: 409, error: "Conflict" });
    expect(JSON.stringify(update.json)).toMatch(/disabled since .*credhook enable/);
    const replay = await s.call("/v1/createCredentials", {
      appName: "Suspect",
      appSlug: "suspect",
      developer: "dev@example.com",
      apis: EVERYWHERE,
    });
    expect(replay.status).toBe(409);
    expect(JSON.stringify(replay.json)).not.toContain(key.apiKey);
    await s.credhook.orchestrator.actOnCredentials("disable", { fingerprint }, { leaked: true });
    expect(await types()).toEqual(["credential.created", "credential.leaked", "credential.disabled"]);
  });

  it("enable turns it on again everywhere; the portal's update works again", async () => {
    const results = await s.credhook.orchestrator.actOnCredentials("enable", { app: "suspect" });
    expect(results).toEqual([expect.objectContaining({ outcome: "enabled" })]);
    expect(await check(key.apiKey)).toBe(200);
    expect([awsKey(fakes.us).enabled, awsKey(fakes.eu).enabled]).toEqual([true, true]);
    expect(azureStates()).toEqual(["active"]);
    expect((await findCredentials(s.credhook.store, { fingerprint }))[0]?.disabled).toBeUndefined();
    expect(await types()).toEqual([
      "credential.created",
      "credential.leaked",
      "credential.disabled",
      "credential.enabled",
    ]);
    expect((await updateWeather("NONE")).status).toBe(204);
  });
});
