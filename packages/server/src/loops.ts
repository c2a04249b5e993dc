/** The background loops of `credhook serve`: the reconcile loop, or the abandoned-create sweep; the expiry pass. */
import type { CredhookConfig, ExpiryPassResult } from "@credhook/core";
import { isStoreFailure } from "@credhook/core/errors";
import type { CredhookApp } from "./http-app.js";

/**
 * Logs a background pass's failure as `message`: at error, or at debug for a store outage, which the store logs
 * itself once per state change (not again every pass).
 */
function logPassFailure(credhook: CredhookApp, message: string): (err: unknown) => void {
  return (err) =>
    (isStoreFailure(err) ? credhook.logger.debug : credhook.logger.error).call(
      credhook.logger,
      { err: String(err) },
      message,
    );
}

/**
 * The clean-up `credhook serve` runs in the background, one pass at a time on
 * an unref'd timer: the reconcile loop every `reconcile.intervalS` (default 5 s
 * on a shared store, off on SQLite), which finishes dead instances' interrupted
 * operations and sweeps abandoned creates; or, with the loop off, only the
 * abandoned-create sweep every `reconcile.abandonedIntervalS` (default 30 s).
 * @returns a function that stops the timer and waits for a pass in progress
 */
export function startBackgroundReconcile(credhook: CredhookApp, config: CredhookConfig): () => Promise<void> {
  const loopS = config.reconcile?.intervalS ?? (credhook.store.shared ? 5 : 0);
  const sweepS = loopS > 0 ? 0 : (config.reconcile?.abandonedIntervalS ?? 30);
  const intervalMs = (loopS || sweepS) * 1000;
  if (intervalMs <= 0) return async () => undefined;
  const pass = async () => {
    if (loopS > 0) {
      const r = await credhook.orchestrator.reconcileLoopPass();
      if (r.finished.length > 0 || r.swept.swept > 0 || r.swept.settled > 0) {
        credhook.logger.info(
          {
            finished: r.finished.length,
            inFlight: r.inFlight,
            swept: r.swept.swept,
            revoked: r.swept.revoked,
            deleted: r.swept.deleted,
            settled: r.swept.settled,
          },
          "reconcile loop pass",
        );
      }
    } else {
      const r = await credhook.orchestrator.sweepAbandoned();
      if (r.swept > 0 || r.settled > 0)
        credhook.logger.info(
          { swept: r.swept, revoked: r.revoked, deleted: r.deleted, settled: r.settled },
          "abandoned creates swept",
        );
    }
  };
  return repeatPass(() => pass().catch(logPassFailure(credhook, "background reconcile pass failed")), intervalMs);
}

/**
 * Runs `pass` every `intervalMs` on an unref'd timer, one pass at a time (a tick while one runs is skipped).
 * @param pass must not reject (it logs its own failure)
 * @returns a function that stops the timer and waits for a pass in progress
 */
export function repeatPass(pass: () => Promise<void>, intervalMs: number): () => Promise<void> {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= pass().finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

/** Delay of the first expiry pass after the start, ms (or the interval, when shorter). */
export const FIRST_EXPIRY_PASS_MS = 10_000;

/**
 * `credhook serve`'s expiry loop (docs/expiry.md): `Orchestrator.expiryPass` every `expiry.intervalS` (default
 * 3600 s; 0: off), the first {@link FIRST_EXPIRY_PASS_MS} after the start (or one interval, when shorter), one pass
 * at a time on unref'd timers; with no gateway's `expiry` block, no loop. `onPass` gets each pass's result (the metrics).
 * @returns a function that stops the timers and waits for a pass in progress
 */
export function startExpiryLoop(
  credhook: CredhookApp,
  config: CredhookConfig,
  onPass: (result: ExpiryPassResult) => void = () => undefined,
): () => Promise<void> {
  const intervalMs = (config.expiry?.intervalS ?? 3600) * 1000;
  const anyPolicy = Object.values(config.gateways).some((g) => g.expiry);
  if (intervalMs <= 0 || !anyPolicy) return async () => undefined;
  let running: Promise<void> | undefined;
  const pass = () => {
    running ??= credhook.orchestrator
      .expiryPass()
      .then((r) => {
        onPass(r);
        if (r.warned > 0 || r.expired > 0 || r.acted > 0 || r.failed > 0)
          credhook.logger.info(
            { warned: r.warned, expired: r.expired, acted: r.acted, failed: r.failed },
            "expiry pass",
          );
      })
      .catch(logPassFailure(credhook, "expiry pass failed"))
      .finally(() => (running = undefined));
  };
  let timer: NodeJS.Timeout | undefined;
  const first = setTimeout(
    () => {
      pass();
      timer = setInterval(pass, intervalMs);
      timer.unref();
    },
    Math.min(FIRST_EXPIRY_PASS_MS, intervalMs),
  );
  first.unref();
  return async () => {
    clearTimeout(first);
    clearInterval(timer);
    await running;
  };
}
