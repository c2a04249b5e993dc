/**
 * `pnpm bench`: what credhook's own work costs, measured against what it runs on.
 *
 * 1. Webhook (create → update → revoke), 64 connections, autocannon in its own
 *    process, each server in its own process: a bare node:http server (A), a bare
 *    express 5 app with express.json() (B), both answering the same JSON, and
 *    `credhook serve` on the embedded default (C: packages/server/config/webhook.config.yaml,
 *    SQLite, one info log line per request to a file), alternating A B C A B C.
 *    Then D, "express + journal" (bench-baseline.mjs `journal`): the express app plus only the
 *    durable writes of "the intent before any gateway call" and of each change's event (the
 *    transactional outbox) through credhook's SQLite store — the floor under credhook's figures.
 *    Prints each round, the median ratios C/B, C/A and D/B, p50/p99, each server's RSS, and
 *    credhook's CPU per request split into express's, the journal's and the rest.
 * 2. Startup: `credhook serve` on the embedded default, time to the first 204 of
 *    /readyz, idle RSS, and whether any cloud SDK was loaded on the way.
 * 3. Clouds (examples/multi-cloud.yaml on the three fakes): throughput under
 *    API Gateway's quotas; then, with a proxy adding 100 ms to every cloud call,
 *    a 3-gateway create against a 1-gateway create (fan-out), and the cloud
 *    calls of a create with k usage plans and of a no-op update.
 * 4. The embedded gateway's key check against a bare node:http server.
 * 5. Behind a real NGINX: plain NGINX against key-checked NGINX (examples/nginx) to the same
 *    upstream, in the same rounds, 16 connections; revocation and a plan quota through it
 *    (scripts/bench-proxy.ts).
 * Asserts nothing; figures depend on the machine's load (the load generator shares its cores).
 *
 *   npx --yes pnpm@10 bench [--rounds 3] [--seconds 5] [--connections 64] [--only webhook,startup,clouds,check,proxy]
 *   npx --yes pnpm@10 bench --soak            credhook alone for 10 minutes, RSS over time (--soak-s N: N seconds)
 *   npx --yes pnpm@10 bench --cpu-prof DIR    writes credhook's CPU profile (node --cpu-prof) into DIR
 *   npx --yes pnpm@10 bench --lean            adds, in the same rounds, this checkout's credhook with CREDHOOK_MEMORY=lean
 *                                             (V8's --optimize-for-size: less memory, more CPU per request)
 *   npx --yes pnpm@10 bench --compare DIR     adds, in the same rounds, the credhook of another checkout
 *                                             (e.g. a worktree of main) as a fourth server: before/after
 *   npx --yes pnpm@10 bench --scale           how the figures grow with the store (scripts/bench-scale.ts):
 *                                             [--sizes 1k,100k,1M] [--stores sqlite,postgres] [--requests 3000] [--backlog 5000]
 *   BENCH_CHECK_SECONDS=5 BENCH_CHECK_CONNECTIONS=64 BENCH_CHECK_ROUNDS=3 (the key-check part)
 *   BENCH_PROXY_SECONDS=5 BENCH_PROXY_CONNECTIONS=16 BENCH_PROXY_ROUNDS=3 (the proxy part)
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createLogger, loadConfigFile, startServer } from "../packages/server/src/index.js";
import { startDemoClouds } from "../packages/server/src/demo.js";
import {
  cpuOf,
  cycle as cycleOf,
  type Load,
  load as loadWith,
  median,
  mib,
  type Ops,
  rssOf,
  type ServeTarget,
  sleep,
  startServe,
  stopper,
  type Target,
} from "./bench-common.js";
import { proxyBench } from "./bench-proxy.js";
import { freePort } from "./ports.js";

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "5" },
    connections: { type: "string", default: "64" },
    only: { type: "string" },
    soak: { type: "boolean", default: false },
    "soak-s": { type: "string" },
    "cpu-prof": { type: "string" },
    compare: { type: "string" },
    lean: { type: "boolean", default: false },
    scale: { type: "boolean", default: false },
    sizes: { type: "string", default: "1k,100k,1M" },
    stores: { type: "string", default: "sqlite,postgres" },
    requests: { type: "string", default: "3000" },
    backlog: { type: "string", default: "5000" },
  },
  allowPositionals: true,
});
const ROUNDS = Number(args.rounds);
const SECONDS = Number(args.seconds);
const CONNECTIONS = Number(args.connections);
const SOAK_S = args["soak-s"] ? Number(args["soak-s"]) : args.soak ? 600 : 0;
const ONLY = new Set((args.only ?? (SOAK_S ? "soak" : "webhook,startup,clouds,check,proxy")).split(","));
const PASSWORD = "bench-password-123";
const auth = `Basic ${Buffer.from(`portal:${PASSWORD}`).toString("base64")}`;
const root = new URL("../", import.meta.url).pathname;
/** The portal user and the SQLite store in the run's temp dir, shared by the in-process configs below. */
const YAML_HEAD = `server: { auth: { users: [ { username: portal, password: "\${CREDHOOK_PASSWORD}" } ] } }
store: { sqlite: "\${CREDHOOK_DATA_DIR}/credhook.db" }
dataDir: "\${CREDHOOK_DATA_DIR}"
`;
/** autocannon in its own process with `options`, at `--connections` unless they say otherwise. */
const load = (options: Record<string, unknown>): Promise<Load> => loadWith({ connections: CONNECTIONS, ...options });

/** A baseline's name in the output. */
const BASELINE_NAMES = { node: "bare node:http", express: "bare express 5", journal: "express + journal" } as const;

/**
 * A baseline (scripts/bench-baseline.mjs) in its own process. `journal` loads the SQLite store's
 * TypeScript sources: it runs with this process's loader (tsx, its flags in `process.execArgv`)
 * and its database in a new temporary directory.
 */
async function startBaseline(mode: keyof typeof BASELINE_NAMES): Promise<Target> {
  const port = await freePort();
  const extra = mode === "journal" ? [mkdtempSync(join(tmpdir(), "credhook-bench-journal-"))] : [];
  const child = spawn(
    process.execPath,
    [
      ...(mode === "journal" ? process.execArgv : []),
      new URL("./bench-baseline.mjs", import.meta.url).pathname,
      mode,
      String(port),
      ...extra,
    ],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`baseline ${mode} exited with code ${code}`)));
  });
  return { name: BASELINE_NAMES[mode], url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: stopper(child) };
}

/** `credhook serve` on the embedded default in its own process, its log (info, one line per request) to a file; resolves at the first 204 of /readyz. */
async function startCredhook(
  nodeArgs: string[] = [],
  env: Record<string, string> = {},
  checkout = root,
): Promise<ServeTarget> {
  const dir = mkdtempSync(join(tmpdir(), "credhook-bench-"));
  const t = await startServe({
    checkout,
    config: join(checkout, "packages/server/config/webhook.config.yaml"),
    nodeArgs,
    env: { ...env, CREDHOOK_DATA_DIR: dir, CREDHOOK_PASSWORD: PASSWORD },
    dir,
  });
  return { ...t, name: checkout === root ? "credhook (embedded)" : `credhook ${checkout}`.slice(0, 20) };
}

/** create for `seconds`, then update and revoke each created credential once (the server's CPU per request). */
const cycle = (t: Target, seconds: number, tag: string): Promise<Ops> =>
  cycleOf(t, { seconds, tag, auth, connections: CONNECTIONS });

const line = (label: string, op: string, r: Load, rss?: number) =>
  `${label.padEnd(20)} ${op.padEnd(7)} ${r.rps.toFixed(0).padStart(6)} req/s, p50 ${String(r.p50).padStart(3)} ms, p99 ${String(r.p99).padStart(4)} ms, server CPU ${r.cpuUsPerRequest.toFixed(0).padStart(4)} µs/request, ${r.total} requests, non-2xx ${r.non2xx}, errors ${r.errors}${rss !== undefined ? `, rss ${mib(rss)}` : ""}`;

async function webhook(): Promise<void> {
  const prof = args["cpu-prof"] ? ["--cpu-prof", "--cpu-prof-dir", args["cpu-prof"]] : [];
  const targets = [
    await startBaseline("node"),
    await startBaseline("express"),
    await startCredhook(prof),
    await startBaseline("journal"),
  ];
  if (args.compare)
    targets.push(await startCredhook([], {}, args.compare.endsWith("/") ? args.compare : `${args.compare}/`));
  else if (args.lean)
    targets.push({ ...(await startCredhook([], { CREDHOOK_MEMORY: "lean" })), name: "credhook (lean)" });
  console.log(
    `webhook: ${CONNECTIONS} connections, ${ROUNDS} rounds; each round per server: create for ${SECONDS} s (a new app each), then update and revoke each created credential once`,
  );
  for (const t of targets) await cycle(t, 1, "warm"); // JIT, connections, SQLite file
  const results = new Map<string, Array<Ops & { rss: number }>>(targets.map((t) => [t.name, []]));
  for (let i = 0; i < ROUNDS; i++) {
    for (const t of targets) {
      const ops = await cycle(t, SECONDS, `r${i}`);
      const rss = rssOf(t.pid);
      results.get(t.name)!.push({ ...ops, rss });
      for (const op of ["create", "update", "revoke"] as const)
        console.log(`round ${i + 1} ${line(t.name, op, ops[op], op === "revoke" ? rss : undefined)}`);
    }
  }
  const [a, b, c, j, d] = targets.map((t) => results.get(t.name)!);
  console.log(`\nmedian of ${ROUNDS} rounds (ratio: credhook's req/s over the baseline's, round by round):`);
  console.log(
    `| | ${targets
      .slice(0, 3)
      .map((t) => t.name)
      .join(
        " | ",
      )} | credhook / express | credhook / node:http | credhook p99 / express p99 | capacity: express's CPU per request / credhook's |`,
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const op of ["create", "update", "revoke"] as const) {
    const cell = (rs: Ops[]) =>
      `${median(rs.map((r) => r[op].rps)).toFixed(0)} req/s, p50 ${median(rs.map((r) => r[op].p50))} ms, p99 ${median(rs.map((r) => r[op].p99))} ms, ${median(rs.map((r) => r[op].cpuUsPerRequest)).toFixed(0)} µs CPU`;
    // Medians over the rounds of one server's figure against a baseline's in the same round.
    const ratio = (rs: Ops[], base: Ops[]) => median(rs.map((r, i) => r[op].rps / base[i]![op].rps)).toFixed(2);
    const p99 = (rs: Ops[]) => median(rs.map((r, i) => r[op].p99 / Math.max(1, b![i]![op].p99))).toFixed(2);
    const capacity = (rs: Ops[]) =>
      median(rs.map((r, i) => b![i]![op].cpuUsPerRequest / r[op].cpuUsPerRequest)).toFixed(2);
    /** A row for a server beside credhook: its cell, ratio to express, p99 over express's and capacity. */
    const besideRow = (label: string, rs: Ops[]) =>
      console.log(`| ${op}, ${label} | | | ${cell(rs)} | ${ratio(rs, b!)}× | | ${p99(rs)}× | ${capacity(rs)}× |`);
    console.log(
      `| ${op} | ${cell(a!)} | ${cell(b!)} | ${cell(c!)} | ${ratio(c!, b!)}× (goal ≥ 0.6×) | ${ratio(c!, a!)}× | ${p99(c!)}× (goal ≤ 2×) | ${capacity(c!)}× |`,
    );
    if (d) besideRow(targets[4]!.name, d);
    // The journal floor: express plus only the durable writes of "intent before any gateway call" (see bench-baseline.mjs).
    besideRow(`${targets[3]!.name} (floor)`, j!);
  }
  const total = c!.reduce((n, r) => n + r.create.total + r.update.total + r.revoke.total, 0);
  console.log(
    `RSS after the last round: ${targets.map((t, i) => `${t.name} ${mib([a, b, c, j, d][i]!.at(-1)!.rss)}`).join(", ")} (credhook after ${total} requests)`,
  );
  // What credhook's own work costs beyond the floor, per request (server CPU, medians): the goal's 0.6× leaves 1/0.6 − 1 = 0.67× express's for everything credhook adds.
  for (const op of ["create", "update", "revoke"] as const) {
    const us = (rs: Ops[]) => median(rs.map((r) => r[op].cpuUsPerRequest));
    console.log(
      `${op}: server CPU per request: express ${us(b!).toFixed(0)} µs; + journal ${(us(j!) - us(b!)).toFixed(0)} µs; credhook ${us(c!).toFixed(0)} µs, of which beyond the floor ${(us(c!) - us(j!)).toFixed(0)} µs; the 0.6× goal allows ${(us(b!) / 0.6).toFixed(0)} µs in all`,
    );
  }
  for (const t of targets) await t.stop();
}

async function soak(): Promise<void> {
  const t = await startCredhook([], args.lean ? { CREDHOOK_MEMORY: "lean" } : {});
  console.log(
    `soak${args.lean ? " (CREDHOOK_MEMORY=lean)" : ""}: credhook alone for ${SOAK_S} s, create/update/revoke cycles of 10 s, ${CONNECTIONS} connections; idle RSS ${mib(rssOf(t.pid))}`,
  );
  const t0 = performance.now();
  let requests = 0;
  for (let i = 0; (performance.now() - t0) / 1000 < SOAK_S; i++) {
    const ops = await cycle(t, Math.min(10, Math.max(1, SOAK_S - (performance.now() - t0) / 1000)), `soak${i}`);
    requests += ops.create.total + ops.update.total + ops.revoke.total;
    console.log(
      `t=${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s  requests ${String(requests).padStart(7)}  rss ${mib(rssOf(t.pid))}  create ${ops.create.rps.toFixed(0)} req/s p99 ${ops.create.p99} ms`,
    );
  }
  await sleep(5000);
  console.log(`idle 5 s after the soak: rss ${mib(rssOf(t.pid))}`);
  await t.stop();
}

async function startup(): Promise<void> {
  for (const checkout of [
    root,
    ...(args.compare ? [args.compare.endsWith("/") ? args.compare : `${args.compare}/`] : []),
  ]) {
    const trace = join(mkdtempSync(join(tmpdir(), "credhook-bench-imports-")), "imports");
    const hook = new URL("./bench-import-trace.mjs", import.meta.url).pathname;
    const runs: Array<{ readyMs: number; rss: number }> = [];
    for (let i = 0; i < 3; i++) {
      const t = await startCredhook(["--import", hook], { CREDHOOK_IMPORT_TRACE: trace }, checkout);
      await sleep(1000);
      runs.push({ readyMs: t.readyMs, rss: rssOf(t.pid) });
      await t.stop();
    }
    const pkgs = [...new Set(readFileSync(trace, "utf8").split("\n").filter(Boolean))].sort();
    const cloud = pkgs.filter((p) =>
      /^@aws-sdk\/|^@azure\/|^@google-cloud\/|^google-auth|^@smithy\/|^@credhook\/provider-(aws|azure|gcp)/.test(p),
    );
    console.log(
      `\nstartup of ${checkout === root ? "this checkout" : checkout} (credhook serve, embedded default, ${process.env.CREDHOOK_FROM_SOURCE || !existsDist(checkout) ? "TypeScript sources, transpiled as they load" : "dist build"}): ` +
        `time to the first 204 of /readyz ${runs.map((r) => r.readyMs.toFixed(0)).join(", ")} ms; idle RSS 1 s later ${runs.map((r) => mib(r.rss)).join(", ")}; ` +
        `packages loaded ${pkgs.length}; cloud SDK packages loaded: ${cloud.length === 0 ? "none" : cloud.join(", ")}`,
    );
  }
}

function existsDist(checkout: string): boolean {
  try {
    readFileSync(join(checkout, "packages/server/dist/cli.js"));
    return true;
  } catch {
    return false;
  }
}

// ------------------------------------------------------------------ clouds

const CLOUD_REQUESTS = 100;
const CLOUD_CONCURRENCY = 16;

/** In-process server on `file`; create → update → revoke of CLOUD_REQUESTS apps at CLOUD_CONCURRENCY (the multi-cloud figures). */
async function run(
  label: string,
  file: string,
  env: Record<string, string>,
  apis: (i: number) => unknown[],
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "credhook-bench-"));
  const config = await loadConfigFile(file, { env: { ...env, CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir } });
  const server = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") });
  const post = callerOf(server.url);
  const phase = async (name: string, make: (i: number) => Promise<{ ms: number; status: number }>) => {
    const times: number[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CLOUD_CONCURRENCY }, async () => {
        while (next < CLOUD_REQUESTS) {
          const r = await make(next++);
          times.push(r.ms);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      }),
    );
    const secs = (performance.now() - t0) / 1000;
    times.sort((a, b) => a - b);
    const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!.toFixed(1);
    console.log(
      `${label.padEnd(12)} ${name.padEnd(7)} ${CLOUD_REQUESTS} requests, concurrency ${CLOUD_CONCURRENCY}: ${(CLOUD_REQUESTS / secs).toFixed(0)} req/s, p50 ${pct(50)} ms, p95 ${pct(95)} ms, p99 ${pct(99)} ms, statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
  };
  const ids: string[] = [];
  await phase("create", async (i) => {
    const r = await post("/v1/createCredentials", {
      appName: `Bench ${i}`,
      developer: "bench@example.com",
      apis: apis(i),
    });
    if (r.json) ids[i] = r.json.apiKeyId;
    return r;
  });
  await phase("update", (i) =>
    post("/v1/updateCredentials", { credentialType: "API_KEY", apiKeyId: ids[i], apis: [] }),
  );
  await phase("revoke", (i) => post("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: ids[i] }));
  await server.close();
}

/** POST with the bench's Basic credentials: status, time (ms), and the JSON of a 200. */
function callerOf(base: string) {
  return async (path: string, body: unknown) => {
    const t = performance.now();
    const res = await fetch(base + path, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = res.status === 200 ? ((await res.json()) as { apiKeyId: string }) : (await res.text(), undefined);
    return { ms: performance.now() - t, status: res.status, json };
  };
}

/** A reverse proxy in front of a fake cloud that holds every call `delayMs` before forwarding it, and counts the calls. */
async function latencyProxy(
  target: string,
  delayMs: number,
): Promise<{ url: string; calls: string[]; close(): Promise<void> }> {
  const calls: string[] = [];
  const to = new URL(target);
  const server = createServer((req, res) => {
    calls.push(`${req.method} ${req.url?.split("?")[0]}`);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () =>
      setTimeout(() => {
        const out = httpRequest(
          {
            host: to.hostname,
            port: to.port,
            method: req.method,
            path: req.url,
            headers: { ...req.headers, host: to.host },
          },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          },
        );
        out.on("error", () => res.destroy());
        out.end(Buffer.concat(chunks));
      }, delayMs),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** Fan-out (3-gateway vs 1-gateway create) and cloud calls per operation, with 100 ms added to every cloud call. */
async function cloudCalls(clouds: Awaited<ReturnType<typeof startDemoClouds>>): Promise<void> {
  const DELAY = 100;
  const proxies = {
    aws: await latencyProxy(clouds.env.AWS_ENDPOINT!, DELAY),
    azure: await latencyProxy(clouds.env.AZURE_ENDPOINT!, DELAY),
    gcp: await latencyProxy(clouds.env.GCP_ENDPOINT!, DELAY),
  };
  const dir = mkdtempSync(join(tmpdir(), "credhook-bench-fanout-"));
  const file = new URL("../examples/multi-cloud.yaml", import.meta.url).pathname;
  const env = {
    AWS_ENDPOINT: proxies.aws.url,
    AZURE_ENDPOINT: proxies.azure.url,
    GCP_ENDPOINT: proxies.gcp.url,
    CREDHOOK_PASSWORD: PASSWORD,
    CREDHOOK_DATA_DIR: dir,
  };
  const server = await startServer(await loadConfigFile(file, { env }), {
    port: 0,
    host: "127.0.0.1",
    logger: createLogger("silent"),
  });
  const post = callerOf(server.url);
  const all = Object.values(proxies);
  const counted = async <T>(fn: () => Promise<T>) => {
    const before = all.map((p) => p.calls.length);
    const out = await fn();
    return { out, calls: all.flatMap((p, i) => p.calls.slice(before[i])) };
  };
  const one = [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }];
  const three = [...one, { id: "orders-eu-1", usagePlans: [{ id: "eu-gold" }] }, { id: "weather" }];
  const times: { one: number[]; three: number[] } = { one: [], three: [] };
  let n = 0;
  for (let i = 0; i < 9; i++) {
    for (const [k, apis] of [
      ["one", one],
      ["three", three],
    ] as const) {
      const r = await post("/v1/createCredentials", { appName: `Fanout ${n++}`, developer: "bench@example.com", apis });
      if (r.status !== 200) throw new Error(`fan-out create answered ${r.status}`);
      times[k].push(r.ms);
    }
  }
  console.log(
    `\nfan-out, ${DELAY} ms added to every cloud call, 9 sequential creates each, alternating: 1 gateway (AWS) median ${median(times.one).toFixed(0)} ms, ` +
      `3 gateways (AWS + Azure + embedded) median ${median(times.three).toFixed(0)} ms: ${(median(times.three) / median(times.one)).toFixed(2)}× (goal ≤ 1.05×)`,
  );
  const plans = [
    [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
    [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }, { id: "2plan2" }] }],
    [
      { id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }, { id: "2plan2" }] },
      { id: "9xk3m2p7qa", usagePlans: [{ id: "3plan3" }] },
    ],
  ];
  for (const apis of plans) {
    const { out, calls } = await counted(() =>
      post("/v1/createCredentials", { appName: `Calls ${n++}`, developer: "bench@example.com", apis }),
    );
    const k = apis.reduce((s, a) => s + a.usagePlans.length, 0);
    console.log(
      `cloud calls of a create on AWS with k = ${k} usage plan(s): ${calls.length} (${calls.join(", ")}); status ${out.status}`,
    );
    const unchanged = apis.map((a) => ({
      id: a.id,
      action: "NONE",
      usagePlans: a.usagePlans.map((p) => ({ id: p.id, action: "NONE" })),
    }));
    const noop = await counted(() =>
      post("/v1/updateCredentials", { credentialType: "API_KEY", apiKeyId: out.json!.apiKeyId, apis: unchanged }),
    );
    console.log(
      `cloud calls of a no-op update of it (same APIs and plans): ${noop.calls.length}${noop.calls.length ? ` (${noop.calls.join(", ")})` : ""}; status ${noop.out.status}`,
    );
  }
  await server.close();
  for (const p of all) await p.close();
}

async function cloudsPart(): Promise<void> {
  const clouds = await startDemoClouds();
  // AWS + Azure + embedded: one key on three gateways; bounded by API Gateway's control-plane quotas
  // (CreateApiKey and DeleteApiKey 5/s, other calls 10/s shared), which credhook's limiter enforces.
  const multi = new URL("../examples/multi-cloud.yaml", import.meta.url).pathname;
  console.log("");
  await run("multi-cloud", multi, clouds.env, () => [
    { id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] },
    { id: "orders-eu-1", usagePlans: [{ id: "eu-gold" }] },
    { id: "weather" },
  ]).catch((err: unknown) => console.log(`multi-cloud failed: ${(err as Error).message}`));
  await cloudCalls(clouds).catch((err: unknown) =>
    console.log(`fan-out / cloud calls failed: ${(err as Error).message}`),
  );
  await clouds.close();
}

// ------------------------------------------------------------------ key check

const CHECK_SECONDS = Number(process.env.BENCH_CHECK_SECONDS ?? 5);
const CHECK_CONNECTIONS = Number(process.env.BENCH_CHECK_CONNECTIONS ?? 64);
const CHECK_ROUNDS = Number(process.env.BENCH_CHECK_ROUNDS ?? 3);
const fmt = (label: string, r: Load) =>
  `${label.padEnd(42)} ${r.rps.toFixed(0).padStart(6)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, server CPU ${r.cpuUsPerRequest.toFixed(1)} µs/request, non-2xx ${r.non2xx}, errors ${r.errors}`;

async function keyCheck(): Promise<void> {
  const bare = createServer((_req, res) => {
    res.writeHead(200, { "content-length": "0" });
    res.end();
  });
  await new Promise<void>((r) => bare.listen(0, "127.0.0.1", r));
  const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;

  const dir = mkdtempSync(join(tmpdir(), "credhook-bench-check-"));
  const file = join(dir, "webhook.config.yaml");
  writeFileSync(
    file,
    `${YAML_HEAD}gateways:
  local:
    provider: local
    credentialType: API_KEY
    options: { usagePlans: [ free, { id: limited, rate: { perSecond: 1000000000 } } ] }
routes: [ { default: local } ]
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck: { apis: [ { pathPrefix: /orders/, api: orders }, { pathPrefix: /weather/, api: weather } ] }
`,
  );
  const config = await loadConfigFile(file, { env: { CREDHOOK_PASSWORD: PASSWORD, CREDHOOK_DATA_DIR: dir } });
  const server = await startServer(config, { port: 0, host: "127.0.0.1", logger: createLogger("silent") });
  const res = await fetch(`${server.url}/v1/createCredentials`, {
    method: "POST",
    headers: { authorization: auth, "content-type": "application/json" },
    body: JSON.stringify({
      appName: "Bench",
      developer: "bench@example.com",
      apis: [
        { id: "orders", usagePlans: [{ id: "free" }] },
        { id: "weather", usagePlans: [{ id: "limited" }] },
      ],
    }),
  });
  const { apiKey } = (await res.json()) as { apiKey: string };
  const check = `${server.gatewayUrl}/check`;
  const plain = { "x-api-key": apiKey, "x-original-uri": "/orders/42" };
  const limited = { "x-api-key": apiKey, "x-original-uri": "/weather/today" };

  // Warm-up (JIT, connection setup); then rounds of bare / key check / key check with a plan limit,
  // back to back, so that load from elsewhere on the machine hits both alike. The median round counts.
  await load({ url: bareUrl, connections: CHECK_CONNECTIONS, duration: 1 });
  await load({ url: check, headers: plain, connections: CHECK_CONNECTIONS, duration: 1 });
  const rounds: Array<{ b: Load; k: Load; l: Load }> = [];
  for (let i = 0; i < CHECK_ROUNDS; i++) {
    rounds.push({
      b: await load({ url: bareUrl, connections: CHECK_CONNECTIONS, duration: CHECK_SECONDS }),
      k: await load({ url: check, headers: plain, connections: CHECK_CONNECTIONS, duration: CHECK_SECONDS }),
      l: await load({ url: check, headers: limited, connections: CHECK_CONNECTIONS, duration: CHECK_SECONDS }),
    });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `\nkey check, ${CHECK_CONNECTIONS} connections, ${CHECK_ROUNDS} rounds of ${CHECK_SECONDS} s each (autocannon in its own process):`,
  );
  rounds.forEach((r, i) => {
    console.log(fmt(`round ${i + 1}: bare node:http (200, empty)`, r.b));
    console.log(fmt(`round ${i + 1}: key check (cached key)`, r.k));
    console.log(fmt(`round ${i + 1}: key check + plan limit`, r.l));
  });
  const ratio = median(rounds.map((r) => r.k.rps / r.b.rps));
  const ratioLimited = median(rounds.map((r) => r.l.rps / r.b.rps));
  // Capacity: requests per CPU-second of the serving process — independent of how fast the load generator
  // (which shares this machine's cores, and parses the key check's longer answers) can go.
  const capacity = median(rounds.map((r) => r.b.cpuUsPerRequest / r.k.cpuUsPerRequest));
  console.log(
    `key check / bare node:http, median of ${CHECK_ROUNDS} rounds: throughput ${ratio.toFixed(2)}× (goal ≥ 0.5×), with a plan limit ${ratioLimited.toFixed(2)}×; ` +
      `server capacity (requests per CPU-second) ${capacity.toFixed(2)}×; p99 key check ${median(rounds.map((r) => r.k.p99))} ms, bare ${median(rounds.map((r) => r.b.p99))} ms (goal ≤ 2 ms)`,
  );
  await server.close();
  await new Promise<void>((r) => bare.close(() => r()));
}

if (args.scale) {
  const { parseSize, scaleBench } = await import("./bench-scale.js");
  const stores = args.stores.split(",").map((s) => s.trim());
  for (const s of stores)
    if (s !== "sqlite" && s !== "postgres") throw new Error(`--stores: '${s}' is not a store (sqlite, postgres)`);
  await scaleBench({
    sizes: args.sizes.split(",").map(parseSize),
    stores: stores as Array<"sqlite" | "postgres">,
    requests: Number(args.requests),
    connections: CONNECTIONS,
    backlog: Number(args.backlog),
  });
} else {
  if (ONLY.has("soak")) await soak();
  if (ONLY.has("webhook")) await webhook();
  if (ONLY.has("startup")) await startup();
  if (ONLY.has("clouds")) await cloudsPart();
  if (ONLY.has("check")) await keyCheck();
  if (ONLY.has("proxy")) await proxyBench(load, cpuOf);
}
