/**
 * The orchestration of portal requests across gateways (docs/architecture.md, "One
 * request, end to end" and "Credentials across several gateways"): the
 * {@link Orchestrator} facade takes each app's lock and dispatches to one
 * module per responsibility, under `./orchestration/`:
 *
 * - `plan.ts` — routing and every 422 of the multi-gateway rules, decided from
 *   routes and provider capabilities alone (pure);
 * - `api-sets.ts` — pure functions over API sets;
 * - `journal.ts` — the record's state changes (intent, abandoned);
 * - `create.ts`, `replay.ts`, `update.ts`, `revoke.ts`, `adopt.ts` — one
 *   operation each, with its compensation; `disable.ts` — turning a credential off and on;
 *   `leak.ts` — a leak reported without acting on a gateway;
 * - `expiry.ts` — credential expiry: the config's policies, one credential's expiry, the periodic pass;
 * - `abandoned.ts` — cleanup of abandoned creates;
 * - `recovery.ts` — interrupted operations, and the serve loop's pass;
 * - `settle.ts` — failed updates whose writes may land late, brought back to the record;
 * - `reconcile.ts` — `credhook reconcile`'s report, garbage and drift;
 * - `apply.ts` — `credhook apply`: what bringing the stored credentials to the config takes, and plan changes applied;
 * - `move.ts` — `credhook apply`'s run: moves (dual-homed until a prune), prunes, a page of the store at a time;
 * - `credentials.ts` — finding credentials by app, fingerprint, gateway, developer or state, and acting on each
 *   found (revoke, disable, enable) for an operator's command or a secret-scanning alert;
 * - `health.ts`; `context.ts` — the state and helpers they share.
 */
import type { CreateCredentialsRequest, RevokeCredentialsRequest, UpdateCredentialsRequest } from "./contract.js";
import { NotFound } from "./errors.js";
import type { Gateway } from "./registry.js";
import { adopt, adoptAndUpdate } from "./orchestration/adopt.js";
import { type ApplyPlan, type ApplyTopology, planApply, reapplyRequestFor } from "./orchestration/apply.js";
import {
  type ApplyResult,
  type ApplyRunOptions,
  applyOne,
  type RunApplyOptions,
  type RunApplySummary,
  runApply,
} from "./orchestration/move.js";
import { walkPages } from "./store-pages.js";
import { driftTopology } from "./drift.js";
import { OrchestrationContext } from "./orchestration/context.js";
import { createOrReplay } from "./orchestration/create.js";
import {
  type ActionOptions,
  type CredentialAction,
  type CredentialActionResult,
  type CredentialQuery,
  actOnCredentials,
  findCredentials,
} from "./orchestration/credentials.js";
import type { CredentialRecord } from "./credential-record.js";
import { setCredentialEnabled } from "./orchestration/disable.js";
import { type ExpiryPassResult, expiryPass } from "./orchestration/expiry.js";
import { health } from "./orchestration/health.js";
import { type LeakOptions, type LeakOutcome, reportLeaked } from "./orchestration/leak.js";
import { planCreate } from "./orchestration/plan.js";
import { reconcile } from "./orchestration/reconcile.js";
import { finishBeforeUse, reconcileLoopPass } from "./orchestration/recovery.js";
import { revoke } from "./orchestration/revoke.js";
import { sweep } from "./orchestration/settle.js";
import type {
  AdoptionRequest,
  AdoptionResult,
  CreateOutcome,
  DisableOptions,
  OperationOutcome,
  OrchestratorOptions,
  ReconcileLoopResult,
  ReconcileOptions,
  ReconcileReport,
  RevokeOptions,
  SweepResult,
} from "./orchestration/types.js";
import { updateKnown } from "./orchestration/update.js";

/**
 * Runs create / update / revoke / health / reconcile / adopt for the server
 * and the CLI. One instance per process. Requests for the same app are
 * serialised — across every instance when the store has cross-instance locks
 * (PostgreSQL) — and different apps run in parallel.
 */
export class Orchestrator {
  private readonly ctx: OrchestrationContext;
  private readonly options: OrchestratorOptions;

  constructor(options: OrchestratorOptions) {
    this.ctx = new OrchestrationContext(options);
    this.options = options;
  }

  /** The configured gateways by name (as passed in {@link OrchestratorOptions.gateways}). */
  get gateways(): ReadonlyMap<string, Gateway> {
    return this.ctx.gateways;
  }

  /**
   * Creates the app's credential on every gateway its APIs route to, or returns
   * the live one of a replayed create.
   * @throws Unroutable (422) unrouted API ids
   * @throws CircuitOpen (503) a gateway of the app is known down (its breaker is open): nothing was written
   * @throws PolicyViolation (422) mixed credential types, two gateways that generate their own key values, client credentials on several gateways, a key value another gateway cannot import
   * @throws InvalidReference (422) | Throttled (503) | UpstreamError (502) | UpstreamTimeout (504) from a gateway, after the create was abandoned and cleaned up
   * @throws Conflict (409) a replayed create of a disabled credential ({@link disable})
   */
  async create(req: CreateCredentialsRequest): Promise<CreateOutcome> {
    const plan = planCreate(this.ctx, req);
    // A gateway known down: refused before any store or cloud write (never a half-made credential).
    this.ctx.circuits.assertClosed(plan.groups.keys());
    return this.ctx.lock.run(plan.appKey, () => createOrReplay(this.ctx, plan, req));
  }

  /**
   * Applies the request's ADDED/REMOVED/NONE changes (and a rename) to every
   * gateway of the credential; creates it on gateways newly reached and removes
   * it from gateways that lost their last API. Rolls back on partial failure.
   * A credential the store does not know is recorded again only when its
   * gateway finds credhook's mark on it.
   * @throws NotFound (404) neither the store nor the request's ids find the credential
   * @throws Conflict (409) the credential is disabled ({@link disable})
   * @throws Unroutable | PolicyViolation | InvalidReference (422), Throttled (503), UpstreamError (502), UpstreamTimeout (504)
   */
  async update(req: UpdateCredentialsRequest): Promise<OperationOutcome> {
    const ctx = this.ctx;
    const publicId = (req.credentialType === "API_KEY" ? req.apiKeyId : req.clientId)!;
    const found = await ctx.store.findByPublicId(req.credentialType, publicId);
    ctx.circuits.assertClosed(
      found ? [...found.bindings.map((b) => b.gateway), ...this.routedGateways(req)] : this.routedGateways(req),
    );
    if (!found) return ctx.lock.run(`id:${req.credentialType}:${publicId}`, () => adoptAndUpdate(ctx, req, publicId));
    return ctx.lock.run(found.appKey, async () => {
      let rec = await ctx.store.findByPublicId(req.credentialType, publicId);
      if (rec && rec.status !== "active") rec = await finishBeforeUse(ctx, rec);
      if (!rec) throw new NotFound(`credential ${req.credentialType} '${publicId}' does not exist (it was revoked)`);
      return updateKnown(ctx, rec, req);
    });
  }

  /** The gateways the request's API ids route to (none when one does not route: planning answers that 422). */
  private routedGateways(req: UpdateCredentialsRequest): string[] {
    try {
      return [...new Set(this.ctx.resolveAll(req.apis.map((a) => a.id)).values())];
    } catch {
      return [];
    }
  }

  /** The gateways whose circuit breaker is open now (their requests answer 503 at once). */
  openCircuits(): string[] {
    return this.ctx.circuits.openGateways();
  }

  /**
   * Revokes the credential on every gateway the store knows, or — when the store
   * does not know it — on every gateway of its type by the request's id, where
   * the resource carries that gateway's mark. Idempotent.
   * @param options an operator's reason (`credhook revoke`): a leak emits `credential.leaked` (see {@link RevokeOptions})
   * @throws Throttled (503) | UpstreamError (502) | UpstreamTimeout (504); what failed stays recorded for a retry
   */
  revoke(req: RevokeCredentialsRequest, options: RevokeOptions = {}): Promise<OperationOutcome> {
    return revoke(this.ctx, req, options);
  }

  /**
   * Turns the credential off on every gateway it is on, keeping its record and resources (`credhook disable`, a
   * secret-scanning alert, expiry): calls with it are refused, the portal's update answers 409 until
   * {@link enable}, its revoke works as always. Idempotent; a retry completes a half-done disable.
   * @param options a leak (`credential.leaked`, once per credential) and the reason (see {@link DisableOptions})
   * @throws NotFound (404) | Conflict (409) not active | PolicyViolation (422) a gateway cannot disable: nothing changed
   * @throws Throttled (503) | UpstreamError (502) | UpstreamTimeout (504): the record keeps the decision for a retry
   */
  disable(credentialId: string, options: DisableOptions = {}): Promise<OperationOutcome> {
    return setCredentialEnabled(this.ctx, credentialId, false, options);
  }

  /**
   * Turns a disabled credential on again on every gateway (`credhook enable`); its record's mark is cleared, with
   * `credential.enabled`, once every gateway confirmed. A credential that is not disabled: nothing to do.
   * @throws as {@link disable}
   */
  enable(credentialId: string, options: Pick<DisableOptions, "reason"> = {}): Promise<OperationOutcome> {
    return setCredentialEnabled(this.ctx, credentialId, true, options);
  }

  /**
   * Records that the credential's key leaked — `leakedAt` on the record and a `credential.leaked` event in the same
   * store write, once per credential — without changing anything on a gateway (a secret-scanning alert under the
   * `notify` policy). A credential reported before: nothing is written (`announced: false`).
   * @throws NotFound (404) no record with that id
   */
  reportLeaked(credentialId: string, options: LeakOptions = {}): Promise<LeakOutcome> {
    return reportLeaked(this.ctx, credentialId, options);
  }

  /**
   * The store's records matching `query` (every given field must match), oldest first: by the store's fingerprint
   * index when a fingerprint is given (`credhook inspect --fingerprint`, a secret-scanning alert), else from every
   * record (an operator's listing, not a request path).
   * @throws Error an invalid fingerprint or state
   */
  findCredentials(query: CredentialQuery): Promise<CredentialRecord[]> {
    return findCredentials(this.ctx.store, query);
  }

  /**
   * `credhook revoke`, `disable`, `enable` and a secret-scanning alert's policy: acts on each credential matching
   * `query` (by fingerprint or app) on every gateway at once, one credential after another, through {@link revoke},
   * {@link disable} and {@link enable}. Idempotent: a credential revoked before is answered from the audit trail.
   * @returns one result per credential; a gateway's failure is a `failed` result, not a throw
   * @throws Error `query` names neither a fingerprint nor an app, or the app matches several apps
   */
  actOnCredentials(
    action: CredentialAction,
    query: Pick<CredentialQuery, "app" | "fingerprint" | "credentialId">,
    how: ActionOptions = {},
  ): Promise<CredentialActionResult[]> {
    return actOnCredentials(action, this, this.ctx.store, query, how);
  }

  /**
   * `credhook apply`'s plan (docs/gateway-migration.md): per live credential that differs from the config, the APIs
   * to move, the plans changed, the gateways missing, whether it can move without a new key, the provider calls and
   * the time the gateways' declared write rates allow. Walks the store a page at a time (`store.listPage`), keeping
   * only the entries of credentials that differ; calls no gateway.
   * @param options.prune count the revoke on the gateway each moved credential leaves
   * @param options.limit at most this many entries, oldest credentials first (a canary batch)
   */
  planApply(options: { prune?: boolean; limit?: number } = {}): Promise<ApplyPlan> {
    const records = walkPages((after) => this.ctx.store.listPage({ ...(after ? { after } : {}) }));
    return planApply(this.applyTopology(), records, options);
  }

  /** What `credhook apply` plans with: the routes, the gateways, their plans' fingerprints and capabilities. */
  private applyTopology(): ApplyTopology {
    return { ...driftTopology(this.ctx.gateways, this.ctx.router), describe: (g: string) => this.ctx.describe(g) };
  }

  /**
   * Brings one credential to the config (`orchestration/move.ts`, docs/gateway-migration.md): its moves carried out
   * (created where its routes now name with the same key value and plans, kept dual-homed where it was), its changed
   * plans applied in place, and with `options.prune` its dual-homed grants removed — under the app's lock, each step
   * journaled, rolled back on failure, with its `credential.updated` event (gateways before and after).
   * @returns what was done; `not-movable` (untouched) when its moves need a new key
   * @throws NotFound (404) it was revoked; CircuitOpen (503) a gateway it needs is known down (nothing written);
   *   a gateway's or the store's error, after the rollback
   */
  moveCredential(credentialId: string, options: ApplyRunOptions = {}): Promise<ApplyResult> {
    return applyOne(this.ctx, this.applyTopology(), credentialId, options);
  }

  /**
   * `credhook apply`: every live credential that differs from the config (or is dual-homed, with `prune`) brought to
   * it by {@link moveCredential}, a page of the store at a time, several at once; a gateway whose breaker is open or
   * whose quota queue is full pauses its credentials (they wait and are tried again) instead of failing them.
   * @returns the counts; each credential's result goes to `options.onResult` as it comes
   */
  runApply(options: RunApplyOptions = {}): Promise<RunApplySummary> {
    return runApply(this.ctx, this.applyTopology(), options);
  }

  /**
   * Brings a credential to its plans' current definitions in place (a Kong plan's limits raised: its consumer's
   * rate-limiting plugin updated), through {@link update} with its API set as it is — the app's lock, the journal,
   * the rollback and the `credential.updated` event — and records the plans' new fingerprints.
   * @throws NotFound (404) no record with that id; what {@link update} throws (a disabled credential: Conflict 409)
   */
  async applyPlanChanges(credentialId: string): Promise<OperationOutcome> {
    const rec = await this.ctx.store.get(credentialId);
    if (!rec) throw new NotFound(`credential ${credentialId} does not exist (it was revoked)`);
    return this.update(reapplyRequestFor(rec));
  }

  /**
   * Checks the store and every gateway in parallel.
   * @throws UpstreamUnavailable (503) naming every part that failed
   */
  health(): Promise<OperationOutcome> {
    return health(this.ctx);
  }

  /**
   * `credhook reconcile`: finishes interrupted operations older than
   * `options.olderThanMs`, cleans up abandoned creates, revokes garbage and
   * reports drift (never deleted).
   * @param options.dryRun report what would be done, change nothing
   * @param options.olderThanMs only records last written longer ago than this, ms (default 60000: leaves in-flight requests alone)
   */
  reconcile(options: ReconcileOptions = {}): Promise<ReconcileReport> {
    return reconcile(this.ctx, options);
  }

  /**
   * Brings credentials made outside credhook under it (`credhook adopt`):
   * see `orchestration/adopt.ts`.
   * @param options.dryRun check and report; change nothing
   * @throws only store failures; per-entry problems are results
   */
  adopt(entries: AdoptionRequest[], options: { dryRun?: boolean } = {}): Promise<AdoptionResult[]> {
    return adopt(this.ctx, entries, options);
  }

  /**
   * One background sweep: a cleanup pass over each abandoned create, then each
   * live credential whose failed update's settle window has ended is brought
   * back to its record — each under its app's lock. Never throws: failures
   * stay on the records for the next pass.
   */
  sweepAbandoned(): Promise<SweepResult> {
    return sweep(this.ctx);
  }

  /**
   * One pass of `credhook serve`'s reconcile loop (one instance at a time):
   * interrupted operations no live instance holds are finished, then abandoned
   * creates are swept.
   */
  reconcileLoopPass(): Promise<ReconcileLoopResult> {
    return reconcileLoopPass(this.ctx);
  }

  /**
   * One expiry pass (`credhook serve`'s expiry loop, docs/expiry.md; `orchestration/expiry.ts`): over the active
   * credentials, `credential.expiring` once at each one's warning time, `credential.expired` once at its expiry, then
   * its policy's action (disable, or revoke where a gateway cannot disable; revoke). One instance at a time; a
   * failed action is retried by the next pass.
   * @throws StoreUnavailable | LockLost (503): the pass stops there; a gateway's failure is logged and counted, not thrown
   */
  expiryPass(): Promise<ExpiryPassResult> {
    return expiryPass(this.ctx, this.options.expiry ?? {});
  }

  /** Closes every provider (not the store: its owner closes it). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.ctx.gateways.values()].map((g) => g.provider.close?.()));
  }
}
