/**
 * Real proxies in front of credhook's embedded gateway, for the tests (and the
 * proxy benchmark): NGINX with examples/nginx/credhook-auth.conf and Caddy with
 * examples/caddy/Caddyfile, each as shipped with only its addresses replaced, and
 * an upstream API that records what reaches it. Debian's `nginx` (with
 * `libnginx-mod-http-headers-more-filter` and `libnginx-mod-http-set-misc`) and
 * `caddy` packages; `.ci/run` installs them when missing.
 */
import { spawnSync, type ChildProcess } from "node:child_process";
import { spawnTracked } from "./children.js";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { freePort } from "../../../scripts/ports.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The first existing file among `candidates` and `<each PATH dir>/<name>`. */
function findBinary(name: string, candidates: Array<string | undefined>): string | undefined {
  return candidates
    .concat((process.env.PATH ?? "").split(":").map((d) => join(d, name)))
    .find((p): p is string => !!p && existsSync(p));
}

/** The NGINX binary (`NGINX_BIN`, else the usual places), or undefined. */
export const NGINX_BIN = findBinary("nginx", [
  process.env.NGINX_BIN,
  "/usr/sbin/nginx",
  "/usr/local/sbin/nginx",
  "/usr/local/nginx/sbin/nginx",
]);
/** The Caddy binary (`CADDY_BIN`, else the usual places), or undefined. */
export const CADDY_BIN = findBinary("caddy", [process.env.CADDY_BIN, "/usr/bin/caddy", "/usr/local/bin/caddy"]);
/** Debian's dynamic NGINX modules examples/nginx needs (NDK, set-misc, headers-more), in load order; undefined when one is missing. */
export const NGINX_MODULES = (() => {
  const dir = ["/usr/lib/nginx/modules", "/usr/share/nginx/modules"].find((d) =>
    existsSync(join(d, "ngx_http_headers_more_filter_module.so")),
  );
  const files = ["ndk_http_module.so", "ngx_http_set_misc_module.so", "ngx_http_headers_more_filter_module.so"].map(
    (f) => join(dir ?? "/nonexistent", f),
  );
  return files.every((f) => existsSync(f)) ? files : undefined;
})();

export { freePort };

/** Path of a file of the repository's examples/ folder. */
export const examplePath = (rel: string) => fileURLToPath(new URL(`../../../examples/${rel}`, import.meta.url));

/** What reached the upstream API. */
export interface Seen {
  path: string;
  headers: IncomingHttpHeaders;
}

/** An upstream API on 127.0.0.1 that answers `{ upstream: true, path }` and records every request in `seen`. */
export async function startUpstream(): Promise<{ port: number; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    seen.push({ path: req.url!, headers: req.headers });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ upstream: true, path: req.url }));
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** A running proxy: its base URL, and how to stop it. */
export interface RunningProxy {
  base: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Addresses of a proxy example: credhook's embedded gateway (`host:port`), the upstream's port. */
export interface ProxyTargets {
  gateway: string;
  upstreamPort: number;
  /** NGINX only: worker processes (default: NGINX's single process, no master). */
  workers?: number;
}

async function waitUp(base: string, proc: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) throw new Error(`the proxy exited (${proc.exitCode}): ${log()}`);
    if (
      await fetch(`${base}/orders/`).then(
        () => true,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the proxy did not start: ${log()}`);
}

const stopper = (proc: ChildProcess) => () =>
  new Promise<void>((r) => {
    if (proc.exitCode !== null) return r();
    proc.once("exit", () => r());
    proc.kill("SIGTERM");
  });

/**
 * NGINX running examples/nginx/credhook-auth.conf as shipped, only its three
 * addresses replaced, in a temp prefix.
 * @param text the example's text (default: as shipped) — for a variant built from it
 * @throws Error when `nginx -t` refuses the file or NGINX does not start
 */
export async function startNginx(
  t: ProxyTargets,
  text = readFileSync(examplePath("nginx/credhook-auth.conf"), "utf8"),
): Promise<RunningProxy> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "credhook-nginx-"));
  mkdirSync(join(dir, "logs"), { recursive: true });
  const site = text
    .replace("server 127.0.0.1:8081;", `server ${t.gateway};`)
    .replace("server 127.0.0.1:9000;", `server 127.0.0.1:${t.upstreamPort};`)
    .replace("listen 8000;", `listen 127.0.0.1:${port};`)
    .replace("/var/cache/nginx/credhook-checks", join(dir, "credhook-checks"));
  if (!site.includes(`listen 127.0.0.1:${port};`)) throw new Error("the NGINX example no longer has `listen 8000;`");
  writeFileSync(join(dir, "credhook-auth.conf"), site);
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
    .map((k) => `${k}_temp_path ${join(dir, k)};`)
    .join("\n  ");
  writeFileSync(
    join(dir, "nginx.conf"),
    `${(NGINX_MODULES ?? []).map((m) => `load_module ${m};\n`).join("")}daemon off;
master_process ${t.workers ? "on" : "off"};
${t.workers ? `worker_processes ${t.workers};\n` : ""}pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "logs", "error.log")} warn;
events { worker_connections 1024; }
http {
  access_log off;
  ${temp}
  include ${join(dir, "credhook-auth.conf")};
}
`,
  );
  const args = ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "logs", "error.log")];
  const test = spawnSync(NGINX_BIN!, [...args, "-t"], { encoding: "utf8" });
  if (test.status !== 0) throw new Error(`nginx -t refused the example: ${test.stderr}`);
  const proc = spawnTracked(NGINX_BIN!, args, { stdio: ["ignore", "ignore", "pipe"] });
  const base = `http://127.0.0.1:${port}`;
  await waitUp(base, proc, () => readFileSync(join(dir, "logs", "error.log"), "utf8"));
  return { base, process: proc, stop: stopper(proc) };
}

/**
 * Caddy running examples/caddy/Caddyfile as shipped, only its three addresses
 * replaced, behind a global options block that turns its admin endpoint off
 * (several Caddys may run at once), in a temp home.
 * @throws Error when Caddy refuses the file or does not start
 */
export async function startCaddy(t: ProxyTargets): Promise<RunningProxy> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "credhook-caddy-"));
  const site = readFileSync(examplePath("caddy/Caddyfile"), "utf8")
    .replaceAll("127.0.0.1:8081", t.gateway)
    .replaceAll("127.0.0.1:9000", `127.0.0.1:${t.upstreamPort}`)
    .replace(/^:8000 \{/m, `http://127.0.0.1:${port} {`);
  if (!site.includes(`http://127.0.0.1:${port} {`))
    throw new Error("the Caddy example no longer has its `:8000 {` site");
  const file = join(dir, "Caddyfile");
  writeFileSync(file, `{\n\tadmin off\n}\n\n${site}`);
  const env = { ...process.env, HOME: dir, XDG_DATA_HOME: join(dir, "data"), XDG_CONFIG_HOME: join(dir, "config") };
  let log = "";
  const proc = spawnTracked(CADDY_BIN!, ["run", "--config", file, "--adapter", "caddyfile"], {
    stdio: ["ignore", "ignore", "pipe"],
    env,
  });
  proc.stderr!.on("data", (d: Buffer) => {
    log = (log + d.toString()).slice(-4000);
  });
  const base = `http://127.0.0.1:${port}`;
  await waitUp(base, proc, () => log);
  return { base, process: proc, stop: stopper(proc) };
}
