/**
 * Expiry with two credhook instances on the run's PostgreSQL server (docs/expiry.md): both run the expiry pass at
 * once, on one fake clock, and the shared audit trail gets `credential.expiring` once and `credential.expired` once,
 * the credential is disabled once, on the AWS fake and in the embedded provider, whose key checks on both instances
 * then refuse it. Then `credhook expire`, a process of its own on the real clock, expires a credential made "40 days
 * ago" (the instances' fake clock ran in the past) and disables it; run again, it changes nothing.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { createLogger, loadConfigFile, type RunningServer, startServer } from "../src/index.js";
import {
  AUTH,
  PASSWORD,
  postgresServerYaml,
  runCredhook,
  setUpPostgresCommands,
  until,
  WEATHER_GATEWAY_YAML,
} from "./helpers.js";

const url = inject("databaseUrl");
const schema = `expiry_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
const DAY = 86_400_000;
// The instances' clock starts 100 days in the past: `credhook expire`, on the real clock, then finds old credentials.
const T0 = Date.now() - 100 * DAY;
let now = T0;
/** The AWS fake, the temp dir, the config file in it and the commands' environment. */
let setup: Awaited<ReturnType<typeof setUpPostgresCommands>>;
let a: RunningServer;
let b: RunningServer;

const YAML = `${postgresServerYaml(schema)}expiry: { intervalS: 0 }
gateways:
  aws:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "\${AWS_ENDPOINT}", credentials: { accessKeyId: fake, secretAccessKey: fake } }
    expiry: { maxAgeDays: 30, warnDays: 7, action: disable }
  local: { provider: local, credentialType: API_KEY }
routes:
  - { apis: ["5aba4csvd4"], gateway: aws }
  - { default: local }
${WEATHER_GATEWAY_YAML}`;

beforeAll(async () => {
  setup = await setUpPostgresCommands("expiry-pg", YAML, url);
  const { config, aws, dir } = setup;
  const start = async (name: string) =>
    startServer(
      await loadConfigFile(config, {
        env: {
          CREDHOOK_PASSWORD: PASSWORD,
          CREDHOOK_DATA_DIR: join(dir, name),
          DATABASE_URL: url,
          AWS_ENDPOINT: aws.url,
        },
      }),
      { port: 0, host: "127.0.0.1", logger: createLogger("silent"), now: () => now },
    );
  a = await start("a");
  b = await start("b");
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), setup?.aws.close()]);
  if (setup) rmSync(setup.dir, { recursive: true, force: true });
});

const create = async (appName: string) => {
  const res = await fetch(`${a.url}/v1/createCredentials`, {
    method: "POST",
    headers: { authorization: AUTH, "content-type": "application/json" },
    body: JSON.stringify({
      appName,
      appSlug: appName.toLowerCase(),
      developer: "dev@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }, { id: "weather" }],
    }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { apiKeyId: string; apiKey: string };
};
const check = (s: RunningServer, key: string) =>
  fetch(`${s.gatewayUrl}/check`, { headers: { "x-api-key": key, "x-original-uri": "/weather/now" } }).then(
    (r) => r.status,
  );
const types = async (app: string) =>
  (await a.credhook.store.outbox!.list({ app })).map((e) => e.event.type).filter((t) => t !== "credential.created");
const awsEnabled = (key: string) => [...setup.aws.apiGateway.keys.values()].find((k) => k.value === key)?.enabled;
/** Both instances' passes at once, at `days` after T0: the sum of what they did. */
const bothPass = async (days: number) => {
  now = T0 + days * DAY;
  const results = await Promise.all([a.credhook.orchestrator.expiryPass(), b.credhook.orchestrator.expiryPass()]);
  return Object.fromEntries(
    (["warned", "expired", "acted", "failed"] as const).map((k) => [k, results[0][k] + results[1][k]]),
  );
};

/** Runs `credhook <args> --config <config>` as a process; its exit code, stdout and stderr. */
const credhook = (args: string[]) => runCredhook(args, setup.config, setup.env);

describe("expiry on PostgreSQL, two instances passing at once", () => {
  let key: { apiKeyId: string; apiKey: string };

  beforeAll(async () => {
    key = await create("Shared");
  });

  it("nothing before the warning; one credential.expiring however many instances pass", async () => {
    expect(await bothPass(22)).toEqual({ warned: 0, expired: 0, acted: 0, failed: 0 });
    expect(await bothPass(23)).toEqual({ warned: 1, expired: 0, acted: 0, failed: 0 });
    expect(await bothPass(24)).toEqual({ warned: 0, expired: 0, acted: 0, failed: 0 });
    expect(await types("shared")).toEqual(["credential.expiring"]);
  });

  it("at the expiry: one credential.expired, disabled once on AWS and the embedded provider; both key checks refuse it", async () => {
    expect(await check(b, key.apiKey)).toBe(200);
    expect(await bothPass(30)).toEqual({ warned: 0, expired: 1, acted: 1, failed: 0 });
    expect(await types("shared")).toEqual(["credential.expiring", "credential.expired", "credential.disabled"]);
    expect(awsEnabled(key.apiKey)).toBe(false);
    expect(await check(a, key.apiKey)).toBe(401);
    await until("instance b's key check to refuse the disabled key", async () => (await check(b, key.apiKey)) === 401);
    expect(await bothPass(31)).toEqual({ warned: 0, expired: 0, acted: 0, failed: 0 });
    expect(await types("shared")).toHaveLength(3);
  });

  it("`credhook expire` on the real clock expires and disables an old credential once; run again it does nothing", async () => {
    now = T0 + 60 * DAY; // 40 days ago: expired 10 days ago on the real clock
    const old = await create("Old");
    const first = await credhook(["expire", "--json"]);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ ran: true, warned: 0, expired: 1, acted: 1, failed: 0 });
    expect(await types("old")).toEqual(["credential.expired", "credential.disabled"]);
    expect(awsEnabled(old.apiKey)).toBe(false);
    const again = await credhook(["expire"]);
    expect([again.code, again.stdout.trim()]).toEqual([
      0,
      "expiry pass: 0 warned, 0 expired, 0 acted on, 0 failed; now 0 expiring, 2 expired",
    ]);
  });
});
