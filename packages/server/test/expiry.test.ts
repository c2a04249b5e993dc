/**
 * Credential expiry (docs/expiry.md) on the fakes, on a fake clock (`AppOptions.now`): an AWS gateway with a 90-day
 * policy that disables and a 30-day revoke policy on its `us-gold` plan, and the embedded gateway with a 90-day
 * disable policy. Nothing happens before a warning time; `credential.expiring` is written once at it; at the expiry
 * `credential.expired`, then the action: the AWS key disabled (enabled=false) and the embedded gateway's key check
 * refusing the key at once, or the gold credential revoked everywhere. A second pass changes nothing. `inspect` and
 * `list --state` show the expiry. The serve loop runs the pass by itself (`expiry.intervalS`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveExpiryPolicies } from "@credhook/core";
import { startAwsFake, type AwsFake } from "@credhook/fakes/aws";
import { describeExpiry } from "../src/check-config.js";
import { formatCredentialDetails, formatCredentialList, inspectCredentials } from "../src/credential-views.js";
import { SERVER_YAML, startTestServer, type TestServer, until } from "./helpers.js";

const DAY = 86_400_000;
const T0 = Date.parse("2026-03-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();

const yaml = (aws: AwsFake, intervalS: number) => `${SERVER_YAML}expiry: { intervalS: ${intervalS} }
gateways:
  aws-us:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "${aws.url}", credentials: { accessKeyId: fake, secretAccessKey: fake } }
    expiry: { maxAgeDays: 90, warnDays: 14, action: disable, plans: { us-gold: { maxAgeDays: 30, warnDays: 7, action: revoke } } }
  local:
    provider: local
    credentialType: API_KEY
    expiry: { maxAgeDays: 90, warnDays: 14, action: disable }
routes:
  - { apis: ["usapi00001"], gateway: aws-us }
  - { default: local }
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck:
    apis: [ { pathPrefix: /weather/, api: weather } ]
`;

const startAws = async () => {
  const aws = await startAwsFake();
  for (const id of ["us-gold", "us-silver"])
    aws.apiGateway.addUsagePlan({ id, name: id, apiStages: [{ apiId: "usapi00001", stage: "prod" }] });
  return aws;
};

const create = async (s: TestServer, appName: string, plan: string) => {
  const res = await s.call("/v1/createCredentials", {
    appName,
    appSlug: appName.toLowerCase(),
    developer: "dev@example.com",
    apis: [{ id: "usapi00001", usagePlans: [{ id: plan }] }, { id: "weather" }],
  });
  expect(res.status).toBe(200);
  return res.json as { apiKeyId: string; apiKey: string };
};

describe("expiry on a fake clock: warning, expiry, disable and revoke on AWS and the embedded gateway", () => {
  let aws: AwsFake;
  let s: TestServer;
  let now = T0;
  let standard: { apiKeyId: string; apiKey: string };
  let gold: { apiKeyId: string; apiKey: string };

  beforeAll(async () => {
    aws = await startAws();
    // intervalS 0: no loop; the test runs each pass itself at the times it sets.
    s = await startTestServer(yaml(aws, 0), {}, undefined, { now: () => now });
    standard = await create(s, "Standard", "us-silver");
    gold = await create(s, "Gold", "us-gold");
  }, 60_000);
  afterAll(async () => {
    await s?.close();
    await aws?.close();
  });

  const check = (key: string) =>
    fetch(`${s.gatewayUrl}/check`, { headers: { "x-api-key": key, "x-original-uri": "/weather/today" } }).then(
      (r) => r.status,
    );
  const types = async (app: string) =>
    (await s.credhook.store.outbox!.list({ app: `slug:dev@example.com/${app}` })).map((e) => e.event.type);
  const awsKey = (value: string) => [...aws.apiGateway.keys.values()].find((k) => k.value === value);
  const pass = async (days: number) => {
    now = T0 + days * DAY;
    return s.credhook.orchestrator.expiryPass();
  };
  // The policies of the YAML above, as `credhook inspect` resolves them from the config.
  const policies = () =>
    resolveExpiryPolicies({
      "aws-us": {
        expiry: {
          maxAgeDays: 90,
          warnDays: 14,
          action: "disable",
          plans: { "us-gold": { maxAgeDays: 30, warnDays: 7, action: "revoke" } },
        },
      },
      local: { expiry: { maxAgeDays: 90, warnDays: 14, action: "disable" } },
    }).policies;
  const quiet = { warned: 0, expired: 0, acted: 0, failed: 0 };

  it("before the first warning time nothing happens; inspect shows when each expires", async () => {
    expect(await pass(23 - 1 / 1440)).toMatchObject({ ran: true, ...quiet, expiring: 0 });
    expect([await types("standard"), await types("gold")]).toEqual([["credential.created"], ["credential.created"]]);
    const views = await inspectCredentials(s.credhook.store, { app: "gold" }, now, policies());
    expect(views[0]?.expiry).toMatchObject({
      expiresAt: iso(T0 + 30 * DAY),
      warnAt: iso(T0 + 23 * DAY),
      action: "revoke",
      policy: "gateways.aws-us.expiry.plans.us-gold",
      state: "valid",
    });
    const [std] = await inspectCredentials(s.credhook.store, { app: "standard" }, now, policies());
    // aws-us and local both say 90 days and disable.
    expect(std?.expiry).toMatchObject({ expiresAt: iso(T0 + 90 * DAY), action: "disable", state: "valid" });
    expect(formatCredentialDetails([std!]).join("\n")).toContain(
      `expires: ${iso(T0 + 90 * DAY)} (warning from ${iso(T0 + 76 * DAY)}; then disable`,
    );
  });

  it("credential.expiring once at the gold plan's warning time, with when, the action and the policy", async () => {
    expect(await pass(23)).toMatchObject({ ...quiet, warned: 1, expiring: 1 });
    expect(await pass(29)).toMatchObject({ ...quiet, expiring: 1 });
    expect(await types("gold")).toEqual(["credential.created", "credential.expiring"]);
    expect(await types("standard")).toEqual(["credential.created"]);
    const expiring = (await s.credhook.store.outbox!.list({ app: "gold" })).at(-1)!.event;
    expect(expiring.time).toBe(iso(T0 + 23 * DAY));
    expect(expiring.data.expiry).toEqual({
      expiresAt: iso(T0 + 30 * DAY),
      action: "revoke",
      policy: "gateways.aws-us.expiry.plans.us-gold",
      maxAgeDays: 30,
      warnDays: 7,
    });
    const listed = await inspectCredentials(s.credhook.store, { state: "expiring" }, now, policies());
    expect(listed.map((v) => v.publicId)).toEqual([gold.apiKeyId]);
    expect(formatCredentialList(listed)[0]).toContain("active+expiring");
    expect(await check(gold.apiKey)).toBe(200);
  });

  it("at the gold expiry: credential.expired, then revoked on AWS and the embedded gateway", async () => {
    expect(await pass(30)).toMatchObject({ ...quiet, expired: 1, acted: 1 });
    expect(await types("gold")).toEqual([
      "credential.created",
      "credential.expiring",
      "credential.expired",
      "credential.revoked",
    ]);
    expect(awsKey(gold.apiKey)).toBeUndefined();
    expect(await check(gold.apiKey)).toBe(401);
    expect(await pass(31)).toMatchObject({ ...quiet, expiring: 0, expiredLive: 0 });
    // The other credential is untouched.
    expect(awsKey(standard.apiKey)?.enabled).toBe(true);
    expect(await check(standard.apiKey)).toBe(200);
  });

  it("the standard credential: warned once 14 days before, then at 90 days expired and disabled on both gateways", async () => {
    expect(await pass(76 - 1 / 1440)).toMatchObject(quiet);
    expect(await pass(76)).toMatchObject({ ...quiet, warned: 1 });
    expect(await pass(89)).toMatchObject(quiet);
    expect(await types("standard")).toEqual(["credential.created", "credential.expiring"]);
    expect(await pass(90)).toMatchObject({ ...quiet, expired: 1, acted: 1, expiredLive: 1 });
    expect(await types("standard")).toEqual([
      "credential.created",
      "credential.expiring",
      "credential.expired",
      "credential.disabled",
    ]);
    expect(awsKey(standard.apiKey)?.enabled).toBe(false);
    expect(await check(standard.apiKey)).toBe(401);
    const [view] = await inspectCredentials(s.credhook.store, { state: "expired" }, now, policies());
    expect(view).toMatchObject({
      publicId: standard.apiKeyId,
      state: "active",
      disabled: { reason: "expired" },
      expiry: { state: "expired", expiredAt: iso(T0 + 90 * DAY), actedAt: iso(T0 + 90 * DAY) },
    });
    expect(formatCredentialList([view!])[0]).toContain("active+disabled+expired");
  });

  it("a second pass changes nothing", async () => {
    const before = await s.credhook.store.outbox!.list();
    expect(await pass(91)).toMatchObject({ ...quiet, expiredLive: 1 });
    expect(await s.credhook.store.outbox!.list()).toHaveLength(before.length);
    expect(awsKey(standard.apiKey)?.enabled).toBe(false);
  });
});

describe("the serve loop runs the expiry pass", () => {
  let aws: AwsFake;
  let s: TestServer;
  let now = T0;

  beforeAll(async () => {
    aws = await startAws();
    s = await startTestServer(yaml(aws, 1), {}, undefined, { now: () => now });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
    await aws?.close();
  });

  it("once the clock is past a credential's expiry, the loop expires and disables it without a call of the test", async () => {
    const key = await create(s, "Old", "us-silver");
    now = T0 + 100 * DAY;
    const types = async () =>
      (await s.credhook.store.outbox!.list({ app: "old" }))
        .map((e) => e.event.type)
        .filter((t) => t !== "credential.created");
    // A pass runs one interval (1 s) after the start, then every second: wait for its events.
    await until("the loop's credential.disabled", async () => (await types()).includes("credential.disabled"), 30_000);
    expect(await types()).toEqual(["credential.expired", "credential.disabled"]);
    expect([...aws.apiGateway.keys.values()].find((k) => k.value === key.apiKey)?.enabled).toBe(false);
  });
});

describe("check-config", () => {
  it("lists each expiry policy with its age, warning and action, defaults applied; says when there is none", () => {
    const gateways = {
      "aws-us": { expiry: { maxAgeDays: 90, action: "disable" as const, plans: { gold: { maxAgeDays: 3 } } } },
      local: {},
    } as unknown as Parameters<typeof describeExpiry>[0]["gateways"];
    expect(describeExpiry({ gateways })).toEqual([
      "expiry:",
      "  gateways.aws-us.expiry: maxAgeDays=90 warnDays=7 action=disable",
      "  gateways.aws-us.expiry.plans.gold: maxAgeDays=3 warnDays=2 action=disable",
    ]);
    expect(describeExpiry({ gateways: { local: {} } as unknown as typeof gateways })).toEqual([
      "expiry: off (no gateway has an expiry block)",
    ]);
  });
});
