/**
 * End to end: the full credhook server, configured by examples/azure.yaml, against
 * the APIM fake — the contract's example flow creates, changes and removes exactly
 * the expected subscriptions, all with the one key returned to the portal.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfigFile, startServer } from "@credhook/server";
import { startApimFake, type ApimFake } from "../src/fake/index.js";

// The server imports `provider: azure` as the package @credhook/provider-azure, which it
// does not depend on; pin the import to this package's source so the test does not rely
// on how the server's dynamic import happens to resolve.
vi.mock("@credhook/provider-azure", () => import("../src/index.js"));

const EXAMPLE = fileURLToPath(new URL("../../../examples/azure.yaml", import.meta.url));

let fake: ApimFake;
let dataDir: string;
let server: { url: string; close(): Promise<void> };

async function call(path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> | undefined }> {
  const res = await fetch(`${server.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Basic ${Buffer.from("portal:pw").toString("base64")}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

beforeAll(async () => {
  fake = await startApimFake({ products: ["gold", "silver", "bronze"], apis: ["orders"] });
  dataDir = await mkdtemp(join(tmpdir(), "credhook-azure-e2e-"));
  const config = await loadConfigFile(EXAMPLE, { env: { ...process.env, FAKE_URL: fake.url, CREDHOOK_PASSWORD: "pw", CREDHOOK_DATA_DIR: dataDir } });
  config.server.logLevel = "silent";
  server = await startServer(config, { port: 0, host: "127.0.0.1" });
});

afterAll(async () => {
  await server?.close();
  await fake?.close();
  await rm(dataDir, { recursive: true, force: true });
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
    expect(res.json).toEqual({ credentialType: "API_KEY", apiKeyId: expect.stringMatching(/^credhook-[0-9a-f-]{36}$/), apiKey: expect.stringMatching(/^[0-9A-Za-z]{40}$/) });
    apiKeyId = res.json!.apiKeyId as string;
    apiKey = res.json!.apiKey as string;
    expect(subs()).toEqual({ "/products/gold": ["active", true], "/products/silver": ["active", true], "/apis/orders": ["active", true] });
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
        { id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "1el57v", action: "NONE" }, { id: "2plan2", action: "NONE" }, { id: "3plan3", action: "ADDED" }] },
        { id: "a1b2c3d4e5", action: "NONE", usagePlans: [] },
      ],
    });
    expect(res.status).toBe(204);
    expect(subs()).toEqual({ "/products/gold": ["active", true], "/products/silver": ["active", true], "/products/bronze": ["active", true], "/apis/orders": ["active", true] });

    res = await call("/v1/updateCredentials", {
      ...base,
      apis: [
        { id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "1el57v", action: "NONE" }, { id: "2plan2", action: "REMOVED" }, { id: "3plan3", action: "NONE" }] },
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
      apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "1el57v", action: "NONE" }, { id: "3plan3", action: "NONE" }, { id: "zzzzzz", action: "ADDED" }] }],
    });
    expect(res.status).toBe(422);
    expect(res.json!.messages).toContain("[gateway azure] product zzzzzz does not exist on service rg-credhook/apim-credhook (usage plan zzzzzz of API 5aba4csvd4)");
    expect(fake.listSubscriptions()).toEqual(before);
  });

  it("revoke deletes every subscription of the credential with If-Match; revoking again is 204 too", async () => {
    const body = { ...app, credentialType: "API_KEY", apiKeyId, apiKey };
    const from = fake.requests.length;
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    expect(fake.listSubscriptions()).toEqual([]);
    expect((await call("/v1/revokeCredentials", body)).status).toBe(204);
    const deletes = fake.requests.slice(from).filter((r) => r.method === "DELETE");
    expect(deletes.map((r) => `${r.path} ${r.status}`).sort()).toEqual([`/subscriptions/${apiKeyId}-p-bronze 200`, `/subscriptions/${apiKeyId}-p-gold 200`]);
    expect(deletes.every((r) => r.ifMatch !== undefined)).toBe(true);
  });
});
