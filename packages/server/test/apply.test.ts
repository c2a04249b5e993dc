/**
 * `credhook apply` as a process (issue 32, docs/gateway-migration.md): `--dry-run` lists per credential what differs
 * from the config — an API to move with its gateways and plans, whether it can move without a new key (an
 * embedded-provider key cannot: credhook keeps only its digest), a plan changed — with the provider calls and the time
 * the gateways' declared write rates allow (AWS: 5 writes/s), and changes nothing; without it, a Kong plan whose limits
 * were raised is applied to the existing consumer's rate-limiting plugin, with its `credential.updated` event.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAwsFake, type AwsFake } from "@credhook/fakes/aws";
import { startKongFake, type KongFake } from "@credhook/fakes/kong";
import { cliEnv, runCredhook, SERVER_YAML, startTestServer } from "./helpers.js";

/** Gateways `old` (embedded), `kong` (its `k-gold` plan at `minute` requests), `aws`; `routes` as given. */
function yaml(minute: number, routes: string): string {
  return `${SERVER_YAML}gateways:
  old: { provider: local, credentialType: API_KEY }
  kong:
    provider: kong
    credentialType: API_KEY
    options: { adminUrl: "\${KONG_URL}", plans: { k-gold: { minute: ${minute} } }, timeoutMs: 2000, maxRetries: 0 }
  aws:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "\${AWS_ENDPOINT}", credentials: { accessKeyId: fake, secretAccessKey: fake } }
routes:
${routes}`;
}
const BEFORE = `  - { apis: [orders], gateway: old }
  - { apis: ["k-*"], gateway: kong }
  - { default: aws }
`;
/** orders moves from the embedded gateway to AWS, k-shop from Kong to AWS. */
const MOVED = `  - { apis: ["k-orders"], gateway: kong }
  - { default: aws }
`;

describe("credhook apply", () => {
  let kong: KongFake;
  let aws: AwsFake;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const apply = (args: string[], config: string) => {
    const file = join(dir, `apply-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, config);
    return runCredhook(["apply", ...args], file, env);
  };

  beforeAll(async () => {
    kong = await startKongFake();
    aws = await startAwsFake();
    const urls = { KONG_URL: kong.url, AWS_ENDPOINT: aws.url };
    const s = await startTestServer(yaml(100, BEFORE), urls);
    dir = s.dir;
    env = cliEnv(dir, { ...urls, CREDHOOK_DATA_DIR: dir });
    const dev = "dev@example.com";
    for (const body of [
      { appName: "Embedded", developer: dev, apis: [{ id: "orders" }] },
      { appName: "Gold", developer: dev, apis: [{ id: "k-orders", usagePlans: [{ id: "k-gold" }] }] },
      { appName: "Shop", developer: dev, apis: [{ id: "k-shop" }] },
    ])
      expect((await s.call("/v1/createCredentials", body)).status).toBe(200);
    await s.close();
  });
  afterAll(async () => {
    await kong?.close();
    await aws?.close();
  });

  it("--dry-run lists the moves, what cannot move and why, and the calls and time the quotas allow; nothing changes", async () => {
    const consumers = kong.consumers().length;
    const r = await apply(["--dry-run", "--prune"], yaml(100, MOVED));
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(
      /Embedded \(API_KEY [^)]+\):\n {2}move orders: old -> aws\n {2}cannot move without a new key: its key value cannot be read back from 'old' \(the embedded provider keeps only a digest\)/,
    );
    expect(r.stdout).toMatch(/Shop \(API_KEY [^)]+\):\n {2}move k-shop: kong -> aws\n/);
    expect(r.stdout).toMatch(
      /2 of 3 live credentials differ from the config: movable 1, not movable without a new key 1, plans changed 0/,
    );
    // The movable one: its value read back from Kong, created on AWS (5 writes/s), removed from Kong with --prune.
    expect(r.stdout).toMatch(/gateway aws: create=1 \(at 5 writes\/s: at least 0\.2 s\)/);
    expect(r.stdout).toMatch(/gateway kong: readSecret=1 revoke=1 \(no declared write rate\)/);
    expect(kong.consumers().length).toBe(consumers);
    expect(aws.requests().filter((q) => q.operation !== "GetRestApis" && q.operation.startsWith("Create"))).toEqual([]);

    const json = JSON.parse((await apply(["--dry-run", "--json", "--limit", "1"], yaml(100, MOVED))).stdout);
    expect(json.entries).toHaveLength(1); // the oldest: the embedded credential
    expect(json.entries[0].cannotMove).toMatch(/keeps only a digest/);
  });

  it("a Kong plan's limits raised: --dry-run finds it, apply updates the consumer's rate-limiting plugin, then nothing differs", async () => {
    const dry = await apply(["--dry-run"], yaml(500, BEFORE));
    expect(dry.code).toBe(2);
    expect(dry.stdout).toMatch(/Gold \(API_KEY [^)]+\):\n {2}plan k-gold changed on kong: update in place/);
    const limits = () =>
      kong
        .plugins()
        .filter((p) => p.name === "rate-limiting")
        .map((p) => p.config.minute);
    expect(limits()).toEqual([100]);

    const done = await apply([], yaml(500, BEFORE));
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/plans updated in place\nplans updated 1, failed 0, left 0/);
    expect(limits()).toEqual([500]);
    expect((await apply(["--dry-run"], yaml(500, BEFORE))).code).toBe(0);
    const audit = await runCredhook(["audit", "--json", "--app", "Gold"], join(dir, "webhook.config.yaml"), env);
    expect(JSON.parse(audit.stdout).map((e: { event: { type: string } }) => e.event.type)).toEqual([
      "credential.created",
      "credential.updated",
    ]);
  });
});
