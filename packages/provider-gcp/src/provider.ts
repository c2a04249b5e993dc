/**
 * The `gcp` provider: one app's API key as a Google Cloud API key (API Keys
 * v2), restricted (`restrictions.apiTargets`) to the services of the app's APIs.
 *
 * - create: createKey with a deterministic keyId (from the credential id) and
 *   wait for the long-running operation (bounded), then getKeyString. A create
 *   that finds its keyId taken (ALREADY_EXISTS: a retried or replayed create)
 *   adopts that key — undeleting it when soft-deleted — and brings it to the
 *   desired state. A create that fails after its key may have been made (an
 *   operation time-out, a 5xx after retries) soft-deletes that key, best effort.
 * - update: getKey, then updateKey with an `updateMask` of only what differs
 *   (`restrictions`, `displayName` on a rename, `annotations`) and the key's
 *   etag; nothing is written when nothing differs.
 * - revoke: deleteKey (a soft delete: Google keeps the key undeletable for 30
 *   days); a key already gone or deleted is success.
 * - readSecret: getKeyString.
 *
 * API reference: https://cloud.google.com/api-keys/docs/reference/rest/v2/projects.locations.keys
 * The client does not retry (every method is configured non-idempotent); this
 * provider retries transient failures itself, which is safe because each of
 * its writes is idempotent as used here (deterministic keyId, etag-checked
 * update of a full desired state, delete where "not found" is success).
 */
import Bottleneck from "bottleneck";
import {
  ExponentialBackoff,
  handleWhen,
  retry,
  TaskCancelledError,
  timeout,
  TimeoutStrategy,
  type RetryPolicy,
  type TimeoutPolicy,
} from "cockatiel";
import {
  Conflict,
  CredhookError,
  ErrorCodes,
  retryAfterOf,
  NotFound,
  Throttled,
  UpstreamUnavailable,
  type Logger,
  type OwnedResource,
  type Provider,
  type ProviderCapabilities,
  type ProviderContext,
  type ProviderCreateInput,
  type ProviderCredential,
  type ProviderCredentialRef,
  type ProviderResources,
  type ProviderUpdateInput,
  type ProviderUpdateResult,
} from "@credhook/core";
import type { ApiKeysClient, protos } from "@google-cloud/apikeys";
import { createBackoffSettings } from "google-gax";
import { isTransient, OperationTimeout, readFailure, RequestTimeout, toTypedError } from "./google-errors.js";
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

type IKey = protos.google.api.apikeys.v2.IKey;
type IRestrictions = protos.google.api.apikeys.v2.IRestrictions;

/** A gax promise: cancellable, though typed as a plain Promise by the client. */
type Cancellable<T> = Promise<T> & { cancel?: () => void };

/** A long-running operation as the client returns it. */
interface LongRunning {
  name?: string | null;
  promise(): Promise<[IKey, unknown, unknown]>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  removeAllListeners(event?: string): unknown;
}

/** The provider's options with every default applied (see {@link GcpProviderOptions} for meanings). */
export interface ResolvedGcpOptions {
  projectId: string;
  services: Record<string, string> | undefined;
  serviceTemplate: string | undefined;
  usagePlans: Record<string, string[]> | undefined;
  keyIdPrefix: string;
  operationTimeoutMs: number;
  pollInitialDelayMs: number;
  requestTimeoutMs: number;
  writesPerMinute: number;
  writeBurst: number;
  readsPerMinute: number;
  readBurst: number;
  maxQueueWaitMs: number;
  maxAttempts: number;
  retryInitialDelayMs: number;
  retryMaxDelayMs: number;
  healthCacheMs: number;
}

/** Longest delay between two operation polls (ms). */
const POLL_MAX_DELAY_MS = 5000;
/** How long a failed health() answer is reused at most (ms). */
const HEALTH_FAILURE_CACHE_MS = 5000;
/** Attempts of an etag-checked read-modify-write before giving up with Conflict. */
const ETAG_ATTEMPTS = 3;
/** Page size of listKeys (the API's maximum, https://cloud.google.com/api-keys/docs/reference/rest/v2/projects.locations.keys/list). */
const LIST_PAGE_SIZE = 300;

/** A token-bucket limiter for one quota (reads or writes). */
function limiterFor(perMinute: number, burst: number, maxQueueWaitMs: number): { limiter: Bottleneck; intervalMs: number } {
  const intervalMs = Math.max(1, Math.ceil(60_000 / perMinute));
  const limiter = new Bottleneck({
    reservoir: burst,
    reservoirIncreaseAmount: 1,
    reservoirIncreaseInterval: intervalMs,
    reservoirIncreaseMaximum: burst,
    // bottleneck adds tokens on its heartbeat: a heartbeat dividing the interval keeps the rate exact
    heartbeatInterval: intervalMs / Math.ceil(intervalMs / 250),
    highWater: Math.max(0, Math.floor(maxQueueWaitMs / intervalMs)),
    strategy: Bottleneck.strategy.OVERFLOW,
  });
  return { limiter, intervalMs };
}

/** Google API Keys provider for one gateway. Build it with the package's factory. */
export class GcpApiKeysProvider implements Provider {
  /** Issues API keys only; Google generates the key string (no import); the string can be read back. */
  readonly capabilities: ProviderCapabilities = {
    credentialTypes: ["API_KEY"],
    importsApiKeyValue: false,
    readsBackSecret: true,
    // Google key strings: "AIza" + 35 characters of [A-Za-z0-9_-], 39 in all.
    generatedApiKeyFormat: { characters: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", length: 39 },
  };

  private readonly prefix: string;
  private readonly log: Logger;
  private readonly mapping: TargetMapping;
  private readonly parent: string;
  private readonly reads: { limiter: Bottleneck; intervalMs: number };
  private readonly writes: { limiter: Bottleneck; intervalMs: number };
  private readonly retryPolicy: RetryPolicy;
  private readonly timeoutPolicy: TimeoutPolicy;
  private healthState: { at: number; ok: boolean; error?: CredhookError; inflight?: Promise<void> } = { at: 0, ok: false };
  private closed = false;

  constructor(
    private readonly client: ApiKeysClient,
    private readonly o: ResolvedGcpOptions,
    private readonly ctx: ProviderContext,
  ) {
    this.prefix = `[gateway ${ctx.gateway}]`;
    this.log = ctx.logger;
    this.parent = `projects/${o.projectId}/locations/global`;
    this.mapping = {
      ...(o.services ? { services: o.services } : {}),
      ...(o.serviceTemplate ? { serviceTemplate: o.serviceTemplate } : {}),
      ...(o.usagePlans ? { usagePlans: o.usagePlans } : {}),
      prefix: this.prefix,
      configPath: ctx.configPath,
    };
    this.reads = limiterFor(o.readsPerMinute, o.readBurst, o.maxQueueWaitMs);
    this.writes = limiterFor(o.writesPerMinute, o.writeBurst, o.maxQueueWaitMs);
    this.retryPolicy = retry(
      handleWhen((err) => !(err instanceof CredhookError) && isTransient(readFailure(err))),
      {
        maxAttempts: Math.max(0, o.maxAttempts - 1),
        backoff: new ExponentialBackoff({ initialDelay: o.retryInitialDelayMs, maxDelay: o.retryMaxDelayMs }),
      },
    );
    this.retryPolicy.onRetry((r) => {
      const reason = "error" in r ? readFailure(r.error).status : "result";
      this.log.debug({ reason, delayMs: r.delay }, "retrying a Google API Keys call");
    });
    this.timeoutPolicy = timeout(o.requestTimeoutMs, TimeoutStrategy.Aggressive);
  }

  // ---------------------------------------------------------------- calls

  private keyName(keyId: string): string {
    return `${this.parent}/keys/${keyId}`;
  }

  private checkOpen(): void {
    if (this.closed) throw new UpstreamUnavailable(`${this.prefix} the gcp provider is shutting down`, 5, { gateway: this.ctx.gateway });
  }

  /** One HTTP call: waits for the quota limiter, then runs `fn` with the request time-out (cancelling the call on expiry). */
  private async limited<T>(kind: "read" | "write", what: string, fn: () => Cancellable<T>): Promise<T> {
    this.checkOpen();
    const q = kind === "read" ? this.reads : this.writes;
    try {
      return await q.limiter.schedule(() =>
        this.timeoutPolicy.execute(({ signal }) => {
          const p = fn();
          signal.addEventListener("abort", () => p.cancel?.(), { once: true });
          return p;
        }),
      );
    } catch (err) {
      if (err instanceof TaskCancelledError) throw new RequestTimeout(this.o.requestTimeoutMs);
      if (err instanceof Bottleneck.BottleneckError) {
        const waitS = ((q.limiter.counts().QUEUED + 1) * q.intervalMs) / 1000;
        throw new Throttled(`${this.prefix} ${what}: too many Google API Keys ${kind}s queued (client-side limit ${kind === "read" ? this.o.readsPerMinute : this.o.writesPerMinute}/minute)`, waitS, {
          gateway: this.ctx.gateway,
        });
      }
      throw err;
    }
  }

  /** A read call, retried on transient failures. @throws typed errors only */
  private async read<T>(what: string, fn: () => Cancellable<T>): Promise<T> {
    try {
      return await this.retryPolicy.execute(() => this.limited("read", what, fn));
    } catch (err) {
      throw this.typed(err, what);
    }
  }

  /**
   * A write returning a long-running operation: the call and the wait for its
   * result, retried as one unit on transient failures (also of a poll).
   * @throws typed errors only; an operation past `operationTimeoutMs` is UpstreamTimeout
   */
  private async write(
    what: string,
    fn: (options: { longrunning: ReturnType<typeof createBackoffSettings> }) => Cancellable<[LongRunning, ...unknown[]]>,
    wait = true,
  ): Promise<IKey> {
    const longrunning = createBackoffSettings(this.o.pollInitialDelayMs, 1.5, POLL_MAX_DELAY_MS, null, null, null, this.o.operationTimeoutMs);
    try {
      return await this.retryPolicy.execute(async () => {
        const [op] = await this.limited("write", what, () => fn({ longrunning }));
        return wait ? this.waitFor(op, what) : {};
      });
    } catch (err) {
      throw this.typed(err, what);
    }
  }

  /** Waits for `op`, bounded by `operationTimeoutMs` (plus one request time-out for a poll in flight). */
  private async waitFor(op: LongRunning, what: string): Promise<IKey> {
    const name = op.name ?? "(unnamed)";
    let timer: NodeJS.Timeout | undefined;
    const guard = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new OperationTimeout(name, this.o.operationTimeoutMs)), this.o.operationTimeoutMs + this.o.requestTimeoutMs);
      timer.unref?.();
    });
    try {
      const [key] = await Promise.race([op.promise(), guard]);
      return key;
    } catch (err) {
      const f = readFailure(err);
      if (f.status === "DEADLINE_EXCEEDED" && f.httpStatus === undefined && !(err instanceof OperationTimeout)) {
        throw new OperationTimeout(name, this.o.operationTimeoutMs);
      }
      throw err;
    } finally {
      clearTimeout(timer);
      // stop polling (gax polls while a "complete" listener exists) and swallow a late poll error
      op.removeAllListeners("complete");
      op.on("error", () => {});
      this.log.debug({ operation: name, what }, "operation settled");
    }
  }

  private typed(err: unknown, what: string): CredhookError {
    const e = toTypedError(err, what, this.prefix);
    e.gateway ??= this.ctx.gateway;
    return e;
  }

  private getKey(keyId: string): Promise<IKey> {
    const name = this.keyName(keyId);
    return this.read(`getKey ${keyId}`, () => this.client.getKey({ name }) as Cancellable<[IKey, unknown, unknown]>).then(([k]) => k);
  }

  private async keyString(keyId: string): Promise<string> {
    const name = this.keyName(keyId);
    const [res] = await this.read(
      `getKeyString ${keyId}`,
      () => this.client.getKeyString({ name }) as Cancellable<[protos.google.api.apikeys.v2.IGetKeyStringResponse, unknown, unknown]>,
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

  // ---------------------------------------------------------------- state

  /** Restrictions with `targets` as apiTargets, keeping the key's client restrictions (IP, referrer, app) untouched. */
  private static restrictionsWith(current: IRestrictions | null | undefined, targets: ApiTarget[]): IRestrictions {
    const out: IRestrictions = { apiTargets: targets };
    for (const k of ["browserKeyRestrictions", "serverKeyRestrictions", "androidKeyRestrictions", "iosKeyRestrictions"] as const) {
      if (current?.[k]) (out as Record<string, unknown>)[k] = current[k];
    }
    return out;
  }

  /**
   * Brings an existing key to the desired state with an etag-checked updateKey
   * of only the fields that differ; re-reads and tries again when the key
   * changed concurrently.
   * @throws NotFound the key does not exist or is deleted
   */
  private async reconcile(
    keyId: string,
    credentialId: string,
    app: ProviderCredentialRef["app"],
    apis: ProviderCreateInput["apis"],
    targets: ApiTarget[] | null,
    known?: IKey,
  ): Promise<IKey> {
    const ours = annotationsFor(credentialId, this.ctx.gateway, app, apis);
    const displayName = displayNameFor(app);
    let fresh = known;
    for (let attempt = 1; ; attempt++) {
      const key = fresh ?? (await this.getKey(keyId));
      fresh = undefined;
      if (GcpApiKeysProvider.deleted(key)) throw new NotFound(`${this.prefix} API key ${keyId} was deleted`, { gateway: this.ctx.gateway });
      const current = canonicalTargets(key.restrictions?.apiTargets);
      const firstService = current[0]?.service ?? Object.values(this.o.services ?? {})[0] ?? "apikeys.googleapis.com";
      const desired = targets && targets.length > 0 ? targets : noAccessTargets(firstService);
      const annotations = { ...(key.annotations ?? {}), ...ours };
      const paths: string[] = [];
      if (JSON.stringify(current) !== JSON.stringify(canonicalTargets(desired))) paths.push("restrictions");
      if ((key.displayName ?? "") !== displayName) paths.push("displayName");
      if (JSON.stringify(Object.entries(key.annotations ?? {}).sort()) !== JSON.stringify(Object.entries(annotations).sort())) paths.push("annotations");
      if (paths.length === 0) return key;
      try {
        const updated = await this.write(`updateKey ${keyId}`, (options) =>
          this.client.updateKey(
            {
              key: { name: this.keyName(keyId), etag: key.etag ?? null, displayName, annotations, restrictions: GcpApiKeysProvider.restrictionsWith(key.restrictions, desired) },
              updateMask: { paths },
            },
            options,
          ) as Cancellable<[LongRunning, unknown, unknown]>,
        );
        this.log.info({ keyId, fields: paths }, "API key updated");
        return updated;
      } catch (err) {
        if (!(err instanceof CredhookError) || err.code !== ErrorCodes.CONFLICT || attempt >= ETAG_ATTEMPTS) throw err;
        this.log.debug({ keyId, attempt }, "API key changed concurrently; re-reading");
      }
    }
  }

  // ---------------------------------------------------------------- Provider

  /**
   * Creates the key (or adopts the one a failed or replayed create left).
   * @throws InvalidReference an API without a service, or an unknown usage plan (before any call)
   * @throws CredhookError INTERNAL when core passes `apiKeyValue` or a CLIENT_CREDENTIALS input (a core bug)
   * @throws Conflict the keyId is held by a key of another credential
   * @throws Throttled | UpstreamError | UpstreamTimeout cloud failures
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    if (input.credentialType !== "API_KEY") {
      throw new CredhookError(500, ErrorCodes.INTERNAL, `${this.prefix} the gcp provider issues API_KEY credentials only, but was asked for ${input.credentialType} (a core bug)`);
    }
    if (input.apiKeyValue !== undefined) {
      throw new CredhookError(
        500,
        ErrorCodes.INTERNAL,
        `${this.prefix} core passed an API key value to import, but Google generates its own key strings (capabilities.importsApiKeyValue is false; a core bug)`,
        { gateway: this.ctx.gateway },
      );
    }
    if (input.apis.length === 0) {
      throw new CredhookError(500, ErrorCodes.INTERNAL, `${this.prefix} create called without any API for this gateway (a core bug)`, { gateway: this.ctx.gateway });
    }
    const targets = apiTargetsFor(input.apis, this.mapping);
    const keyId = keyIdFor(input.credentialId, this.o.keyIdPrefix);
    let key: IKey;
    try {
      key = await this.write(`createKey ${keyId}`, (options) =>
        this.client.createKey(
          {
            parent: this.parent,
            keyId,
            key: {
              displayName: displayNameFor(input.app),
              annotations: annotationsFor(input.credentialId, this.ctx.gateway, input.app, input.apis),
              restrictions: { apiTargets: targets },
            },
          },
          options,
        ) as Cancellable<[LongRunning, unknown, unknown]>,
      );
      this.log.info({ keyId, services: targets.map((t) => t.service) }, "API key created");
    } catch (err) {
      if (err instanceof CredhookError && err.code === ErrorCodes.CONFLICT) {
        key = await this.adopt(keyId, input, targets);
      } else {
        if (err instanceof CredhookError && (err.code === ErrorCodes.UPSTREAM_TIMEOUT || err.code === ErrorCodes.UPSTREAM_FAILED)) {
          await this.discardAfterFailedCreate(keyId, input.credentialId);
        }
        throw err;
      }
    }
    const apiKey = await this.keyString(keyId);
    return { nativeId: keyId, apiKey, resources: this.resources(keyId, key) };
  }

  /** The keyId exists: when it is this credential's key, undelete it if needed and bring it to the desired state. */
  private async adopt(keyId: string, input: ProviderCreateInput, targets: ApiTarget[]): Promise<IKey> {
    const existing = await this.getKey(keyId);
    const owner = existing.annotations?.[ANNOTATIONS.credentialId];
    if (owner !== input.credentialId) {
      throw new Conflict(`${this.prefix} createKey ${keyId}: the keyId is held by a key of another credential`, { gateway: this.ctx.gateway });
    }
    let known: IKey | undefined = existing;
    if (GcpApiKeysProvider.deleted(existing)) {
      try {
        known = await this.write(`undeleteKey ${keyId}`, (options) =>
          this.client.undeleteKey({ name: this.keyName(keyId) }, options) as Cancellable<[LongRunning, unknown, unknown]>,
        );
        this.log.info({ keyId }, "API key undeleted for a replayed create");
      } catch (err) {
        // a retried undelete meets a key that is no longer deleted (FAILED_PRECONDITION): re-read it below
        if (!(err instanceof CredhookError) || err.code !== ErrorCodes.CONFLICT) throw err;
        known = undefined;
      }
    }
    const key = await this.reconcile(keyId, input.credentialId, input.app, input.apis, targets, known);
    this.log.info({ keyId }, "existing API key adopted by a replayed create");
    return key;
  }

  /**
   * Best effort after a create whose outcome is unknown (its operation timed
   * out, or the call failed after being sent): soft-deletes the key if it
   * exists by now, without waiting for that operation, so that a failed create
   * leaves no live key. A create retried with the same credential id undeletes
   * and adopts it. Never throws.
   */
  private async discardAfterFailedCreate(keyId: string, credentialId: string): Promise<void> {
    try {
      const key = await this.getKey(keyId);
      if (GcpApiKeysProvider.deleted(key) || key.annotations?.[ANNOTATIONS.credentialId] !== credentialId) return;
      await this.write(
        `deleteKey ${keyId}`,
        (options) => this.client.deleteKey({ name: this.keyName(keyId), etag: key.etag ?? "" }, options) as Cancellable<[LongRunning, unknown, unknown]>,
        false,
      );
      this.log.warn({ keyId }, "create failed after the key was made: key deleted (a retried create undeletes it)");
    } catch (err) {
      const status = (err as { status?: number }).status;
      if (status !== 404) this.log.warn({ keyId, status }, "create failed; the key it may have made could not be checked or deleted");
    }
  }

  /**
   * Applies the app's desired API/usage-plan set, name and annotations to the key.
   * @throws NotFound the key does not exist or was deleted
   * @throws InvalidReference an API without a service, or an unknown usage plan (before any call)
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const targets = input.desired.length > 0 ? apiTargetsFor(input.desired, this.mapping) : null;
    const keyId = input.nativeId;
    if (!KEY_ID_PATTERN.test(keyId)) throw new NotFound(`${this.prefix} '${keyId}' is not a Google API key id`, { gateway: this.ctx.gateway });
    const key = await this.reconcile(keyId, input.credentialId, input.app, input.desired, targets);
    return { resources: this.resources(keyId, key) };
  }

  /**
   * Deletes the key (soft delete). Idempotent: a key that does not exist or is
   * already deleted is success. With an empty `nativeId` the key is found by
   * the keyId derived from `credentialId`. A key without credhook's annotation, or
   * annotated with another credential, is left alone (core revokes unknown ids
   * on every gateway of a type).
   */
  async revoke(ref: ProviderCredentialRef): Promise<void> {
    // no native id (a create that failed before returning one): the keyId follows from the credential id
    const keyId = ref.nativeId || (ref.credentialId ? keyIdFor(ref.credentialId, this.o.keyIdPrefix) : "");
    if (!KEY_ID_PATTERN.test(keyId)) return;
    for (let attempt = 1; ; attempt++) {
      let key: IKey;
      try {
        key = await this.getKey(keyId);
      } catch (err) {
        if (err instanceof CredhookError && err.code === ErrorCodes.NOT_FOUND) return;
        throw err;
      }
      if (GcpApiKeysProvider.deleted(key)) return;
      const owner = key.annotations?.[ANNOTATIONS.credentialId];
      if (!owner || (ref.credentialId && owner !== ref.credentialId)) {
        this.log.warn({ keyId, managed: !!owner }, "revoke skipped: the API key is not this credential's");
        return;
      }
      try {
        await this.write(`deleteKey ${keyId}`, (options) =>
          this.client.deleteKey({ name: this.keyName(keyId), etag: key.etag ?? "" }, options) as Cancellable<[LongRunning, unknown, unknown]>,
        );
        this.log.info({ keyId }, "API key deleted");
        return;
      } catch (err) {
        if (err instanceof CredhookError && err.code === ErrorCodes.NOT_FOUND) return;
        if (!(err instanceof CredhookError) || err.code !== ErrorCodes.CONFLICT || attempt >= ETAG_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Reads the key string back.
   * @throws NotFound the key does not exist or was deleted
   */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey: string }> {
    const keyId = ref.nativeId;
    if (!KEY_ID_PATTERN.test(keyId)) throw new NotFound(`${this.prefix} '${keyId}' is not a Google API key id`, { gateway: this.ctx.gateway });
    const key = await this.getKey(keyId);
    if (GcpApiKeysProvider.deleted(key)) throw new NotFound(`${this.prefix} API key ${keyId} was deleted`, { gateway: this.ctx.gateway });
    return { apiKey: await this.keyString(keyId) };
  }

  /** Lists the project's live keys that credhook's gateway of this name manages (reads every page). */
  async listOwned(): Promise<OwnedResource[]> {
    const out: OwnedResource[] = [];
    let pageToken: string | undefined;
    do {
      const token = pageToken;
      const [keys, next] = await this.read(
        "listKeys",
        () =>
          this.client.listKeys(
            { parent: this.parent, pageSize: LIST_PAGE_SIZE, ...(token ? { pageToken: token } : {}) },
            { autoPaginate: false },
          ) as Cancellable<[IKey[], { pageToken?: string } | null, unknown]>,
      );
      for (const k of keys) {
        const a = k.annotations ?? {};
        if (!a[ANNOTATIONS.credentialId] || a[ANNOTATIONS.gateway] !== this.ctx.gateway) continue;
        out.push({
          nativeId: (k.name ?? "").split("/").pop() ?? "",
          credentialId: a[ANNOTATIONS.credentialId],
          description: `${k.displayName ?? ""} ${a[ANNOTATIONS.usagePlans] ?? ""}`.trim(),
        });
      }
      pageToken = next?.pageToken || undefined;
    } while (pageToken);
    return out;
  }

  /**
   * Probes the API with a one-key listKeys (needs apikeys.keys.list). The
   * answer is reused for `healthCacheMs` (success) or 5 s (failure); concurrent
   * calls share one probe.
   * @throws UpstreamUnavailable the API cannot be reached or refused the probe
   */
  async health(): Promise<void> {
    this.checkOpen();
    const now = Date.now();
    const h = this.healthState;
    if (h.inflight) return h.inflight;
    if (h.at > 0 && now - h.at < (h.ok ? this.o.healthCacheMs : Math.min(HEALTH_FAILURE_CACHE_MS, this.o.healthCacheMs))) {
      if (h.ok) return;
      throw h.error!;
    }
    const probe = (async () => {
      try {
        await this.limited("read", "listKeys (health)", () =>
          this.client.listKeys({ parent: this.parent, pageSize: 1 }, { autoPaginate: false }) as Cancellable<[IKey[], unknown, unknown]>,
        );
        this.healthState = { at: Date.now(), ok: true };
      } catch (err) {
        const typed = this.typed(err, "health probe (listKeys)");
        const error = new UpstreamUnavailable(typed.message, retryAfterOf(typed) ?? 5, {
          gateway: this.ctx.gateway,
          cause: typed,
        });
        this.healthState = { at: Date.now(), ok: false, error };
        throw error;
      }
    })();
    this.healthState = { ...h, inflight: probe };
    try {
      await probe;
    } finally {
      delete this.healthState.inflight;
    }
  }

  /** Stops the limiters and closes the client; later calls fail with UpstreamUnavailable. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([this.reads.limiter.disconnect(false), this.writes.limiter.disconnect(false)]);
    await this.client.close().catch(() => undefined);
  }

}
