/**
 * The lost-lock trial (fencing): two `credhook serve` processes, A and B, on one
 * PostgreSQL database and the AWS API Gateway fake. A's update of an app waits
 * on a slow CreateUsagePlanKey; meanwhile A's lock session is terminated
 * (`pg_terminate_backend`, as a database restart or failover does to every
 * session), and B is asked to update the same app. A must stop before its next
 * write and leave its record for recovery; B must not act on the app until A
 * has stopped. Every AWS call of both is timed at a proxy in front of the fake:
 * never may a call of A and a call of B overlap in time.
 */
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { randomUUID } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appKeyOf } from "@credhook/core/store";
import { openPostgresStore, type PostgresCredentialStore } from "@credhook/store-postgres";
import type { AwsFake } from "@credhook/fakes/aws";
import { terminateLockSession } from "../../store-postgres/test/lock-sessions.js";
import { PROCESS_START_MS, spawnServe, until, type ServeProcess, startOrdersAwsFake } from "./helpers.js";

const PASSWORD = "lost-lock-test-password";
const AUTH = `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`;
const url = inject("databaseUrl");
const schema = `lostlock_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
const TRIALS = 10;
/** How long the held CreateUsagePlanKey takes. */
const SLOW_MS = 1500;

/** One AWS call as the proxy saw it: which instance (the access key it signed with), what, and when. */
interface Call {
  who: string;
  what: string;
  start: number;
  end: number;
}

let aws: AwsFake;
let proxy: Server;
let store: PostgresCredentialStore;
const calls: Call[] = [];
const children: ChildProcess[] = [];

const YAML = `
server:
  port: 0
  logLevel: info
  auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] }
store: { postgres: { url: "\${DATABASE_URL}", schema: ${schema} } }
reconcile: { intervalS: 0, abandonedIntervalS: 0 }
gateways:
  aws:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "\${AWS_ENDPOINT}", credentials: { accessKeyId: "\${AWS_KEY_ID}", secretAccessKey: fake } }
  local: { provider: local, credentialType: API_KEY }
routes:
  - { apis: ["5aba4csvd4"], gateway: aws }
  - { default: local }
`;

function serve(name: string, config: string): Promise<ServeProcess> {
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  return spawnServe(
    config,
    { CREDHOOK_PASSWORD: PASSWORD, DATABASE_URL: url, AWS_ENDPOINT: proxyUrl, AWS_KEY_ID: name },
    children,
  );
}

let a: ServeProcess;
let b: ServeProcess;

beforeAll(async () => {
  aws = await startOrdersAwsFake();
  // A proxy in front of the fake times every call and tells the instances apart by the access key they sign with.
  proxy = createServer((req, res) => {
    const call: Call = {
      who: /Credential=([^/]+)\//.exec(String(req.headers.authorization ?? ""))?.[1] ?? "?",
      what: `${req.method} ${req.url}`,
      start: performance.now(),
      end: Number.POSITIVE_INFINITY,
    };
    calls.push(call);
    const upstream = request(`${aws.url}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
      up.on("end", () => (call.end = performance.now()));
    });
    upstream.on("error", () => {
      call.end = performance.now();
      res.destroy();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  store = await openPostgresStore({ url, schema });
  const dir = mkdtempSync(join(tmpdir(), "credhook-lost-lock-"));
  const config = join(dir, "webhook.config.yaml");
  writeFileSync(config, YAML);
  [a, b] = await Promise.all([serve("instanceA", config), serve("instanceB", config)]);
}, 60_000 + PROCESS_START_MS);

afterAll(async () => {
  for (const c of children) c.kill("SIGTERM");
  await Promise.all(
    children.map((c) =>
      c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once("exit", r)) : undefined,
    ),
  );
  await store?.close();
  await new Promise((r) => proxy?.close(r));
  await aws?.close();
});

const post = (base: string, path: string, body: unknown) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: AUTH, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

/** Pairs of calls, one of each instance, whose times overlap. */
function overlaps(trial: Call[]): Array<[Call, Call]> {
  const out: Array<[Call, Call]> = [];
  for (const x of trial)
    for (const y of trial)
      if (x.who === "instanceA" && y.who === "instanceB" && x.start < y.end && y.start < x.end) out.push([x, y]);
  return out;
}

it(`the lost-lock trial, ${TRIALS} times: an instance that loses its lock stops, the other waits for it, and their AWS calls never interleave`, async () => {
  const figures: Array<{ overlaps: number; a: number; b: number; bWaitedMs: number; aCalls: number; bCalls: number }> =
    [];
  for (let i = 0; i < TRIALS; i++) {
    const app = { appName: `Fenced ${i}`, developer: "dev@example.com" };
    const created = await post(a.url, "/v1/createCredentials", {
      ...app,
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(created.status).toBe(200);
    const { apiKeyId } = (await created.json()) as { apiKeyId: string };
    const base = { ...app, credentialType: "API_KEY", apiKeyId, updatedAt: new Date().toISOString() };
    const from = calls.length;
    aws.faults.latency(SLOW_MS, { operation: "CreateUsagePlanKey", count: 1 });
    const t0 = performance.now();
    // A: attach the beta plan — its CreateUsagePlanKey is held by the fake.
    const aAnswer = post(a.url, "/v1/updateCredentials", {
      ...base,
      apis: [
        {
          id: "5aba4csvd4",
          action: "NONE",
          usagePlans: [
            { id: "1el57v", action: "NONE" },
            { id: "2plan2", action: "ADDED" },
          ],
        },
      ],
    });
    await until(
      "A's CreateUsagePlanKey to be in flight",
      () => calls.slice(from).some((c) => c.who === "instanceA" && c.what.startsWith("POST /usageplans/2plan2/keys")),
      20_000,
    );
    expect(await terminateLockSession(url, schema, appKeyOf(app))).toBe(1);
    // B: the portal retries elsewhere — detach the gold plan.
    const bAnswer = post(b.url, "/v1/updateCredentials", {
      ...base,
      apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "1el57v", action: "REMOVED" }] }],
    });
    const [ra, rb] = await Promise.all([aAnswer, bAnswer]);
    const aBody = ra.status === 204 ? undefined : ((await ra.json()) as { messages: string[] });
    // A lost its lock mid-update: it stopped with 503 + Retry-After, the store's failure, never a gateway's.
    expect(ra.status, JSON.stringify(aBody)).toBe(503);
    expect(ra.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(aBody!.messages[0]).toBe("the credential store is unavailable");
    expect(rb.status, await rb.clone().text()).toBe(204);
    const trial = calls.slice(from);
    const bad = overlaps(trial);
    const bFirst = Math.min(...trial.filter((c) => c.who === "instanceB").map((c) => c.start));
    const aLast = Math.max(...trial.filter((c) => c.who === "instanceA").map((c) => c.end));
    figures.push({
      overlaps: bad.length,
      a: ra.status,
      b: rb.status,
      bWaitedMs: Math.round(bFirst - t0),
      aCalls: trial.filter((c) => c.who === "instanceA").length,
      bCalls: trial.filter((c) => c.who === "instanceB").length,
    });
    expect(bad, JSON.stringify(bad.map(([x, y]) => [x.what, y.what]))).toEqual([]);
    expect(bFirst).toBeGreaterThanOrEqual(aLast);
    // B finished A's interrupted update (rolled back) and applied its own: the cloud and the record agree.
    const rec = await store.findByPublicId("API_KEY", apiKeyId);
    expect(rec?.status).toBe("active");
    expect(aws.apiGateway.plansOfKey(apiKeyId)).toEqual([]);
    expect(rec!.apis.flatMap((x) => x.usagePlans ?? [])).toEqual([]);
  }
  console.log(
    `lost-lock trial: ${TRIALS} trials, overlaps ${figures.reduce((n, f) => n + f.overlaps, 0)}; A answered ${figures.map((f) => f.a).join(",")}; B answered ${figures.map((f) => f.b).join(",")}; B's first AWS call after A's held call began (ms): ${figures.map((f) => f.bWaitedMs).join(",")}; AWS calls A/B per trial: ${figures.map((f) => `${f.aCalls}/${f.bCalls}`).join(",")}`,
  );
  expect(b.output()).toContain("finished an interrupted operation before this request");
  // No error logged but the request lines of A's 503s.
  const errors = (a.output() + b.output())
    .split("\n")
    .filter((l) => l.includes('"level":50') && !l.includes('"msg":"request completed"'));
  expect(errors).toEqual([]);
}, 240_000);
