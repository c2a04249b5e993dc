/** The background loops of `credhook serve`: the reconcile loop, or the abandoned-create sweep. */
import type { CredhookConfig } from "@credhook/core";
import { isStoreFailure } from "@credhook/core/errors";
import type { CredhookApp } from "./http-app.js";

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
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= pass()
      // A store outage is logged by the store, once per state change: not again every pass.
      .catch((err: unknown) =>
        (isStoreFailure(err) ? credhook.logger.debug : credhook.logger.error).call(
          credhook.logger,
          { err: String(err) },
          "background reconcile pass failed",
        ),
      )
      .finally(() => (running = undefined));
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
