/**
 * credhook's version: `credhook --version`, the "credhook listening" log line, the
 * `credhook_build_info{version,node}` metric and the OpenTelemetry resource's `service.version`.
 */
import { readFileSync } from "node:fs";

/** Set by the Lambda bundle's build (esbuild `define`), where no package.json sits beside the code. */
declare const CREDHOOK_BUNDLED_VERSION: string | undefined;

/** The `version` of @credhook/server's package.json (one folder up from src/ and dist/ alike); "unknown" when unreadable. */
function packageVersion(): string {
  try {
    return (
      (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: string }).version ??
      "unknown"
    );
  } catch {
    return "unknown";
  }
}

/** @credhook/server's version, e.g. `0.1.0`. */
export const VERSION: string =
  typeof CREDHOOK_BUNDLED_VERSION === "string" ? CREDHOOK_BUNDLED_VERSION : packageVersion();
