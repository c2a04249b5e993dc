/**
 * A port credhook cannot listen on (EADDRINUSE, EACCES), said with the setting that chose it:
 * `server.port` or `embeddedGateway.listen.port`, the config file, and the environment variable
 * the file takes it from (`PORT`, `CREDHOOK_GATEWAY_PORT` in the embedded default) with its value
 * or the default it fell back to. Node's own message (`listen EADDRINUSE: address already in use
 * 0.0.0.0:8081`) names neither, so a second server on one machine did not say which port to move.
 * `credhook demo` names its own `--port`/`PORT` instead ({@link DEMO_PORT_SETTING}).
 */
import { readFileSync } from "node:fs";
import { isScalar, parseDocument } from "yaml";
import type { LoadedConfig } from "./config.js";

/** Node's listen error: `code`, and the `port`/`address` it was for. */
interface ListenError {
  code?: string;
  port?: number;
  address?: string;
}

/** Where a port comes from: the config path, and the `${VAR…}` text of its value when it has one. */
function portSource(configFile: string, path: string[]): string | undefined {
  try {
    const text = readFileSync(configFile, "utf8");
    const node = parseDocument(text).getIn(path, true);
    return isScalar(node) && node.range ? text.slice(node.range[0], node.range[1]).trim() : undefined;
  } catch {
    return undefined;
  }
}

/** `VAR=value`, or that VAR is unset and the `${VAR:-default}` default applied, for a value written with `${VAR…}`. */
function variableOf(source: string | undefined, env: Record<string, string | undefined>): string | undefined {
  const m = source ? /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/.exec(source) : null;
  if (!m) return undefined;
  const [, name, fallback] = m;
  return env[name!] ? `${name}=${env[name!]}` : `${name} is unset, so its default ${fallback ?? "(none)"} applied`;
}

/**
 * Where a port was chosen when it is not the config file's setting, and how to change it: `credhook
 * demo`'s webhook port, which its `--port` option or `PORT` sets ({@link DEMO_PORT_SETTING}).
 */
export interface PortSetting {
  /** Where the port comes from, after "it is …". */
  where: string;
  /** How to choose another, before ", or 0 for any free one". */
  fix: string;
}

/** `credhook demo`'s webhook port: `--port`, else `PORT`, else 8080. */
export const DEMO_PORT_SETTING: PortSetting = {
  where: "the demo's port (--port, else the environment variable PORT, else 8080)",
  fix: "pass --port a free port (or set PORT to one)",
};

/**
 * The error to report for a failed listen, naming the setting behind the port; undefined when
 * `err` is not a listen error about a port.
 * @param env the environment the config was interpolated with. @default process.env
 * @param webhookPort where the webhook's port comes from when not from `server.port` (`credhook demo`)
 */
export function describeListenError(
  err: unknown,
  config: LoadedConfig,
  env: Record<string, string | undefined> = process.env,
  webhookPort?: PortSetting,
): Error | undefined {
  const e = err as ListenError;
  if ((e?.code !== "EADDRINUSE" && e?.code !== "EACCES") || typeof e.port !== "number") return undefined;
  const gatewayPort = config.embeddedGateway?.listen?.port;
  const gateway = gatewayPort === e.port && config.server.port !== e.port;
  const what = gateway ? "the embedded gateway's port" : "the webhook's port";
  const problem =
    e.code === "EADDRINUSE"
      ? "is in use (another process listens there — another credhook on this machine?)"
      : "may not be opened by this user (a port below 1024 needs privileges)";
  const { where, fix } = (!gateway && webhookPort) || configSetting(gateway, config, env);
  return new Error(
    `port ${e.port} on ${e.address ?? "all addresses"}, ${what}, ${problem}: it is ${where}; ${fix}, or 0 for any free one`,
  );
}

/** The config file's setting of the webhook's or the embedded gateway's port, and the variable it reads, if any. */
function configSetting(gateway: boolean, config: LoadedConfig, env: Record<string, string | undefined>): PortSetting {
  const path = gateway ? ["embeddedGateway", "listen", "port"] : ["server", "port"];
  const source = portSource(config.configFile, path);
  const variable = variableOf(source, env);
  return {
    where: `${path.join(".")} in ${config.configFile}${config.embeddedDefault ? " (the embedded default)" : ""}${source ? `: ${source}` : ""}${variable ? ` (${variable})` : ""}`,
    fix: variable ? `set ${variable.split(/[= ]/)[0]} to a free port` : `change ${path.join(".")}`,
  };
}
