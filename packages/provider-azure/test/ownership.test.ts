// Ownership before any write: only subscription ids of exactly this gateway's form are its own.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { ConfigError } from "@credhook/core/errors";
import { memoryStateStore } from "@credhook/core/provider-kit";
import { silentLogger } from "@credhook/core";
import { createAzureProvider } from "../src/index.js";
import { app, createRef, noneChanges, subsOf, typedError, useFake } from "./helpers.js";

const t = useFake();
const apis = [{ id: "orders", usagePlans: ["gold", "silver"] }];

describe("two gateways on one service (issue 9, case 5)", () => {
  it("revokeMode delete with prefix credhook- leaves alone the cancelled subscriptions of the gateway with prefix credhook-eu-", async () => {
    const eu = t.make({ subscriptionIdPrefix: "credhook-eu-", revokeMode: "disable" }, "azure-eu");
    const theirs = await createRef(eu, apis);
    expect(await eu.revoke(theirs)).toBe("revoked");
    const cancelled = subsOf(t.fake, theirs.nativeId);
    expect(cancelled.map((s) => s.state)).toEqual(["cancelled", "cancelled"]);
    // core sends a revoke of an id its store does not know to every gateway of the type, with no credential id
    const deleting = t.make({ revokeMode: "delete" });
    expect(await deleting.revoke({ ...theirs, credentialId: "", resources: {} })).toBe("not-owned");
    expect(await deleting.revoke({ ...theirs, resources: {} })).toBe("not-owned");
    expect(subsOf(t.fake, theirs.nativeId)).toEqual(cancelled);
    expect(t.fake.requests.filter((r) => r.method === "DELETE")).toEqual([]);
    // nor does it list, find or update them
    expect((await deleting.listOwned()).map((o) => o.nativeId)).toEqual([]);
    expect(
      await deleting.findByCredential({ credentialId: theirs.credentialId, credentialType: "API_KEY", app, apis }),
    ).toEqual([]);
    expect(
      (
        await typedError(
          deleting.update({ ...theirs, credentialId: "", previous: apis, desired: apis, changes: noneChanges(apis) }),
        )
      ).status,
    ).toBe(404);
  });

  it("and the other way round: credhook-eu- never takes credhook-'s subscriptions", async () => {
    const mine = await createRef(t.provider, apis);
    const eu = t.make({ subscriptionIdPrefix: "credhook-eu-" }, "azure-eu");
    expect(await eu.revoke({ ...mine, credentialId: "" })).toBe("not-owned");
    expect((await typedError(eu.readSecret({ ...mine, credentialId: "" }))).status).toBe(404);
    expect((await typedError(eu.rotateSecret({ ...mine, credentialId: "" }))).status).toBe(404);
    expect(subsOf(t.fake, mine.nativeId).map((s) => [s.state, s.primaryKey === mine.apiKey])).toEqual([
      ["active", true],
      ["active", true],
    ]);
  });

  it("two gateways of one process may not share a prefix on one service (case-insensitive): ConfigError naming both", async () => {
    const context = {
      gateway: "azure-twin",
      configPath: "gateways.azure-twin.options",
      credentialType: "API_KEY" as const,
      logger: silentLogger,
      state: memoryStateStore(),
    };
    const options = {
      subscriptionId: t.fake.subscriptionId,
      resourceGroup: t.fake.resourceGroup,
      serviceName: t.fake.serviceName,
      endpoint: t.fake.url,
      credential: { type: "static-token" as const, token: "fake" },
    };
    expect(() => createAzureProvider({ ...options, subscriptionIdPrefix: "CREDHOOK-" }, context)).toThrow(ConfigError);
    expect(() => createAzureProvider({ ...options, subscriptionIdPrefix: "CREDHOOK-" }, context)).toThrow(
      /gateways\.azure-twin\.options\.subscriptionIdPrefix: gateway 'azure-test' already uses the prefix 'credhook-' on the same API Management service/,
    );
    // another service, or another prefix, is fine; so is the same gateway again (a restart in one process)
    await createAzureProvider({ ...options, serviceName: "other-apim" }, context).close();
    await createAzureProvider({ ...options, subscriptionIdPrefix: "credhook-twin-" }, context).close();
    await t.make().close();
  });
});

describe("revoke and update check the mark before any write", () => {
  it("a foreign subscription (no mark) is 'not-owned' and untouched, whatever credential id the call names", async () => {
    const made = t.fake.addForeignSubscription({ scope: "/products/gold", sid: "partner-key-1" });
    for (const credentialId of ["", randomUUID()]) {
      const ref = { credentialId, credentialType: "API_KEY" as const, nativeId: made.sid, resources: {}, app };
      expect(await t.provider.revoke(ref)).toBe("not-owned");
      expect(
        (await typedError(t.provider.update({ ...ref, previous: apis, desired: apis, changes: noneChanges(apis) })))
          .status,
      ).toBe(404);
      expect((await typedError(t.provider.readSecret(ref))).status).toBe(404);
    }
    expect(t.fake.getSubscription(made.sid)).toEqual(made);
    expect(t.fake.requests.filter((r) => r.method !== "GET")).toEqual([]);
  });

  it("an id that merely starts with this gateway's prefix is not its own: only <prefix><UUID> is", async () => {
    const lookalike = t.fake.addForeignSubscription({
      scope: "/products/gold",
      sid: `credhook-legacy-${randomUUID()}-p-gold`,
    });
    expect(
      await t.provider.revoke({
        credentialId: "",
        credentialType: "API_KEY",
        nativeId: "credhook-legacy",
        resources: {},
        app,
      }),
    ).toBe("not-owned");
    expect(await t.provider.listOwned()).toEqual([]);
    expect(t.fake.getSubscription(lookalike.sid)).toEqual(lookalike);
  });

  it("a revoke naming another credential id is 'not-owned'; nothing under the id is 'gone'", async () => {
    const ref = await createRef(t.provider, apis);
    expect(await t.provider.revoke({ ...ref, credentialId: randomUUID() })).toBe("not-owned");
    expect(subsOf(t.fake, ref.nativeId)).toHaveLength(2);
    expect(await t.provider.revoke({ ...ref, nativeId: `credhook-${randomUUID()}` })).toBe("gone");
  });

  it("an update with no credential id (the store lost the record) acts on the gateway's mark and reports the mark's credential id", async () => {
    const ref = await createRef(t.provider, apis);
    const res = await t.provider.update({
      ...ref,
      credentialId: "",
      resources: {},
      previous: apis,
      desired: apis,
      changes: noneChanges(apis),
    });
    expect(res.credentialId).toBe(ref.credentialId);
    // core keeps that id for the new record, so later calls match the mark again
    expect(await t.provider.revoke({ ...ref, resources: res.resources })).toBe("revoked");
    expect(subsOf(t.fake, ref.nativeId)).toEqual([]);
    // an update naming its own credential id reports none
    const other = await createRef(t.provider, apis);
    expect(
      (await t.provider.update({ ...other, previous: apis, desired: apis, changes: noneChanges(apis) })).credentialId,
    ).toBeUndefined();
  });

  it("update with a credential id is NotFound when the mark names another credential", async () => {
    const ref = await createRef(t.provider, apis);
    const err = await typedError(
      t.provider.update({
        ...ref,
        credentialId: randomUUID(),
        previous: apis,
        desired: apis,
        changes: noneChanges(apis),
      }),
    );
    expect(err.status).toBe(404);
    expect(err.message).toMatch(/carries the mark of credhook credential .*; nothing was changed/);
  });
});
