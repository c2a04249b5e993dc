/**
 * GitHub's secret scanning partner program (docs/leak-response.md, "GitHub secret scanning"): alerts signed with a
 * P-256 key generated here and configured as GitHub's, against the fakes of leak-response.test.ts — two AWS fakes,
 * an Azure fake, the embedded gateway — and a Kong fake (a gateway that cannot turn a key off).
 * - policy `disable`: one signed alert turns the key off on every gateway in one call (AWS `enabled: false`, the
 *   Azure subscription `suspended`, the embedded gateway's key check refusing it at once), the record kept; the audit
 *   trail says `credential.leaked`, then `credential.disabled`; a key on Kong is revoked instead;
 * - policy `revoke`: the key is removed everywhere (GitHub's keys read from a `file`);
 * - policy `notify`: a `credential.leaked` event only, once, every gateway untouched;
 * - no, an unknown or a wrong signature, a tampered body: 401 and nothing changes; a signed body that is not an
 *   alert: 400; a token that is not credhook's: `false_positive`, nothing changes;
 * - no token value in any log line.
 */
import { createHash, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKeyValue, secretFingerprint } from "@credhook/core";
import type { AwsFake } from "@credhook/fakes/aws";
import { startKongFake, type KongFake } from "@credhook/fakes/kong";
import { checkConfig, checkConfigReport } from "../src/check-config.js";
import { importProviderModule, loadConfigFile } from "../src/index.js";
import { AUTH, errorOf, LOCAL_YAML, PASSWORD, SERVER_YAML, startTestServer, type TestServer } from "./helpers.js";
import * as leak from "./leak-fixtures.js";

const KEY_ID = "90a421169f0a406205f1563a953312f0be898d3c7b6c06b681aa86a874555f4a";
const github = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const stranger = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
const PEM = github.publicKey.export({ type: "spki", format: "pem" }).toString();
const PATH = "/v1/secret-scanning/github";

let fakes: leak.LeakFakes;
let kong: KongFake;
let keyDir: string;
/** Every server a test started: their logs are checked for tokens by the last test, and they are closed after the file. */
const servers: TestServer[] = [];

/** A server with the leak fakes, a Kong gateway (APIs `k-*`) and `secretScanning.github` as `block` (YAML under `github:`). */
async function startWith(block: string): Promise<TestServer> {
  const s = await startTestServer(
    `${SERVER_YAML}keys: { prefix: chk }
secretScanning:
  github:
${block}
${leak.leakGatewaysYaml(fakes, {
  gateways: `  kong:
    provider: kong
    credentialType: API_KEY
    options: { adminUrl: "${kong.url}", plans: { k-gold: { minute: 100 } }, timeoutMs: 2000, maxRetries: 0 }
`,
  routes: `  - { apis: ["k-*"], gateway: kong }
`,
})}`,
  );
  servers.push(s);
  return s;
}

beforeAll(async () => {
  [fakes, kong] = await Promise.all([leak.startLeakFakes(), startKongFake()]);
  keyDir = mkdtempSync(join(tmpdir(), "credhook-github-keys-"));
  writeFileSync(join(keyDir, "github.pem"), PEM);
}, 60_000);
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await Promise.all([leak.closeLeakFakes(fakes), kong?.close()]);
  rmSync(keyDir, { recursive: true, force: true });
});

/** Every token an alert of this file reported: none may appear in a log line. */
const reported = new Set<string>();

/** POSTs `body` (an alert, or any text) signed by `key` under `keyId`, as GitHub does; `tamper` changes the body after signing. */
async function alert(
  s: TestServer,
  body: unknown,
  options: {
    key?: KeyObject;
    keyId?: string;
    tamper?: (b: string) => string;
    unsigned?: boolean;
    signature?: string;
    path?: string;
  } = {},
): Promise<Response> {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  for (const m of Array.isArray(body) ? (body as Array<{ token?: string }>) : []) if (m.token) reported.add(m.token);
  const signature =
    options.signature ??
    sign("sha256", Buffer.from(text), { key: options.key ?? github.privateKey, dsaEncoding: "der" }).toString("base64");
  return fetch(s.url + (options.path ?? PATH), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(options.unsigned
        ? {}
        : { "github-public-key-identifier": options.keyId ?? KEY_ID, "github-public-key-signature": signature }),
    },
    body: options.tamper ? options.tamper(text) : text,
  });
}

const match = (token: string, url = "https://github.com/acme/shop/blob/4f2a/config.js") => ({
  token,
  type: "chk_api_key",
  url,
  source: "content",
});
const sha256 = (v: string) => createHash("sha256").update(v).digest("hex");

const create = leak.createKey;
const check = leak.checkKey;
const awsKey = (fake: AwsFake, value: string) => [...fake.apiGateway.keys.values()].find((k) => k.value === value);
const azureSub = (value: string) => fakes.azure.listSubscriptions().find((x) => x.primaryKey === value);
const eventsOf = async (s: TestServer, app: string) =>
  (await s.credhook.store.outbox!.list({ app: `slug:dev@example.com/${app}` })).map((e) => e.event);
const metric = async (s: TestServer, outcome: string) => {
  const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: AUTH } })).text();
  const m = new RegExp(`^credhook_secret_scanning_reports_total\\{outcome="${outcome}"\\} (\\d+)$`, "m").exec(text);
  return m ? Number(m[1]) : 0;
};
/** Asserts that no log line of `s` holds a reported token. */
const expectNoTokenLogged = (s: TestServer) => {
  expect(s.logs.length).toBeGreaterThan(0);
  for (const token of reported) expect(s.logs.filter((l) => l.includes(token))).toEqual([]);
};

describe("policy disable (the default): one signed alert turns the key off everywhere", () => {
  let s: TestServer;
  let key: { apiKeyId: string; apiKey: string };
  let bystander: { apiKeyId: string; apiKey: string };

  beforeAll(async () => {
    s = await startWith(`    publicKeys: [ { id: "${KEY_ID}", pem: ${JSON.stringify(PEM)} } ]`);
    key = await create(s, "Leaky", leak.EVERYWHERE);
    bystander = await create(s, "Bystander", [
      { id: "usapi00001", usagePlans: [{ id: "us-gold" }] },
      { id: "weather" },
    ]);
  }, 60_000);

  it("turns the key off on both AWS fakes, Azure and the embedded gateway; the key check refuses it at once; the feedback labels it", async () => {
    expect(await check(s, key.apiKey)).toBe(200);
    const notOurs = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    const res = await alert(s, [match(key.apiKey), match(notOurs)]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([
      { token_hash: sha256(key.apiKey), token_type: "chk_api_key", label: "true_positive" },
      { token_hash: sha256(notOurs), token_type: "chk_api_key", label: "false_positive" },
    ]);
    expect(await check(s, key.apiKey)).toBe(401);
    expect(awsKey(fakes.us, key.apiKey)?.enabled).toBe(false);
    expect(awsKey(fakes.eu, key.apiKey)?.enabled).toBe(false);
    expect(azureSub(key.apiKey)?.state).toBe("suspended");
    // kept, turned off: the record says so
    const [rec] = await s.credhook.store.list().then((l) => l.filter((r) => r.publicId === key.apiKeyId));
    expect(rec).toMatchObject({ status: "active", keyFingerprint: secretFingerprint(key.apiKey) });
    expect(rec!.disabled?.gateways.sort()).toEqual(["aws-eu", "aws-us", "azure", "local"]);
    expect(rec!.leakedAt).toEqual(expect.any(String));
    // the other app's key is untouched
    expect(await check(s, bystander.apiKey)).toBe(200);
    expect(awsKey(fakes.us, bystander.apiKey)?.enabled).toBe(true);
    expect(await metric(s, "disabled")).toBe(1);
    expect(await metric(s, "false_positive")).toBe(1);
  });

  it("the audit trail says credential.leaked (naming where GitHub found it), then credential.disabled; the log line has fingerprints only", async () => {
    const events = await eventsOf(s, "leaky");
    expect(events.map((e) => e.type)).toEqual(["credential.created", "credential.leaked", "credential.disabled"]);
    expect(events[1]!.data).toMatchObject({ keyFingerprint: secretFingerprint(key.apiKey) });
    expect(events[1]!.data.reason).toContain("https://github.com/acme/shop/blob/4f2a/config.js");
    expect(JSON.stringify(events)).not.toContain(key.apiKey);
    const lines = s.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === "secret-scanning alert");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      policy: "disable",
      matches: [
        {
          fingerprint: secretFingerprint(key.apiKey),
          label: "true_positive",
          credentials: [expect.objectContaining({ outcome: "disabled" })],
        },
        { label: "false_positive", credentials: [] },
      ],
    });
  });

  it("a second alert of the same key writes no second credential.leaked and keeps it off", async () => {
    const res = await alert(s, [match(key.apiKey, "https://github.com/acme/fork/blob/9c1d/config.js")]);
    expect(res.status).toBe(200);
    expect((await res.json())[0].label).toBe("true_positive");
    const types = (await eventsOf(s, "leaky")).map((e) => e.type);
    expect(types.filter((t) => t === "credential.leaked")).toHaveLength(1);
    expect(await check(s, key.apiKey)).toBe(401);
  });

  it("a key on a gateway that cannot turn it off (Kong) is revoked instead, and the log and the count say so", async () => {
    const kongKey = await create(s, "Kongly", [{ id: "k-orders", usagePlans: [{ id: "k-gold" }] }, { id: "weather" }]);
    const mark = kong.consumers().filter((c) => c.tags?.includes("credhook")).length;
    expect(mark).toBeGreaterThan(0);
    const res = await alert(s, [match(kongKey.apiKey)]);
    expect(res.status).toBe(200);
    expect((await res.json())[0].label).toBe("true_positive");
    expect(await check(s, kongKey.apiKey)).toBe(401);
    expect(kong.consumers().filter((c) => c.tags?.includes("credhook"))).toHaveLength(mark - 1);
    expect(await s.credhook.store.findByPublicId("API_KEY", kongKey.apiKeyId)).toBeUndefined();
    expect((await eventsOf(s, "kongly")).map((e) => e.type)).toEqual([
      "credential.created",
      "credential.leaked",
      "credential.revoked",
    ]);
    expect(s.logs.some((l) => l.includes("cannot be disabled, so it is revoked instead"))).toBe(true);
    expect(await metric(s, "revoked_instead")).toBe(1);
  });

  it("a cloud failing answers its 5xx, so that GitHub retries; the retry completes the disable, announcing the leak once", async () => {
    const cloudy = await create(s, "Cloudy", [
      { id: "euapi00001", usagePlans: [{ id: "eu-gold" }] },
      { id: "weather" },
    ]);
    fakes.eu.faults.serverError({ operation: "UpdateApiKey", count: 1000 });
    try {
      const res = await alert(s, [match(cloudy.apiKey)]);
      // AWS's 500 is "unavailable" to its provider (UpstreamUnavailable): 503 with the provider's Retry-After
      expect(res.status).toBe(503);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(JSON.stringify(await errorOf(res))).not.toContain(cloudy.apiKey);
    } finally {
      fakes.eu.faults.clear();
    }
    // the decision is written and the embedded gateway refuses it already; AWS still has it on
    expect(await check(s, cloudy.apiKey)).toBe(401);
    expect(awsKey(fakes.eu, cloudy.apiKey)?.enabled).toBe(true);
    expect(await metric(s, "failed")).toBe(1);
    const retry = await alert(s, [match(cloudy.apiKey)]);
    expect(retry.status).toBe(200);
    expect(awsKey(fakes.eu, cloudy.apiKey)?.enabled).toBe(false);
    expect((await eventsOf(s, "cloudy")).map((e) => e.type)).toEqual([
      "credential.created",
      "credential.leaked",
      "credential.disabled",
    ]);
  });

  describe("refused: nothing is read or changed", () => {
    let victim: { apiKeyId: string; apiKey: string };
    beforeAll(async () => {
      victim = await create(s, "Victim", leak.EVERYWHERE);
    });

    it.each([
      ["no signature", { unsigned: true }],
      ["an unknown key id", { keyId: "0".repeat(64) }],
      ["a signature by another key", { key: stranger.privateKey }],
      ["a body changed after signing", { tamper: (b: string) => b.replace("4f2a", "4f2b") }],
      ["a signature that is not base64 DER", { signature: "bm90IGEgc2lnbmF0dXJl" }],
    ])("%s → 401 ErrorResponse", async (_what, options: Parameters<typeof alert>[2]) => {
      const res = await alert(s, [match(victim.apiKey)], options);
      expect(res.status).toBe(401);
      const e = await errorOf(res);
      expect(e.path).toBe(PATH);
      expect(JSON.stringify(e)).not.toContain(victim.apiKey);
      expect(await check(s, victim.apiKey)).toBe(200);
      expect(awsKey(fakes.us, victim.apiKey)?.enabled).toBe(true);
      expect(azureSub(victim.apiKey)?.state).toBe("active");
      expect((await eventsOf(s, "victim")).map((x) => x.type)).toEqual(["credential.created"]);
    });

    it("Basic credentials do not replace the signature; a signed body that is not an alert is 400", async () => {
      const basic = await fetch(s.url + PATH, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: AUTH },
        body: JSON.stringify([match(victim.apiKey)]),
      });
      expect(basic.status).toBe(401);
      await errorOf(basic);
      const bad = await alert(s, { token: victim.apiKey });
      reported.add(victim.apiKey);
      expect(bad.status).toBe(400);
      expect(JSON.stringify(await errorOf(bad))).not.toContain(victim.apiKey);
      expect((await alert(s, [{ url: "https://github.com/x" }])).status).toBe(400);
      expect((await alert(s, "not json")).status).toBe(400);
      expect((await alert(s, "not json", { unsigned: true })).status).toBe(401);
      expect(await check(s, victim.apiKey)).toBe(200);
      expect(await metric(s, "unauthorized")).toBe(7);
      expect(await metric(s, "invalid")).toBe(3);
    });

    it("a token in credhook's format that no credential has is a false positive; GET is 405", async () => {
      const unknown = generateApiKeyValue("chk");
      const res = await alert(s, [match(unknown)]);
      expect(await res.json()).toEqual([
        { token_hash: sha256(unknown), token_type: "chk_api_key", label: "false_positive" },
      ]);
      expect(await check(s, victim.apiKey)).toBe(200);
      expect((await eventsOf(s, "victim")).map((x) => x.type)).toEqual(["credential.created"]);
      expect((await fetch(s.url + PATH)).status).toBe(405);
    });
  });
});

describe("policy revoke: the key is removed from every gateway (GitHub's key read from a file)", () => {
  it("revokes it everywhere in one call, on the path configured; the audit trail says credential.leaked, then credential.revoked", async () => {
    const s = await startWith(`    policy: revoke
    path: /hooks/github-alerts
    publicKeys: [ { id: "${KEY_ID}", file: "${join(keyDir, "github.pem")}" } ]`);
    const key = await create(s, "Leaky", leak.EVERYWHERE);
    expect((await alert(s, [match(key.apiKey)])).status).toBe(404);
    const res = await alert(s, [match(key.apiKey)], { path: "/hooks/github-alerts" });
    expect(res.status).toBe(200);
    expect((await res.json())[0].label).toBe("true_positive");
    expect(await check(s, key.apiKey)).toBe(401);
    expect(awsKey(fakes.us, key.apiKey)).toBeUndefined();
    expect(awsKey(fakes.eu, key.apiKey)).toBeUndefined();
    expect(azureSub(key.apiKey)).toBeUndefined();
    expect(await s.credhook.store.findByPublicId("API_KEY", key.apiKeyId)).toBeUndefined();
    expect((await eventsOf(s, "leaky")).map((e) => e.type)).toEqual([
      "credential.created",
      "credential.leaked",
      "credential.revoked",
    ]);
    expect(await metric(s, "revoked")).toBe(1);
  });
});

describe("policy notify: an event only, once", () => {
  it("writes credential.leaked and leaves every gateway as it was; a second alert writes nothing", async () => {
    const s = await startWith(`    policy: notify
    publicKeys: [ { id: "${KEY_ID}", pem: ${JSON.stringify(PEM)} } ]`);
    const key = await create(s, "Leaky", leak.EVERYWHERE);
    for (const url of ["https://github.com/acme/shop/blob/1/a.js", "https://github.com/acme/shop/blob/2/a.js"]) {
      const res = await alert(s, [match(key.apiKey, url)]);
      expect(res.status).toBe(200);
      expect((await res.json())[0].label).toBe("true_positive");
    }
    const events = await eventsOf(s, "leaky");
    expect(events.map((e) => e.type)).toEqual(["credential.created", "credential.leaked"]);
    expect(events[1]!.data.reason).toContain("https://github.com/acme/shop/blob/1/a.js");
    expect(await check(s, key.apiKey)).toBe(200);
    expect(awsKey(fakes.us, key.apiKey)?.enabled).toBe(true);
    expect(awsKey(fakes.eu, key.apiKey)?.enabled).toBe(true);
    expect(azureSub(key.apiKey)?.state).toBe("active");
    const rec = await s.credhook.store.findByPublicId("API_KEY", key.apiKeyId);
    expect(rec).toMatchObject({ status: "active", leakedAt: expect.any(String) });
    expect(rec!.disabled).toBeUndefined();
    expect(await metric(s, "notified")).toBe(2);
  });
});

describe("configuration", () => {
  const load = async (block: string) => {
    const file = join(keyDir, "webhook.config.yaml");
    writeFileSync(file, `${LOCAL_YAML}secretScanning:\n  github:\n${block}\n`);
    return loadConfigFile(file, { env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: keyDir } });
  };
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ type: "spki", format: "pem" });

  it("check-config reads a key file relative to the config file and describes the endpoint", async () => {
    const config = await load(`    publicKeys: [ { id: a, file: github.pem } ]`);
    const gateways = await checkConfig(config, importProviderModule);
    expect(checkConfigReport(config, gateways, [])).toContain(
      `secretScanning.github: POST ${PATH} (signed by GitHub, no Basic auth), policy disable, keys a`,
    );
  });

  it("names each key that is not GitHub's kind (an RSA key, not PEM, both pem and file, a missing file, an id twice)", async () => {
    const config = await load(`    publicKeys:
      - { id: a, pem: ${JSON.stringify(rsa)} }
      - { id: b, pem: "not a key" }
      - { id: c, pem: ${JSON.stringify(PEM)}, file: github.pem }
      - { id: d, file: missing.pem }
      - { id: e, file: github.pem }
      - { id: e, file: github.pem }`);
    await expect(checkConfig(config, importProviderModule)).rejects.toMatchObject({
      messages: [
        "secretScanning.github.publicKeys[0]: not an ECDSA P-256 public key, which GitHub signs its alerts with",
        "secretScanning.github.publicKeys[1]: not a PEM public key (GitHub's 'key', -----BEGIN PUBLIC KEY-----…)",
        "secretScanning.github.publicKeys[2] must have exactly one of pem and file",
        "secretScanning.github.publicKeys[3].file: cannot read missing.pem (ENOENT)",
        "secretScanning.github.publicKeys[5].id 'e' is given twice",
      ],
    });
  });

  it("a path that is one of credhook's endpoints, or under the embedded gateway's, stops the server", async () => {
    await expect(
      startTestServer(
        `${LOCAL_YAML}secretScanning: { github: { path: /v1/revokeCredentials, publicKeys: [ { id: a, pem: ${JSON.stringify(PEM)} } ] } }\n`,
      ),
    ).rejects.toThrow(/is one of credhook's own endpoints/);
    await expect(
      startTestServer(
        `${LOCAL_YAML}secretScanning: { github: { path: /gateway/github, publicKeys: [ { id: a, pem: ${JSON.stringify(PEM)} } ] } }\nembeddedGateway: { pathPrefix: /gateway }\n`,
      ),
    ).rejects.toThrow(/where the embedded gateway answers/);
  });
});

it("no log line of any server above holds a reported token (each is known by its fingerprint only)", () => {
  expect(servers.length).toBe(3);
  expect(reported.size).toBeGreaterThan(5);
  for (const s of servers) expectNoTokenLogged(s);
});
