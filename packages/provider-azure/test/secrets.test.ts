// Secrets: read back, rotated, listed as owned; never in resources, messages, causes or logs.
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { memoryStateStore } from "@credhook/core/provider-kit";
import type { Logger } from "@credhook/core/provider";
import { createAzureProvider } from "../src/index.js";
import { app, createRef, noneChanges, subsOf, typedError, useFake } from "./helpers.js";

const t = useFake();
const apis = [
  { id: "orders", usagePlans: ["gold", "silver"] },
  { id: "echo-api", usagePlans: [] },
];

function capturingLogger(lines: string[]): Logger {
  const log = (level: string) => (obj: object, msg?: string) => {
    lines.push(
      `${level} ${JSON.stringify(obj, (_k, v: unknown) => (v instanceof Error ? { ...v, name: v.name, message: v.message } : v))} ${msg ?? ""}`,
    );
  };
  const logger: Logger = {
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    child: () => logger,
  };
  return logger;
}

describe("secrets", () => {
  it("readSecret returns the shared key via listSecrets", async () => {
    const ref = await createRef(t.provider, apis);
    expect(await t.provider.readSecret(ref)).toEqual({ apiKey: ref.apiKey });
    expect(t.fake.requests.filter((r) => r.path.endsWith("/listSecrets"))).toHaveLength(1);
  });

  it("rotateSecret puts one new key on every subscription, with If-Match", async () => {
    const ref = await createRef(t.provider, apis);
    const rotated = await t.provider.rotateSecret(ref, "RotatedKeyValue".repeat(3));
    expect(rotated.apiKey).toBe("RotatedKeyValue".repeat(3));
    expect(subsOf(t.fake, ref.nativeId).map((s) => s.primaryKey)).toEqual(Array(3).fill(rotated.apiKey));
    expect(
      t.fake.requests.filter((r) => r.method === "PATCH").every((r) => r.status === 200 && r.ifMatch !== undefined),
    ).toBe(true);
    expect(JSON.stringify(rotated.resources)).not.toContain(rotated.apiKey);
    expect((await t.provider.readSecret({ ...ref, resources: rotated.resources })).apiKey).toBe(rotated.apiKey);
    await t.provider.revoke(ref);
    expect((await typedError(t.provider.rotateSecret(ref))).status).toBe(404);
  });

  it("listOwned lists one entry per credential (the native id revoke takes), naming its subscriptions", async () => {
    const ref = await createRef(t.provider, [{ id: "orders", usagePlans: ["gold", "silver"] }]);
    const owned = await t.provider.listOwned();
    expect(owned).toEqual([
      {
        nativeId: ref.nativeId,
        credentialId: ref.credentialId,
        description: `${ref.nativeId}-p-gold: Orders App (dev@example.com) → /products/gold (active); ${ref.nativeId}-p-silver: Orders App (dev@example.com) → /products/silver (active)`,
      },
    ]);
    // what listOwned reports is what revoke removes
    await t.provider.revoke({ ...ref, nativeId: owned[0]!.nativeId, resources: {} });
    expect(await t.provider.listOwned()).toEqual([]);
  });

  it("no key in logs, stored resources, error messages or error causes — also on failures", async () => {
    const lines: string[] = [];
    const provider = createAzureProvider(
      {
        subscriptionId: t.fake.subscriptionId,
        resourceGroup: t.fake.resourceGroup,
        serviceName: t.fake.serviceName,
        endpoint: t.fake.url,
        credential: { type: "static-token", token: "fake" },
        maxRetries: 0,
      },
      {
        gateway: "azure-test",
        configPath: "gateways.azure-test.options",
        credentialType: "API_KEY",
        logger: capturingLogger(lines),
        state: memoryStateStore(),
      },
    );
    const key = "NeverLogThisKey".repeat(3);
    const ref = await createRef(provider, apis, key);
    await provider.update({
      ...ref,
      app: { ...app, appName: "Renamed" },
      previous: apis,
      desired: [{ id: "orders", usagePlans: ["gold", "bronze"] }],
      changes: noneChanges(apis),
    });
    t.fake.inject({ status: 400, code: "ValidationError", message: `primaryKey '${key}' rejected`, method: "PUT" });
    const err = await typedError(
      provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis, apiKeyValue: key }),
    );
    t.fake.touchSubscription(`${ref.nativeId}-p-gold`);
    await provider.revoke(ref);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join("\n")).not.toContain(key);
    expect(JSON.stringify(ref.resources)).not.toContain(key);
    expect(JSON.stringify(err.messages)).not.toContain(key);
    expect(String((err.cause as Error).message)).not.toContain(key);
    expect(String((err.cause as Error).message)).toContain("***");
  });
});
