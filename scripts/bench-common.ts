/**
 * What `pnpm bench` (scripts/bench-server.ts) and its `--scale` mode (scripts/bench-scale.ts) share: a process's
 * CPU time and memory from /proc, autocannon in a process of its own, `credhook serve` started as a child process
 * and stopped with the run, and the webhook's create → update → revoke cycle with the server's CPU per request.
 * Linux only (/proc); nothing here asserts anything.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./ports.js";

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The median of `xs` (the upper one of an even count); `xs` is not changed. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** `bytes` in whole MiB, for the printed lines. */
export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

/** A memory field (`VmRSS`, `VmHWM`, …) of a process's /proc status, bytes; NaN when absent (Linux). */
function statusBytes(pid: number, field: string): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** Resident memory of a process, bytes (Linux /proc). */
export const rssOf = (pid: number): number => statusBytes(pid, "VmRSS");

/** Peak resident memory of a process so far, bytes (Linux /proc: `VmHWM`, the high-water mark of `VmRSS`). */
export const peakRssOf = (pid: number): number => statusBytes(pid, "VmHWM");

/** CPU time a process has used so far (user + system), µs (Linux /proc; clock ticks of 10 ms). */
export function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime, stime (fields 14 and 15 of proc(5))
}

/** The status of one plain GET, or 0 when it cannot connect. */
export function getStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}

/** One autocannon run's figures (see scripts/bench-load.mjs). */
export type Load = {
  rps: number;
  total: number;
  seconds: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  cpuUsPerRequest: number;
};

/**
 * autocannon in its own process (scripts/bench-load.mjs) with `options` (autocannon's, and bench-load's `kind`,
 * `auth`, `idsIn`, `idsOut`, `tag`; `connections` must be given). `cpuUsPerRequest` is this process's CPU time per
 * request; {@link cycle} replaces it with the server's.
 */
export async function load(options: Record<string, unknown>): Promise<Load> {
  const runner = new URL("./bench-load.mjs", import.meta.url).pathname;
  const cpu = process.cpuUsage();
  const { stdout } = await promisify(execFile)(process.execPath, [runner, JSON.stringify(options)], {
    maxBuffer: 1 << 20,
  });
  const used = process.cpuUsage(cpu);
  const r = JSON.parse(stdout) as Omit<Load, "cpuUsPerRequest">;
  return {
    ...r,
    rps: r.total / Math.max(r.seconds, 1e-3),
    cpuUsPerRequest: (used.user + used.system) / Math.max(1, r.total),
  };
}

/** A server under test in its own process. */
export interface Target {
  name: string;
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Waits until a GET of `url` answers a status `expect` accepts, polling every 5 ms.
 * @throws Error when `child` exits first (naming its exit code)
 */
export async function waitReady(url: string, child: ChildProcess, expect: (status: number) => boolean): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with code ${child.exitCode}`);
    if (expect(await getStatus(url))) return;
    await sleep(5);
  }
}

/** Every server process this run started: stopped when it ends, whatever way. */
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

/** Remembers `child` (killed when this process exits) and returns a function that stops it with SIGTERM and waits for its exit. */
export function stopper(child: ChildProcess): () => Promise<void> {
  children.add(child);
  return () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
}

/** How {@link startServe} starts `credhook serve`. */
export interface ServeOptions {
  /** The checkout whose `packages/server/bin/credhook.mjs` runs (ends with `/`). */
  checkout: string;
  /** The config file. */
  config: string;
  /** Node's own flags (`--cpu-prof`, `--import`). @default none */
  nodeArgs?: string[];
  /** Added to this process's environment; PORT and CREDHOOK_GATEWAY_PORT are set here (free ports). */
  env?: Record<string, string>;
  /** Where its stdout (the log) goes: `<dir>/credhook.log`. @default a new temporary directory */
  dir?: string;
}

/** A running `credhook serve`: its URL and pid, when it first answered 204 on /readyz (ms after the spawn) and its log file. */
export type ServeTarget = Target & { readyMs: number; logFile: string };

/**
 * `credhook serve` in its own process, its log to a file; resolves at the first 204 of /readyz.
 * @throws Error when it exits before it is ready
 */
export async function startServe(options: ServeOptions): Promise<ServeTarget> {
  const [port, gatewayPort] = [await freePort(), await freePort()];
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "credhook-bench-"));
  const logFile = join(dir, "credhook.log");
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? []),
      join(options.checkout, "packages/server/bin/credhook.mjs"),
      "serve",
      "--config",
      options.config,
    ],
    {
      stdio: ["ignore", openSync(logFile, "a"), "inherit"],
      env: { ...process.env, ...options.env, PORT: String(port), CREDHOOK_GATEWAY_PORT: String(gatewayPort) },
    },
  );
  const url = `http://127.0.0.1:${port}`;
  const stop = stopper(child);
  await waitReady(`${url}/readyz`, child, (s) => s === 204);
  return { name: "credhook", url, pid: child.pid!, stop, readyMs: performance.now() - t0, logFile };
}

/** The figures of one {@link cycle}. */
export type Ops = { create: Load; update: Load; revoke: Load };

/** What one {@link cycle} runs: for how long it creates (or how many), and how. */
export interface CycleOptions {
  /** Creates for this many seconds… */
  seconds?: number;
  /** …or this many creates. */
  amount?: number;
  /** Makes the apps' names unique across cycles. */
  tag: string;
  /** The Authorization header of every request. */
  auth: string;
  /** autocannon's connections. */
  connections: number;
}

/** creates for `seconds` (or `amount` of them), then update and revoke each created credential once; CPU per request is the server process's. */
export async function cycle(t: Target, o: CycleOptions): Promise<Ops> {
  const ids = join(mkdtempSync(join(tmpdir(), "credhook-bench-ids-")), "ids");
  /** The run, with the server process's CPU time per request instead of this process's. */
  const measured = async (options: Record<string, unknown>) => {
    const cpu = cpuOf(t.pid);
    const r = await load({ url: t.url, auth: o.auth, connections: o.connections, ...options });
    return { ...r, cpuUsPerRequest: (cpuOf(t.pid) - cpu) / Math.max(1, r.total) };
  };
  const create = await measured({
    kind: "create",
    tag: o.tag,
    ...(o.amount !== undefined ? { amount: o.amount } : { duration: o.seconds ?? 5 }),
    idsOut: ids,
  });
  const update = await measured({ kind: "update", idsIn: ids });
  const revoke = await measured({ kind: "revoke", idsIn: ids });
  rmSync(dirname(ids), { recursive: true, force: true });
  return { create, update, revoke };
}
