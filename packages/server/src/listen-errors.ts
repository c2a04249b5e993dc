/**
 * A port credhook cannot listen on (EADDRINUSE, EACCES), said with the setting that chose it:
 * `server.port` or `embeddedGateway.listen.port`, the config file, and the environment variable
 * the file takes it from (`PORT`, `CREDHOOK_GATEWAY_PORT` in the embedded default) with its value
 * or the default it fell back to. Node's own message (`listen EADDRINUSE: address already in use
 * 0.0.0.0:8081`) names neither, so a second server on one machine did not say which port to move.
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
 * The error to report for a failed listen, naming the setting behind the port; undefined when
 * `err` is not a listen error about a port.
 * @param env the environment the config was interpolated with. @default process.env
 * @param portOption the command-line option that chose the webhook's port instead of `server.port` (`--port`), named
 * in its place
 */
export function describeListenError(
  err: unknown,
  config: LoadedConfig,
  env: Record<string, string | undefined> = process.env,
  portOption?: string,
): Error | undefined {
  const e = err as ListenError;
  if ((e?.code !== "EADDRINUSE" && e?.code !== "EACCES") || typeof e.port !== "number") return undefined;
  const gatewayPort = config.embeddedGateway?.listen?.port;
  const gateway = gatewayPort === e.port && config.server.port !== e.port;
  const path = gateway ? ["embeddedGateway", "listen", "port"] : ["server", "port"];
  const option = gateway ? undefined : portOption;
  const source = option ? undefined : portSource(config.configFile, path);
  const variable = variableOf(source, env);
  const what = gateway ? "the embedded gateway's port" : "the webhook's port";
  const where = option
    ? `${option} ${e.port} on the command line`
    : `${path.join(".")} in ${config.configFile}${config.embeddedDefault ? " (the embedded default)" : ""}${source ? `: ${source}` : ""}`;
  const problem =
    e.code === "EADDRINUSE"
      ? "is in use (another process listens there — another credhook on this machine?)"
      : "may not be opened by this user (a port below 1024 needs privileges)";
  const fix = option
    ? `pass another ${option}`
    : variable
      ? `set ${variable.split(/[= ]/)[0]} to a free port`
      : `change ${path.join(".")}`;
  return new Error(
    `port ${e.port} on ${e.address ?? "all addresses"}, ${what}, ${problem}: it is ${where}${variable ? ` (${variable})` : ""}; ${fix}, or 0 for any free one`,
  );
}
