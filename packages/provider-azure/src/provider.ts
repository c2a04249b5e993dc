/**
 * The Azure API Management provider: one app's API key is a set of APIM
 * subscriptions — one per product (portal usage plan) or per API (an API with
 * no usage plan) — all carrying the same primary key, so the developer's single
 * key works on every product.
 *
 * Subscriptions: https://learn.microsoft.com/azure/api-management/api-management-subscriptions
 * REST: https://learn.microsoft.com/rest/api/apimanagement/subscription
 */
import type { ApiManagementClient, SubscriptionContract } from "@azure/arm-apimanagement";
import {
  Conflict,
  InvalidReference,
  NotFound,
  UpstreamUnavailable,
  ValidationError,
  generateApiKeyValue,
  isCredhookError,
  type CredhookError,
  type JsonValue,
  type Logger,
  type OwnedResource,
  type Provider,
  type ProviderCapabilities,
  type ProviderCreateInput,
  type ProviderCredential,
  type ProviderCredentialRef,
  type ProviderResources,
  type ProviderUpdateInput,
  type ProviderUpdateResult,
  type RotatedSecret,
} from "@credhook/core";
import { armDetailsOf, armMessageOf, statusOf, toTyped } from "./azure-errors.js";
import {
  displayNameOf,
  nativeIdOf,
  odataString,
  scopeKey,
  scopesOf,
  shortScope,
  subscriptionIdOf,
  userIdOf,
  type Scope,
} from "./naming.js";
import type { OwnerMode, RevokeMode } from "./types.js";

/** Options after defaults, as the provider uses them. */
export interface ResolvedAzureOptions {
  resourceGroup: string;
  serviceName: string;
  timeoutMs: number;
  productMap: Record<string, string>;
  apiMap: Record<string, string>;
  ownerMode: OwnerMode;
  revokeMode: RevokeMode;
  subscriptionIdPrefix: string;
  healthCacheMs: number;
}

/** One subscription of a credential as stored in `resources` (no key). */
interface StoredSubscription {
  sid: string;
  /** Short scope `/products/x` or `/apis/x`. */
  scope: string;
  /** Last ETag the provider saw, for If-Match. */
  etag?: string;
}

/** One subscription of a credential as listed from ARM. */
interface ListedSubscription {
  sid: string;
  scope: string;
  state: string;
  displayName: string;
  ownerId?: string;
}

/** States in which a subscription still exists for credhook (cancelled/expired/rejected are gone). */
const LIVE_STATES = new Set(["active", "suspended", "submitted"]);

function storedOf(resources: ProviderResources): StoredSubscription[] {
  const list = resources.subscriptions;
  if (!Array.isArray(list)) return [];
  return list.flatMap((v) => {
    const o = v as { sid?: unknown; scope?: unknown; etag?: unknown } | null;
    return o && typeof o.sid === "string" ? [{ sid: o.sid, scope: typeof o.scope === "string" ? o.scope : "", ...(typeof o.etag === "string" ? { etag: o.etag } : {}) }] : [];
  });
}

/** Runs `fn` on every item, at most `limit` at once; resolves with every outcome. */
async function settleAll<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<Array<PromiseSettledResult<R>>> {
  const out: Array<PromiseSettledResult<R>> = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        out[i] = { status: "fulfilled", value: await fn(items[i]!) };
      } catch (reason) {
        out[i] = { status: "rejected", reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Parallel ARM writes per provider operation (ARM allows a burst of 200 writes). */
const WRITE_CONCURRENCY = 4;

/** The provider; built by the factory in `index.ts`. */
export class AzureApimProvider implements Provider {
  /** API keys only; a caller-chosen value is imported; the key reads back with listSecrets. */
  readonly capabilities: ProviderCapabilities = { credentialTypes: ["API_KEY"], importsApiKeyValue: true, readsBackSecret: true };

  private healthCache: { until: number; error?: CredhookError } | undefined;
  private healthInFlight: Promise<void> | undefined;

  constructor(
    private readonly client: ApiManagementClient,
    private readonly opts: ResolvedAzureOptions,
    private readonly gateway: string,
    private readonly logger: Logger,
    private readonly releaseLimits: () => Promise<void> = async () => {},
  ) {}

  /** Releases this gateway's share of the ARM rate-limit buckets. */
  async close(): Promise<void> {
    await this.releaseLimits();
  }

  private get service(): string {
    return `${this.opts.resourceGroup}/${this.opts.serviceName}`;
  }

  /** Runs one SDK call with the time limit; maps what it throws. */
  private async call<T>(what: string, fn: (signal: AbortSignal) => Promise<T>, secrets: readonly string[] = []): Promise<T> {
    try {
      return await fn(AbortSignal.timeout(this.opts.timeoutMs));
    } catch (err) {
      throw toTyped(err, { gateway: this.gateway, what, timeoutMs: this.opts.timeoutMs, secrets });
    }
  }

  /** Like {@link call} but hands back the raw SDK error, for callers that classify it themselves. */
  private async raw<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
    try {
      return { ok: true, value: await fn(AbortSignal.timeout(this.opts.timeoutMs)) };
    } catch (error) {
      return { ok: false, error };
    }
  }

  private mapped(err: unknown, what: string, secrets: readonly string[] = []): CredhookError {
    return toTyped(err, { gateway: this.gateway, what, timeoutMs: this.opts.timeoutMs, secrets });
  }

  private resources(subs: StoredSubscription[], ownerId?: string): ProviderResources {
    const out: { [k: string]: JsonValue } = {
      service: this.service,
      subscriptions: subs.map((s) => ({ sid: s.sid, scope: s.scope, ...(s.etag ? { etag: s.etag } : {}) })),
    };
    if (ownerId) out.ownerId = ownerId;
    return out;
  }

  // ------------------------------------------------------------------ lookups

  /** Every subscription whose id starts with `<nativeId>-`, in any state. */
  private async listOf(nativeId: string): Promise<ListedSubscription[]> {
    return this.call(`listing the subscriptions of credential ${nativeId} on service ${this.service}`, async (abortSignal) => {
      const out: ListedSubscription[] = [];
      const filter = `startswith(name,'${odataString(`${nativeId}-`)}')`;
      for await (const s of this.client.subscription.list(this.opts.resourceGroup, this.opts.serviceName, { filter, abortSignal })) {
        if (!s.name || !s.name.toLowerCase().startsWith(`${nativeId}-`.toLowerCase())) continue;
        out.push(this.listed(s));
      }
      return out;
    });
  }

  private listed(s: SubscriptionContract): ListedSubscription {
    return {
      sid: s.name!,
      scope: shortScope(s.scope),
      state: s.state ?? "submitted",
      displayName: s.displayName ?? "",
      ...(s.ownerId ? { ownerId: `/users/${s.ownerId.split("/").pop()}` } : {}),
    };
  }

  /** The key of a credential, read from one of its live subscriptions. @throws NotFound none is live */
  private async keyOf(nativeId: string, live: ListedSubscription[]): Promise<string> {
    const source = live.find((s) => s.state === "active") ?? live[0];
    if (!source) throw new NotFound(`[gateway ${this.gateway}] credential ${nativeId} has no live subscription on service ${this.service}`, { gateway: this.gateway });
    const secrets = await this.call(`reading the key of subscription ${source.sid} on service ${this.service}`, (abortSignal) =>
      this.client.subscription.listSecrets(this.opts.resourceGroup, this.opts.serviceName, source.sid, { abortSignal }),
    );
    if (!secrets.primaryKey) throw new NotFound(`[gateway ${this.gateway}] subscription ${source.sid} on service ${this.service} has no primary key`, { gateway: this.gateway });
    return secrets.primaryKey;
  }

  /**
   * The APIM user owning the developer's subscriptions (`ownerMode: developer-user`):
   * found by e-mail, else created with a deterministic id and no notification e-mail.
   * @throws InvalidReference the developer is not an e-mail address
   */
  private async ownerOf(developer: string): Promise<string> {
    const email = developer.trim();
    const m = /^([^@\s]{1,100})[^@\s]*@([^@\s]+\.[^@\s]+)$/.exec(email);
    if (!m || email.length > 254) {
      throw new InvalidReference(`[gateway ${this.gateway}] ownerMode developer-user needs the developer to be an e-mail address`, { gateway: this.gateway });
    }
    const found = await this.call(`looking up the APIM user of the developer on service ${this.service}`, async (abortSignal) => {
      for await (const u of this.client.user.listByService(this.opts.resourceGroup, this.opts.serviceName, { filter: `email eq '${odataString(email)}'`, abortSignal })) {
        if (u.name) return u.name;
      }
      return undefined;
    });
    if (found) return `/users/${found}`;
    const userId = userIdOf(email);
    await this.call(`creating the APIM user ${userId} on service ${this.service}`, (abortSignal) =>
      this.client.user.createOrUpdate(
        this.opts.resourceGroup,
        this.opts.serviceName,
        userId,
        { email, firstName: m[1]!.slice(0, 100), lastName: m[2]!.slice(0, 100), state: "active", note: "created by credhook" },
        { notify: false, abortSignal },
      ),
    );
    return `/users/${userId}`;
  }

  /** Whether the product/API of `scope` exists (undefined when the check itself failed). */
  private async scopeExists(scope: Scope): Promise<boolean | undefined> {
    const r = await this.raw((abortSignal) =>
      scope.kind === "product"
        ? this.client.product.get(this.opts.resourceGroup, this.opts.serviceName, scope.id, { abortSignal })
        : this.client.api.get(this.opts.resourceGroup, this.opts.serviceName, scope.id, { abortSignal }),
    );
    if (r.ok) return true;
    return statusOf(r.error) === 404 ? false : undefined;
  }

  // ------------------------------------------------------------------ writes

  /**
   * PUTs the subscription of `scope` with `key`, state active.
   * @param first whether no other subscription of this credential holds the key yet
   * @throws InvalidReference the product/API does not exist, or the service refuses to share the key
   * @throws Conflict the key is taken by another credential, or a per-user subscription limit is reached
   */
  private async put(nativeId: string, scope: Scope, key: string, displayName: string, ownerId: string | undefined, first: boolean): Promise<StoredSubscription> {
    const sid = subscriptionIdOf(nativeId, scope);
    const r = await this.raw((abortSignal) =>
      this.client.subscription.createOrUpdate(
        this.opts.resourceGroup,
        this.opts.serviceName,
        sid,
        { scope: scope.path, displayName, primaryKey: key, state: "active", allowTracing: false, ...(ownerId ? { ownerId } : {}) },
        { notify: false, abortSignal },
      ),
    );
    if (r.ok) {
      this.logger.debug({ sid, scope: scope.path, status: "put" }, "subscription written");
      return { sid, scope: scope.path, ...(r.value.eTag ? { etag: r.value.eTag } : {}) };
    }
    throw await this.classifyPutError(r.error, sid, scope, key, ownerId, first);
  }

  private async classifyPutError(err: unknown, sid: string, scope: Scope, key: string, ownerId: string | undefined, first: boolean): Promise<CredhookError> {
    const status = statusOf(err);
    const where = `[gateway ${this.gateway}]`;
    const opts = { cause: err, gateway: this.gateway };
    if (status === 400 || status === 404 || status === 409) {
      const exists = await this.scopeExists(scope);
      if (exists === false) {
        const what = scope.kind === "product" ? `product ${scope.id}` : `API ${scope.id}`;
        return new InvalidReference(`${where} ${what} does not exist on service ${this.service} (${scope.origin})`, opts);
      }
      const text = armMessageOf(err, [key]);
      const aboutKey = armDetailsOf(err).some((d) => /key/i.test(d.target ?? "")) || /\bkey\b/i.test(text);
      if (aboutKey && (status === 400 || status === 409)) {
        if (first) return new Conflict(`${where} service ${this.service} refuses the API key value: another subscription uses it already`, opts);
        return new InvalidReference(
          `${where} service ${this.service} refuses one key on several subscriptions, and this app needs one per product/API; ` +
            `put the app's APIs into one APIM product (see productMap) so that a single subscription serves them`,
          opts,
        );
      }
      if (/subscriptions limit/i.test(text)) {
        return new Conflict(`${where} ${scope.kind} ${scope.id} on service ${this.service} allows no more subscriptions for the developer's APIM user ${ownerId ?? ""}`.trim(), opts);
      }
    }
    return this.mapped(err, `creating subscription ${sid} (${scope.path}) on service ${this.service}`, [key]);
  }

  /** Deletes one subscription: If-Match the known ETag, else `*`; a 412 (changed since) retries with `*`; gone is success. */
  private async remove(sub: { sid: string; etag?: string | undefined }): Promise<void> {
    const what = `deleting subscription ${sub.sid} on service ${this.service}`;
    const del = (ifMatch: string) => this.raw((abortSignal) => this.client.subscription.delete(this.opts.resourceGroup, this.opts.serviceName, sub.sid, ifMatch, { abortSignal }));
    let r = await del(sub.etag ?? "*");
    if (!r.ok && statusOf(r.error) === 412 && sub.etag) {
      this.logger.warn({ sid: sub.sid }, "subscription changed outside credhook since its last write; deleting it anyway");
      r = await del("*");
    }
    if (!r.ok && statusOf(r.error) !== 404) throw this.mapped(r.error, what);
  }

  /**
   * PATCHes one subscription. If-Match the known ETag (else the current one, read with HEAD);
   * on 412 the ETag is read again and the PATCH retried once.
   */
  private async patch(sub: { sid: string; etag?: string | undefined }, changes: { displayName?: string; state?: "cancelled"; primaryKey?: string }, what: string, secrets: readonly string[] = []): Promise<StoredSubscription | undefined> {
    const currentEtag = async () => {
      const r = await this.raw((abortSignal) => this.client.subscription.getEntityTag(this.opts.resourceGroup, this.opts.serviceName, sub.sid, { abortSignal }));
      if (r.ok) return r.value.eTag ?? "*";
      if (statusOf(r.error) === 404) return undefined;
      throw this.mapped(r.error, what, secrets);
    };
    let etag = sub.etag ?? (await currentEtag());
    for (let attempt = 0; etag !== undefined; attempt++) {
      const ifMatch = etag;
      const r = await this.raw((abortSignal) => this.client.subscription.update(this.opts.resourceGroup, this.opts.serviceName, sub.sid, ifMatch, changes, { abortSignal }));
      if (r.ok) return { sid: sub.sid, scope: shortScope(r.value.scope), ...(r.value.eTag ? { etag: r.value.eTag } : {}) };
      const status = statusOf(r.error);
      if (status === 404) return undefined;
      if (status !== 412 || attempt >= 1) throw this.mapped(r.error, what, secrets);
      this.logger.warn({ sid: sub.sid }, "subscription changed outside credhook; retrying with its current ETag");
      etag = await currentEtag();
    }
    return undefined;
  }

  /** Deletes `sids` after a failed create/update; failures are logged, never thrown (the first error wins). */
  private async rollback(sids: string[], reason: string): Promise<void> {
    const results = await settleAll(sids, WRITE_CONCURRENCY, (sid) => this.remove({ sid }));
    const left = sids.filter((_, i) => results[i]!.status === "rejected");
    if (left.length > 0) this.logger.warn({ sids: left, reason }, "rollback could not delete every subscription; revoke will retry");
  }

  /** PUTs `scopes` with `key`: the first alone when `firstAlone` (it proves the key is free), the rest in parallel; all or nothing. */
  private async putAll(nativeId: string, scopes: Scope[], key: string, displayName: string, ownerId: string | undefined, firstAlone: boolean): Promise<StoredSubscription[]> {
    const attempted: string[] = [];
    const done: StoredSubscription[] = [];
    const fail = async (err: unknown): Promise<never> => {
      await this.rollback(attempted, "a subscription could not be created");
      throw isCredhookError(err) ? err : this.mapped(err, `creating the subscriptions of ${nativeId}`, [key]);
    };
    let rest = scopes;
    if (firstAlone && scopes.length > 0) {
      const [head, ...tail] = scopes;
      attempted.push(subscriptionIdOf(nativeId, head!));
      try {
        done.push(await this.put(nativeId, head!, key, displayName, ownerId, true));
      } catch (err) {
        return fail(err);
      }
      rest = tail;
    }
    attempted.push(...rest.map((s) => subscriptionIdOf(nativeId, s)));
    const results = await settleAll(rest, WRITE_CONCURRENCY, (s) => this.put(nativeId, s, key, displayName, ownerId, false));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) return fail(failed.reason);
    for (const r of results) if (r.status === "fulfilled") done.push(r.value);
    return done;
  }

  // ------------------------------------------------------------------ Provider

  /**
   * One subscription per product/API scope of the app, all with the same primary key.
   * @throws InvalidReference a product/API does not exist (nothing is left behind), or the service refuses to share one key
   * @throws Conflict the key value is taken by another subscription
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    if (input.credentialType !== "API_KEY") {
      throw new ValidationError([`[gateway ${this.gateway}] Azure API Management issues API_KEY credentials only, not ${input.credentialType}`], { gateway: this.gateway });
    }
    const key = input.apiKeyValue ?? generateApiKeyValue();
    if (key.length < 1 || key.length > 256) {
      throw new ValidationError([`[gateway ${this.gateway}] an APIM subscription key has 1–256 characters`], { gateway: this.gateway });
    }
    const scopes = scopesOf(input.apis, this.opts.productMap, this.opts.apiMap);
    if (scopes.length === 0) throw new InvalidReference(`[gateway ${this.gateway}] the app has no API on this gateway`, { gateway: this.gateway });
    const nativeId = nativeIdOf(this.opts.subscriptionIdPrefix, input.credentialId);
    const ownerId = this.opts.ownerMode === "developer-user" ? await this.ownerOf(input.app.developer) : undefined;
    const subs = await this.putAll(nativeId, scopes, key, displayNameOf(input.app), ownerId, true);
    this.logger.info({ nativeId, subscriptions: subs.map((s) => s.sid) }, "credential created");
    return { nativeId, apiKey: key, resources: this.resources(subs, ownerId) };
  }

  /**
   * Reconciles the credential's subscriptions with `desired`: a missing scope (ADDED, or a
   * NONE one deleted out of band) gets a subscription with the credential's key (read with
   * listSecrets); a scope no longer wanted (REMOVED) loses its subscription; a changed app
   * name is PATCHed into every displayName.
   * @throws NotFound the credential has no live subscription
   * @throws InvalidReference an added product/API does not exist (the update's own additions are rolled back)
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const nativeId = input.nativeId;
    const listed = await this.listOf(nativeId);
    const live = listed.filter((s) => LIVE_STATES.has(s.state));
    const key = await this.keyOf(nativeId, live);
    const stored = new Map(storedOf(input.resources).map((s) => [s.sid.toLowerCase(), s]));
    const etagOf = (sid: string) => stored.get(sid.toLowerCase())?.etag;
    const desired = scopesOf(input.desired, this.opts.productMap, this.opts.apiMap);
    const desiredKeys = new Set(desired.map((s) => scopeKey(s.path)));
    const liveByScope = new Map(live.map((s) => [scopeKey(s.scope), s]));
    const toAdd = desired.filter((s) => !liveByScope.has(scopeKey(s.path)));
    const toRemove = live.filter((s) => !desiredKeys.has(scopeKey(s.scope)));
    const kept = live.filter((s) => desiredKeys.has(scopeKey(s.scope)));
    const displayName = displayNameOf(input.app);
    const ownerId = kept[0]?.ownerId ?? live[0]?.ownerId ?? (this.opts.ownerMode === "developer-user" && toAdd.length > 0 ? await this.ownerOf(input.app.developer) : undefined);

    const added = await this.putAll(nativeId, toAdd, key, displayName, ownerId, false);
    const removed = await settleAll(toRemove, WRITE_CONCURRENCY, (s) => this.remove({ sid: s.sid, etag: etagOf(s.sid) }));
    const removeFailure = removed.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (removeFailure) throw removeFailure.reason;

    const result: StoredSubscription[] = [...added];
    for (const s of kept) {
      if (s.state !== "active") this.logger.warn({ sid: s.sid, state: s.state }, "subscription is not active; left as the operator set it");
      if (s.displayName !== displayName) {
        const patched = await this.patch({ sid: s.sid, etag: etagOf(s.sid) }, { displayName }, `renaming subscription ${s.sid} on service ${this.service}`);
        if (patched) result.push({ ...patched, scope: s.scope });
        continue;
      }
      result.push({ sid: s.sid, scope: s.scope, ...(etagOf(s.sid) ? { etag: etagOf(s.sid)! } : {}) });
    }
    this.logger.info({ nativeId, added: added.map((s) => s.sid), removed: toRemove.map((s) => s.sid) }, "credential updated");
    return { resources: this.resources(result, ownerId) };
  }

  /**
   * Deletes every subscription of the credential (`revokeMode: delete`) or sets it
   * cancelled (`disable`). Idempotent: subscriptions already gone are success.
   */
  async revoke(ref: ProviderCredentialRef): Promise<void> {
    const listed = await this.listOf(ref.nativeId);
    const stored = new Map(storedOf(ref.resources).map((s) => [s.sid.toLowerCase(), s.etag]));
    const results = await settleAll(listed, WRITE_CONCURRENCY, async (s) => {
      const etag = stored.get(s.sid.toLowerCase());
      if (this.opts.revokeMode === "delete") return this.remove({ sid: s.sid, etag });
      if (!LIVE_STATES.has(s.state)) return;
      const what = `cancelling subscription ${s.sid} on service ${this.service}`;
      // Revocation wins over an edit made elsewhere: fall back to If-Match * on a 412.
      try {
        await this.patch({ sid: s.sid, etag }, { state: "cancelled" }, what);
      } catch (err) {
        if (!isCredhookError(err) || err.status !== 409) throw err;
        await this.patch({ sid: s.sid, etag: "*" }, { state: "cancelled" }, what);
      }
    });
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    this.logger.info({ nativeId: ref.nativeId, subscriptions: listed.length, mode: this.opts.revokeMode }, "credential revoked");
  }

  /** The credential's key, read with listSecrets. @throws NotFound it has no live subscription */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey: string }> {
    const live = (await this.listOf(ref.nativeId)).filter((s) => LIVE_STATES.has(s.state));
    return { apiKey: await this.keyOf(ref.nativeId, live) };
  }

  /** Sets a new primary key (`apiKeyValue`, or a generated one) on every live subscription. @throws NotFound none is live */
  async rotateSecret(ref: ProviderCredentialRef, apiKeyValue?: string): Promise<RotatedSecret> {
    const live = (await this.listOf(ref.nativeId)).filter((s) => LIVE_STATES.has(s.state));
    if (live.length === 0) throw new NotFound(`[gateway ${this.gateway}] credential ${ref.nativeId} has no live subscription on service ${this.service}`, { gateway: this.gateway });
    const key = apiKeyValue ?? generateApiKeyValue();
    const stored = new Map(storedOf(ref.resources).map((s) => [s.sid.toLowerCase(), s.etag]));
    const results = await settleAll(live, WRITE_CONCURRENCY, (s) =>
      this.patch({ sid: s.sid, etag: stored.get(s.sid.toLowerCase()) }, { primaryKey: key }, `setting the key of subscription ${s.sid} on service ${this.service}`, [key]),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    const subs = results.flatMap((r) => (r.status === "fulfilled" && r.value ? [r.value] : []));
    return { apiKey: key, resources: this.resources(subs, live[0]?.ownerId) };
  }

  /** Every subscription whose id carries the configured prefix, with the credential id parsed from it. */
  async listOwned(): Promise<OwnedResource[]> {
    const prefix = this.opts.subscriptionIdPrefix;
    return this.call(`listing credhook's subscriptions on service ${this.service}`, async (abortSignal) => {
      // One entry per credential (its native id, which revoke takes), naming its subscriptions.
      const byCredential = new Map<string, { credentialId?: string; parts: string[] }>();
      for await (const s of this.client.subscription.list(this.opts.resourceGroup, this.opts.serviceName, { filter: `startswith(name,'${odataString(prefix)}')`, abortSignal })) {
        const l = this.listed(s);
        const id = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i.exec(l.sid.slice(prefix.length))?.[0];
        const nativeId = id ? nativeIdOf(prefix, id) : l.sid;
        const entry = byCredential.get(nativeId) ?? { ...(id ? { credentialId: id } : {}), parts: [] };
        entry.parts.push(`${l.sid}: ${l.displayName} → ${l.scope} (${l.state})`);
        byCredential.set(nativeId, entry);
      }
      return [...byCredential].map(([nativeId, e]) => ({ nativeId, ...(e.credentialId ? { credentialId: e.credentialId } : {}), description: e.parts.join("; ") }));
    });
  }

  /**
   * Reads the API Management service (one cheap ARM GET), cached for `healthCacheMs`
   * (failures for at most 5 s); concurrent calls share one probe.
   * @throws UpstreamUnavailable ARM or the service cannot be read, or the service is not in state Succeeded
   */
  async health(): Promise<void> {
    const now = Date.now();
    if (this.healthCache && now < this.healthCache.until) {
      if (this.healthCache.error) throw this.healthCache.error;
      return;
    }
    this.healthInFlight ??= this.probe().finally(() => {
      this.healthInFlight = undefined;
    });
    return this.healthInFlight;
  }

  private async probe(): Promise<void> {
    const r = await this.raw((abortSignal) => this.client.apiManagementService.get(this.opts.resourceGroup, this.opts.serviceName, { abortSignal }));
    let error: CredhookError | undefined;
    if (!r.ok) {
      const cause = this.mapped(r.error, `reading service ${this.service}`);
      error = cause instanceof UpstreamUnavailable ? cause : new UpstreamUnavailable(cause.message, 5, { cause: r.error, gateway: this.gateway });
    } else if (r.value.provisioningState && r.value.provisioningState !== "Succeeded") {
      error = new UpstreamUnavailable(`[gateway ${this.gateway}] API Management service ${this.service} is ${r.value.provisioningState}`, 30, { gateway: this.gateway });
    }
    this.healthCache = { until: Date.now() + (error ? Math.min(5_000, this.opts.healthCacheMs) : this.opts.healthCacheMs), ...(error ? { error } : {}) };
    if (error) throw error;
  }
}
