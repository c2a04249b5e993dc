/**
 * `credhook apply` as a process (issue 32, docs/gateway-migration.md): `--dry-run` lists per credential what differs
 * from the config — an API to move with its gateways and plans, whether it can move without a new key (an
 * embedded-provider key cannot: credhook keeps only its digest), a plan changed — with the provider calls and the time
 * the gateways' declared write rates allow (AWS: 5 writes/s), and changes nothing; without it, a Kong plan whose limits
 * were raised is applied to the existing consumer's rate-limiting plugin, with its `credential.updated` event; an API
 * re-routed from AWS to Kong gets its credential on Kong with the same key value, kept on AWS (dual-homed) until
 * `--prune` removes it there; an embedded-provider credential routed to AWS is listed as not movable and untouched.
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
/** m-orders (Mover's) moves from AWS to Kong; the rest stays. */
const TO_KONG = `  - { apis: ["m-*"], gateway: kong }
${BEFORE}`;
/** orders moves from the embedded gateway to AWS, k-shop from Kong to AWS. */
const MOVED = `  - { apis: ["k-orders"], gateway: kong }
  - { default: aws }
`;

describe("credhook apply", () => {
  let kong: KongFake;
  let aws: AwsFake;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let moverKey: string;
  /** One JSON line per credential, then the summary (what apply prints when stdout is not a terminal). */
  const jsonLines = (stdout: string) =>
    stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
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
    const mover = await s.call("/v1/createCredentials", {
      appName: "Mover",
      developer: dev,
      apis: [{ id: "m-orders" }],
    });
    moverKey = String(mover.json!.apiKey);
    await s.close();
  });
  afterAll(async () => {
    await kong?.close();
    await aws?.close();
  });

  it("--dry-run lists the moves, what cannot move and why, and the calls and time the quotas allow; nothing changes", async () => {
    const consumers = kong.consumers().length;
    const awsCreates = () => aws.requests().filter((q) => q.operation.startsWith("Create")).length;
    const creates = awsCreates();
    const r = await apply(["--dry-run", "--prune"], yaml(100, MOVED));
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(
      /Embedded \(API_KEY [^)]+\):\n {2}move orders: old -> aws\n {2}cannot move without a new key: its key value cannot be read back from 'old' \(the embedded provider keeps only a digest\)/,
    );
    expect(r.stdout).toMatch(/Shop \(API_KEY [^)]+\):\n {2}move k-shop: kong -> aws\n/);
    expect(r.stdout).toMatch(
      /2 of 4 live credentials differ from the config: movable 1, not movable without a new key 1, plans changed 0/,
    );
    // The movable one: its value read back from Kong, created on AWS (5 writes/s), removed from Kong with --prune.
    expect(r.stdout).toMatch(/gateway aws: create=1 \(at 5 writes\/s: at least 0\.2 s\)/);
    expect(r.stdout).toMatch(/gateway kong: readSecret=1 revoke=1 \(no declared write rate\)/);
    expect(kong.consumers().length).toBe(consumers);
    expect(awsCreates()).toBe(creates);

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
    const lines = jsonLines(done.stdout);
    expect(lines[0]).toMatchObject({ outcome: "plans-updated", app: { appName: "Gold" } });
    expect(lines.at(-1).summary).toMatchObject({ considered: 1, outcomes: { "plans-updated": 1, failed: 0 } });
    expect(limits()).toEqual([500]);
    expect((await apply(["--dry-run"], yaml(500, BEFORE))).code).toBe(0);
    const audit = await runCredhook(["audit", "--json", "--app", "Gold"], join(dir, "webhook.config.yaml"), env);
    expect(JSON.parse(audit.stdout).map((e: { event: { type: string } }) => e.event.type)).toEqual([
      "credential.created",
      "credential.updated",
    ]);
  });

  it("moves m-orders from AWS to Kong with the same key value, keeps it on AWS until --prune, then nothing is left on AWS", async () => {
    const awsKeys = () => [...aws.apiGateway.keys.values()].filter((k) => k.value === moverKey);
    expect(awsKeys()).toHaveLength(1);
    const moved = await apply([], yaml(500, TO_KONG));
    expect(moved.code).toBe(0);
    const [result, end] = jsonLines(moved.stdout);
    expect(result).toMatchObject({
      outcome: "moved",
      created: ["kong"],
      dualHomed: ["aws"],
      app: { appName: "Mover" },
    });
    expect(end.summary).toMatchObject({ outcomes: { moved: 1, failed: 0 } });
    // The key works on Kong: its key-auth credential holds the same value; AWS still has it (dual-homed).
    expect(kong.keyAuths().filter((k) => k.key === moverKey)).toHaveLength(1);
    expect(awsKeys()).toHaveLength(1);
    const dry = await apply(["--dry-run"], yaml(500, TO_KONG));
    expect(dry.stdout).toMatch(/Mover \(API_KEY [^)]+\):\n {2}prune pending: m-orders still on aws/);

    const pruned = await apply(["--prune"], yaml(500, TO_KONG));
    expect(pruned.code).toBe(0);
    expect(jsonLines(pruned.stdout)[0]).toMatchObject({ outcome: "pruned", removed: ["aws"] });
    expect(awsKeys()).toEqual([]);
    expect(kong.keyAuths().filter((k) => k.key === moverKey)).toHaveLength(1);
    const audit = await runCredhook(["audit", "--json", "--app", "Mover"], join(dir, "webhook.config.yaml"), env);
    const events = JSON.parse(audit.stdout).map((e: { event: { type: string; data: Record<string, unknown> } }) => [
      e.event.type,
      (e.event.data.previousGateways as Array<{ gateway: string }> | undefined)?.map((g) => g.gateway),
      (e.event.data.gateways as Array<{ gateway: string }>).map((g) => g.gateway),
    ]);
    expect(events).toEqual([
      ["credential.created", undefined, ["aws"]],
      ["credential.updated", ["aws"], ["aws", "kong"]],
      ["credential.updated", ["aws", "kong"], ["kong"]],
    ]);
  });

  it("an embedded-provider credential routed to AWS is listed as not movable and left as it was (exit 2)", async () => {
    const r = await apply([], yaml(500, MOVED));
    expect(r.code).toBe(2);
    const lines = jsonLines(r.stdout);
    expect(lines.find((l) => l.app?.appName === "Embedded")).toMatchObject({
      outcome: "not-movable",
      reason: expect.stringMatching(/keeps only a digest/),
    });
    const audit = await runCredhook(["audit", "--json", "--app", "Embedded"], join(dir, "webhook.config.yaml"), env);
    expect(JSON.parse(audit.stdout).map((e: { event: { type: string } }) => e.event.type)).toEqual([
      "credential.created",
    ]);
  });
});
