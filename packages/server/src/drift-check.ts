/**
 * The stored credentials against the config (docs/gateway-migration.md), for `credhook check-config` and `serve`:
 * how many live credentials differ from it by kind (core's drift.ts), and the refusal of a config that dropped a
 * gateway still holding live credentials. One paged walk of every record (`store.listPage`, one page held at a time)
 * per pass: at check-config, at serve's start (before ready only when a gateway left the config; else after ready,
 * in the background) and in serve's drift pass ({@link DRIFT_PASS_INTERVAL_MS}) — never per request or scrape.
 */
import { existsSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import {
  createRouter,
  type CredhookConfig,
  type DriftSummary,
  describeDriftCounts,
  driftTopology,
  type Gateway,
  strandedProblems,
  summarizeDrift,
} from "@credhook/core";
import { ConfigError } from "@credhook/core/errors";
import { type CredentialStore, walkPages } from "@credhook/core/store";
import type { CredhookApp } from "./http-app.js";
import { repeatPass } from "./loops.js";

/** Time between two drift passes of `credhook serve` (the `credhook_credentials_drift` gauge's freshness), ms. */
export const DRIFT_PASS_INTERVAL_MS = 300_000;

/**
 * The drift of every live credential of `store` against `config`'s routes and `gateways`: one paged walk of the
 * records, so that memory stays one page whatever the store holds; each page on a later turn of the event loop
 * (`walkPages`), so that a count serve runs in the background never holds off its requests.
 * @throws what the store throws (StoreUnavailable)
 */
export async function storeDrift(
  store: Pick<CredentialStore, "listPage">,
  config: Pick<CredhookConfig, "routes">,
  gateways: ReadonlyMap<string, Gateway>,
): Promise<DriftSummary> {
  const records = walkPages((after) => store.listPage({ limit: 500, ...(after ? { after } : {}) }));
  return summarizeDrift(driftTopology(gateways, createRouter(config.routes)), records);
}

/**
 * Refuses a config that dropped gateways which still hold live credentials (`check-config` exits 1, `serve` does
 * not start): a portal update or revoke of those credentials could not reach them.
 * @throws ConfigError one message per such gateway, with the count and the way out ({@link strandedProblems})
 */
export function assertNoStrandedGateway(summary: DriftSummary): void {
  const problems = strandedProblems(summary);
  if (problems.length > 0) throw new ConfigError(problems);
}

/** `check-config`'s and serve's words for a summary: `credentials: moved=0 gateway-missing=0 plans-changed=1 of 12 live credentials`. */
export function driftLine(summary: DriftSummary): string {
  const any = Object.values(summary.counts).some((n) => n > 0);
  return `credentials: ${describeDriftCounts(summary)}${any ? " differ from the config (`credhook apply --dry-run` lists them)" : ""}`;
}

/**
 * The SQLite file `config.store` names, resolved as the store resolves it (relative to the config file's
 * directory; the embedded default's to the working directory); undefined for another store, or `:memory:`.
 */
function sqliteFile(config: CredhookConfig & { configFile?: string; embeddedDefault?: boolean }): string | undefined {
  const raw = (config.store as { sqlite?: string | { path: string } }).sqlite;
  if (raw === undefined) return undefined;
  const path = typeof raw === "string" ? raw : raw.path;
  if (path === ":memory:") return undefined;
  const base = config.configFile && !config.embeddedDefault ? dirname(config.configFile) : process.cwd();
  return isAbsolute(path) ? path : resolve(base, path);
}

/** What `check-config` could learn from the store: the drift, or why it was not read. */
export type StoreDriftCheck = { summary: DriftSummary } | { skipped: string };

/**
 * `check-config`'s look at the store: reads every record when the store can be opened — a SQLite file that does not
 * exist yet is not created (no credential can be stranded then) — and says why not when it cannot (the check is
 * then skipped, not failed: `serve` makes it again at start).
 * @param open opens the config's store (the server's `openStore`)
 */
export async function checkStoreDrift(
  config: CredhookConfig,
  gateways: ReadonlyMap<string, Gateway>,
  open: (config: CredhookConfig) => Promise<CredentialStore>,
): Promise<StoreDriftCheck> {
  const file = sqliteFile(config);
  if (file !== undefined && !existsSync(file)) return { skipped: `no store yet (${file} does not exist)` };
  let store: CredentialStore;
  try {
    store = await open(config);
  } catch (err) {
    return { skipped: `the store could not be opened (${(err as Error).message.split("\n")[0]})` };
  }
  try {
    return { summary: await storeDrift(store, config, gateways) };
  } catch (err) {
    return { skipped: `the store could not be read (${(err as Error).message.split("\n")[0]})` };
  } finally {
    await store.close();
  }
}

/**
 * A warning per route that sends APIs to a retired gateway (`gateways.<name>.retired: true`): creates of those APIs
 * are answered 422 until the route names another gateway. A warning, not a problem: the credentials the gateway
 * holds keep working.
 */
export function retiredRouteWarnings(config: Pick<CredhookConfig, "routes" | "gateways">): string[] {
  return config.routes.flatMap((r, i) => {
    const gateway = "default" in r ? r.default : r.gateway;
    if (!config.gateways[gateway]?.retired) return [];
    return [
      `routes[${i}] sends APIs to gateway '${gateway}', which is retired (gateways.${gateway}.retired: true): a create of those APIs answers 422; route them to another gateway`,
    ];
  });
}

/**
 * The provider-state namespace where `credhook serve` keeps what its start-up check knows of the gateways (no gateway
 * can have the name: gateway names start with a letter or digit).
 */
export const SERVE_STATE = "@credhook-serve";
/**
 * Its key: the gateways that may hold live credentials — every gateway of the configs serve started with since the
 * last start that walked the records (which found none on a gateway its config lacked, else it refused to start).
 */
const KNOWN_GATEWAYS_KEY = "gateways";

/**
 * Whether this start must walk the records before it serves: when no gateway is known yet (the first start that
 * keeps the list), or a known gateway is not in the config (it may still hold live credentials). Otherwise no
 * credential can be bound on a gateway the config lacks, and the count waits until after ready. Records the
 * gateways known from now on (the known ones and the config's, or the config's alone after a walk).
 */
async function gatewaysDropped(
  store: Pick<CredentialStore, "stateFor">,
  configured: readonly string[],
): Promise<{ walk: boolean; remember: () => Promise<void> }> {
  const state = store.stateFor(SERVE_STATE);
  const known = await state.get(KNOWN_GATEWAYS_KEY);
  const list = Array.isArray(known) ? known.filter((g): g is string => typeof g === "string") : undefined;
  const walk = list === undefined || list.some((g) => !configured.includes(g));
  const next = walk ? [...configured] : [...new Set([...list!, ...configured])];
  return {
    walk,
    remember: async () => {
      if (list === undefined || next.length !== list.length || walk) await state.put(KNOWN_GATEWAYS_KEY, next.sort());
    },
  };
}

/**
 * `credhook serve`'s drift watch. A config that dropped a gateway still holding live credentials is refused before
 * anything is served ({@link assertNoStrandedGateway}): when a gateway the earlier starts had is not in this config
 * (or on the first start that keeps that list, in {@link SERVE_STATE}), the records are walked now, before ready.
 * Otherwise no credential can be on a gateway the config lacks, and the count runs after ready, in the background, in
 * pages: start-up does not grow with the store. Either way the counts by kind are logged in one line (`warn` when any
 * credential differs, else `info`), with a warning per route to a retired gateway; then they are recounted every
 * {@link DRIFT_PASS_INTERVAL_MS} on an unref'd timer, one pass at a time. `onPass` gets each count (the metrics' gauge).
 * @returns a function that stops the timer and waits for a pass in progress
 * @throws ConfigError a gateway the config dropped still holds live credentials; what the store throws at start
 */
export async function watchDrift(
  credhook: Pick<CredhookApp, "store" | "orchestrator" | "logger">,
  config: CredhookConfig,
  onPass: (summary: DriftSummary) => void,
): Promise<() => Promise<void>> {
  const count = () => storeDrift(credhook.store, config, credhook.orchestrator.gateways);
  const report = (summary: DriftSummary) => {
    const differ = Object.values(summary.counts).some((n) => n > 0);
    credhook.logger[differ ? "warn" : "info"](
      { drift: summary.counts, live: summary.live, plansUnknown: summary.plansUnknown },
      driftLine(summary),
    );
    onPass(summary);
  };
  for (const warning of retiredRouteWarnings(config)) credhook.logger.warn(warning);
  const known = await gatewaysDropped(credhook.store, Object.keys(config.gateways));
  let first: Promise<void> = Promise.resolve();
  if (known.walk) {
    const summary = await count();
    assertNoStrandedGateway(summary);
    await known.remember();
    report(summary);
  } else {
    await known.remember();
    first = count()
      .then((summary) => {
        // Another instance's credentials on a gateway only it has: said, since this start was not refused for them.
        for (const problem of strandedProblems(summary)) credhook.logger.error(problem);
        report(summary);
      })
      .catch((err: unknown) => credhook.logger.warn({ err: String(err) }, "drift count after start failed"));
  }
  const pass = () =>
    count()
      .then(onPass)
      .catch((err: unknown) => credhook.logger.debug({ err: String(err) }, "drift pass failed"));
  const stop = repeatPass(pass, DRIFT_PASS_INTERVAL_MS);
  return async () => {
    await stop();
    await first;
  };
}
