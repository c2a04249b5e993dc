/**
 * `reconcile` on the embedded provider: interrupted updates are rolled back,
 * interrupted revokes completed, fresh in-flight records left alone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalCredentialState } from "@credhook/provider-local";
import { LOCAL_YAML, startTestServer, type TestServer } from "./helpers.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(LOCAL_YAML);
});
afterAll(() => s.close());

const localState = async (id: string) =>
  (await s.credhook.store.stateFor("local").get(`cred:${id}`)) as unknown as LocalCredentialState | undefined;
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

describe("reconcile", () => {
  it("rolls an interrupted update back to the API set before it", async () => {
    const created = await s.call("/v1/createCredentials", {
      appName: "Half",
      developer: "h@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    const { apiKeyId } = created.json as { apiKeyId: string };
    const rec = (await s.credhook.store.findByPublicId("API_KEY", apiKeyId))!;
    // A crash in the middle of an update that was adding plan 2plan2: the gateway already has it, the record says pending.
    const state = (await localState(apiKeyId))!;
    state.apis = [{ id: "5aba4csvd4", usagePlans: ["1el57v", "2plan2"] }];
    await s.credhook.store.stateFor("local").put(`cred:${apiKeyId}`, state as never);
    const desired = [{ id: "5aba4csvd4", gateway: "local", usagePlans: ["1el57v", "2plan2"] }];
    await s.credhook.store.save({
      ...rec,
      status: "pending",
      pending: {
        op: "update",
        startedAt: minutesAgo(5),
        createOn: [],
        removeFrom: [],
        previousApis: rec.apis,
        desiredApis: desired,
      },
      updatedAt: minutesAgo(5),
    });

    const dry = await s.credhook.orchestrator.reconcile({ dryRun: true });
    expect(dry.unfinished).toEqual([
      expect.objectContaining({
        credentialId: rec.id,
        op: "update",
        action: expect.stringMatching(/^would roll the update back/),
      }),
    ]);
    expect((await localState(apiKeyId))!.apis[0]!.usagePlans).toEqual(["1el57v", "2plan2"]);

    const report = await s.credhook.orchestrator.reconcile();
    expect(report.unfinished).toEqual([
      expect.objectContaining({ credentialId: rec.id, op: "update", action: "update rolled back", errors: [] }),
    ]);
    expect((await localState(apiKeyId))!.apis).toEqual([{ id: "5aba4csvd4", usagePlans: ["1el57v"] }]);
    const after = (await s.credhook.store.get(rec.id))!;
    expect(after.status).toBe("active");
    expect(after.pending).toBeUndefined();
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
  });

  it("completes an interrupted revoke, and leaves records younger than olderThanMs alone", async () => {
    const a = (
      await s.call("/v1/createCredentials", {
        appName: "Gone",
        developer: "g@example.com",
        apis: [{ id: "5aba4csvd4" }],
      })
    ).json as { apiKeyId: string };
    const b = (
      await s.call("/v1/createCredentials", {
        appName: "Busy",
        developer: "g@example.com",
        apis: [{ id: "5aba4csvd4" }],
      })
    ).json as { apiKeyId: string };
    const ra = (await s.credhook.store.findByPublicId("API_KEY", a.apiKeyId))!;
    const rb = (await s.credhook.store.findByPublicId("API_KEY", b.apiKeyId))!;
    await s.credhook.store.save({ ...ra, status: "revoking", updatedAt: minutesAgo(5) });
    await s.credhook.store.save({ ...rb, status: "revoking", updatedAt: new Date().toISOString() }); // in flight right now

    const report = await s.credhook.orchestrator.reconcile({ olderThanMs: 60_000 });
    expect(report.unfinished.map((u) => [u.credentialId, u.op, u.action])).toEqual([
      [ra.id, "revoke", "revoked and deleted"],
    ]);
    expect(await localState(a.apiKeyId)).toBeUndefined();
    expect(await s.credhook.store.get(ra.id)).toBeUndefined();
    expect(await localState(b.apiKeyId)).toBeDefined();
    expect(report.orphans).toEqual([]);

    await s.credhook.store.save({ ...rb, status: "active" });
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: b.apiKeyId })).status).toBe(
      204,
    );
  });

  it("reports a local credential no record owns as drift, without deleting it", async () => {
    const c = (
      await s.call("/v1/createCredentials", {
        appName: "Drift",
        developer: "d@example.com",
        apis: [{ id: "5aba4csvd4" }],
      })
    ).json as { apiKeyId: string };
    const rec = (await s.credhook.store.findByPublicId("API_KEY", c.apiKeyId))!;
    await s.credhook.store.delete(rec.id);
    const report = await s.credhook.orchestrator.reconcile();
    expect(report.orphans).toEqual([
      expect.objectContaining({ gateway: "local", nativeId: c.apiKeyId, credentialId: rec.id }),
    ]);
    expect(await localState(c.apiKeyId)).toBeDefined();
  });
});

describe("a request finds an interrupted operation of its app", () => {
  it("a create whose earlier attempt crashed removes what that attempt left, then creates afresh", async () => {
    const body = {
      appName: "Retry",
      appSlug: "retry-after-crash",
      developer: "r@example.com",
      apis: [{ id: "5aba4csvd4" }],
    };
    const first = (await s.call("/v1/createCredentials", body)).json as { apiKeyId: string };
    const rec = (await s.credhook.store.findByPublicId("API_KEY", first.apiKeyId))!;
    // as a crash during create leaves it: pending, publicId not yet set
    await s.credhook.store.save({
      ...rec,
      status: "pending",
      publicId: "",
      pending: {
        op: "create",
        startedAt: rec.createdAt,
        createOn: ["local"],
        removeFrom: [],
        previousApis: [],
        desiredApis: rec.apis,
      },
    });
    const again = await s.call("/v1/createCredentials", body);
    expect(again.status).toBe(200);
    const second = again.json as { apiKeyId: string };
    expect(second.apiKeyId).not.toBe(first.apiKeyId);
    expect(await localState(first.apiKeyId)).toBeUndefined(); // the crashed attempt's key is gone
    expect(
      (await s.credhook.store.list())
        .filter((r) => r.appKey === "slug:r@example.com/retry-after-crash")
        .map((r) => r.status),
    ).toEqual(["active"]);
    expect(
      (await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: second.apiKeyId })).status,
    ).toBe(204);
  });

  it("an update whose earlier attempt crashed rolls that back, then applies its own change", async () => {
    const { apiKeyId } = (
      await s.call("/v1/createCredentials", {
        appName: "Twice",
        developer: "t@example.com",
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
      })
    ).json as { apiKeyId: string };
    const rec = (await s.credhook.store.findByPublicId("API_KEY", apiKeyId))!;
    const state = (await localState(apiKeyId))!;
    state.apis = [{ id: "5aba4csvd4", usagePlans: ["1el57v", "2plan2"] }];
    await s.credhook.store.stateFor("local").put(`cred:${apiKeyId}`, state as never);
    await s.credhook.store.save({
      ...rec,
      status: "pending",
      pending: {
        op: "update",
        startedAt: rec.createdAt,
        createOn: [],
        removeFrom: [],
        previousApis: rec.apis,
        desiredApis: [{ id: "5aba4csvd4", gateway: "local", usagePlans: ["1el57v", "2plan2"] }],
      },
    });
    const res = await s.call("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId,
      apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "3plan3", action: "ADDED" }] }],
    });
    expect(res.status).toBe(204);
    expect((await localState(apiKeyId))!.apis).toEqual([{ id: "5aba4csvd4", usagePlans: ["1el57v", "3plan3"] }]);
    expect((await s.credhook.store.get(rec.id))!.status).toBe("active");
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
  });
});
