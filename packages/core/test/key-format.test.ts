// credhook's recognisable API key format (docs/leak-response.md): a prefix, 40 random base62 characters and a
// 6-character base62 CRC32 — a value every importing gateway accepts, which a secret scanner finds and verifies.
import { describe, expect, it } from "vitest";
import { ConfigError } from "@credhook/core/errors";
import {
  apiKeyScanPattern,
  DEFAULT_API_KEY_PREFIX,
  generateApiKeyValue,
  isCredhookKey,
  validateConfig,
} from "@credhook/core";

/** Each importing gateway's rule for a key value (docs/cloud-facts.md and the providers' `apiKeyValuePattern`). */
const GATEWAY_RULES: Record<string, (v: string) => boolean> = {
  "AWS API Gateway": (v) => /^[A-Za-z0-9]{20,128}$/.test(v),
  "Azure APIM (1–256 characters)": (v) => v.length >= 1 && v.length <= 256,
  Apigee: (v) => /^[A-Za-z0-9_-]{1,2048}$/.test(v),
};

const gateways = { local: { provider: "local", credentialType: "API_KEY" } };
const routes = [{ default: "local" }];
const server = { auth: { users: [{ username: "portal", password: "pw" }] } };

describe("generated API keys", () => {
  it("are the prefix, 40 random base62 characters and a 6-character checksum, accepted by every importing gateway", () => {
    const keys = Array.from({ length: 200 }, () => generateApiKeyValue());
    for (const key of keys) {
      expect(key).toMatch(/^credhook[0-9A-Za-z]{46}$/);
      for (const [gateway, accepts] of Object.entries(GATEWAY_RULES))
        expect([gateway, accepts(key)]).toEqual([gateway, true]);
    }
    expect(new Set(keys).size).toBe(keys.length);
    // The longest prefix still fits AWS's 128.
    expect(GATEWAY_RULES["AWS API Gateway"]!(generateApiKeyValue("p234567890123456"))).toBe(true);
  });

  it("verify: the checksum is the CRC32 of prefix and body in base62 (a fixed vector), and one changed character fails it", () => {
    // CRC32("credhook" + "0" × 40) = 2572973408 (Python's binascii.crc32) = "2o7vv6" in base62.
    expect(isCredhookKey(`credhook${"0".repeat(40)}2o7vv6`)).toBe(true);
    expect(isCredhookKey(`credhook${"0".repeat(40)}2o7vv7`)).toBe(false);
    const key = generateApiKeyValue();
    expect(isCredhookKey(key)).toBe(true);
    expect(isCredhookKey(key, "credhook")).toBe(true);
    expect(isCredhookKey(key, "chk")).toBe(false);
    const i = 20;
    const flipped = key.slice(0, i) + (key[i] === "a" ? "b" : "a") + key.slice(i + 1);
    expect(isCredhookKey(flipped)).toBe(false);
    expect(isCredhookKey(`${key}0`)).toBe(false);
    expect(isCredhookKey(key.slice(1))).toBe(false); // "redhook…": another prefix, whose checksum no longer matches
    expect(isCredhookKey("credhook")).toBe(false);
    expect(isCredhookKey(`credhook_${"0".repeat(40)}2o7vv6`)).toBe(false);
  });

  it("take a configured prefix, checked", () => {
    const key = generateApiKeyValue("chk");
    expect(key).toMatch(/^chk[0-9A-Za-z]{46}$/);
    expect(isCredhookKey(key, "chk")).toBe(true);
    expect(isCredhookKey(key)).toBe(true);
    for (const bad of ["Chk", "c", "chk_", "1chk", "a23456789012345678"])
      expect(() => generateApiKeyValue(bad)).toThrow(/must match/);
  });

  it("the scanner's pattern finds a key in text, bounded by non-word characters", () => {
    const key = generateApiKeyValue("chk");
    const re = new RegExp(apiKeyScanPattern("chk"), "g");
    expect(`export TOKEN=${key}\n"apiKey": "${key}"`.match(re)).toEqual([key, key]);
    expect(`x${key}`.match(re)).toBeNull();
    expect(`${key}9`.match(re)).toBeNull();
    expect(apiKeyScanPattern()).toBe("\\bcredhook[0-9A-Za-z]{46}\\b");
  });
});

describe("keys.prefix in the config", () => {
  it("defaults to credhook and refuses a prefix a gateway could not take", () => {
    expect(validateConfig({ server, gateways, routes }).keys).toEqual({ prefix: DEFAULT_API_KEY_PREFIX });
    expect(validateConfig({ server, gateways, routes, keys: { prefix: "acme" } }).keys.prefix).toBe("acme");
    expect(() => validateConfig({ server, gateways, routes, keys: { prefix: "acme_" } })).toThrow(/keys\.prefix/);
    expect(() => validateConfig({ server, gateways, routes, keys: { prefix: "acme", other: 1 } })).toThrow(ConfigError);
    expect(() => validateConfig({ server, gateways, routes, keys: { prefix: "acme", other: 1 } })).toThrow(/keys/);
  });
});
