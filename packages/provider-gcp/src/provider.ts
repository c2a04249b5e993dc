/**
 * The `gcp` provider: one app's API key as a Google Cloud API key (API Keys
 * v2), restricted (`restrictions.apiTargets`) to the services of the app's APIs.
 *
 * - Ownership: every key it creates carries credhook's mark, the annotations
 *   `credhook.io/gateway` (this gateway's name) and `credhook.io/credential-id`.
 *   update, revoke and readSecret read the key first and never touch a key
 *   without this gateway's mark (nor, when the caller names a credential id,
 *   another credential's): revoke answers "not-owned", update NotFound.
 * - create: createKey with a deterministic keyId (from the credential id), then
 *   polls the long-running operation (bounded); the finished operation's
 *   response is the Key with its `keyString`, so getKeyString is called only
 *   when that field is absent. A create that finds its keyId taken
 *   (ALREADY_EXISTS: a retried or replayed create) resumes that key when it
 *   carries this credential's mark — undeleting it when soft-deleted.
 *   A failure after createKey may have been applied is never cleaned up here:
 *   the error carries `partial` (the keyId) and `outcomeUnknown`, and core
 *   revokes it (provider.ts, "Providers never clean up alone").
 * - update: getKey, then updateKey with an `updateMask` of only what differs
 *   (`restrictions`, `displayName` on a rename, `annotations`) and the key's
 *   etag; nothing is written when nothing differs. One PATCH replaces the
 *   whole target set, so an update never passes through "less access".
 * - revoke: deleteKey (a soft delete: Google keeps the key undeletable for 30
 *   days); "gone" when already deleted or absent.
 * - findByCredential: getKey of the keyId derived from the credential id.
 * - adopt: puts credhook's mark on a key made outside credhook (updateKey of
 *   the annotations only).
 *
 * Calls go through the project's shared rate limiter (limits.ts) and are
 * retried per retry.ts (429 with back-off within a budget, transient failures).
 * API reference: https://cloud.google.com/api-keys/docs/reference/rest/v2/projects.locations.keys
 */
import { TaskCancelledError, timeout, TimeoutStrategy, type TimeoutPolicy } from "cockatiel";
import {
  Conflict,
  CredhookError,
  ErrorCodes,
  retryAfterOf,
  NotFound,
  Throttled,
  UpstreamUnavailable,
} from "@credhook/core/errors";
import type {
  CredentialSearch,
  GatewayApi,
  JsonValue,
  Logger,
  OwnedResource,
  Provider,
  ProviderCapabilities,
  ProviderContext,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderResources,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
} from "@credhook/core/provider";
import { CachedHealthProbe, GatewayErrors, RateLimitQueueFull } from "@credhook/core/provider-kit";
import type { ApiKeysClient, protos } from "@google-cloud/apikeys";
import type { Operation } from "google-gax";
import { NotRetriable, OperationTimeout, RequestTimeout, toTypedError } from "./google-errors.js";
import { acquireProjectLimiters, type ProjectLimiters, type QuotaBucket } from "./limits.js";
import {
  ANNOTATIONS,
  apiTargetsFor,
  annotationsFor,
  canonicalTargets,
  displayNameFor,
  KEY_ID_PATTERN,
  keyIdFor,
  noAccessTargets,
  type ApiTarget,
  type TargetMapping,
} from "./mapping.js";
import { RetryBudget, retryPolicyFor, type RetryHooks } from "./retry.js";
import type { GcpProviderOptionsWithDefaults } from "./types.js";

type IKey = protos.google.api.apikeys.v2.IKey;
type IRestrictions = protos.google.api.apikeys.v2.IRestrictions;

/** A gax promise: cancellable, though typed as a plain Promise by the client. */
type Cancellable<T> = Promise<T> & { cancel?: () => void };

/** Longest delay between two operation polls (ms). */
const POLL_MAX_DELAY_MS = 5000;
/** Attempts of an etag-checked read-modify-write before giving up with Conflict. */
const ETAG_ATTEMPTS = 3;
/** Page size of listKeys (the API's maximum, https://cloud.google.com/api-keys/docs/reference/rest/v2/projects.locations.keys/list). */
const LIST_PAGE_SIZE = 300;
/** Retry-After (s) when a keyId is taken by a create that has not landed yet. */
const PENDING_CREATE_RETRY_AFTER_S = 5;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Google API Keys provider for one gateway. Build it with the package's factory. */
export class GcpApiKeysProvider implements Provider {
  /** Issues API keys only; Google generates the key string (no import); the string can be read back. */
  readonly capabilities: ProviderCapabilities = {
    credentialTypes: ["API_KEY"],
    importsApiKeyValue: false,
    readsBackSecret: true,
    // Google key strings: "AIza" + 35 characters of [A-Za-z0-9_-], 39 in all.
    generatedApiKeyFormat: {
      characters: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
      length: 39,
    },
  };

  private readonly errors: GatewayErrors;
  private readonly log: Logger;
  private readonly mapping: TargetMapping;
  private readonly parent: string;
  private readonly limiters: ProjectLimiters;
  private readonly releaseLimiters: () => Promise<void>;
  private readonly timeoutPolicy: TimeoutPolicy;
  private readonly healthProbe: CachedHealthProbe;
  private closed = false;

  constructor(
    private readonly client: ApiKeysClient,
    private readonly o: GcpProviderOptionsWithDefaults,
    /** Where the client connects (`host:port`): with `projectId`, the scope of the shared rate limiter. */
    private readonly endpointKey: string,
    private readonly ctx: ProviderContext,
  ) {
    this.errors = new GatewayErrors(ctx.gateway);
    this.healthProbe = new CachedHealthProbe(() => this.probeHealth(), { successTtlMs: o.healthCacheMs });
    this.log = ctx.logger;
    this.parent = `projects/${o.projectId}/locations/global`;
    this.mapping = {
      ...(o.services ? { services: o.services } : {}),
      ...(o.serviceTemplate ? { serviceTemplate: o.serviceTemplate } : {}),
      ...(o.usagePlans ? { usagePlans: o.usagePlans } : {}),
      gateway: ctx.gateway,
      configPath: ctx.configPath,
    };
    const { limiters, release } = acquireProjectLimiters(`${endpointKey}|${o.projectId}`, o.rateLimit);
    this.limiters = limiters;
    this.releaseLimiters = release;
    this.timeoutPolicy = timeout(o.requestTimeoutMs, TimeoutStrategy.Aggressive);
  }

  // ---------------------------------------------------------------- calls

  private keyName(keyId: string): string {
    return `${this.parent}/keys/${keyId}`;
  }

  private checkOpen(): void {
    if (this.closed) throw this.errors.error(UpstreamUnavailable, `the gcp provider is shutting down`, 5);
  }

  /** A fresh retry budget for one provider operation. */
  private budget(): RetryBudget {
    return new RetryBudget(this.o.retry.budgetMs);
  }

  /**
   * One HTTP call: waits for the project's quota limiter (and, with several
   * credhook instances on one store, for its slot among all of them:
   * `ProviderContext.rateSlots`, spaced at the bucket's steady rate), then runs
   * `fn` with the request time-out (cancelling the call on expiry).
   * @throws Throttled when the local or shared queue is longer than `maxQueueWaitMs`
   */
  private async limited<T>(kind: "read" | "write", what: string, fn: () => Cancellable<T>): Promise<T> {
    this.checkOpen();
    const q: QuotaBucket = kind === "read" ? this.limiters.reads : this.limiters.writes;
    try {
      await q.limiter.acquire(
        this.o.rateLimit.maxQueueWaitMs,
        this.ctx.rateSlots
          ? { slots: this.ctx.rateSlots, key: `gcp|${this.endpointKey}|${this.o.projectId}|${kind}` }
          : undefined,
      );
    } catch (err) {
      if (!(err instanceof RateLimitQueueFull)) throw err;
      const limit = `limit ${q.perMinute}/minute for project ${this.o.projectId}`;
      throw err.acrossInstances
        ? this.errors.error(
            Throttled,
            `${what}: every instance's Google API Keys ${kind}s are queued ${Math.ceil(err.waitMs / 1000)} s ahead (${limit})`,
            err.waitMs / 1000,
          )
        : this.errors.error(
            Throttled,
            `${what}: too many Google API Keys ${kind}s queued (client-side ${limit})`,
            err.waitMs / 1000,
          );
    }
    try {
      return await this.timeoutPolicy.execute(({ signal }) => {
        const p = fn();
        signal.addEventListener("abort", () => p.cancel?.(), { once: true });
        return p;
      });
    } catch (err) {
      if (err instanceof TaskCancelledError) throw new RequestTimeout(this.o.requestTimeoutMs);
      throw err;
    }
  }

  /**
   * One API call through the limiter, retried per retry.ts within `budget`.
   * @throws typed errors only
   */
  private async call<T>(
    kind: "read" | "write",
    what: string,
    fn: () => Cancellable<T>,
    budget: RetryBudget,
    hooks: RetryHooks = {},
  ): Promise<T> {
    const policy = retryPolicyFor(this.o.retry, kind, budget, {
      ...hooks,
      onRetry: (status, delayMs) =>
        this.log.debug(
          { call: what, status, delayMs, budgetLeftMs: budget.remainingMs },
          "retrying a Google API Keys call",
        ),
    });
    try {
      return await policy.execute(() => this.limited(kind, what, fn));
    } catch (err) {
      throw this.typed(err, what);
    }
  }

  /**
   * Sends a write that returns a long-running operation. `state.sent` is set
   * once Google accepted it, `state.maybeApplied` when an attempt failed in a
   * way that may have applied it (no answer, 5xx).
   */
  private async startWrite(
    what: string,
    fn: () => Cancellable<[Operation, ...unknown[]]>,
    budget: RetryBudget,
    state: WriteState = { accepted: false, maybeApplied: false },
  ): Promise<Operation> {
    const [op] = await this.call("write", what, fn, budget, { onMaybeApplied: () => (state.maybeApplied = true) });
    state.accepted = true;
    return op;
  }

  /**
   * Polls `op` until it is done, each poll a read through the limiter (polls
   * count against the read quota) and retried like one, bounded by
   * `operationTimeoutMs`; returns the finished operation's Key.
   * @throws UpstreamTimeout past operationTimeoutMs; the operation's own error, typed; a poll's failure, typed
   */
  private async waitFor(op: Operation, what: string, budget: RetryBudget): Promise<IKey> {
    const name = op.name ?? "(unnamed)";
    const started = Date.now();
    let delay = this.o.pollInitialDelayMs;
    try {
      while (!op.latestResponse?.done) {
        if (Date.now() - started + delay > this.o.operationTimeoutMs)
          throw new OperationTimeout(name, this.o.operationTimeoutMs);
        await sleep(delay);
        delay = Math.min(Math.round(delay * 1.5), POLL_MAX_DELAY_MS);
        await this.call("read", `${what} (polling ${name})`, () => GcpApiKeysProvider.poll(op), budget);
      }
      if (op.latestResponse.error)
        throw new NotRetriable(
          op.error ??
            Object.assign(new Error(op.latestResponse.error.message ?? "operation failed"), {
              code: op.latestResponse.error.code,
            }),
        );
      return (op.result ?? {}) as IKey;
    } catch (err) {
      throw this.typed(err, what);
    } finally {
      this.log.debug({ operation: name, call: what, ms: Date.now() - started }, "operation settled");
    }
  }

  /** One poll of `op` (cancellable); an operation that finished with an error is not retried. */
  private static poll(op: Operation): Cancellable<unknown> {
    const p: Cancellable<unknown> = op.getOperation().catch((err: unknown) => {
      throw op.latestResponse?.done ? new NotRetriable(err) : err;
    });
    p.cancel = () => op.currentCallPromise_?.cancel?.();
    return p;
  }

  private typed(err: unknown, what: string): CredhookError {
    return toTypedError(err, what, this.ctx.gateway);
  }

  private async getKey(keyId: string, budget: RetryBudget): Promise<IKey> {
    const name = this.keyName(keyId);
    const [key] = await this.call(
      "read",
      `getKey ${keyId}`,
      () => this.client.getKey({ name }) as Cancellable<[IKey, unknown, unknown]>,
      budget,
    );
    return key;
  }

  /** getKey, or undefined when the key does not exist. */
  private async findKey(keyId: string, budget: RetryBudget): Promise<IKey | undefined> {
    try {
      return await this.getKey(keyId, budget);
    } catch (err) {
      if (err instanceof CredhookError && err.code === ErrorCodes.NOT_FOUND) return undefined;
      throw err;
    }
  }

  private async keyString(keyId: string, budget: RetryBudget): Promise<string> {
    const name = this.keyName(keyId);
    const [res] = await this.call(
      "read",
      `getKeyString ${keyId}`,
      () =>
        this.client.getKeyString({ name }) as Cancellable<
          [protos.google.api.apikeys.v2.IGetKeyStringResponse, unknown, unknown]
        >,
      budget,
    );
    if (!res.keyString) throw this.typed(new Error("empty keyString"), `getKeyString ${keyId}`);
    return res.keyString;
  }

  private resources(keyId: string, key: IKey | undefined): ProviderResources {
    return { keyName: this.keyName(keyId), ...(key?.uid ? { uid: key.uid } : {}) };
  }

  /** True for a key Google reports soft-deleted. */
  private static deleted(key: IKey): boolean {
    return !!key.deleteTime;
  }

  /**
   * Whose key this is, by credhook's mark (the gateway and credential-id annotations):
   * `mine` — this gateway's, and `credentialId`'s when it is not empty;
   * `other-credential` — this gateway's, of another credential;
   * `foreign` — no credhook mark of this gateway (made by hand, by another tool, or by another gateway).
   */
  private ownership(key: IKey, credentialId: string): "mine" | "other-credential" | "foreign" {
    const a = key.annotations ?? {};
    const owner = a[ANNOTATIONS.credentialId];
    if (!owner || a[ANNOTATIONS.gateway] !== this.ctx.gateway) return "foreign";
    return credentialId && owner !== credentialId ? "other-credential" : "mine";
  }

  // ---------------------------------------------------------------- state

  /** Restrictions with `targets` as apiTargets, keeping the key's client restrictions (IP, referrer, app) untouched. */
  private static restrictionsWith(current: IRestrictions | null | undefined, targets: ApiTarget[]): IRestrictions {
    const out: IRestrictions = { apiTargets: targets };
    for (const k of [
      "browserKeyRestrictions",
      "serverKeyRestrictions",
      "androidKeyRestrictions",
      "iosKeyRestrictions",
    ] as const) {
      if (current?.[k]) (out as Record<string, unknown>)[k] = current[k];
    }
    return out;
  }

  /**
   * Brings an existing key of this gateway to the desired state with an
   * etag-checked updateKey of only the fields that differ; re-reads and tries
   * again when the key changed concurrently. With an empty `credentialId` the
   * gateway's mark suffices and the key keeps its credential id.
   * @throws NotFound the key does not exist, is deleted, or is not this gateway's (this credential's)
   * @throws Conflict the key kept changing concurrently
   */
  private async reconcile(
    keyId: string,
    credentialId: string,
    app: ProviderCredentialRef["app"],
    apis: GatewayApi[],
    targets: ApiTarget[] | null,
    budget: RetryBudget,
    known?: IKey,
  ): Promise<IKey> {
    const ours = annotationsFor(credentialId, this.ctx.gateway, app, apis);
    const displayName = displayNameFor(app);
    let fresh = known;
    for (let attempt = 1; ; attempt++) {
      const key = fresh ?? (await this.getKey(keyId, budget));
      fresh = undefined;
      if (GcpApiKeysProvider.deleted(key)) throw this.errors.error(NotFound, `API key ${keyId} was deleted`);
      const owner = this.ownership(key, credentialId);
      if (owner !== "mine") {
        this.log.info(
          { keyId, owner },
          "update refused: the API key does not carry this gateway's (credential's) mark",
        );
        throw this.errors.error(
          NotFound,
          `API key ${keyId} is not managed by this gateway${owner === "other-credential" ? " for this credential" : ""}`,
          {
            messages: ["bring a key made outside credhook under it with `credhook adopt`"],
          },
        );
      }
      const current = canonicalTargets(key.restrictions?.apiTargets);
      const firstService = current[0]?.service ?? Object.values(this.o.services ?? {})[0] ?? "apikeys.googleapis.com";
      const desired = targets && targets.length > 0 ? targets : noAccessTargets(firstService);
      const annotations = { ...(key.annotations ?? {}), ...ours };
      const paths: string[] = [];
      if (JSON.stringify(current) !== JSON.stringify(canonicalTargets(desired))) paths.push("restrictions");
      if ((key.displayName ?? "") !== displayName) paths.push("displayName");
      if (!sameAnnotations(key.annotations, annotations)) paths.push("annotations");
      if (paths.length === 0) return key;
      const what = `updateKey ${keyId}`;
      const state: WriteState = { accepted: false, maybeApplied: false };
      try {
        const op = await this.startWrite(
          what,
          () =>
            this.client.updateKey({
              key: {
                name: this.keyName(keyId),
                etag: key.etag ?? null,
                displayName,
                annotations,
                restrictions: GcpApiKeysProvider.restrictionsWith(key.restrictions, desired),
              },
              updateMask: { paths },
            }) as Cancellable<[Operation, unknown, unknown]>,
          budget,
          state,
        );
        const updated = await this.waitFor(op, what, budget);
        this.log.info({ keyId, fields: paths }, "API key updated");
        return updated;
      } catch (err) {
        const e = err as CredhookError;
        if (e.code === ErrorCodes.CONFLICT && !state.accepted && attempt < ETAG_ATTEMPTS) {
          this.log.debug({ keyId, attempt }, "API key changed concurrently; re-reading");
          continue;
        }
        // the update may have landed: core's inverse update restores the previous state
        if (state.accepted || state.maybeApplied) e.outcomeUnknown = true;
        throw e;
      }
    }
  }

  // ---------------------------------------------------------------- Provider

  /**
   * Creates the key (or resumes this credential's key that a failed or replayed
   * create left), marked with this gateway and `input.credentialId`.
   * The key string comes from the finished create operation's Key; getKeyString
   * is called only when the response lacks it.
   * A failure after createKey may have been applied (accepted, then a poll or
   * the read failed; no answer; a 5xx) throws with `outcomeUnknown: true`,
   * and with `partial` (the keyId) once Google accepted the create; nothing is
   * deleted here.
   * @throws InvalidReference an API without a service, or an unknown usage plan (before any call)
   * @throws CredhookError INTERNAL when core passes `apiKeyValue` or a CLIENT_CREDENTIALS input (a core bug)
   * @throws Conflict the keyId is held by a key without this credential's mark
   * @throws Throttled (429 after retries within the budget, or the limiter's queue full) | UpstreamError | UpstreamUnavailable | UpstreamTimeout
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    if (input.credentialType !== "API_KEY") {
      throw new CredhookError(
        500,
        ErrorCodes.INTERNAL,
        this.errors.message(
          `the gcp provider issues API_KEY credentials only, but was asked for ${input.credentialType} (a core bug)`,
        ),
      );
    }
    if (input.apiKeyValue !== undefined) {
      throw new CredhookError(
        500,
        ErrorCodes.INTERNAL,
        this.errors.message(
          `core passed an API key value to import, but Google generates its own key strings (capabilities.importsApiKeyValue is false; a core bug)`,
        ),
        { gateway: this.ctx.gateway },
      );
    }
    if (input.apis.length === 0 || !input.credentialId) {
      throw new CredhookError(
        500,
        ErrorCodes.INTERNAL,
        this.errors.message(
          `create called without ${input.credentialId ? "any API for this gateway" : "a credential id"} (a core bug)`,
        ),
        {
          gateway: this.ctx.gateway,
        },
      );
    }
    const targets = apiTargetsFor(input.apis, this.mapping);
    const keyId = keyIdFor(input.credentialId, this.o.keyIdPrefix);
    const budget = this.budget();
    const state: WriteState = { accepted: false, maybeApplied: false };
    const what = `createKey ${keyId}`;
    let key: IKey | undefined;
    try {
      try {
        const op = await this.startWrite(
          what,
          () =>
            this.client.createKey({
              parent: this.parent,
              keyId,
              key: {
                displayName: displayNameFor(input.app),
                annotations: annotationsFor(input.credentialId, this.ctx.gateway, input.app, input.apis),
                restrictions: { apiTargets: targets },
              },
            }) as Cancellable<[Operation, unknown, unknown]>,
          budget,
          state,
        );
        key = await this.waitFor(op, what, budget);
        this.log.info({ keyId, services: targets.map((t) => t.service) }, "API key created");
      } catch (err) {
        if (!(err instanceof CredhookError) || err.code !== ErrorCodes.CONFLICT || state.accepted) throw err;
        // ALREADY_EXISTS: a replayed create, or an earlier attempt of this one that landed
        key = await this.resume(keyId, input, targets, budget, state);
      }
      const apiKey = key.keyString || (await this.keyString(keyId, budget));
      return { nativeId: keyId, apiKey, resources: this.resources(keyId, key) };
    } catch (err) {
      const e = err instanceof CredhookError ? err : this.typed(err, what);
      if (state.accepted || state.maybeApplied) {
        // Google has (or may have) the key: report it; core revokes it and searches again later
        if (state.accepted) e.partial ??= { nativeId: keyId, resources: this.resources(keyId, key) };
        e.outcomeUnknown = true;
        this.log.warn(
          { keyId, accepted: state.accepted, code: e.code },
          "create failed after the key may have been made; reported to core for compensation",
        );
      } else {
        e.outcomeUnknown ??= false;
      }
      throw e;
    }
  }

  /**
   * The keyId exists: when it carries this credential's mark, undelete it if
   * needed and bring it to the desired state. Marks `state.accepted` once the
   * key is known to be this credential's.
   * @throws Conflict the key is not this credential's
   * @throws UpstreamUnavailable the keyId is taken but the key is not visible yet (a create still landing)
   */
  private async resume(
    keyId: string,
    input: ProviderCreateInput,
    targets: ApiTarget[],
    budget: RetryBudget,
    state: WriteState,
  ): Promise<IKey> {
    const existing = await this.findKey(keyId, budget);
    if (!existing) {
      // Google reserved the keyId for a create that has not landed yet (an earlier attempt)
      state.maybeApplied = true;
      throw this.errors.error(
        UpstreamUnavailable,
        `createKey ${keyId}: the keyId is taken by a create that has not finished yet`,
        PENDING_CREATE_RETRY_AFTER_S,
      );
    }
    if (this.ownership(existing, input.credentialId) !== "mine") {
      throw this.errors.error(
        Conflict,
        `createKey ${keyId}: the keyId is held by a key without this credential's mark`,
      );
    }
    state.accepted = true;
    let known: IKey | undefined = existing;
    if (GcpApiKeysProvider.deleted(existing)) {
      const what = `undeleteKey ${keyId}`;
      try {
        const op = await this.startWrite(
          what,
          () => this.client.undeleteKey({ name: this.keyName(keyId) }) as Cancellable<[Operation, unknown, unknown]>,
          budget,
        );
        known = await this.waitFor(op, what, budget);
        this.log.info({ keyId }, "API key undeleted for a replayed create");
      } catch (err) {
        // a retried undelete meets a key that is no longer deleted (FAILED_PRECONDITION): re-read it below
        if (!(err instanceof CredhookError) || err.code !== ErrorCodes.CONFLICT) throw err;
        known = undefined;
      }
    }
    const key = await this.reconcile(keyId, input.credentialId, input.app, input.apis, targets, budget, known);
    this.log.info({ keyId }, "existing API key resumed by a replayed create");
    return key;
  }

  /**
   * Applies the app's desired API/usage-plan set, name and annotations to the
   * key, after checking its mark (an empty `credentialId`: the gateway's mark
   * suffices). One updateKey replaces the whole target set.
   * @throws NotFound the key does not exist, was deleted, or is not this gateway's (this credential's)
   * @throws InvalidReference an API without a service, or an unknown usage plan (before any call)
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const targets = input.desired.length > 0 ? apiTargetsFor(input.desired, this.mapping) : null;
    const keyId = input.nativeId;
    if (!KEY_ID_PATTERN.test(keyId)) throw this.errors.error(NotFound, `'${keyId}' is not a Google API key id`);
    const key = await this.reconcile(keyId, input.credentialId, input.app, input.desired, targets, this.budget());
    return { resources: this.resources(keyId, key) };
  }

  /**
   * Deletes the key (soft delete) after checking its mark. With an empty
   * `nativeId` the key is the keyId derived from `credentialId`.
   * @returns `revoked`; `gone` when the key does not exist or is already
   *   deleted; `not-owned` (untouched) when it lacks this gateway's mark, or
   *   carries another credential's while `ref.credentialId` is set
   */
  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    const keyId = ref.nativeId || (ref.credentialId ? keyIdFor(ref.credentialId, this.o.keyIdPrefix) : "");
    if (!KEY_ID_PATTERN.test(keyId)) return "gone";
    const budget = this.budget();
    for (let attempt = 1; ; attempt++) {
      const key = await this.findKey(keyId, budget);
      if (!key || GcpApiKeysProvider.deleted(key)) return "gone";
      const owner = this.ownership(key, ref.credentialId);
      if (owner !== "mine") {
        this.log.info(
          { keyId, owner },
          "revoke skipped: the API key does not carry this gateway's (credential's) mark",
        );
        return "not-owned";
      }
      const what = `deleteKey ${keyId}`;
      try {
        const op = await this.startWrite(
          what,
          () =>
            this.client.deleteKey({ name: this.keyName(keyId), etag: key.etag ?? "" }) as Cancellable<
              [Operation, unknown, unknown]
            >,
          budget,
        );
        await this.waitFor(op, what, budget);
        this.log.info({ keyId }, "API key deleted");
        return "revoked";
      } catch (err) {
        // live and ours a moment ago, not there now: an earlier attempt of this delete landed
        if (err instanceof CredhookError && err.code === ErrorCodes.NOT_FOUND) return "revoked";
        if (!(err instanceof CredhookError) || err.code !== ErrorCodes.CONFLICT || attempt >= ETAG_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Finds the credential's key by the keyId derived from its id (one getKey,
   * no listing); returned only when live and carrying this gateway's and this
   * credential's mark.
   */
  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    if (!search.credentialId) return [];
    const keyId = keyIdFor(search.credentialId, this.o.keyIdPrefix);
    const key = await this.findKey(keyId, this.budget());
    if (!key || GcpApiKeysProvider.deleted(key) || this.ownership(key, search.credentialId) !== "mine") return [];
    return [{ nativeId: keyId, credentialId: search.credentialId, description: GcpApiKeysProvider.describe(key) }];
  }

  /**
   * Brings a key made outside credhook under this gateway: an etag-checked
   * updateKey of the annotations only (credhook's mark, the app, its plans);
   * restrictions and display name are left as they are until the next update.
   * Adopting a key that already carries this credential's mark changes nothing.
   * @throws NotFound no live key `ref.nativeId`
   * @throws Conflict the key carries another gateway's or another credential's mark
   * @throws CredhookError INTERNAL without a credential id (a core bug)
   */
  async adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult> {
    const keyId = ref.nativeId;
    if (!KEY_ID_PATTERN.test(keyId)) throw this.errors.error(NotFound, `'${keyId}' is not a Google API key id`);
    if (!ref.credentialId)
      throw new CredhookError(
        500,
        ErrorCodes.INTERNAL,
        this.errors.message(`adopt called without a credential id (a core bug)`),
      );
    const budget = this.budget();
    const ours = annotationsFor(ref.credentialId, this.ctx.gateway, ref.app, ref.apis);
    for (let attempt = 1; ; attempt++) {
      const key = await this.findKey(keyId, budget);
      if (!key || GcpApiKeysProvider.deleted(key))
        throw this.errors.error(NotFound, `API key ${keyId} does not exist${key ? " (it was deleted)" : ""}`);
      const a = key.annotations ?? {};
      const gateway = a[ANNOTATIONS.gateway];
      const owner = a[ANNOTATIONS.credentialId];
      if ((gateway && gateway !== this.ctx.gateway) || (owner && owner !== ref.credentialId)) {
        throw this.errors.error(
          Conflict,
          `API key ${keyId} already carries the mark of ${gateway && gateway !== this.ctx.gateway ? `gateway '${gateway}'` : "another credential"}`,
        );
      }
      const annotations = { ...a, ...ours };
      if (sameAnnotations(key.annotations, annotations)) return { resources: this.resources(keyId, key) };
      const what = `updateKey ${keyId} (adopt)`;
      try {
        const op = await this.startWrite(
          what,
          () =>
            this.client.updateKey({
              key: { name: this.keyName(keyId), etag: key.etag ?? null, annotations },
              updateMask: { paths: ["annotations"] },
            }) as Cancellable<[Operation, unknown, unknown]>,
          budget,
        );
        const updated = await this.waitFor(op, what, budget);
        this.log.info({ keyId, credentialId: ref.credentialId }, "API key adopted: credhook's mark added");
        return { resources: this.resources(keyId, updated) };
      } catch (err) {
        if (!(err instanceof CredhookError) || err.code !== ErrorCodes.CONFLICT || attempt >= ETAG_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Reads the key string back, after checking the key's mark.
   * @throws NotFound the key does not exist, was deleted, or is not this gateway's (this credential's)
   */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey: string }> {
    const keyId = ref.nativeId;
    if (!KEY_ID_PATTERN.test(keyId)) throw this.errors.error(NotFound, `'${keyId}' is not a Google API key id`);
    const budget = this.budget();
    const key = await this.getKey(keyId, budget);
    if (GcpApiKeysProvider.deleted(key)) throw this.errors.error(NotFound, `API key ${keyId} was deleted`);
    if (this.ownership(key, ref.credentialId) !== "mine")
      throw this.errors.error(NotFound, `API key ${keyId} is not managed by this gateway`);
    return { apiKey: await this.keyString(keyId, budget) };
  }

  /** Lists the project's live keys that carry this gateway's mark (reads every page). */
  async listOwned(): Promise<OwnedResource[]> {
    const out: OwnedResource[] = [];
    const budget = this.budget();
    let pageToken: string | undefined;
    do {
      const token = pageToken;
      const [keys, next] = await this.call(
        "read",
        "listKeys",
        () =>
          this.client.listKeys(
            { parent: this.parent, pageSize: LIST_PAGE_SIZE, ...(token ? { pageToken: token } : {}) },
            { autoPaginate: false },
          ) as Cancellable<[IKey[], { pageToken?: string } | null, unknown]>,
        budget,
      );
      for (const k of keys) {
        if (this.ownership(k, "") !== "mine") continue;
        out.push({
          nativeId: (k.name ?? "").split("/").pop() ?? "",
          credentialId: k.annotations![ANNOTATIONS.credentialId]!,
          description: GcpApiKeysProvider.describe(k),
        });
      }
      pageToken = next?.pageToken || undefined;
    } while (pageToken);
    return out;
  }

  /** `<displayName> <usage-plans annotation>`, for drift reports. */
  private static describe(key: IKey): string {
    return `${key.displayName ?? ""} ${key.annotations?.[ANNOTATIONS.usagePlans] ?? ""}`.trim();
  }

  /**
   * The methods a plan allows (`usagePlans`), for core's drift report: a plan whose methods change is reported
   * changed until `credhook apply` updates its keys' restrictions. Undefined: no `usagePlans` option, or a plan it
   * does not list.
   */
  planDefinition(planId: string): JsonValue | undefined {
    return this.o.usagePlans?.[planId];
  }

  /**
   * Probes the API with a one-key listKeys (needs apikeys.keys.list), through
   * core's {@link CachedHealthProbe}: a success is reused for `healthCacheMs`, a
   * failure for min(5 s, `healthCacheMs`); concurrent calls share one probe.
   * @throws UpstreamUnavailable the API cannot be reached or refused the probe
   */
  async health(): Promise<void> {
    this.checkOpen();
    return this.healthProbe.check();
  }

  /** The health probe itself (see {@link health}). */
  private async probeHealth(): Promise<void> {
    try {
      await this.limited(
        "read",
        "listKeys (health)",
        () =>
          this.client.listKeys({ parent: this.parent, pageSize: 1 }, { autoPaginate: false }) as Cancellable<
            [IKey[], unknown, unknown]
          >,
      );
    } catch (err) {
      const typed = this.typed(err, "health probe (listKeys)");
      throw new UpstreamUnavailable(typed.message, retryAfterOf(typed) ?? 5, { cause: typed });
    }
  }

  /** Releases this gateway's share of the project's limiters and closes the client; later calls fail with UpstreamUnavailable. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.releaseLimiters();
    await this.client.close().catch(() => undefined);
  }
}

/** What a write's attempts did: Google `accepted` it (answered with an operation), or an attempt `maybeApplied` it (no answer, 5xx). */
interface WriteState {
  accepted: boolean;
  maybeApplied: boolean;
}

/** True when two annotation maps hold the same entries. */
function sameAnnotations(a: Record<string, string> | null | undefined, b: Record<string, string>): boolean {
  return JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b).sort());
}
