/**
 * The `embeddedGateway:` block against the rest of the configuration, for `credhook check-config` and
 * `credhook serve` alike: what keeps it from working (problems), what works but goes wrong once several
 * instances share the store (warnings), and the lines `check-config` prints about it. None of them needs
 * the store or a listener.
 */
import type { Gateway } from "@credhook/core";
import { type LocalCredentialReader, localCredentialReader } from "@credhook/provider-local";
import type { EmbeddedGatewayConfig } from "./config.js";
import { GENERATED_KEK_FILE } from "./signing-keys.js";

/** What the rest of the configuration holds that the `embeddedGateway:` block must fit. */
export interface EmbeddedGatewaySetting {
  /** Every configured gateway, by name (core's `loadGateways`); the `provider: local` ones are the embedded gateway's. */
  gateways: ReadonlyMap<string, Gateway>;
  /** The config's `store:` block, as validated: its one key names the store (`sqlite`, `postgres`, a package). */
  store: Readonly<Record<string, unknown>>;
  /** True when the open store is shared by instances (PostgreSQL); false before the store is opened (`check-config`). */
  sharedStore: boolean;
}

/** The credentials of every `provider: local` gateway among `gateways` (provider-local's reader of each), in config order. */
export function localReaders(gateways: ReadonlyMap<string, Gateway>): LocalCredentialReader[] {
  return [...gateways.values()].flatMap((g) => localCredentialReader(g.provider) ?? []);
}

/** Where the usage-plan counters live: as configured, else on the store when it is shared (PostgreSQL), else in memory. */
export function countersOf(config: EmbeddedGatewayConfig, sharedStore: boolean): "memory" | "store" {
  return config.limits.counters ?? (sharedStore ? "store" : "memory");
}

/**
 * What keeps `embeddedGateway:` from working with the gateways and the store (its own block is
 * validated by `parseEmbeddedGatewayConfig`).
 * @returns one message per problem, naming its YAML path; empty when none
 */
export function embeddedGatewayProblems(config: EmbeddedGatewayConfig, setting: EmbeddedGatewaySetting): string[] {
  const problems: string[] = [];
  if (localReaders(setting.gateways).length === 0) {
    problems.push(
      "embeddedGateway: no gateway uses provider: local, so the embedded gateway would have nothing to enforce; remove embeddedGateway or add a local gateway",
    );
  }
  if (countersOf(config, setting.sharedStore) === "store" && setting.store.postgres === undefined) {
    problems.push(
      "embeddedGateway.limits.counters: store keeps usage-plan counters on the PostgreSQL store, but store: is not postgres (one SQLite instance counts every request in memory: use counters: memory)",
    );
  }
  return problems;
}

/**
 * What works as configured but goes wrong once several instances share the store: a
 * client-credentials gateway's signing keys kept in the PostgreSQL store (no `keyFile`) without a
 * configured `encryptionKey`, so that each instance would generate its own key into its data
 * directory and the second could not decrypt what the first stored (it refuses to start).
 * `check-config` prints them under `warnings:`, `serve` logs each at `warn` when it starts.
 * @returns one message per warning, naming its YAML path and the fix; empty when none
 */
export function embeddedGatewayWarnings(config: EmbeddedGatewayConfig, setting: EmbeddedGatewaySetting): string[] {
  const shared = setting.sharedStore || setting.store.postgres !== undefined;
  const clientCredentials = localReaders(setting.gateways).some((r) => r.credentialType === "CLIENT_CREDENTIALS");
  const s = config.oauth.signing;
  if (!shared || !clientCredentials || s.keyFile || s.encryptionKey) return [];
  const option = "embeddedGateway.oauth.signing.encryptionKey";
  return [
    `${option} is not set on a store that several instances share (PostgreSQL): each instance generates its own key into ` +
      `${GENERATED_KEK_FILE} in its data directory to encrypt the OAuth signing keys in the store, so an instance with another ` +
      `data directory cannot decrypt them and refuses to start. Set ${option} to the same key on every instance: ` +
      `base64 of 32 bytes (openssl rand -base64 32), e.g. from a Kubernetes Secret`,
  ];
}

/** What `credhook check-config` prints about `embeddedGateway:`: where it serves, the key check, the counters, OAuth. */
export function describeEmbeddedGateway(gw: EmbeddedGatewayConfig): string[] {
  const base = gw.pathPrefix
    ? `path prefix ${gw.pathPrefix} on the webhook's port`
    : `own port ${gw.listen!.host}:${gw.listen!.port}`;
  const k = gw.keyCheck;
  const rules = k.apis.map((r) => `${r.pathPrefix} -> ${r.api}`).join(", ");
  const s = gw.oauth.signing;
  return [
    `embedded gateway: ${base}${gw.publicUrl ? `, public URL ${gw.publicUrl}` : ""}`,
    `  key check: ${gw.pathPrefix ?? ""}/check; key from header ${k.header}${k.queryParam ? ` or query parameter ${k.queryParam}` : ""}${k.bearer ? ", or a Bearer access token" : ""}`,
    `  API from: ${[k.apiHeader ? `header ${k.apiHeader}` : "", rules ? `path rules ${rules}` : ""].filter(Boolean).join(", then ") || "nothing configured (every check is 403 until keyCheck.apis or keyCheck.apiHeader is set)"}`,
    `  usage-plan counters: ${gw.limits.counters ?? "store on PostgreSQL, else memory"}`,
    `  OAuth: token lifetime ${gw.oauth.tokenTtlS} s, ${s.alg} keys in ${s.keyFile ?? "the store (encrypted)"}, ${s.rotateAfterDays > 0 ? `rotated every ${s.rotateAfterDays} days` : "never rotated"}`,
  ];
}
