/**
 * `credhook apply` at scale, with its figures printed (issue 32, docs/gateway-migration.md): credentials made on the
 * AWS fake under its strict quotas (CreateApiKey and DeleteApiKey 5 requests/s, a sliding window), each with one API
 * re-routed to Kong and one to Azure API Management. `apply` creates each on both with the same key value (every key
 * found on Kong's key-auth and as an Azure subscription's primary key), with 0 throttles; `apply --prune` then leaves
 * nothing of them on AWS. Printed: the counts, the times, and the prune's time against its quota's floor
 * (deletes / 5 per second). Then `apply` killed with SIGKILL three times during a move, and run again: 0 orphans
 * (every key on Kong is an app's, once), 0 credentials missing from both gateways.
 *
 * Sizes: `CREDHOOK_APPLY_N` credentials (default 25) and `CREDHOOK_APPLY_KILL_N` for the kill run (default 60): CI
 * keeps them small; the figures in docs/gateway-migration.md were printed with 1000 and 300. Times are printed, never
 * asserted (a busy machine changes them).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startAwsFake, type AwsFake } from "@credhook/fakes/aws";
import { startApimFake, type ApimFake } from "@credhook/fakes/azure";
import { startKongFake, type KongFake } from "@credhook/fakes/kong";
import { CLI, cliEnv, runCredhook, SERVER_YAML, spawnCredhook, startTestServer, until } from "./helpers.js";

const N = Number(process.env.CREDHOOK_APPLY_N ?? 25);
const KILL_N = Number(process.env.CREDHOOK_APPLY_KILL_N ?? 60);
const AZURE_API = "5aba4csvd4";

/** aws (default route), kong and azure; `moved`: m-k to Kong and the Azure API to Azure. */
function yaml(azure: ApimFake, moved: boolean): string {
  const service = `subscriptionId: "${azure.subscriptionId}", resourceGroup: ${azure.resourceGroup}, serviceName: ${azure.serviceName}, endpoint: "${azure.url}", credential: { type: static-token, token: fake }`;
  return `${SERVER_YAML}gateways:
  aws:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "\${AWS_ENDPOINT}", credentials: { accessKeyId: fake, secretAccessKey: fake } }
  kong:
    provider: kong
    credentialType: API_KEY
    options: { adminUrl: "\${KONG_URL}", timeoutMs: 5000 }
  azure:
    provider: azure
    credentialType: API_KEY
    options: { ${service}, timeoutMs: 5000 }
routes:
${moved ? `  - { apis: ["m-k"], gateway: kong }\n  - { apis: ["${AZURE_API}"], gateway: azure }\n` : ""}  - { default: aws }
`;
}

describe(`credhook apply: ${N} credentials from AWS (5 writes/s) to Kong and Azure, and a move of ${KILL_N} killed 3 times`, () => {
  const fakes: Array<{ close(): Promise<void> }> = [];
  afterAll(async () => {
    for (const f of fakes) await f.close();
  });

  /** Fresh fakes, and `n` credentials made through the webhook on AWS; their key values by app name. */
  async function setUp(n: number) {
    const aws: AwsFake = await startAwsFake({ apiGateway: { quotaModel: "sliding-window" } });
    const kong: KongFake = await startKongFake();
    const azure: ApimFake = await startApimFake();
    azure.addApi(AZURE_API);
    fakes.push(aws, kong, azure);
    const urls = { KONG_URL: kong.url, AWS_ENDPOINT: aws.url };
    const server = await startTestServer(yaml(azure, false), urls);
    const keys = new Map<string, string>();
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const name = `App${next++}`;
        const r = await server.call("/v1/createCredentials", {
          appName: name,
          developer: "dev@example.com",
          apis: [{ id: "m-k" }, { id: AZURE_API }],
        });
        expect(r.status, JSON.stringify(r.json)).toBe(200);
        keys.set(name, String(r.json!.apiKey));
      }
    };
    await Promise.all(Array.from({ length: 5 }, worker)); // the quota's 5 creates a second
    await server.close();
    const env = cliEnv(server.dir, { ...urls, CREDHOOK_DATA_DIR: server.dir });
    const config = join(server.dir, "moved.yaml");
    writeFileSync(config, yaml(azure, true));
    const awsKeys = () => [...aws.apiGateway.keys.values()].filter((k) => k.tags["credhook:gateway"] !== undefined);
    return { aws, kong, azure, keys, env, config, awsKeys };
  }

  /** The AWS fake's throttled answers per operation, since `since` (an earlier reading) when given. */
  const throttled = (aws: AwsFake, since: Record<string, number> = {}) =>
    Object.fromEntries(
      Object.entries(aws.stats().throttled)
        .map(([op, n]) => [op, n - (since[op] ?? 0)] as const)
        .filter(([, n]) => n > 0),
    );
  /** The first failed results of an apply's JSON lines, for an assertion's message. */
  const failures = (stdout: string) =>
    stdout
      .split("\n")
      .filter((l) => l.includes('"failed"'))
      .slice(0, 3)
      .join("\n");

  it(
    `moves ${N}: every key on Kong and Azure with the same value, 0 throttles; --prune leaves nothing on AWS (its throttles printed)`,
    async () => {
      const { aws, kong, azure, keys, env, config, awsKeys } = await setUp(N);
      // Each credhook process assumes AWS's 40-request burst of the 10/s operations is there when it starts: a
      // process started within seconds of another that drained it (the set-up's server, then the move) would find it
      // empty. One process at a time per account is the SQLite store's rule; its quota needs 4 s to refill.
      const refill = () => new Promise((r) => setTimeout(r, 4_000));
      await refill();
      const before = throttled(aws);
      const t0 = Date.now();
      const moved = await runCredhook(["apply"], config, env);
      const moveS = (Date.now() - t0) / 1000;
      const moveThrottles = throttled(aws, before);
      const kongKeys = new Set(kong.keyAuths().map((k) => k.key));
      const azureKeys = new Set(azure.listSubscriptions().map((s) => s.primaryKey));
      const missing = [...keys.values()].filter((v) => !kongKeys.has(v) || !azureKeys.has(v));

      await refill();
      const afterMove = throttled(aws);
      const t1 = Date.now();
      const pruned = await runCredhook(["apply", "--prune"], config, env);
      const pruneS = (Date.now() - t1) / 1000;
      const pruneThrottles = throttled(aws, afterMove);
      const floorS = N / 5; // DeleteApiKey: 5 requests/s
      // The move's narrowest quota: one GetApiKey (the value read back) per credential, AWS's 10/s after a burst of 40.
      const moveFloorS = Math.max(0, N - 40) / 10;
      console.log(
        `apply figures: ${N} credentials AWS -> Kong + Azure: move ${moveS.toFixed(1)} s (${(N / moveS).toFixed(1)}/s) = ` +
          `${(moveS / Math.max(moveFloorS, 0.1)).toFixed(2)}x the GetApiKey quota's floor (${moveFloorS.toFixed(1)} s at 10/s after 40), ` +
          `throttles ${JSON.stringify(moveThrottles)}; prune ${pruneS.toFixed(1)} s = ${(pruneS / floorS).toFixed(2)}x the ` +
          `DeleteApiKey quota's floor (${floorS.toFixed(1)} s at 5/s), throttles ${JSON.stringify(pruneThrottles)}; ` +
          `keys on Kong ${kongKeys.size}, on Azure ${azureKeys.size}, left on AWS ${awsKeys().length}`,
      );
      expect(moved.code, failures(moved.stdout) + moved.stderr).toBe(0);
      expect(missing).toEqual([]);
      expect(pruned.code, failures(pruned.stdout) + pruned.stderr).toBe(0);
      expect(awsKeys()).toEqual([]);
      // Under `pnpm test:stress` the AWS fake counts arrivals by its own event loop, which the CPU hogs delay and bunch:
      // AWS's window would not see them so. The throttles are printed there, and asserted on an ordinary run.
      // The move is the issue's "0 throttles"; the prune's are printed (a throttled DeleteApiKey is retried by the SDK,
      // and what counts there is that nothing is left on AWS).
      if (process.env.CREDHOOK_TEST_STRESS !== "1") expect(moveThrottles).toEqual({});
    },
    60_000 + N * 1_500,
  ); // the set-up's creates and the prune's deletes at 5/s each, the moves' reads at 10/s

  it(
    `kill -9 three times during a move of ${KILL_N}, then a rerun: 0 orphans, 0 credentials missing from both`,
    async () => {
      const { kong, keys, env, config, awsKeys } = await setUp(KILL_N);
      const kills: number[] = [];
      for (let i = 0; i < 3; i++) {
        const p = spawnCredhook([process.execPath, CLI, "apply", "--config", config], { env });
        // Killed in the middle of its run: after a fifth of the credentials, while more than that are left.
        const lines = () =>
          p
            .output()
            .split("\n")
            .filter((l) => l.startsWith("{")).length;
        const at = Math.ceil(KILL_N / 5);
        await until(
          `apply reporting ${at} credentials`,
          () => lines() >= at || p.output().includes("summary"),
          120_000,
        );
        expect(p.output(), "apply ended before its kill").not.toContain("summary");
        const gone = new Promise((resolve) => p.child.once("exit", resolve));
        p.child.kill("SIGKILL");
        await gone;
        kills.push(lines());
      }
      const rerun = await runCredhook(["apply"], config, env);
      expect(rerun.code, failures(rerun.stdout)).toBe(0);
      const onKong = kong.keyAuths().map((k) => k.key);
      const appKeys = new Set(keys.values());
      const orphans = onKong.filter((k) => !appKeys.has(k)).length + (onKong.length - new Set(onKong).size);
      const onAws = new Set(awsKeys().map((k) => k.value));
      const missingFromBoth = [...appKeys].filter((k) => !onKong.includes(k) && !onAws.has(k)).length;
      const notOnKong = [...appKeys].filter((k) => !onKong.includes(k)).length;
      console.log(
        `apply kill figures: ${KILL_N} credentials, kill -9 after ${kills.join(", ")} results of 3 runs; after a rerun (${JSON.parse(rerun.stdout.trim().split("\n").at(-1)!).summary.outcomes.moved} moved): orphans ${orphans}, missing from both ${missingFromBoth}, not yet on Kong ${notOnKong}`,
      );
      expect({ orphans, missingFromBoth, notOnKong }).toEqual({ orphans: 0, missingFromBoth: 0, notOnKong: 0 });
    },
    60_000 + KILL_N * 1_000,
  );
});
