import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, LOCAL_YAML, type TestServer } from "./helpers.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(LOCAL_YAML);
});
afterAll(() => s.close());

describe("the contract's example flow on the embedded provider", () => {
  it("create → update (plan ADDED) → update (plan REMOVED) → revoke → revoke again", async () => {
    const create = await s.post("/v1/createCredentials", {
      appName: "My App",
      appSlug: "590d83b5c05f",
      developer: "developer@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(create.status).toBe(200);
    expect(create.headers.get("content-type")).toMatch(/^application\/json/);
    const cred = await create.json();
    expect(cred.credentialType).toBe("API_KEY");
    expect(cred.apiKeyId).toEqual(expect.any(String));
    expect(cred.apiKey).toMatch(/^[0-9A-Za-z]{40,}$/);
    expect(cred.clientSecret).toBeUndefined();

    const state = () =>
      s.credhook.store.stateFor("local").get(`cred:${cred.apiKeyId}`) as Promise<
        { apis: Array<{ id: string; usagePlans: string[] }>; enabled: boolean } | undefined
      >;
    expect((await state())!.apis).toEqual([{ id: "5aba4csvd4", usagePlans: ["1el57v"] }]);

    /** The contract's update example for this app's API, with the two plans' actions and the update's time. */
    const update = (updatedAt: string, plan1: string, plan2: string) =>
      s.post("/v1/updateCredentials", {
        updatedAt,
        appName: "My App",
        developer: "developer@example.com",
        credentialType: "API_KEY",
        apiKeyId: cred.apiKeyId,
        apis: [
          {
            id: "5aba4csvd4",
            action: "NONE",
            usagePlans: [
              { id: "1el57v", action: plan1 },
              { id: "2plan2", action: plan2 },
            ],
          },
        ],
      });
    const added = await update("2023-06-27T21:23:21.523Z[GMT]", "NONE", "ADDED");
    expect(added.status).toBe(204);
    expect(await added.text()).toBe("");
    expect((await state())!.apis).toEqual([{ id: "5aba4csvd4", usagePlans: ["1el57v", "2plan2"] }]);

    const removed = await update("2023-06-28T08:00:00.000Z[GMT]", "REMOVED", "NONE");
    expect(removed.status).toBe(204);
    expect((await state())!.apis).toEqual([{ id: "5aba4csvd4", usagePlans: ["2plan2"] }]);

    const revoke = {
      appName: "My App",
      developer: "developer@example.com",
      credentialType: "API_KEY",
      apiKeyId: cred.apiKeyId,
      apiKey: cred.apiKey,
    };
    const r1 = await s.post("/v1/revokeCredentials", revoke);
    expect(r1.status).toBe(204);
    expect(await state()).toBeUndefined();
    expect(await s.credhook.store.findByPublicId("API_KEY", cred.apiKeyId)).toBeUndefined();
    const r2 = await s.post("/v1/revokeCredentials", revoke);
    expect(r2.status).toBe(204);
  });

  it("an API marked ADDED joins the credential, and REMOVED leaves it", async () => {
    const cred = await (
      await s.post("/v1/createCredentials", {
        appName: "Orders",
        developer: "d@example.com",
        apis: [{ id: "5aba4csvd4" }],
      })
    ).json();
    const upd = (apis: unknown) =>
      s.post("/v1/updateCredentials", { credentialType: "API_KEY", apiKeyId: cred.apiKeyId, apis });
    expect(
      (await upd([{ id: "orders-v2", action: "ADDED", usagePlans: [{ id: "3plan3", action: "ADDED" }] }])).status,
    ).toBe(204);
    let rec = await s.credhook.store.findByPublicId("API_KEY", cred.apiKeyId);
    expect(rec!.apis.map((a) => [a.id, a.usagePlans])).toEqual([
      ["5aba4csvd4", []],
      ["orders-v2", ["3plan3"]],
    ]);
    expect((await upd([{ id: "5aba4csvd4", action: "REMOVED" }])).status).toBe(204);
    rec = await s.credhook.store.findByPublicId("API_KEY", cred.apiKeyId);
    expect(rec!.apis.map((a) => a.id)).toEqual(["orders-v2"]);
  });

  it("issues CLIENT_CREDENTIALS where the route's gateway does, with the token URL in customCredentials", async () => {
    const res = await s.post("/v1/createCredentials", {
      appName: "Machine",
      developer: "m@example.com",
      apis: [{ id: "m2m-billing" }],
    });
    expect(res.status).toBe(200);
    const cred = await res.json();
    expect(cred).toMatchObject({
      credentialType: "CLIENT_CREDENTIALS",
      clientId: expect.any(String),
      clientSecret: expect.stringMatching(/^[0-9A-Za-z]{40}$/),
    });
    expect(cred.customCredentials).toEqual({ tokenUrl: "https://auth.example.com/oauth2/token" });
    expect(cred.apiKey).toBeUndefined();
    const upd = await s.post("/v1/updateCredentials", {
      credentialType: "CLIENT_CREDENTIALS",
      clientId: cred.clientId,
      apis: [{ id: "m2m-billing", action: "NONE" }],
    });
    expect(upd.status).toBe(204);
    expect(
      (
        await s.post("/v1/revokeCredentials", {
          credentialType: "CLIENT_CREDENTIALS",
          clientId: cred.clientId,
          clientSecret: cred.clientSecret,
        })
      ).status,
    ).toBe(204);
  });

  it("a replayed create returns the same credential id and creates nothing new", async () => {
    const body = {
      appName: "Replay",
      appSlug: "replay00001",
      developer: "r@example.com",
      apis: [{ id: "5aba4csvd4" }],
    };
    const first = await (await s.post("/v1/createCredentials", body)).json();
    const before = (await s.credhook.store.stateFor("local").list("cred:")).length;
    const again = await s.post("/v1/createCredentials", body);
    expect(again.status).toBe(200);
    const second = await again.json();
    expect(second.apiKeyId).toBe(first.apiKeyId);
    // The embedded provider keeps only a hash: the secret is rotated, and the new one is valid.
    expect(second.apiKey).toMatch(/^credhook[0-9A-Za-z]{46}$/);
    const local = s.credhook.orchestrator as unknown as {
      gateways: Map<string, { provider: { verify(id: string, secret: string): Promise<unknown> } }>;
    };
    const provider = local.gateways.get("local")!.provider;
    expect(await provider.verify(first.apiKeyId, second.apiKey)).toBeTruthy();
    expect(await provider.verify(first.apiKeyId, first.apiKey)).toBeUndefined();
    expect((await s.credhook.store.stateFor("local").list("cred:")).length).toBe(before);
  });

  it("tolerates unknown fields in every request body", async () => {
    const res = await s.post("/v1/createCredentials", {
      appName: "Tolerant",
      developer: "t@example.com",
      newPortalField: { nested: true },
      apis: [{ id: "5aba4csvd4", extra: 1, usagePlans: [{ id: "1el57v", future: "x" }] }],
      customCredentials: { anything: "goes" },
    });
    expect(res.status).toBe(200);
    const cred = await res.json();
    const upd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: cred.apiKeyId,
      somethingNew: [1, 2],
      apis: [
        { id: "5aba4csvd4", action: "NONE", whatever: null, usagePlans: [{ id: "1el57v", action: "NONE", x: 1 }] },
      ],
    });
    expect(upd.status).toBe(204);
    const rev = await s.post("/v1/revokeCredentials", {
      credentialType: "API_KEY",
      apiKeyId: cred.apiKeyId,
      extraField: "y",
    });
    expect(rev.status).toBe(204);
  });

  it("health answers 204 with an empty body", async () => {
    const res = await s.get("/v1/health");
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
  });
});

describe("metrics", () => {
  it("GET /metrics (behind Basic auth) counts requests by route and status, errors by status and code (two labels), gateways, and times each gateway call", async () => {
    expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
    expect(
      (
        await s.post("/v1/createCredentials", {
          appName: "Metered",
          developer: "m@example.com",
          apis: [{ id: "5aba4csvd4" }],
        })
      ).status,
    ).toBe(200);
    await s.post("/v1/createCredentials", {
      appName: "Metered",
      developer: "m@example.com",
      apis: [{ id: "nowhere-at-all" }],
    });
    const res = await s.get("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(
      /credhook_http_requests_total\{route="\/v1\/createCredentials",method="POST",status="200"\} [1-9]/,
    );
    expect(text).toMatch(/credhook_errors_total\{route="\/v1\/createCredentials",status="\d{3}",code="UNROUTABLE"\} 1/);
    // an answer without a credhook code (the 401 above is UNAUTHORIZED or NONE): the status never stands in for a code
    expect(text).toMatch(/credhook_errors_total\{route="\/metrics",status="401",code="[A-Z_]+"\} 1/);
    expect(text).not.toMatch(/credhook_errors_total\{[^}]*code="\d+"/);
    expect(text).toMatch(
      /credhook_gateway_call_duration_seconds_count\{gateway="local",operation="create",outcome="ok"\} [1-9]/,
    );
    expect(text).toMatch(
      /credhook_gateway_call_duration_seconds_bucket\{le="\+Inf",gateway="local",operation="create",outcome="ok"\} [1-9]/,
    );
    expect(text).toMatch(
      /credhook_gateway_requests_total\{gateway="local",route="\/v1\/createCredentials",outcome="ok"\} [1-9]/,
    );
    expect(text).toContain("credhook_http_request_duration_seconds_bucket");
    // prom-client's default metrics under their standard names
    expect(text).toContain("process_cpu_user_seconds_total");
    expect(text).toContain("nodejs_eventloop_lag_seconds");
    expect(text).not.toContain("credhook_process_");
    expect(text).not.toContain("credhook_nodejs_");
  });
});

describe("renames", () => {
  it("an app without a slug keeps its identity across a rename: a create under the new name is a replay", async () => {
    const first = await (
      await s.post("/v1/createCredentials", {
        appName: "Old Name",
        developer: "ren@example.com",
        apis: [{ id: "5aba4csvd4" }],
      })
    ).json();
    const upd = await s.post("/v1/updateCredentials", {
      appName: "New Name",
      developer: "ren@example.com",
      credentialType: "API_KEY",
      apiKeyId: first.apiKeyId,
      apis: [{ id: "5aba4csvd4", action: "NONE" }],
    });
    expect(upd.status).toBe(204);
    const again = await (
      await s.post("/v1/createCredentials", {
        appName: "New Name",
        developer: "ren@example.com",
        apis: [{ id: "5aba4csvd4" }],
      })
    ).json();
    expect(again.apiKeyId).toBe(first.apiKeyId);
    const rec = await s.credhook.store.findByPublicId("API_KEY", first.apiKeyId);
    expect(rec!.app.appName).toBe("New Name");
    expect(
      (await s.post("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: first.apiKeyId })).status,
    ).toBe(204);
  });
});
