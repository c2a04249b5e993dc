/**
 * A circuit breaker per gateway (cockatiel): once a gateway's calls have
 * failed `threshold` times in a row with a sign that the cloud is down or
 * unreachable (502, 503 unavailable, 504 — not a throttle, not a 4xx, not a
 * store failure), the breaker opens and every call to that gateway fails at
 * once with {@link CircuitOpen} (503 + Retry-After), without reaching the cloud;
 * after `halfOpenAfterMs` one call (a portal request, a health check or a
 * sweep) goes through as a trial, and closes the breaker when it succeeds.
 * Requests whose gateways include an open one are refused before any store or
 * cloud write ({@link GatewayCircuits.assertClosed}); other gateways' apps are
 * unaffected. Opening, half-opening and closing are logged once each.
 * Time: the half-open delay is measured with `Date.now()`, the clock cockatiel itself reads (it
 * takes no injected clock), so a test moves it with vitest's fake timers (`toFake: ["Date"]`)
 * rather than an `OrchestratorOptions.now`, which would disagree with cockatiel's.
 * cockatiel: https://github.com/connor4312/cockatiel#circuitbreaker
 */
import {
  BrokenCircuitError,
  CircuitState,
  circuitBreaker,
  ConsecutiveBreaker,
  handleWhen,
  type CircuitBreakerPolicy,
} from "cockatiel";
import { CircuitOpen, ErrorCodes, isCredhookError, isStoreFailure } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Provider } from "../provider.js";
import type { Gateway } from "../registry.js";

/** Options of one gateway's circuit breaker ({@link OrchestratorOptions.circuitBreakers}). */
export interface CircuitBreakerOptions {
  /** Consecutive failures (cloud down or unreachable) that open a gateway's breaker; 0: no breaker. @default 5 */
  threshold?: number;
  /** How long an open breaker refuses calls before it lets one trial call through, ms. @default 5000 */
  halfOpenAfterMs?: number;
}

/** The provider calls that reach the cloud and go through the breaker (`close` and the capabilities do not). */
const GUARDED = new Set<PropertyKey>([
  "create",
  "update",
  "revoke",
  "findByCredential",
  "adopt",
  "readSecret",
  "rotateSecret",
  "listOwned",
  "health",
]);

/** True when a provider's failure says its cloud is down or unreachable (what counts toward opening the breaker). */
export function isGatewayDown(err: unknown): boolean {
  if (!isCredhookError(err) || isStoreFailure(err)) return false;
  return (
    err.code === ErrorCodes.UPSTREAM_FAILED ||
    err.code === ErrorCodes.UPSTREAM_UNAVAILABLE ||
    err.code === ErrorCodes.UPSTREAM_TIMEOUT
  );
}

/** The breakers of every gateway of one orchestrator. */
export class GatewayCircuits {
  private readonly breakers = new Map<
    string,
    { policy: CircuitBreakerPolicy; openedAt: number; halfOpenAfterMs: number }
  >();

  /**
   * @param names the gateways
   * @param optionsOf each gateway's options (threshold 0: that gateway has no breaker)
   */
  constructor(names: Iterable<string>, optionsOf: (gateway: string) => CircuitBreakerOptions, logger: Logger) {
    for (const name of names) {
      const options = optionsOf(name);
      const threshold = options.threshold ?? 5;
      if (threshold <= 0) continue;
      const halfOpenAfterMs = options.halfOpenAfterMs ?? 5000;
      const policy = circuitBreaker(handleWhen(isGatewayDown), {
        halfOpenAfter: halfOpenAfterMs,
        breaker: new ConsecutiveBreaker(threshold),
      });
      const entry = { policy, openedAt: 0, halfOpenAfterMs };
      policy.onBreak((reason) => {
        entry.openedAt = Date.now();
        const err = "error" in reason ? (reason.error as { messages?: string[]; message?: string }) : undefined;
        logger.warn(
          { gateway: name, reason: err?.messages?.[0] ?? err?.message, retryInS: halfOpenAfterMs / 1000 },
          "gateway circuit breaker opened: its requests answer 503 at once, without calling it, until a trial call succeeds",
        );
      });
      policy.onHalfOpen(() =>
        logger.info({ gateway: name }, "gateway circuit breaker half-open: one trial call goes through"),
      );
      policy.onReset(() => logger.info({ gateway: name }, "gateway circuit breaker closed: the gateway answers again"));
      this.breakers.set(name, entry);
    }
  }

  /** Seconds until `gateway`'s open breaker lets a trial through; undefined when a call may go now (closed, or a trial is due). */
  private refusedFor(gateway: string): number | undefined {
    const b = this.breakers.get(gateway);
    if (!b) return undefined;
    if (b.policy.state === CircuitState.HalfOpen) return b.halfOpenAfterMs / 1000; // a trial is in flight
    if (b.policy.state !== CircuitState.Open) return undefined;
    const left = b.openedAt + b.halfOpenAfterMs - Date.now();
    return left > 0 ? left / 1000 : undefined;
  }

  /**
   * Refuses a request that needs a gateway whose breaker is open — before any store or cloud write.
   * @throws CircuitOpen (503 + Retry-After) naming the first such gateway
   */
  assertClosed(gateways: Iterable<string>): void {
    for (const g of gateways) {
      const s = this.refusedFor(g);
      if (s !== undefined) throw new CircuitOpen(g, s);
    }
  }

  /** The gateways whose breaker is open now (or half-open), for health and readiness. */
  openGateways(): string[] {
    return [...this.breakers.keys()].filter((g) => this.breakers.get(g)!.policy.state !== CircuitState.Closed);
  }

  /** `gateway` with its provider's cloud calls run through its breaker (an open breaker: CircuitOpen, no call). */
  wrap(gateway: Gateway): Gateway {
    const b = this.breakers.get(gateway.name);
    if (!b) return gateway;
    const provider = new Proxy(gateway.provider, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== "function" || !GUARDED.has(prop)) return value;
        return (...args: unknown[]) =>
          b.policy
            .execute(() => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args))
            .catch((err: unknown) => {
              if (err instanceof BrokenCircuitError)
                throw new CircuitOpen(gateway.name, this.refusedFor(gateway.name) ?? 1);
              throw err;
            });
      },
    }) as Provider;
    return { ...gateway, provider };
  }
}
