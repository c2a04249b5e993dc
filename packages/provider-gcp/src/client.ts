/**
 * Builds the official `ApiKeysClient` from the provider's options: endpoint
 * (host, port, protocol) and credentials. The REST transport (`fallback: true`)
 * is always used: the same HTTP/1.1 + JSON path the tests drive against the fake.
 */
import { ApiKeysClient } from "@google-cloud/apikeys";
import { ConfigError } from "@credhook/core/errors";
import { OAuth2Client } from "google-auth-library";
import type { GcpCredentialsOption } from "./types.js";

/** Default API Keys endpoint host (https://cloud.google.com/api-keys/docs/reference/rest). */
export const DEFAULT_API_HOST = "apikeys.googleapis.com";

/** Where the client connects. */
export interface ParsedEndpoint {
  host: string;
  /** TCP port. */
  port: number;
  protocol: "http" | "https";
}

/**
 * Parses the `endpoint` option: `host`, `host:port`, `https://host[:port]`,
 * `http://host[:port]` (a path other than `/` is refused). Default: `https://apikeys.googleapis.com:443`.
 * @throws ConfigError naming `at` (the option's YAML path) when it cannot be parsed
 */
export function parseEndpoint(endpoint: string | undefined, at: string): ParsedEndpoint {
  if (endpoint === undefined || endpoint.trim() === "") return { host: DEFAULT_API_HOST, port: 443, protocol: "https" };
  const raw = endpoint.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `https://${raw}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new ConfigError([`${at}: '${endpoint}' is not a host, host:port or http(s) URL`]);
  }
  const protocol = url.protocol.replace(/:$/, "");
  if (protocol !== "http" && protocol !== "https") {
    throw new ConfigError([
      `${at}: protocol '${protocol}' is not supported; use https:// (or http:// for a local emulator)`,
    ]);
  }
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash || url.username || url.password) {
    throw new ConfigError([`${at}: '${endpoint}' must be a host and port only, without a path, query or credentials`]);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = url.port ? Number(url.port) : protocol === "https" ? 443 : 80;
  return { host, port, protocol };
}

/** Bearer token a `static-token` credential sends when none is configured. */
export const DEFAULT_STATIC_TOKEN = "emulator";

/**
 * Creates the client for `endpoint` with `credentials`.
 * - `application-default`: the library's own GoogleAuth (ADC), cloud-platform scope.
 * - `key-file`: GoogleAuth reading the service-account key at `path`.
 * - `static-token`: an OAuth2Client holding a fixed token (emulators and fakes only).
 */
export function createApiKeysClient(
  endpoint: ParsedEndpoint,
  credentials: GcpCredentialsOption,
  projectId: string,
): ApiKeysClient {
  const base = {
    fallback: true,
    protocol: endpoint.protocol,
    apiEndpoint: endpoint.host,
    port: endpoint.port,
    projectId,
  };
  switch (credentials.type) {
    case "static-token": {
      const authClient = new OAuth2Client();
      // far-future expiry: the token is never refreshed (there is nothing to refresh it with)
      authClient.setCredentials({
        access_token: credentials.token ?? DEFAULT_STATIC_TOKEN,
        expiry_date: Date.now() + 10 * 365 * 24 * 3.6e6,
      });
      return new ApiKeysClient({ ...base, authClient } as ConstructorParameters<typeof ApiKeysClient>[0]);
    }
    case "key-file":
      return new ApiKeysClient({ ...base, keyFilename: credentials.path } as ConstructorParameters<
        typeof ApiKeysClient
      >[0]);
    default:
      return new ApiKeysClient(base as ConstructorParameters<typeof ApiKeysClient>[0]);
  }
}
