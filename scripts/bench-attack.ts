/**
 * Benchmark of the HTTP edge under attack, on the embedded default with a scrypt
 * password hash (the quick start's kind): the portal's latency while others
 * brute-force the password from 50 addresses, or from the portal's own address,
 * or flood it with oversized uploads and trickled bodies. Prints the portal's
 * latency percentiles (ms), what the attackers got, and how many password-hash
 * checks the attack cost (its 401s); asserts nothing.
 *
 *   npx --yes pnpm@10 bench:attack [seconds per scenario=5]
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import {
  createLogger,
  hashPassword,
  loadConfigFile,
  startServer,
  type RunningServer,
} from "../packages/server/src/index.js";

const SECONDS = Number(process.argv[2] ?? 5);
const PASSWORD = "bench-attack-portal-password";
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
const PORTAL = basic("portal", PASSWORD);

/** GET /v1/health from `from` on a new connection: status and ms. */
function health(
  server: RunningServer,
  authorization: string,
  from = "127.0.0.1",
): Promise<{ status: number; ms: number }> {
  const t = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: server.port,
        path: "/v1/health",
        localAddress: from,
        agent: false,
        headers: { authorization },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode!, ms: performance.now() - t }));
      },
    );
    req.on("error", () => resolve({ status: 0, ms: performance.now() - t }));
    req.end();
  });
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(1) : "-";
};

/** The portal calls health back to back for `ms`; its latencies. */
async function portal(
  server: RunningServer,
  ms: number,
  from = "127.0.0.1",
): Promise<{ times: number[]; statuses: Map<number, number> }> {
  const times: number[] = [];
  const statuses = new Map<number, number>();
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const r = await health(server, PORTAL, from);
    times.push(r.ms);
    statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 10));
  }
  return { times, statuses };
}

/**
 * Brute force from a worker thread (its own event loop, so the attackers' client
 * work does not slow the server's): `connections` loops of wrong passwords for
 * `ms`, connection c from 127.0.0.(10 + c) when `spread`, else from 127.0.0.1.
 * Resolves with the statuses they got.
 */
function attack(server: RunningServer, ms: number, connections: number, spread: boolean): Promise<Map<number, number>> {
  const code = `
    const { request } = require("node:http");
    const { workerData, parentPort } = require("node:worker_threads");
    const { port, ms, connections, spread } = workerData;
    const statuses = {};
    const end = Date.now() + ms;
    const once = (c, i) => new Promise((resolve) => {
      const authorization = "Basic " + Buffer.from("portal:guess-" + c + "-" + i).toString("base64");
      const req = request({ host: "127.0.0.1", port, path: "/v1/health", localAddress: spread ? "127.0.0." + (10 + c) : "127.0.0.1", agent: false, headers: { authorization } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode));
      });
      req.on("error", () => resolve(0));
      req.end();
    });
    Promise.all(Array.from({ length: connections }, async (_, c) => {
      for (let i = 0; Date.now() < end; i++) { const st = await once(c, i); statuses[st] = (statuses[st] || 0) + 1; }
    })).then(() => parentPort.postMessage(statuses));
  `;
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { port: server.port, ms, connections, spread } });
    w.once("message", (m: Record<string, number>) => {
      resolve(new Map(Object.entries(m).map(([k, v]) => [Number(k), v])));
      void w.terminate();
    });
    w.once("error", reject);
  });
}

/** An upload announcing `bytes` that keeps sending until the server closes; resolves on close. */
function floodUpload(server: RunningServer, bytes: number): Promise<void> {
  return new Promise((resolve) => {
    const s = connect({ port: server.port, host: "127.0.0.1" });
    const chunk = Buffer.alloc(1 << 20, 0x61);
    s.on("connect", () => {
      s.write(
        `POST /v1/createCredentials HTTP/1.1\r\nHost: x\r\nAuthorization: ${PORTAL}\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`,
      );
      const pump = () => {
        while (!s.destroyed && s.write(chunk));
      };
      s.on("drain", pump);
      pump();
    });
    s.on("error", () => undefined);
    s.on("close", () => resolve());
  });
}

/** A body trickled one byte every 500 ms; resolves when the server closes the connection. */
function trickle(server: RunningServer): Promise<void> {
  return new Promise((resolve) => {
    const s = connect({ port: server.port, host: "127.0.0.1" });
    let timer: NodeJS.Timeout;
    s.on("connect", () => {
      s.write(
        `POST /v1/createCredentials HTTP/1.1\r\nHost: x\r\nAuthorization: ${PORTAL}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`,
      );
      timer = setInterval(() => s.write("{"), 500);
    });
    s.on("error", () => undefined);
    s.on("close", () => {
      clearInterval(timer);
      resolve();
    });
  });
}

const show = (m: Map<number, number>) => JSON.stringify(Object.fromEntries([...m].sort((a, b) => a[0] - b[0])));
function report(label: string, p: { times: number[]; statuses: Map<number, number> }, extra: string) {
  console.log(
    `${label.padEnd(44)} portal: ${p.times.length} calls ${show(p.statuses)}, p50 ${pct(p.times, 50)} ms, p95 ${pct(p.times, 95)} ms, p99 ${pct(p.times, 99)} ms, max ${pct(p.times, 100)} ms; ${extra}`,
  );
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "credhook-bench-attack-"));
  const hash = await hashPassword(PASSWORD);
  writeFileSync(
    join(dir, "webhook.config.yaml"),
    `server:\n  auth:\n    users:\n      - { username: portal, passwordHash: "${hash}" }\nstore: { sqlite: ./credhook.db }\ndataDir: .\ngateways: { local: { provider: local, credentialType: API_KEY } }\nroutes: [ { default: local } ]\n`,
  );
  const fresh = async () =>
    startServer(await loadConfigFile(join(dir, "webhook.config.yaml")), {
      port: 0,
      host: "127.0.0.1",
      logger: createLogger("silent"),
    });
  const ms = SECONDS * 1000;

  let server = await fresh();
  report("idle (the portal alone)", await portal(server, ms), "-");
  await server.close();

  server = await fresh();
  await health(server, PORTAL); // the portal has logged in before the attack
  let [p, a] = await Promise.all([portal(server, ms), attack(server, ms, 50, true)]);
  report("brute force, 50 addresses × 1 connection", p, `attackers ${show(a)} (hash checks: ${a.get(401) ?? 0})`);
  await server.close();

  server = await fresh();
  await health(server, PORTAL);
  [p, a] = await Promise.all([portal(server, ms), attack(server, ms, 100, false)]);
  report("brute force, 100 connections, portal's address", p, `attackers ${show(a)} (hash checks: ${a.get(401) ?? 0})`);
  await server.close();

  server = await fresh();
  await health(server, PORTAL);
  const floods = { uploads: 0, trickles: 0 };
  const end = Date.now() + ms;
  const loop = async (f: () => Promise<void>, k: keyof typeof floods) => {
    while (Date.now() < end) {
      await f();
      floods[k]++;
    }
  };
  const [pf] = await Promise.all([
    portal(server, ms),
    ...Array.from({ length: 4 }, () => loop(() => floodUpload(server, 10 << 20), "uploads")),
    ...Array.from({ length: 4 }, () => loop(() => trickle(server), "trickles")),
  ]);
  report(
    "4 × 10 MB uploads + 4 trickled bodies",
    pf,
    `uploads refused and closed: ${floods.uploads}, trickles cut off: ${floods.trickles}`,
  );
  await server.close();
}

await main();
