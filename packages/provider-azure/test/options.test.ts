// The factory: options schema (as core validates it), defaults, credential types, endpoint mapping, naming limits.
import { describe, expect, it } from "vitest";
import { createAjv, silentLogger } from "@credhook/core";
import { memoryStateStore } from "@credhook/core/provider-kit";
import { displayNameOf, subscriptionIdOf } from "../src/naming.js";
import { endpointMapping } from "../src/client.js";
import factory, { createAzureProvider } from "../src/index.js";

const base = {
  subscriptionId: "11111111-2222-3333-4444-555555555555",
  resourceGroup: "rg-apis",
  serviceName: "contoso-apim",
};
const context = {
  gateway: "azure-eu",
  configPath: "gateways.azure-eu.options",
  credentialType: "API_KEY" as const,
  logger: silentLogger,
  state: memoryStateStore(),
};

describe("options", () => {
  const validate = createAjv({ coerceTypes: true, useDefaults: true }).compile(factory.optionsSchema);

  it("accepts the minimal block and fills the documented defaults", () => {
    const o: Record<string, unknown> = { ...base };
    expect(validate(o)).toBe(true);
    expect(o).toMatchObject({
      endpoint: "https://management.azure.com",
      credential: { type: "default" },
      timeoutMs: 30000,
      maxRetries: 3,
      maxRetryAfterS: 10,
      ownerMode: "none",
      revokeMode: "delete",
      subscriptionIdPrefix: "credhook-",
      healthCacheMs: 30000,
      rateLimit: { writesPerSecond: 10, writeBurst: 200, readsPerSecond: 25, readBurst: 250 },
    });
  });

  it("rejects missing or malformed required options and unknown keys", () => {
    expect(validate({ resourceGroup: "rg", serviceName: "x" })).toBe(false);
    expect(validate({ ...base, serviceName: "-bad-" })).toBe(false);
    expect(validate({ ...base, subscriptionId: "not-a-uuid" })).toBe(false);
    expect(validate({ ...base, regoin: "westeurope" })).toBe(false);
    expect(validate({ ...base, credential: { type: "client-secret", tenantId: "t" } })).toBe(false);
    expect(validate({ ...base, endpoint: "ftp://x" })).toBe(false);
    expect(validate({ ...base, subscriptionIdPrefix: "bad:prefix" })).toBe(false);
  });

  it("accepts every credential kind, and numbers from ${VAR} strings", () => {
    for (const credential of [
      { type: "default" },
      { type: "client-secret", tenantId: "t", clientId: "c", clientSecret: "s" },
      { type: "managed-identity", clientId: "c" },
      { type: "static-token", token: "t" },
    ]) {
      expect(validate({ ...base, credential })).toBe(true);
    }
    const o: Record<string, unknown> = { ...base, timeoutMs: "5000" };
    expect(validate(o)).toBe(true);
    expect(o.timeoutMs).toBe(5000);
  });

  it("declares API_KEY only and refuses a CLIENT_CREDENTIALS gateway with the YAML path", async () => {
    const p = await factory.create({ ...base, credential: { type: "static-token", token: "t" } }, context);
    expect(p.capabilities).toEqual({
      credentialTypes: ["API_KEY"],
      importsApiKeyValue: true,
      readsBackSecret: true,
      disables: ["API_KEY"],
    });
    expect(() => createAzureProvider(base, { ...context, credentialType: "CLIENT_CREDENTIALS" })).toThrow(
      "[provider-azure] gateways.azure-eu.credentialType: provider 'azure' issues API_KEY credentials only, not CLIENT_CREDENTIALS",
    );
  });

  it("maps an http:// endpoint to https for the SDK and back to http on the wire; https stays as is", () => {
    expect(endpointMapping("https://management.chinacloudapi.cn/").sdkEndpoint).toBe(
      "https://management.chinacloudapi.cn",
    );
    expect(endpointMapping("https://management.chinacloudapi.cn/").httpClient).toBeUndefined();
    const m = endpointMapping("http://127.0.0.1:8081");
    expect(m.sdkEndpoint).toBe("https://127.0.0.1:8081");
    expect(m.httpClient).toBeDefined();
  });

  it("subscription ids stay ≤ 256 allowed characters and display names ≤ 100", () => {
    const native = `credhook-${"0".repeat(36)}`;
    const long = subscriptionIdOf(native, {
      kind: "product",
      id: "x".repeat(300),
      path: `/products/${"x".repeat(300)}`,
      origin: "",
    });
    expect(long.length).toBeLessThanOrEqual(256);
    expect(long).toMatch(/^[^*#&+:<>?]+$/);
    const odd = subscriptionIdOf(native, { kind: "api", id: "weird id/é", path: "/apis/weird id/é", origin: "" });
    expect(odd).toMatch(/^credhook-0+-a-h[0-9a-f]{16}$/);
    expect(subscriptionIdOf(native, { kind: "product", id: "Gold", path: "/products/Gold", origin: "" })).toBe(
      `${native}-p-gold`,
    );
    const name = displayNameOf({ appName: "A".repeat(150), developer: `${"d".repeat(80)}@example.com` });
    expect(name.length).toBeLessThanOrEqual(100);
    expect(displayNameOf({ appName: "Shop", developer: "dev@example.com" })).toBe("Shop (dev@example.com)");
  });
});
