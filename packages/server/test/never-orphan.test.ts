/**
 * docs/architecture.md, "Never an orphan, never someone else's resource", through the
 * public HTTP interface, against a provider over a fake cloud that behaves like
 * the real ones where it hurts: writes that land after the client gave up,
 * failures after an accepted step, deletes that fail, plans the IAM policy
 * refuses, and keys other tools made in the same account.
 * After each case: zero live keys that no credential the portal holds explains,
 * and zero foreign keys touched.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { AUTH, errorOf, LOCAL_YAML, PASSWORD, startTestServer, type TestServer, until } from "./helpers.js";
import { cloud } from "./fixtures/marked-cloud-provider.js";
import { formatReconcileReport } from "../src/operations-cli.js";
import { spawnTracked } from "./children.js";

const MARKED = fileURLToPath(new URL("./fixtures/marked-cloud-provider.ts", import.meta.url));
// Each test injects its failures into the same fake gateways one after another: their circuit breakers are off here,
// or the fifth 5xx in a row would open them (the breaker has its own tests, in circuit-breaker.test.ts).
const yaml = (reconcile: string) =>
  LOCAL_YAML.replace(
    "routes:\n",
    `  mc:
    provider: ${MARKED}
    credentialType: API_KEY
    circuitBreaker: { threshold: 0 }
  mc2:
    provider: ${MARKED}
    credentialType: API_KEY
    circuitBreaker: { threshold: 0 }
reconcile: ${reconcile}
routes:
  - { apis: ["mc-*"], gateway: mc }
  - { apis: ["mc2-*"], gateway: mc2 }
`,
  );

let s: TestServer;
/**
 * How far the server's clock (AppOptions.now) runs ahead of the wall clock: a test moves it past the settle window
 * (settleS: 60, longer than any delay of a busy machine) instead of sleeping the window out.
 */
let skewMs = 0;
const pastTheSettleWindow = () => void (skewMs += 60_000);
beforeAll(async () => {
  // The sweep is run by hand here (interval 0) so each step is observable; a second server below runs it on its timer.
  s = await startTestServer(yaml("{ abandonedIntervalS: 0, settleS: 60 }"), {}, undefined, {
    now: () => Date.now() + skewMs,
  });
});
afterAll(() => s.close());
afterEach(() => cloud.reset());

const dev = "never-orphan@example.com";
const create = (appName: string, apis: Array<{ id: string; usagePlans?: Array<{ id: string }> }>) =>
  s.post("/v1/createCredentials", { appName, developer: dev, apis });
const recordsOf = async (appName: string) => (await s.credhook.store.list()).filter((r) => r.app.appName === appName);
const localKeys = async () => (await s.credhook.store.stateFor("local").list("cred:")).length;
/** Every key in the cloud that carries credhook's mark must belong to a live credential the portal holds. */
async function unexplainedKeys(): Promise<string[]> {
  const live = new Set((await s.credhook.store.list()).filter((r) => r.status === "active").map((r) => r.id));
  return cloud
    .live()
    .filter((k) => k.mark && !live.has(k.mark.credentialId))
    .map((k) => k.id);
}

describe("outcome unknown is a state, not an error path", () => {
  it("a create the cloud completes after the client timed out: the record stays abandoned, the late key is found and revoked, then the record settles", async () => {
    cloud.script.createLandsLateMs = 300;
    const err = await errorOf(
      await create("Late", [{ id: "mc-a", usagePlans: [{ id: "gold" }] }, { id: "other-api" }]),
    );
    expect(err.status).toBe(504);
    expect(await localKeys()).toBe(0); // the embedded gateway's key was revoked at once
    const [rec] = await recordsOf("Late");
    expect(rec).toMatchObject({ status: "abandoned", publicId: "", bindings: [], abandoned: { uncertain: ["mc"] } });
    expect(cloud.live()).toEqual([]); // nothing yet …
    await until("the late write to land", () => cloud.live().length === 1); // … then AWS-style, the key appears
    expect(cloud.live()[0]!.mark).toEqual({ gateway: "mc", credentialId: rec!.id });

    const swept = await s.credhook.orchestrator.sweepAbandoned();
    expect(swept).toEqual({ swept: 1, deleted: 0, revoked: 1, settled: 0 }); // within the settle window the record is kept (the first test: no other records)
    expect(cloud.live()).toEqual([]);
    expect((await recordsOf("Late"))[0]!.status).toBe("abandoned");
    pastTheSettleWindow();
    expect(await s.credhook.orchestrator.sweepAbandoned()).toEqual({ swept: 1, deleted: 1, revoked: 0, settled: 0 });
    expect(await recordsOf("Late")).toEqual([]);
    expect(await unexplainedKeys()).toEqual([]);
  });

  it("the portal's retry after a late-landing create gets a fresh credential, and the earlier attempt's key does not survive", async () => {
    cloud.script.createLandsLateMs = 150;
    expect((await create("Retry", [{ id: "mc-a" }])).status).toBe(504);
    await until("the late write to land", () => cloud.live().length === 1);
    cloud.script.createLandsLateMs = 0;
    const again = await create("Retry", [{ id: "mc-a" }]); // the app's next request sweeps its abandoned create first
    expect(again.status).toBe(200);
    const { apiKeyId, apiKey } = (await again.json()) as { apiKeyId: string; apiKey: string };
    expect(cloud.live().map((k) => [k.id, k.value])).toEqual([[apiKeyId, apiKey]]);
    expect(await unexplainedKeys()).toEqual([]);
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
  });

  it("a create that fails after the cloud applied it: the key is found by its mark and revoked within the request", async () => {
    cloud.script.createFailsAfterApply = 1;
    const err = await errorOf(await create("Applied", [{ id: "mc-a", usagePlans: [{ id: "gold" }] }]));
    expect(err.status).toBe(502);
    expect(cloud.live()).toEqual([]);
    expect(cloud.calls.filter((c) => c.startsWith("delete"))).toHaveLength(1);
    expect(await unexplainedKeys()).toEqual([]);
  });

  it("a usage-plan attach refused after the key exists, then a delete that fails four times: the key stays recorded until a later pass revokes it", async () => {
    cloud.script.attachDenied.add("silver");
    cloud.script.deleteFailures = 4;
    const err = await errorOf(await create("Denied", [{ id: "mc-a", usagePlans: [{ id: "gold" }, { id: "silver" }] }]));
    expect(err.status).toBe(502);
    expect(err.messages[0]).toContain("usage plan silver was refused");
    const [key] = cloud.live();
    expect(key).toBeDefined(); // three attempts in the request failed …
    const [rec] = await recordsOf("Denied");
    expect(rec).toMatchObject({ status: "abandoned", bindings: [{ gateway: "mc", nativeId: key!.id }] }); // … and the record says what is left
    expect(rec!.abandoned!.lastErrors).toEqual([expect.stringContaining("DeleteKey")]);
    expect((await s.credhook.orchestrator.sweepAbandoned()).revoked).toBe(0); // the fourth failure
    expect((await s.credhook.orchestrator.sweepAbandoned()).revoked).toBe(1);
    expect(cloud.live()).toEqual([]);
    expect(await unexplainedKeys()).toEqual([]);
  });

  it("a search that fails leaves the record for the next pass, never deleted blind", async () => {
    cloud.script.createLandsLateMs = 50;
    cloud.script.findFailures = 10;
    expect((await create("Blind", [{ id: "mc-a" }])).status).toBe(504);
    await until("the late write to land", () => cloud.live().length === 1);
    pastTheSettleWindow(); // past it, a search that fails still deletes nothing
    expect(await s.credhook.orchestrator.sweepAbandoned()).toMatchObject({ deleted: 0 });
    expect((await recordsOf("Blind"))[0]!.abandoned!.lastErrors).toEqual([
      expect.stringContaining("ListKeys answered 500"),
    ]);
    cloud.script.findFailures = 0;
    expect(await s.credhook.orchestrator.sweepAbandoned()).toMatchObject({ revoked: 1 });
    expect(await recordsOf("Blind")).toEqual([]);
    expect(cloud.live()).toEqual([]);
  });
});

describe("never less access than before on failure", () => {
  it("a plan swap whose attach is refused leaves the key in its old plan, and the store agrees", async () => {
    const { apiKeyId } = (await (await create("Swap", [{ id: "mc-a", usagePlans: [{ id: "gold" }] }])).json()) as {
      apiKeyId: string;
    };
    cloud.script.attachDenied.add("silver");
    const err = await errorOf(
      await s.post("/v1/updateCredentials", {
        credentialType: "API_KEY",
        apiKeyId,
        apis: [
          {
            id: "mc-a",
            action: "NONE",
            usagePlans: [
              { id: "gold", action: "REMOVED" },
              { id: "silver", action: "ADDED" },
            ],
          },
        ],
      }),
    );
    expect(err.status).toBe(502);
    expect(cloud.keys.get(apiKeyId)!.plans).toEqual(["gold"]);
    const rec = await s.credhook.store.findByPublicId("API_KEY", apiKeyId);
    expect(rec).toMatchObject({ status: "active", apis: [{ id: "mc-a", usagePlans: ["gold"] }] });
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
  });
});

describe("ownership before any write", () => {
  it("a revoke of an id credhook does not know leaves someone else's key live: 204, a warning, and a metric", async () => {
    const foreign = cloud.foreign();
    const res = await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: foreign.id });
    expect(res.status).toBe(204);
    expect(cloud.keys.get(foreign.id)).toEqual(foreign);
    expect(
      s.logs.some((l) => l.includes('"level":"warn"') && l.includes("is not credhook's") && l.includes(foreign.id)),
    ).toBe(true);
    const metrics = await (await s.get("/metrics")).text();
    expect(metrics).toMatch(/credhook_revoke_unowned_total\{gateway="mc"\} 1/);
    expect(metrics).toMatch(/credhook_revoke_unowned_total\{gateway="mc2"\} 1/);
  });

  it("an update of a foreign key's id is a 404 that points to credhook adopt, and changes nothing", async () => {
    const foreign = cloud.foreign(["gold"]);
    const err = await errorOf(
      await s.post("/v1/updateCredentials", {
        credentialType: "API_KEY",
        apiKeyId: foreign.id,
        apis: [{ id: "mc-a", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] }],
      }),
    );
    expect(err.status).toBe(404);
    expect(err.messages).toContain(
      "a credential made outside credhook is brought under it explicitly, with `credhook adopt`",
    );
    expect(cloud.keys.get(foreign.id)!.plans).toEqual(["gold"]);
    expect(await s.credhook.store.findByPublicId("API_KEY", foreign.id)).toBeUndefined();
  });

  it("when the store lost a credential, a revoke by its id still removes credhook's own key, and another gateway's never", async () => {
    const { apiKeyId } = (await (await create("Lost", [{ id: "mc-a" }])).json()) as { apiKeyId: string };
    const rec = await s.credhook.store.findByPublicId("API_KEY", apiKeyId);
    await s.credhook.store.delete(rec!.id);
    const unowned = async () =>
      Number(
        (await (await s.get("/metrics")).text()).match(/credhook_revoke_unowned_total\{gateway="mc2"\} (\d+)/)?.[1] ??
          0,
      );
    const before = await unowned();
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
    expect(cloud.keys.has(apiKeyId)).toBe(false);
    expect(await unowned()).toBe(before); // mc2 saw a key that is not its own, but mc revoked its own: no alarm
  });

  it("when the store lost a credential, an update by its id finds credhook's own key by its mark and records it again under its credential id", async () => {
    const { apiKeyId } = (await (await create("Restored", [{ id: "mc-a", usagePlans: [{ id: "gold" }] }])).json()) as {
      apiKeyId: string;
    };
    const rec = (await s.credhook.store.findByPublicId("API_KEY", apiKeyId))!;
    await s.credhook.store.delete(rec.id);
    const res = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId,
      appName: "Restored",
      developer: dev,
      apis: [
        {
          id: "mc-a",
          action: "NONE",
          usagePlans: [
            { id: "gold", action: "NONE" },
            { id: "silver", action: "ADDED" },
          ],
        },
      ],
    });
    expect(res.status).toBe(204);
    expect(cloud.keys.get(apiKeyId)!.plans).toEqual(["gold", "silver"]);
    expect((await s.credhook.store.findByPublicId("API_KEY", apiKeyId))!.id).toBe(rec.id);
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId })).status).toBe(204);
    expect(cloud.live()).toEqual([]);
  });

  it("credhook adopt brings a foreign key under credhook explicitly (dry run first); the portal then updates and revokes it", async () => {
    const foreign = cloud.foreign(["gold"]);
    const entry = {
      credentialType: "API_KEY" as const,
      apiKeyId: foreign.id,
      appName: "Migrated",
      developer: dev,
      apis: [{ id: "mc-a", usagePlans: [{ id: "gold" }] }],
    };
    expect(await s.credhook.orchestrator.adopt([entry], { dryRun: true })).toEqual([
      { publicId: foreign.id, action: "would adopt", gateway: "mc" },
    ]);
    expect(cloud.keys.get(foreign.id)!.mark).toBeUndefined();
    const [adopted] = await s.credhook.orchestrator.adopt([entry]);
    expect(adopted).toMatchObject({ publicId: foreign.id, action: "adopted", gateway: "mc" });
    expect(cloud.keys.get(foreign.id)!.mark).toEqual({ gateway: "mc", credentialId: adopted!.credentialId });
    expect(await s.credhook.orchestrator.adopt([entry])).toEqual([
      {
        publicId: foreign.id,
        action: "skipped",
        gateway: "mc",
        reason: "credhook already holds this credential",
        already: true,
      },
    ]);
    const upd = await s.post("/v1/updateCredentials", {
      credentialType: "API_KEY",
      apiKeyId: foreign.id,
      apis: [{ id: "mc-a", action: "NONE", usagePlans: [{ id: "silver", action: "ADDED" }] }],
    });
    expect(upd.status).toBe(204);
    expect(cloud.keys.get(foreign.id)!.plans).toEqual(["gold", "silver"]);
    expect((await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: foreign.id })).status).toBe(
      204,
    );
    expect(cloud.live()).toEqual([]);
  });

  it("credhook adopt on the command line validates its file and reports each entry", async () => {
    const file = join(s.dir, "adopt.json");
    writeFileSync(file, JSON.stringify([{ credentialType: "API_KEY", appName: "X", developer: dev, apis: [] }]));
    const bad = await runCli(["adopt", file, "--config", join(s.dir, "webhook.config.yaml")]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(`${file}[0].apis must NOT have fewer than 1 items`);
    writeFileSync(
      file,
      JSON.stringify([
        { credentialType: "API_KEY", apiKeyId: "nosuchkey", appName: "X", developer: dev, apis: [{ id: "mc-a" }] },
      ]),
    );
    const dry = await runCli(["adopt", file, "--dry-run", "--config", join(s.dir, "webhook.config.yaml")]);
    expect(dry.stdout).toContain("[dry run] would adopt 1 of 1");
    expect(dry.stdout).toContain("  - nosuchkey (gateway mc): would adopt");
    const real = await runCli(["adopt", file, "--config", join(s.dir, "webhook.config.yaml")]);
    expect(real.code).toBe(1); // the CLI's own process has an empty fake cloud: the gateway says the key does not exist
    expect(real.stdout).toContain("  - nosuchkey (gateway mc): skipped: [gateway mc] key nosuchkey does not exist");
  });
});

describe("a replayed create", () => {
  it("with another API set applies the difference, as an update would, and returns the same credential", async () => {
    const first = (await (await create("Replayed", [{ id: "mc-a", usagePlans: [{ id: "gold" }] }])).json()) as {
      apiKeyId: string;
      apiKey: string;
    };
    const again = await create("Replayed", [
      { id: "mc-a", usagePlans: [{ id: "gold" }, { id: "silver" }] },
      { id: "other-api" },
    ]);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ apiKeyId: first.apiKeyId, apiKey: first.apiKey });
    expect(cloud.keys.get(first.apiKeyId)!.plans).toEqual(["gold", "silver"]);
    const rec = await s.credhook.store.findByPublicId("API_KEY", first.apiKeyId);
    expect(rec!.apis.map((a) => [a.id, a.gateway, a.usagePlans])).toEqual([
      ["mc-a", "mc", ["gold", "silver"]],
      ["other-api", "local", []],
    ]);
    expect(rec!.bindings.map((b) => b.gateway)).toEqual(["mc", "local"]);
    expect(
      (await s.call("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: first.apiKeyId })).status,
    ).toBe(204);
    expect(await localKeys()).toBe(0);
  });
});

describe("reconcile", () => {
  it("says how many records it skipped as too recent, and how to include them", async () => {
    const { apiKeyId } = (await (await create("Recent", [{ id: "mc-a" }])).json()) as { apiKeyId: string };
    const rec = (await s.credhook.store.findByPublicId("API_KEY", apiKeyId))!;
    // Earlier cases of this file may have left recent unfinished records of their own: count this one on top.
    const earlier = (await s.credhook.orchestrator.reconcile({ dryRun: true })).skippedRecent;
    await s.credhook.store.save({ ...rec, status: "revoking", updatedAt: new Date(Date.now() + skewMs).toISOString() }); // now, on the server's clock
    const report = await s.credhook.orchestrator.reconcile({ dryRun: true });
    expect(report.skippedRecent).toBe(earlier + 1);
    expect(formatReconcileReport(report, 60)).toContain(
      `skipped as too recent: ${earlier + 1} unfinished record(s) written in the last 60 s (possibly a running server's requests in flight); run again later, or with --older-than 0 when no server is running`,
    );
    const now = await s.credhook.orchestrator.reconcile({ olderThanMs: 0 });
    expect(now.unfinished).toContainEqual(
      expect.objectContaining({ credentialId: rec.id, op: "revoke", action: "revoked and deleted" }),
    );
    expect(cloud.live()).toEqual([]);
  });

  it("revokes a marked key whose record says it was abandoned (garbage, not drift), and reports keys no record explains as drift only", async () => {
    cloud.script.createLandsLateMs = 100;
    cloud.script.findFailures = 3; // the request's own search fails: only reconcile will see the late key
    expect((await create("Garbage", [{ id: "mc-a" }])).status).toBe(504);
    await until("the late write to land", () => cloud.live().length === 1);
    const stray = cloud.live()[0]!;
    const unknownMark = cloud.foreign();
    unknownMark.mark = { gateway: "mc", credentialId: "00000000-0000-4000-8000-000000000000" }; // credhook's mark, no record at all
    const report = await s.credhook.orchestrator.reconcile({});
    expect(report.abandoned).toEqual([
      expect.objectContaining({
        errors: [],
        action: expect.stringMatching(/^cleaned up \(1 resource\(s\) revoked\); record kept until /),
      }),
    ]);
    expect(report.garbage).toEqual([expect.objectContaining({ gateway: "mc", nativeId: stray.id })]);
    expect(report.orphans).toEqual([expect.objectContaining({ gateway: "mc", nativeId: unknownMark.id })]);
    expect(cloud.live().map((k) => k.id)).toEqual([unknownMark.id]);
    for (const r of await s.credhook.store.listAbandoned()) await s.credhook.store.delete(r.id);
  });
});

describe("the sweep of credhook serve", () => {
  it("revokes a late-landing key on its own timer and deletes the record once settled", async () => {
    const timed = await startTestServer(yaml("{ abandonedIntervalS: 1, settleS: 1 }"));
    try {
      cloud.script.createLandsLateMs = 200;
      expect(
        (await timed.post("/v1/createCredentials", { appName: "Timed", developer: dev, apis: [{ id: "mc-a" }] }))
          .status,
      ).toBe(504);
      await until("the late write to land", () => cloud.live().length === 1);
      await until("the sweep to revoke it", () => cloud.live().length === 0, 30_000);
      await until("the record to settle", async () => (await timed.credhook.store.list()).length === 0, 30_000);
      // The pass logs once it has finished, a moment after the record is gone.
      await until("the sweep's log line", () => timed.logs.some((l) => l.includes("abandoned creates swept")), 30_000);
    } finally {
      await timed.close();
    }
  });
});

/** Runs the credhook CLI in a child process; its exit code and output. */
function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const bin = fileURLToPath(new URL("../bin/credhook.mjs", import.meta.url));
  const child = spawnTracked(process.execPath, [bin, ...args], {
    env: { ...process.env, CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: s.dir, AUTH },
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
}
