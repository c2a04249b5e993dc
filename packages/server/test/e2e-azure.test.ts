/**
 * End to end: the full credhook server, configured by examples/azure.yaml, against
 * the APIM fake — the contract's example flow creates, changes and removes exactly
 * the expected subscriptions, all with the one key returned to the portal.
 *
 * `provider: azure` loads the real @credhook/provider-azure, a dependency of the server:
 * deliberately not mocked, so this also proves the built-in provider resolves.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApimFake, type ApimFake } from "@credhook/fakes/azure";
import { startExampleServer, type TestServer } from "./helpers.js";

let fake: ApimFake;
let server: TestServer;

const call = (path: string, body?: unknown) => server.call(path, body);

beforeAll(async () => {
  fake = await startApimFake({ products: ["gold", "silver", "bronze"], apis: ["orders"] });
  server = await startExampleServer("azure", { FAKE_URL: fake.url });
});

afterAll(async () => {
  await server?.close();
  await fake?.close();
});

const app = { appName: "My App", appSlug: "590d83b5c05f", developer: "developer@example.com" };
/** The contract's create request: one API in two usage plans, one API with none. */
const createBody = {
  ...app,
  apis: [
    { id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }, { id: "2plan2" }] },
    { id: "a1b2c3d4e5", usagePlans: [] },
  ],
};

describe("credhook server + examples/azure.yaml + APIM fake", () => {
  let apiKeyId = "";
  let apiKey = "";
  /** The credential's subscriptions in the fake: scope → [state, carries the returned key]. */
  const subs = () =>
    Object.fromEntries(
      fake
        .listSubscriptions()
        .filter((s) => s.sid.startsWith(`${apiKeyId}-`))
        .map((s) => [s.scope, [s.state, s.primaryKey === apiKey]]),
    );

  it("health answers 204 through one read of the APIM service", async () => {
    expect((await call("/v1/health")).status).toBe(204);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["GET /"]);
  });

  it("create returns one key, carried by one active subscription per product and per plan-less API", async () => {
    const res = await call("/v1/createCredentials", createBody);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      credentialType: "API_KEY",
      apiKeyId: expect.stringMatching(/^credhook-[0-9a-f-]{36}$/),
      apiKey: expect.stringMatching(/^credhook[0-9A-Za-z]{46}$/),
    });
    apiKeyId = res.json!.apiKeyId as string;
    apiKey = res.json!.apiKey as string;
    expect(subs()).toEqual({
      "/products/gold": ["active", true],
      "/products/silver": ["active", true],
      "/apis/orders": ["active", true],
    });
    expect(fake.listSubscriptions()).toHaveLength(3);
    expect(fake.listSubscriptions().every((s) => s.displayName === "My App (developer@example.com)")).toBe(true);
  });

  it("a replayed create returns the same key, read back with listSecrets, and writes nothing", async () => {
    const puts = fake.requests.filter((r) => r.method === "PUT").length;
    const res = await call("/v1/createCredentials", createBody);
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ apiKeyId, apiKey });
    expect(fake.requests.filter((r) => r.method === "PUT")).toHaveLength(puts);
    expect(fake.listSubscriptions()).toHaveLength(3);
  });

  it("update ADDED then REMOVED creates and deletes exactly those subscriptions, with the same key", async () => {
    const base = { updatedAt: "2023-06-27T21:23:21.523Z[GMT]", ...app, credentialType: "API_KEY", apiKeyId };
    let res = await call("/v1/updateCredentials", {
      ...base,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "1el57v", action: "NONE" },
            { id: "2plan2", action: "NONE" },
            { id: "3plan3", action: "ADDED" },
          ],
        },
        { id: "a1b2c3d4e5", action: "NONE", usagePlans: [] },
      ],
    });
    expect(res.status).toBe(204);
    expect(subs()).toEqual({
      "/products/gold": ["active", true],
      "/products/silver": ["active", true],
      "/products/bronze": ["active", true],
      "/apis/orders": ["active", true],
    });

    res = await call("/v1/updateCredentials", {
      ...base,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "1el57v", action: "NONE" },
            { id: "2plan2", action: "REMOVED" },
            { id: "3plan3", action: "NONE" },
          ],
        },
        { id: "a1b2c3d4e5", action: "REMOVED", usagePlans: [] },
      ],
    });
    expect(res.status).toBe(204);
    expect(subs()).toEqual({ "/products/gold": ["active", true], "/products/bronze": ["active", true] });
    expect(fake.listSubscriptions()).toHaveLength(2);
  });

  it("an ADDED usage plan whose product does not exist is 422 and changes nothing", async () => {
    const before = fake.listSubscriptions();
    const res = await call("/v1/updateCredentials", {
      updatedAt: "2023-06-27T21:23:21.523Z[GMT]",
      ...app,
      credentialType: "API_KEY",
      apiKeyId,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "1el57v", action: "NONE" },
            { id: "3plan3", action: "NONE" },
            { id: "zzzzzz", action: "ADDED" },
          ],
        },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.json!.messages).toContain(
      "[gateway azure] product zzzzzz does not exist on service rg-credhook/apim-credhook (usage plan zzzzzz of API 5aba4csvd4)",
    );
    expect(fake.listSubscriptions()).toEqual(before);
  });

  it("revoke deletes every subscription of the credential with If-Match; revoking again is 204 too", async () => {
    const body = { ...app, credentialType: "API_KEY", apiKeyId, apiKey };
    const from = fake.requests.length;
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    expect(fake.listSubscriptions()).toEqual([]);
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    const deletes = fake.requests.slice(from).filter((r) => r.method === "DELETE");
    expect(deletes.map((r) => `${r.path} ${r.status}`).sort()).toEqual([
      `/subscriptions/${apiKeyId}-p-bronze 200`,
      `/subscriptions/${apiKeyId}-p-gold 200`,
    ]);
    expect(deletes.every((r) => r.ifMatch !== undefined)).toBe(true);
  });
});
