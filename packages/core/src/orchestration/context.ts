/**
 * What every orchestration step needs: the gateways, the router, the store,
 * the per-app locks, the logger and the compensation policy — plus the small
 * helpers they share (typed provider errors, provider refs, serial record
 * saves). Built once by the {@link Orchestrator} facade and passed to each
 * per-operation module.
 */
import { ExponentialBackoff, handleWhen, retry } from "cockatiel";
import type { CredentialType } from "../contract.js";
import {
  type CredhookError,
  ErrorCodes,
  isCredhookError,
  isStoreFailure,
  NotFound,
  PolicyViolation,
  UpstreamError,
  UpstreamUnavailable,
} from "../errors.js";
import { assertFenceHeld } from "../fence.js";
import { KeyedLock } from "../keyed-lock.js";
import { silentLogger, type Logger } from "../logger.js";
import type { ProviderCapabilities, ProviderCredentialRef } from "../provider.js";
import type { Gateway } from "../registry.js";
import type { Router } from "../routing.js";
import { generateApiKeyValue } from "../secrets.js";
import type { CredentialRecord, GatewayBinding } from "../credential-record.js";
import type { CredentialStore, StoreLocks } from "../store.js";
import {
  credentialEvent,
  type CredentialEvent,
  type CredentialEventExtra,
  type CredentialEventType,
} from "../events.js";
import { GatewayCircuits } from "./circuits.js";
import type { OrchestratorOptions } from "./types.js";

/**
 * What planning needs to know of the configured gateways: which gateway each
 * API id routes to, and each gateway's credential type and provider
 * capabilities. The orchestration context is one; a unit test can pass a
 * plain object.
 */
export interface GatewayTopology {
  /**
   * The gateway of each API id.
   * @throws Unroutable (422) naming every id that no route matches
   */
  resolveAll(apiIds: string[]): Map<string, string>;
  /**
   * The credential type and provider capabilities of a configured gateway, and whether it is retired.
   * @throws UpstreamUnavailable (503) when no gateway has that name (see {@link OrchestrationContext.gateway})
   */
  describe(gateway: string): { credentialType: CredentialType; capabilities: ProviderCapabilities; retired?: boolean };
}

/**
 * Refuses new credentials on retired gateways (`gateways.<name>.retired: true`): a create routed to one, or an
 * update that would put a credential on one.
 * @param gateways the gateways the operation would create the credential on
 * @throws PolicyViolation (422) naming the retired gateways and the way out
 */
export function assertNotRetired(topology: GatewayTopology, gateways: Iterable<string>): void {
  const retired = [...gateways].filter((g) => topology.describe(g).retired);
  if (retired.length === 0) return;
  const names = retired.map((g) => `'${g}'`).join(", ");
  throw new PolicyViolation(
    `gateway ${names} is retired (gateways.${retired[0]}.retired: true): it takes no new credentials`,
    {
      messages: [
        `route the app's APIs to another gateway under routes: in webhook.config.yaml (credentials already on ${names} keep working; \`credhook apply\` moves them)`,
      ],
    },
  );
}

/** The shared state and helpers of one {@link Orchestrator}; see the module comment. */
export class OrchestrationContext implements GatewayTopology {
  readonly gateways: Map<string, Gateway>;
  readonly router: Router;
  readonly store: CredentialStore;
  readonly logger: Logger;
  /** API key value generator (`generateApiKeyValue` with the default prefix unless the options give one). */
  readonly generateApiKey: () => string;
  /** Per-app serialisation: the store's cross-instance locks, or in-process ones. */
  readonly lock: StoreLocks;
  /** How long an abandoned create's record is kept after its writes may have begun, ms. */
  readonly settleMs: number;
  /** Attempts of each compensating call within a request. */
  readonly compensationAttempts: number;
  /** The clock, ms since the epoch ({@link OrchestratorOptions.now}). */
  readonly now: () => number;

  /** The per-gateway circuit breakers; {@link gateways} call their providers through them. */
  readonly circuits: GatewayCircuits;

  constructor(options: OrchestratorOptions) {
    this.logger = options.logger ?? silentLogger;
    this.circuits = new GatewayCircuits(
      options.gateways.keys(),
      (g) => options.circuitBreakers?.[g] ?? {},
      this.logger,
    );
    this.gateways = new Map([...options.gateways].map(([name, gw]) => [name, this.circuits.wrap(gw)]));
    this.router = options.router;
    this.store = options.store;
    this.generateApiKey = options.generateApiKey ?? generateApiKeyValue;
    this.settleMs = options.abandonSettleMs ?? 300_000;
    this.lock = options.store.locks ?? new KeyedLock();
    this.compensationAttempts = options.compensationAttempts ?? 3;
    this.now = options.now ?? Date.now;
  }

  /** {@link now} as an ISO 8601 time, for records. */
  nowIso(): string {
    return new Date(this.now()).toISOString();
  }

  /**
   * Whether a settle window that ends at `settleUntil` (ISO 8601, from {@link settleUntil}) is
   * still open: a write begun before it may still land, so a search that finds nothing proves nothing yet.
   */
  stillSettling(settleUntil: string): boolean {
    return this.nowIso() < settleUntil;
  }

  /** {@inheritDoc GatewayTopology.resolveAll} */
  resolveAll(apiIds: string[]): Map<string, string> {
    return this.router.resolveAll(apiIds);
  }

  /** {@inheritDoc GatewayTopology.describe} */
  describe(gateway: string): { credentialType: CredentialType; capabilities: ProviderCapabilities; retired?: boolean } {
    const gw = this.gateway(gateway);
    return {
      credentialType: gw.credentialType,
      capabilities: gw.provider.capabilities,
      ...(gw.retired ? { retired: true } : {}),
    };
  }

  /**
   * A configured gateway by name, to call its provider: checks first that the running
   * operation still holds its app's lock (the check before each provider call).
   * @throws UpstreamUnavailable (503, Retry-After 60) no gateway has that name: only a stored credential can name
   *   one (routes are checked against `gateways:` when the config loads, and `serve` refuses a config that drops a
   *   gateway holding live credentials), so the store is shared with an instance of another config. Never a 4xx: a
   *   portal's revoke must be retried until a configured instance has removed the key, not given up
   * @throws LockLost (503) the operation lost its app's lock: it must stop
   */
  gateway(name: string): Gateway {
    assertFenceHeld();
    const gw = this.gateways.get(name);
    if (!gw) {
      throw new UpstreamUnavailable(
        `gateway '${name}' holds this credential but is not in this instance's config (gateways:)`,
        60,
        {
          gateway: name,
          messages: [
            `the credential store is shared with an instance whose config still has '${name}': what could be done elsewhere is done and recorded; put '${name}' back under gateways: (retired: true) on this instance, or retry once an instance that has it has finished (its reconcile loop or \`credhook reconcile\`)`,
          ],
        },
      );
    }
    return gw;
  }

  /**
   * Runs a compensating call with the request's bounded retries (exponential
   * backoff 200 ms → 2 s, {@link OrchestratorOptions.compensationAttempts} attempts).
   * A lost lock, a store failure or an open circuit breaker is not retried: it fails the same way at once.
   * @param retries false: one attempt (passes outside a request retry on their next run)
   * @throws the last attempt's error
   */
  compensating<T>(fn: () => Promise<T>, retries = true): Promise<T> {
    if (!retries || this.compensationAttempts <= 1) return fn();
    const policy = retry(
      handleWhen((err) => !isStoreFailure(err) && (err as CredhookError).code !== ErrorCodes.CIRCUIT_OPEN),
      {
        maxAttempts: this.compensationAttempts - 1,
        backoff: new ExponentialBackoff({ initialDelay: 200, maxDelay: 2000 }),
      },
    );
    return policy.execute(fn);
  }

  /**
   * True when a failed provider call may still have taken effect: the provider
   * said so, or — unset — it failed with a 5xx (timeout, no answer, an upstream
   * error after the request was sent).
   */
  mayHaveLanded(err: CredhookError): boolean {
    return err.outcomeUnknown ?? err.status >= 500;
  }

  /**
   * Until when a search that finds nothing does not yet prove that a write on
   * `gateways` begun at `startedMs` did not land: `startedMs` + the settle
   * window (at the earliest now), or now when none of their providers' writes
   * can land late.
   * @returns an ISO 8601 time
   */
  settleUntil(gateways: string[], startedMs: number): string {
    const lateWrites = gateways.some((g) => this.gateways.get(g)?.provider.capabilities.writesLandLate !== false);
    const now = this.now();
    return new Date(lateWrites ? Math.max(startedMs + this.settleMs, now) : now).toISOString();
  }

  /**
   * Wraps anything a provider threw into a typed error tagged with the gateway (an untyped one is
   * logged, then 502). A store failure (a rate-limit slot that could not be booked, a lost lock)
   * stays the store's: it is not tagged with the gateway.
   */
  asTyped(err: unknown, gateway: string): CredhookError {
    if (isCredhookError(err)) {
      if (!isStoreFailure(err)) err.gateway ??= gateway;
      return err;
    }
    this.logger.error({ gateway, err }, "provider threw an untyped error");
    return new UpstreamError(`gateway '${gateway}' failed unexpectedly`, { cause: err, gateway });
  }

  /**
   * Runs `fn` on record `credentialId` under its app's lock, re-read once the lock is held (an operator's or a
   * pass's action on one credential: disable, enable, a leak report).
   * @throws NotFound (404) no record with that id, before or once the lock is held (it was revoked)
   */
  async lockedRecord<T>(credentialId: string, fn: (rec: CredentialRecord) => Promise<T>): Promise<T> {
    const gone = () => new NotFound(`credential ${credentialId} does not exist (it was revoked)`);
    const first = await this.store.get(credentialId);
    if (!first) throw gone();
    return this.lock.run(first.appKey, async () => {
      const rec = await this.store.get(credentialId);
      if (!rec) throw gone();
      return fn(rec);
    });
  }

  /** The provider's reference to a record's binding (its mark's credential id, native id, resources, app). */
  ref(rec: CredentialRecord, b: GatewayBinding): ProviderCredentialRef {
    return {
      credentialId: b.markId ?? rec.id,
      credentialType: rec.credentialType,
      nativeId: b.nativeId,
      resources: b.resources,
      app: rec.app,
    };
  }

  /**
   * The event of a change of `rec` as it is now (the record's state after the change), timed now:
   * passed to the store's write of that change, which commits both together.
   */
  event(type: CredentialEventType, rec: CredentialRecord, extra: CredentialEventExtra = {}): CredentialEvent {
    return credentialEvent(type, rec, this.nowIso(), extra);
  }

  /**
   * A function that saves `rec` one write at a time, in call order (parallel
   * gateway completions write the same record), stamping `updatedAt`.
   * @returns the save's promise; a failed save rejects that call only. `type`: the event of the change
   * this save completes ({@link event}, built when the save runs, with `extra`), committed with it.
   */
  serialSaver(rec: CredentialRecord): (type?: CredentialEventType, extra?: CredentialEventExtra) => Promise<void> {
    let chain: Promise<void> = Promise.resolve();
    return (type, extra) => {
      const next = chain.then(() => {
        rec.updatedAt = this.nowIso();
        return type ? this.store.save(rec, [this.event(type, rec, extra)]) : this.store.save(rec);
      });
      chain = next.catch(() => undefined);
      return next;
    };
  }

  /**
   * The failure of the first gateway in `order` (the error the portal gets when several failed);
   * a store failure first of all (the operation stopped for it).
   */
  firstByGatewayOrder(failures: CredhookError[], order: string[]): CredhookError {
    const store = failures.find(isStoreFailure);
    if (store) return store;
    return [...failures].sort((a, b) => order.indexOf(a.gateway ?? "") - order.indexOf(b.gateway ?? ""))[0]!;
  }
}
