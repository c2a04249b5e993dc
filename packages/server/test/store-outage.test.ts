/**
 * The database away, at start and while serving (issue: "when the parts credhook stands on
 * fail"). A TCP switch stands between credhook and PostgreSQL: switched off, it refuses new
 * connections and cuts the open ones, as a database that restarts or fails over does.
 * - at start: credhook listens, /livez 204, /readyz 503, requests 503 + Retry-After; it waits
 *   with backoff and serves once the database is back; with `failFast` the start fails naming
 *   store.postgres;
 * - while serving: every answer that needs the store is 503 + Retry-After with "the credential
 *   store is unavailable" (never 500, never a gateway's fault — AWS's rate-limit slot is
 *   booked in PostgreSQL), /v1/health names the store, /readyz follows within seconds both
 *   ways, and the outage is logged once, not per failed call.
 */
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer as createNetServer, connect, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { startAwsFake, type AwsFake } from "@credhook/fakes/aws";
import { createLogger, loadConfigFile, startServer, type RunningServer } from "../src/index.js";
import { AUTH, errorOf, freePort, PASSWORD, restartablePort, until } from "./helpers.js";

const url = new URL(inject("databaseUrl"));
const schema = `outage_${randomUUID().replace(/-/g, "").slice(0, 12)}`;

/** A TCP switch in front of PostgreSQL: {@link DbSwitch.off} refuses and cuts connections, {@link DbSwitch.on} lets them through again. */
class DbSwitch {
  private server: NetServer | undefined;
  private readonly sockets = new Set<Socket>();
  constructor(readonly port: number) {}

  async on(): Promise<void> {
    const server = createNetServer((client) => {
      const upstream = connect(Number(url.port), url.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", resolve);
    });
    this.server = server;
  }

  async off(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}

let aws: AwsFake;
let db: DbSwitch;
let dir: string;

const yaml = (failFast: boolean) => `
server:
  auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] }
store: { postgres: { url: "postgres://${url.username}:${url.password}@127.0.0.1:${db.port}${url.pathname}", schema: ${schema}, failFast: ${failFast}, connectionTimeoutMs: 2000 } }
dataDir: "\${CREDHOOK_DATA_DIR}"
reconcile: { intervalS: 1 }
gateways:
  aws:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "${"${AWS_ENDPOINT}"}", credentials: { accessKeyId: fake, secretAccessKey: fake } }
  local: { provider: local, credentialType: API_KEY }
routes:
  - { apis: ["5aba4csvd4"], gateway: aws }
  - { default: local }
`;

async function start(failFast: boolean, port: number, logs: string[]): Promise<RunningServer> {
  const file = join(dir, `webhook-${failFast}.config.yaml`);
  writeFileSync(file, yaml(failFast));
  const config = await loadConfigFile(file, {
    env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir, AWS_ENDPOINT: aws.url },
  });
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(...String(chunk).split("\n").filter(Boolean));
      cb();
    },
  });
  return startServer(config, { port, host: "127.0.0.1", logger: createLogger("info", sink) });
}

const post = (base: string, path: string, body: unknown) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: AUTH, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  aws = await startAwsFake();
  aws.apiGateway.addUsagePlan({
    id: "1el57v",
    name: "Orders Gold",
    apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }],
  });
  // Below the kernel's ephemeral range: while the switch is off, no other test's connection can take its port.
  db = new DbSwitch(await restartablePort());
  dir = mkdtempSync(join(tmpdir(), "credhook-outage-"));
});
afterAll(async () => {
  await db?.off();
  await aws?.close();
});

it("with failFast, a start with the database away fails at once, naming store.postgres", async () => {
  const err = (await start(true, 0, []).catch((e: unknown) => e)) as { messages?: string[] };
  expect(err.messages?.[0]).toBe("the credential store is unavailable");
  expect(err.messages?.[1]).toMatch(/^store\.postgres: .*connection refused \(ECONNREFUSED\)/);
});

it("a start with the database away listens and reports not ready, then serves once it is back; while serving, an outage answers 503 + Retry-After and readiness follows it within seconds", async () => {
  const logs: string[] = [];
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const starting = start(false, port, logs);
  starting.catch(() => undefined);
  await until(
    "the server to listen",
    () =>
      fetch(`${base}/livez`).then(
        (r) => r.status === 204,
        () => false,
      ),
    20_000,
  );
  expect((await fetch(`${base}/readyz`)).status).toBe(503);
  const early = await post(base, "/v1/createCredentials", {
    appName: "Early",
    developer: "dev@example.com",
    apis: [{ id: "weather" }],
  });
  expect(early.status).toBe(503);
  expect(early.headers.get("retry-after")).toBe("5");
  expect((await errorOf(early)).messages[0]).toMatch(/credential store is not reachable yet/);
  await new Promise((r) => setTimeout(r, 1500)); // a few attempts of the backoff
  await db.on();
  const running = await starting;
  try {
    await until("ready", () => fetch(`${base}/readyz`).then((r) => r.status === 204), 10_000);
    const startLog = logs.filter((l) => l.includes('"store":"store.postgres"'));
    expect(startLog[0]).toContain("the credential store is unavailable");
    expect(startLog[0]).toContain("store.postgres: connecting at start failed: connection refused (ECONNREFUSED)");
    expect(startLog.some((l) => l.includes("the credential store is available again"))).toBe(true);
    const created = await post(base, "/v1/createCredentials", {
      appName: "Before",
      developer: "dev@example.com",
      apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    });
    expect(created.status).toBe(200);
    const { apiKeyId } = (await created.json()) as { apiKeyId: string };

    // The database goes away while serving.
    const logsBefore = logs.length;
    await db.off();
    const awsCallsBefore = aws.requests().length;
    const answers: Response[] = [];
    for (let i = 0; i < 10; i++) {
      answers.push(
        await post(base, "/v1/createCredentials", {
          appName: `During ${i}`,
          developer: "dev@example.com",
          apis: [{ id: "weather" }],
        }),
      );
      answers.push(
        await post(base, "/v1/updateCredentials", {
          appName: "Before",
          developer: "dev@example.com",
          credentialType: "API_KEY",
          apiKeyId,
          apis: [{ id: "5aba4csvd4", action: "NONE", usagePlans: [{ id: "1el57v", action: "NONE" }] }],
        }),
      );
    }
    for (const res of answers) {
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      const body = await errorOf(res);
      expect(body.messages[0]).toBe("the credential store is unavailable");
      expect(body.messages[1]).toMatch(/^store\.postgres: /);
      expect(body.messages.join(" ")).not.toMatch(/gateway|AWS/);
    }
    expect(aws.requests().length).toBe(awsCallsBefore); // no cloud call reached AWS
    const health = await fetch(`${base}/v1/health`, { headers: { authorization: AUTH } });
    expect(health.status).toBe(503);
    const hb = await errorOf(health);
    expect(hb.messages[0]).toBe("the credential store is unavailable");
    expect(hb.messages.join(" ")).not.toMatch(/gateway 'aws'|AWS/);
    const t0 = Date.now();
    await until("not ready", () => fetch(`${base}/readyz`).then((r) => r.status === 503), 10_000);
    const notReadyMs = Date.now() - t0;
    // Bounded logging: a few lines for the outage, not one per failed call (the request lines aside).
    const outageLines = logs.slice(logsBefore).filter((l) => !l.includes('"msg":"request completed"'));
    expect(outageLines.length, outageLines.join("\n")).toBeLessThanOrEqual(6);

    await db.on();
    const t1 = Date.now();
    // Ready again once the database answers: waited for with a generous bound; the time is printed, not asserted.
    await until("ready again", () => fetch(`${base}/readyz`).then((r) => r.status === 204), 30_000);
    const readyAgainMs = Date.now() - t1;
    const after = await post(base, "/v1/createCredentials", {
      appName: "After",
      developer: "dev@example.com",
      apis: [{ id: "weather" }],
    });
    expect(after.status).toBe(200);
    console.log(
      `store outage: 20 answers during the outage, all 503 + Retry-After naming store.postgres; not ready after ${notReadyMs} ms, ready again ${readyAgainMs} ms after the database came back; ${outageLines.length} log lines for the outage besides request lines`,
    );
  } finally {
    await running.close();
  }
}, 60_000);
