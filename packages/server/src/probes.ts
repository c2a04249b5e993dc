/**
 * Unauthenticated probes for load balancers and Kubernetes:
 * - `GET /livez`: 204 while the process serves HTTP (even while draining, so a
 *   probe never kills a pod that is finishing its requests);
 * - `GET /readyz`: 204 when credhook is not shutting down, the store answers, and
 *   every gateway was healthy at its last check (cached for `gatewayCheckTtlMs`,
 *   so probes never drive cloud calls); else 503 ErrorResponse saying only
 *   "not ready" — the reason goes to the log, never to the unauthenticated caller.
 * `GET /v1/health` (Basic auth) stays the contract's detailed check.
 */
import type { Request, Response } from "express";
import type { Logger as PinoLogger } from "pino";
import { isCredhookError, type CredentialStore, type Gateway } from "@credhook/core";
import { sendError } from "./http-errors.js";

/** Options of {@link createReadiness}. */
export interface ReadinessOptions {
  store: CredentialStore;
  /** The configured gateways (their providers' `health()` is what is cached). */
  gateways: Map<string, Gateway>;
  /** True once shutdown began. */
  isDraining(): boolean;
  logger: PinoLogger;
  /** How long a gateway check stays fresh, ms. @default 15000 */
  gatewayCheckTtlMs?: number;
  /** Longest wait for the store or one gateway check, ms; slower is "not ready". @default 5000 */
  checkTimeoutMs?: number;
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

/** Resolves with `p`'s rejection reason (or undefined when it fulfils), or a timeout text after `ms`. */
async function failureOf(p: Promise<unknown>, ms: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${ms} ms`), ms);
    timer.unref();
  });
  try {
    return await Promise.race([
      p.then(
        () => undefined,
        (err: unknown) => (isCredhookError(err) ? err.messages[0] : (err as Error)?.message) ?? "unavailable",
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
  const timeoutMs = options.checkTimeoutMs ?? 5_000;
  let gatewayCheck: { at: number; problems: string[] } | undefined;
  let refreshing: Promise<string[]> | undefined;
  let lastReady: boolean | undefined;

  const checkGateways = (): Promise<string[]> => {
    if (gatewayCheck && Date.now() - gatewayCheck.at < ttl) return Promise.resolve(gatewayCheck.problems);
    refreshing ??= (async () => {
      const names = [...options.gateways.keys()];
      const failures = await Promise.all(names.map((n) => failureOf(Promise.resolve().then(() => options.gateways.get(n)!.provider.health()), timeoutMs)));
      const problems = failures.flatMap((f, i) => (f === undefined ? [] : [`gateway '${names[i]}': ${f}`]));
      gatewayCheck = { at: Date.now(), problems };
      return problems;
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
        const [store, gateways] = await Promise.all([failureOf(Promise.resolve().then(() => options.store.health()), timeoutMs), checkGateways()]);
        if (store !== undefined) problems.push(`store: ${store}`);
        problems.push(...gateways);
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
