import { afterAll, describe, expect, it, vi } from "vitest";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, jwtVerify, SignJWT, createLocalJWKSet } from "jose";
import { hashSecret, memoryStateStore } from "@credhook/core/provider-kit";
import { silentLogger } from "@credhook/core";
import type { ProviderStateStore } from "@credhook/core/provider";
import { openSqliteStore, type SqliteCredentialStore } from "@credhook/store-sqlite";
import localProviderFactory, { type LocalProvider, type LocalProviderOptions } from "@credhook/provider-local";
import {
  CredentialDirectory,
  EncryptedStoreKeyStorage,
  FileKeyStorage,
  type KekOrigin,
  normalisePath,
  parseEmbeddedGatewayConfig,
  PlanLimiter,
  SigningKeys,
} from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "credhook-gateway-"));
const stores: SqliteCredentialStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

const provider = async (
  state: ProviderStateStore,
  credentialType: "API_KEY" | "CLIENT_CREDENTIALS" = "API_KEY",
  options: LocalProviderOptions = {},
) =>
  (await localProviderFactory.create(options, {
    gateway: "local",
    configPath: "gateways.local.options",
    credentialType,
    logger: silentLogger,
    state,
  })) as LocalProvider;
const app = { appName: "A", developer: "d@example.com" };
const DAY = 86_400_000;

describe("signing keys: generated, stored encrypted or in a key file, rotated with overlap", () => {
  const rotation = async (storage: () => EncryptedStoreKeyStorage | FileKeyStorage) => {
    let now = Date.UTC(2026, 0, 1);
    const make = () =>
      new SigningKeys({
        storage: storage(),
        alg: "RS256",
        rotateAfterMs: 30 * DAY,
        publishAheadMs: DAY,
        retainMs: 3_900_000,
        logger: silentLogger,
        now: () => now,
      });
    const keys = make();
    await keys.init();
    const first = keys.signer().kid;
    expect(keys.describe()).toEqual([{ kid: first, activeFrom: now, signing: true }]);
    const sign = async (k: SigningKeys) => {
      const s = k.signer();
      return new SignJWT({ scope: "x" })
        .setProtectedHeader({ alg: s.alg, kid: s.kid, typ: "at+jwt" })
        .setIssuedAt(Math.floor(now / 1000))
        .sign(s.key);
    };
    const oldToken = await sign(keys);

    // A day before the rotation, the successor is published but does not sign yet.
    now += 29 * DAY;
    await keys.tick();
    const [a, b] = keys.describe();
    expect(a).toMatchObject({ kid: first, signing: true });
    expect(b).toMatchObject({ signing: false, activeFrom: Date.UTC(2026, 0, 31) });
    expect(keys.jwks().keys.map((k) => k.kid)).toEqual(expect.arrayContaining([first, b!.kid]));

    // Another instance on the same storage agrees on the signer.
    const other = make();
    await other.init();
    expect(other.describe()).toEqual(keys.describe());

    // At the rotation the successor signs; the old key stays published while its tokens may live.
    now += DAY;
    await keys.tick();
    expect(keys.signer().kid).toBe(b!.kid);
    const jwks = createLocalJWKSet(keys.jwks());
    await expect(jwtVerify(oldToken, jwks, { currentDate: new Date(Date.UTC(2026, 0, 1)) })).resolves.toBeTruthy();
    await expect(jwtVerify(await sign(keys), jwks)).resolves.toBeTruthy();

    // After the retention, the old key is gone from the JWKS.
    now += 3_900_000;
    await keys.tick();
    expect(keys.jwks().keys.map((k) => k.kid)).toEqual([b!.kid]);
    expect(keys.jwks().keys[0]).not.toHaveProperty("d");
    return first;
  };

  it("in the credential store, encrypted with AES-256-GCM (no private member in the clear)", async () => {
    const state = memoryStateStore();
    const kek = randomBytes(32);
    await rotation(() => new EncryptedStoreKeyStorage(state, kek));
    const stored = JSON.stringify(await state.list(""));
    expect(stored).toContain("ciphertext");
    expect(stored).not.toMatch(/"(d|p|q|dp|dq|qi)":/);
  });

  it("refuses to start with a different encryption key, saying which key (the option, or the file it generated) and the fix", async () => {
    const state = memoryStateStore();
    const keysUnder = (origin?: KekOrigin) =>
      new SigningKeys({
        storage: new EncryptedStoreKeyStorage(state, randomBytes(32), origin),
        alg: "ES256",
        rotateAfterMs: 0,
        publishAheadMs: 0,
        retainMs: 0,
        logger: silentLogger,
      });
    const first = keysUnder();
    await first.init();
    const kid = first.describe()[0]!.kid;
    await expect(keysUnder().init()).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      messages: [
        `embeddedGateway.oauth.signing.encryptionKey does not decrypt signing key ${kid} in the store: it was encrypted with another key. ` +
          "Set the same embeddedGateway.oauth.signing.encryptionKey on every instance sharing the store (e.g. from one Kubernetes Secret): " +
          "the one the other instances use, or, where one ran without embeddedGateway.oauth.signing.encryptionKey, the oauth-signing.kek it generated in its data directory",
      ],
    });
    await expect(keysUnder({ configured: false, file: "/data/b/oauth-signing.kek" }).init()).rejects.toMatchObject({
      messages: [
        `signing key ${kid} in the store cannot be decrypted with /data/b/oauth-signing.kek, the key this instance generated because embeddedGateway.oauth.signing.encryptionKey is not set: ` +
          "another instance sharing the store encrypted it with a key of its own. " +
          "Set embeddedGateway.oauth.signing.encryptionKey to the same key on every instance (base64 of 32 bytes, e.g. from one Kubernetes Secret): " +
          "the key that decrypts the stored signing keys is the oauth-signing.kek in the data directory of the instance that generated them",
      ],
    });
  });

  it("in a key file (created 0600), and an operator's own JWKS file without kid or times is used as is", async () => {
    const file = join(dir, `keys-${randomUUID()}.json`);
    await rotation(() => new FileKeyStorage(file, "RS256"));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8")).keys[0]).toHaveProperty("d");

    const own = join(dir, `own-${randomUUID()}.json`);
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    writeFileSync(own, JSON.stringify({ keys: [await exportJWK(privateKey)] }));
    const keys = new SigningKeys({
      storage: new FileKeyStorage(own, "ES256"),
      alg: "ES256",
      rotateAfterMs: 0,
      publishAheadMs: 0,
      retainMs: 0,
      logger: silentLogger,
    });
    await keys.init();
    expect(keys.jwks().keys).toHaveLength(1);
    expect(keys.jwks().keys[0]).toMatchObject({
      kty: "EC",
      crv: "P-256",
      alg: "ES256",
      use: "sig",
      kid: keys.signer().kid,
    });
  });
});

describe("credential directory: lookup by key digest, coherent cache", () => {
  it("in this process a change invalidates at once; another process sharing the store sees it within the coherence interval", async () => {
    const file = join(dir, `shared-${randomUUID()}.db`);
    const storeA = await openSqliteStore({ path: file });
    const storeB = await openSqliteStore({ path: file });
    stores.push(storeA, storeB);
    const a = await provider(storeA.stateFor("local"));
    const b = await provider(storeB.stateFor("local"));
    // The directories' change-stamp checks run on a faked setInterval: the test moves time by the interval.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const dirA = new CredentialDirectory([a], {
      maxEntries: 100,
      ttlMs: 3_600_000,
      coherenceIntervalMs: 50,
      logger: silentLogger,
    });
    const dirB = new CredentialDirectory([b], {
      maxEntries: 100,
      ttlMs: 3_600_000,
      coherenceIntervalMs: 50,
      logger: silentLogger,
    });
    await dirA.start();
    await dirB.start();
    try {
      const credentialId = randomUUID();
      const cred = await a.create({
        credentialId,
        credentialType: "API_KEY",
        app,
        apis: [{ id: "orders", usagePlans: [] }],
      });
      const digest = hashSecret(cred.apiKey!);
      expect((await dirA.findKey(digest))?.apis.has("orders")).toBe(true);
      expect((await dirB.findKey(digest))?.apis.has("orders")).toBe(true);
      expect(dirB.peekKey(digest)).toBeTruthy();

      const ref = {
        credentialId,
        credentialType: "API_KEY" as const,
        nativeId: cred.nativeId,
        resources: cred.resources,
        app,
      };
      expect(await a.revoke(ref)).toBe("revoked");
      expect(dirA.peekKey(digest)).toBeUndefined();
      expect(await dirA.findKey(digest)).toBeNull();
      // B learns of it only at its next change-stamp check: not before the interval has passed, then at once.
      await vi.advanceTimersByTimeAsync(49);
      expect(dirB.peekKey(digest)).toBeTruthy();
      await vi.advanceTimersByTimeAsync(1);
      // The check reads the shared SQLite file (real I/O): wait for its end, with a generous bound.
      for (let i = 0; i < 500 && dirB.peekKey(digest) !== undefined; i++) await new Promise((r) => setTimeout(r, 10));
      expect(dirB.peekKey(digest)).toBeUndefined();
      expect(await dirB.findKey(digest)).toBeNull();
    } finally {
      dirA.close();
      dirB.close();
      vi.useRealTimers();
    }
  });

  it("a lookup that raced an invalidation does not cache what it read", async () => {
    const state = memoryStateStore();
    const p = await provider(state);
    const cred = await p.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis: [] });
    const directory = new CredentialDirectory([p], {
      maxEntries: 10,
      ttlMs: 60_000,
      coherenceIntervalMs: 0,
      logger: silentLogger,
    });
    const digest = hashSecret(cred.apiKey!);
    const pending = directory.findKey(digest);
    directory.clear();
    expect(await pending).toBeTruthy();
    expect(directory.peekKey(digest)).toBeUndefined();
    directory.close();
  });

  it("stays within its bound", async () => {
    const directory = new CredentialDirectory([await provider(memoryStateStore())], {
      maxEntries: 5,
      ttlMs: 60_000,
      coherenceIntervalMs: 0,
      logger: silentLogger,
    });
    for (let i = 0; i < 20; i++) await directory.findKey(hashSecret(`k${i}`));
    expect(directory.size).toBe(5);
    directory.close();
  });
});

describe("plan limits", () => {
  it("all limits of a plan apply; a request refused by the quota gives its rate point back", async () => {
    const p = await provider(memoryStateStore(), "API_KEY", {
      usagePlans: [{ id: "p", rate: { perMinute: 3 }, quota: { perDay: 2 } }, "free"],
    });
    const limiter = new PlanLimiter();
    expect(limiter.hasLimits(p, ["free"])).toBe(false);
    expect(limiter.hasLimits(p, ["free", "p"])).toBe(true);
    expect(await limiter.admit(p, "c1", ["p"])).toBeUndefined();
    expect(await limiter.admit(p, "c1", ["p"])).toBeUndefined();
    const quota = await limiter.admit(p, "c1", ["p"]);
    expect(quota).toMatchObject({ message: "usage plan 'p' allows 2 requests per day (UTC)" });
    expect(quota!.retryAfterS).toBeGreaterThan(0);
    expect(quota!.retryAfterS).toBeLessThanOrEqual(86_400);
    // Another credential has its own counters.
    expect(await limiter.admit(p, "c2", ["p"])).toBeUndefined();
  });
});

describe("embeddedGateway: configuration", () => {
  it("applies defaults: own port 8081, x-api-key, RS256 rotated every 30 days", () => {
    const c = parseEmbeddedGatewayConfig({});
    expect(c.listen).toEqual({ port: 8081, host: "0.0.0.0" });
    expect(c.keyCheck).toMatchObject({
      header: "x-api-key",
      bearer: true,
      originalUriHeader: "x-original-uri",
      apis: [],
      cache: { maxEntries: 10000, ttlS: 300, coherenceIntervalMs: 1000 },
    });
    expect(c.oauth).toMatchObject({
      tokenTtlS: 3600,
      scopes: {},
      signing: { alg: "RS256", rotateAfterDays: 30, publishAheadS: 86400 },
    });
  });

  it("names the YAML path of every problem", () => {
    expect(() => parseEmbeddedGatewayConfig({ listen: { port: 1 }, pathPrefix: "/gw" })).toThrow(
      /set either listen \(own port\) or pathPrefix/,
    );
    expect(() => parseEmbeddedGatewayConfig({ pathPrefix: "/v1" })).toThrow(
      /embeddedGateway.pathPrefix '\/v1' would shadow the webhook's endpoints/,
    );
    expect(() => parseEmbeddedGatewayConfig({ oauth: { signing: { encryptionKey: "short" } } })).toThrow(
      /encryptionKey must be base64 of exactly 32 bytes/,
    );
    expect(() => parseEmbeddedGatewayConfig({ keyCheck: { headr: "x" } })).toThrow(
      /embeddedGateway.keyCheck must not have property 'headr'/,
    );
    expect(() =>
      parseEmbeddedGatewayConfig({ oauth: { signing: { rotateAfterDays: 1, publishAheadS: 86400 } } }),
    ).toThrow(/publishAheadS \(86400 s\) must be shorter/);
    expect(() =>
      parseEmbeddedGatewayConfig({
        keyCheck: {
          apis: [
            { pathPrefix: "/a/", api: "a" },
            { pathPrefix: "/a/", api: "b" },
          ],
        },
      }),
    ).toThrow(/apis\[1\].pathPrefix '\/a\/' is listed twice/);
  });

  it("normalises paths the way proxies route them", () => {
    expect(normalisePath("/weather/../orders/1")).toBe("/orders/1");
    expect(normalisePath("/weather/%2e%2e/orders/")).toBe("/orders/");
    expect(normalisePath("//orders///1")).toBe("/orders/1");
    expect(normalisePath("/a/%ZZ")).toBeUndefined();
  });
});
