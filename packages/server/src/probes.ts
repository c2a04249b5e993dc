/**
 * Unauthenticated probes for load balancers and Kubernetes:
 * - `GET /livez`: 204 while the process serves HTTP (even while draining, so a
 *   probe never kills a pod that is finishing its requests);
 * - `GET /readyz`: 204 when credhook is not shutting down, the store answers, no
 *   gateway's circuit breaker is open, and every gateway was healthy at its last
 *   check (a healthy answer cached for `gatewayCheckTtlMs`, so probes never drive
 *   cloud calls; a failed one only for `gatewayFailureTtlMs`, so readiness comes
 *   back within seconds); a gateway check that failed because of the store is
 *   the store's problem and never cached. Else 503 ErrorResponse saying only
 *   "not ready" — the reason goes to the log, never to the unauthenticated caller.
 * `GET /v1/health` (Basic auth) stays the contract's detailed check.
 */
import type { Request, Response } from "express";
import type { Logger as PinoLogger } from "pino";
import { isCredhookError, isStoreFailure } from "@credhook/core/errors";
import type { CredentialStore } from "@credhook/core/store";
import type { Gateway } from "@credhook/core";
import { sendError } from "./http-errors.js";

/** Options of {@link createReadiness}. */
export interface ReadinessOptions {
  store: CredentialStore;
  /** The configured gateways (their providers' `health()` is what is cached). */
  gateways: ReadonlyMap<string, Gateway>;
  /** The gateways whose circuit breaker is open now: not ready at once, without a call. @default none */
  openCircuits?: () => string[];
  /** True once shutdown began. */
  isDraining(): boolean;
  logger: PinoLogger;
  /** How long a healthy gateway check stays fresh, ms. @default 15000 */
  gatewayCheckTtlMs?: number;
  /** How long a failed gateway check stays fresh, ms. @default 2000 */
  gatewayFailureTtlMs?: number;
  /** Longest wait for the store or one gateway check, ms; slower is "not ready". @default 5000 */
  checkTimeoutMs?: number;
  /** The clock the cached gateway check's age is read on, ms (tests move it instead of waiting). @default Date.now */
  now?: () => number;
}

/** Readiness state, as {@link Readiness.check} reports it (logged, never sent). */
export interface ReadinessResult {
  ready: boolean;
  /** What is not ready, e.g. `gateway 'aws-us': API Gateway is not reachable`. */
  problems: string[];
}

/** The readiness check behind `GET /readyz`. */
export interface Readiness {
  /** Checks the store now and the gateways from cache (refreshing a stale cache once, shared by concurrent probes). */
  check(): Promise<ReadinessResult>;
}

/** A failed check: its secret-free reason, and whether it is the store's failure (not the checked part's). */
interface Failure {
  reason: string;
  store: boolean;
}

/** Resolves with `p`'s rejection (or undefined when it fulfils), or a timeout after `ms`. */
async function failureOf(p: Promise<unknown>, ms: number): Promise<Failure | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Failure>((resolve) => {
    timer = setTimeout(() => resolve({ reason: `no answer within ${ms} ms`, store: false }), ms);
    timer.unref();
  });
  try {
    return await Promise.race([
      p.then(
        () => undefined,
        (err: unknown) => ({
          reason:
            (isStoreFailure(err)
              ? err.messages[1]
              : isCredhookError(err)
                ? err.messages[0]
                : (err as Error)?.message) ?? "unavailable",
          store: isStoreFailure(err),
        }),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Builds the readiness check. */
export function createReadiness(options: ReadinessOptions): Readiness {
  const ttl = options.gatewayCheckTtlMs ?? 15_000;
  const failureTtl = Math.min(ttl, options.gatewayFailureTtlMs ?? 2_000);
  const timeoutMs = options.checkTimeoutMs ?? 5_000;
  const now = options.now ?? Date.now;
  let gatewayCheck: { at: number; problems: string[]; storeProblems: string[] } | undefined;
  let refreshing: Promise<{ problems: string[]; storeProblems: string[] }> | undefined;
  let lastReady: boolean | undefined;

  const checkGateways = (): Promise<{ problems: string[]; storeProblems: string[] }> => {
    if (gatewayCheck && now() - gatewayCheck.at < (gatewayCheck.problems.length > 0 ? failureTtl : ttl))
      return Promise.resolve(gatewayCheck);
    refreshing ??= (async () => {
      const names = [...options.gateways.keys()];
      const failures = await Promise.all(
        names.map((n) =>
          failureOf(
            Promise.resolve().then(() => options.gateways.get(n)!.provider.health()),
            timeoutMs,
          ),
        ),
      );
      const problems = failures.flatMap((f, i) =>
        f === undefined || f.store ? [] : [`gateway '${names[i]}': ${f.reason}`],
      );
      // A check that failed because of the store (a shared rate-limit slot) says nothing of the gateway: not cached.
      const storeProblems = failures.flatMap((f) => (f?.store ? [f.reason] : []));
      const result = { problems, storeProblems };
      if (storeProblems.length === 0) gatewayCheck = { at: now(), ...result };
      return result;
    })().finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  };

  return {
    async check() {
      const problems: string[] = [];
      if (options.isDraining()) problems.push("shutting down");
      else {
        const [store, gateways] = await Promise.all([
          failureOf(
            Promise.resolve().then(() => options.store.health()),
            timeoutMs,
          ),
          checkGateways(),
        ]);
        if (store !== undefined) problems.push(`store: ${store.reason}`);
        else problems.push(...gateways.storeProblems.map((p) => `store: ${p}`));
        const open = options.openCircuits?.() ?? [];
        problems.push(...open.map((g) => `gateway '${g}': circuit breaker open`));
        problems.push(...gateways.problems.filter((p) => !open.some((g) => p.startsWith(`gateway '${g}':`))));
      }
      const ready = problems.length === 0;
      if (ready !== lastReady) {
        if (ready) options.logger.info({ probe: "readyz" }, "ready");
        else options.logger.warn({ probe: "readyz", problems }, "not ready");
        lastReady = ready;
      }
      return { ready, problems };
    },
  };
}

/** `GET /livez`: 204, no body. */
export function livez(_req: Request, res: Response): void {
  res.setHeader("Cache-Control", "no-store");
  res.status(204).end();
}

/** `GET /readyz`: 204, or 503 ErrorResponse `not ready` with `Retry-After: 5`. */
export function readyz(readiness: Readiness) {
  return async (req: Request, res: Response): Promise<void> => {
    const { ready } = await readiness.check();
    res.setHeader("Cache-Control", "no-store");
    if (ready) res.status(204).end();
    else sendError(res, req, 503, ["not ready"], { "Retry-After": "5" });
  };
}
