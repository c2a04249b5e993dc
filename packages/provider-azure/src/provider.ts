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
  isCredhookError,
  type CredhookError,
} from "@credhook/core/errors";
import {
  generateApiKeyValue,
  CachedHealthProbe,
  GatewayErrors,
  settleAll,
  unavailableFrom,
} from "@credhook/core/provider-kit";
import type {
  CredentialSearch,
  GatewayApi,
  JsonValue,
  Logger,
  OwnedResource,
  Provider,
  ProviderCapabilities,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderResources,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
  RotatedSecret,
} from "@credhook/core/provider";
import { armDetailsOf, armMessageOf, statusOf, toTypedError, writeRefused } from "./azure-errors.js";
import {
  credentialIdOfNativeId,
  displayNameOf,
  isCredentialId,
  isSubscriptionOf,
  markPrefixOf,
  nativeIdOf,
  parseSubscriptionId,
  odataString,
  scopeKey,
  scopesOf,
  shortScope,
  subscriptionIdOf,
  userIdOf,
  type Scope,
} from "./naming.js";
import type { AdoptionRecord, Adoptions } from "./ownership.js";
import type { AzureProviderOptionsWithDefaults } from "./types.js";

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
  /** ETag, when the subscription was read alone (a list carries none). */
  etag?: string;
}

/** States in which a subscription still exists for credhook (cancelled/expired/rejected are gone). */
const LIVE_STATES = new Set(["active", "suspended", "submitted"]);

function storedOf(resources: ProviderResources): StoredSubscription[] {
  const list = resources.subscriptions;
  if (!Array.isArray(list)) return [];
  return list.flatMap((v) => {
    const o = v as { sid?: unknown; scope?: unknown; etag?: unknown } | null;
    return o && typeof o.sid === "string"
      ? [
          {
            sid: o.sid,
            scope: typeof o.scope === "string" ? o.scope : "",
            ...(typeof o.etag === "string" ? { etag: o.etag } : {}),
          },
        ]
      : [];
  });
}

/** Parallel ARM writes per provider operation (ARM allows a burst of 200 writes). */
const WRITE_CONCURRENCY = 4;

/** How the provider tells its subscriptions from everybody else's, besides the id format (see `ownership.ts`). */
export interface OwnershipContext {
  /** The gateway's adoption records (in its provider state). */
  adoptions: Adoptions;
  /** The other gateway of this process on the same service whose mark `id` carries, if any. */
  otherGatewayOwning(id: string): string | undefined;
}

/** A credential this gateway owns, as its mark (or adoption record) says. */
interface Owned {
  /** credhook credential id the mark names (lower case). */
  credentialId: string;
  /** `<prefix><credentialId>`: the native id its own subscription ids start with. */
  stem: string;
  /** Its adoption record, when the ref's native id is an adopted subscription. */
  adopted?: AdoptionRecord;
  /** Whether the ref's credential id agrees with the mark (empty: the gateway's mark suffices). */
  matches: boolean;
}

/** Lower case, for case-insensitive id comparisons (APIM ids are case-insensitive). */
function lower(s: string): string {
  return s.toLowerCase();
}

/** The provider; built by the factory in `index.ts`. */
export class AzureApimProvider implements Provider {
  /** API keys only; a caller-chosen value is imported; the key reads back with listSecrets. */
  readonly capabilities: ProviderCapabilities = {
    credentialTypes: ["API_KEY"],
    importsApiKeyValue: true,
    readsBackSecret: true,
    disables: ["API_KEY"],
  };

  private readonly healthProbe: CachedHealthProbe;
  private readonly errors: GatewayErrors;

  constructor(
    private readonly client: ApiManagementClient,
    private readonly opts: AzureProviderOptionsWithDefaults,
    private readonly gateway: string,
    private readonly logger: Logger,
    private readonly ownership: OwnershipContext,
    private readonly releaseResources: () => Promise<void> = async () => {},
  ) {
    this.errors = new GatewayErrors(gateway);
    this.healthProbe = new CachedHealthProbe(() => this.probe(), { successTtlMs: opts.healthCacheMs });
  }

  /** Releases this gateway's share of the ARM rate-limit buckets and its prefix claim. */
  async close(): Promise<void> {
    await this.releaseResources();
  }

  private get service(): string {
    return `${this.opts.resourceGroup}/${this.opts.serviceName}`;
  }

  private get prefix(): string {
    return this.opts.subscriptionIdPrefix;
  }

  /** Runs one SDK call with the time limit; maps what it throws. */
  private async call<T>(
    what: string,
    fn: (signal: AbortSignal) => Promise<T>,
    secrets: readonly string[] = [],
  ): Promise<T> {
    try {
      return await fn(AbortSignal.timeout(this.opts.timeoutMs));
    } catch (err) {
      throw toTypedError(err, { gateway: this.gateway, what, timeoutMs: this.opts.timeoutMs, secrets });
    }
  }

  /** Like {@link call} but hands back the raw SDK error, for callers that classify it themselves. */
  private async raw<T>(
    fn: (signal: AbortSignal) => Promise<T>,
  ): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
    try {
      return { ok: true, value: await fn(AbortSignal.timeout(this.opts.timeoutMs)) };
    } catch (error) {
      return { ok: false, error };
    }
  }

  private mapped(err: unknown, what: string, secrets: readonly string[] = []): CredhookError {
    return toTypedError(err, { gateway: this.gateway, what, timeoutMs: this.opts.timeoutMs, secrets });
  }

  /** What core stores for the credential: the service, each subscription (id, short scope, last ETag) and the owner. */
  private resources(subs: StoredSubscription[], ownerId?: string): ProviderResources {
    const out: { [k: string]: JsonValue } = {
      service: this.service,
      subscriptions: subs.map((s) => ({ sid: s.sid, scope: s.scope, ...(s.etag ? { etag: s.etag } : {}) })),
    };
    if (ownerId) out.ownerId = ownerId;
    return out;
  }

  // ------------------------------------------------------------------ ownership

  /**
   * Whose `ref.nativeId` is: this gateway's when it is exactly `<prefix><UUID>`
   * or was adopted (a record in the provider state); undefined when neither (a
   * foreign subscription, another gateway's, or nothing at all). `matches` tells
   * whether `ref.credentialId` agrees with the mark: empty (the store lost the
   * record) always does; else it must be the credential id the mark names.
   */
  private async ownerOf(
    ref: Pick<ProviderCredentialRef, "nativeId" | "credentialId" | "resources">,
  ): Promise<Owned | undefined> {
    const same = (credentialId: string) => ref.credentialId === "" || lower(ref.credentialId) === credentialId;
    const marked = credentialIdOfNativeId(this.prefix, ref.nativeId);
    if (marked) return { credentialId: marked, stem: nativeIdOf(this.prefix, marked), matches: same(marked) };
    const adopted = await this.ownership.adoptions.get(ref.nativeId);
    if (!adopted) return undefined;
    const credentialId = lower(adopted.credentialId);
    return { credentialId, stem: nativeIdOf(this.prefix, credentialId), adopted, matches: same(credentialId) };
  }

  /** NotFound for an update/read of a credential that is not this gateway's (or not that credential's). */
  private notOurs(ref: Pick<ProviderCredentialRef, "nativeId" | "credentialId">, owner: Owned | undefined): NotFound {
    const why = owner
      ? `it carries the mark of credhook credential ${owner.credentialId}, not ${ref.credentialId}`
      : `its id does not have this gateway's form '${this.prefix}<credential id>' and it was not adopted (credhook adopt)`;
    return this.errors.error(
      NotFound,
      `credential ${ref.nativeId} is not this gateway's on service ${this.service}: ${why}; nothing was changed`,
    );
  }

  // ------------------------------------------------------------------ lookups

  /** Subscriptions whose id starts with `start` (OData `startswith`, one filtered list) and passes `accept`, in any state. */
  private async listUnder(
    start: string,
    accept: (sid: string) => boolean,
    what: string,
  ): Promise<ListedSubscription[]> {
    return this.call(what, async (abortSignal) => {
      const out: ListedSubscription[] = [];
      const filter = `startswith(name,'${odataString(start)}')`;
      for await (const s of this.client.subscription.list(this.opts.resourceGroup, this.opts.serviceName, {
        filter,
        abortSignal,
      })) {
        if (s.name && accept(s.name)) out.push(this.listed(s));
      }
      return out;
    });
  }

  /** The subscriptions of the credential whose own ids start with `stem` (exactly `<stem>-p|a-<scope>`), in any state. */
  private listOf(stem: string): Promise<ListedSubscription[]> {
    return this.listUnder(
      `${stem}-`,
      (sid) => isSubscriptionOf(stem, sid),
      `listing the subscriptions of credential ${stem} on service ${this.service}`,
    );
  }

  /** Whatever exists under `nativeId` (that id, or ids starting with it and `-`), whoever made it: for "gone" vs "not-owned". */
  private async anythingUnder(nativeId: string): Promise<ListedSubscription[]> {
    if (nativeId.length === 0) return [];
    const id = lower(nativeId);
    return this.listUnder(
      nativeId,
      (sid) => lower(sid) === id || lower(sid).startsWith(`${id}-`),
      `looking for subscriptions named ${nativeId} on service ${this.service}`,
    );
  }

  /** One subscription by id; undefined when it does not exist. */
  private async getOne(sid: string): Promise<ListedSubscription | undefined> {
    const r = await this.raw((abortSignal) =>
      this.client.subscription.get(this.opts.resourceGroup, this.opts.serviceName, sid, { abortSignal }),
    );
    if (r.ok) return this.listed({ ...r.value, name: r.value.name ?? sid });
    if (statusOf(r.error) === 404) return undefined;
    throw this.mapped(r.error, `reading subscription ${sid} on service ${this.service}`);
  }

  /** Every subscription of an owned credential: its own ids under the stem, and the adopted ones that still exist. */
  private async membersOf(owner: Owned): Promise<ListedSubscription[]> {
    const [adopted, own] = await Promise.all([
      settleAll(owner.adopted?.sids ?? [], (sid) => this.getOne(sid), WRITE_CONCURRENCY),
      this.listOf(owner.stem),
    ]);
    const failed = adopted.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    return [...adopted.flatMap((r) => (r.status === "fulfilled" && r.value ? [r.value] : [])), ...own];
  }

  private listed(s: SubscriptionContract): ListedSubscription {
    return {
      sid: s.name!,
      scope: shortScope(s.scope),
      state: s.state ?? "submitted",
      displayName: s.displayName ?? "",
      ...((s as { eTag?: string }).eTag ? { etag: (s as { eTag?: string }).eTag! } : {}),
      ...(s.ownerId ? { ownerId: `/users/${s.ownerId.split("/").pop()}` } : {}),
    };
  }

  /** `sid: displayName → scope (state)` of each subscription, for listOwned/findByCredential. */
  private describe(subs: ListedSubscription[], note = ""): string[] {
    return subs.map((l) => `${l.sid}: ${l.displayName} → ${l.scope} (${l.state})${note}`);
  }

  /** The key of a credential, read from one of its live subscriptions. @throws NotFound none is live */
  private async keyOf(nativeId: string, live: ListedSubscription[]): Promise<string> {
    const source = live.find((s) => s.state === "active") ?? live[0];
    if (!source)
      throw this.errors.error(NotFound, `credential ${nativeId} has no live subscription on service ${this.service}`);
    const secrets = await this.call(
      `reading the key of subscription ${source.sid} on service ${this.service}`,
      (abortSignal) =>
        this.client.subscription.listSecrets(this.opts.resourceGroup, this.opts.serviceName, source.sid, {
          abortSignal,
        }),
    );
    if (!secrets.primaryKey)
      throw this.errors.error(NotFound, `subscription ${source.sid} on service ${this.service} has no primary key`);
    return secrets.primaryKey;
  }

  /**
   * The APIM user owning the developer's subscriptions (`ownerMode: developer-user`):
   * found by e-mail, else created with a deterministic id and no notification e-mail.
   * @throws InvalidReference the developer is not an e-mail address
   */
  private async ownerOfDeveloper(developer: string): Promise<string> {
    const email = developer.trim();
    const m = /^([^@\s]{1,100})[^@\s]*@([^@\s]+\.[^@\s]+)$/.exec(email);
    if (!m || email.length > 254) {
      throw this.errors.error(InvalidReference, `ownerMode developer-user needs the developer to be an e-mail address`);
    }
    const found = await this.call(
      `looking up the APIM user of the developer on service ${this.service}`,
      async (abortSignal) => {
        for await (const u of this.client.user.listByService(this.opts.resourceGroup, this.opts.serviceName, {
          filter: `email eq '${odataString(email)}'`,
          abortSignal,
        })) {
          if (u.name) return u.name;
        }
        return undefined;
      },
    );
    if (found) return `/users/${found}`;
    const userId = userIdOf(email);
    await this.call(`creating the APIM user ${userId} on service ${this.service}`, (abortSignal) =>
      this.client.user.createOrUpdate(
        this.opts.resourceGroup,
        this.opts.serviceName,
        userId,
        {
          email,
          firstName: m[1]!.slice(0, 100),
          lastName: m[2]!.slice(0, 100),
          state: "active",
          note: "created by credhook",
        },
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
   * PUTs the subscription of `scope` under `stem` with `key` in `state`.
   * @param first whether no other subscription of this credential holds the key yet
   * @throws InvalidReference the product/API does not exist, or the service refuses to share the key
   * @throws Conflict the key is taken by another credential, or a per-user subscription limit is reached
   * Every error thrown says, in `outcomeUnknown`, whether the PUT may still have taken effect.
   */
  private async put(
    stem: string,
    scope: Scope,
    key: string,
    displayName: string,
    ownerId: string | undefined,
    state: "active" | "suspended",
    first: boolean,
  ): Promise<StoredSubscription> {
    const sid = subscriptionIdOf(stem, scope);
    const r = await this.raw((abortSignal) =>
      this.client.subscription.createOrUpdate(
        this.opts.resourceGroup,
        this.opts.serviceName,
        sid,
        {
          scope: scope.path,
          displayName,
          primaryKey: key,
          state,
          allowTracing: false,
          ...(ownerId ? { ownerId } : {}),
        },
        { notify: false, abortSignal },
      ),
    );
    if (r.ok) {
      this.logger.debug({ sid, scope: scope.path, state, status: "put" }, "subscription written");
      return { sid, scope: scope.path, ...(r.value.eTag ? { etag: r.value.eTag } : {}) };
    }
    const typed = await this.classifyPutError(r.error, sid, scope, key, ownerId, first);
    typed.outcomeUnknown = !writeRefused(r.error);
    throw typed;
  }

  private async classifyPutError(
    err: unknown,
    sid: string,
    scope: Scope,
    key: string,
    ownerId: string | undefined,
    first: boolean,
  ): Promise<CredhookError> {
    const status = statusOf(err);
    const opts = { cause: err };
    if (status === 400 || status === 404 || status === 409) {
      const exists = await this.scopeExists(scope);
      if (exists === false) {
        const what = scope.kind === "product" ? `product ${scope.id}` : `API ${scope.id}`;
        return this.errors.error(
          InvalidReference,
          `${what} does not exist on service ${this.service} (${scope.origin})`,
          opts,
        );
      }
      const text = armMessageOf(err, [key]);
      const aboutKey = armDetailsOf(err).some((d) => /key/i.test(d.target ?? "")) || /\bkey\b/i.test(text);
      if (aboutKey && (status === 400 || status === 409)) {
        if (first)
          return this.errors.error(
            Conflict,
            `service ${this.service} refuses the API key value: another subscription uses it already`,
            opts,
          );
        return this.errors.error(
          InvalidReference,
          `service ${this.service} refuses one key on several subscriptions, and this app needs one per product/API; ` +
            `put the app's APIs into one APIM product (see productMap) so that a single subscription serves them`,
          opts,
        );
      }
      if (/subscriptions limit/i.test(text)) {
        return this.errors.error(
          Conflict,
          `${scope.kind} ${scope.id} on service ${this.service} allows no more subscriptions for the developer's APIM user ${ownerId ?? ""}`.trim(),
          opts,
        );
      }
    }
    return this.mapped(err, `creating subscription ${sid} (${scope.path}) on service ${this.service}`, [key]);
  }

  /**
   * Deletes one subscription: If-Match the known ETag, else `*`; a 412 (changed
   * since) retries with `*`. Resolves true when it deleted it now, false when it
   * was gone already (204/404).
   */
  private async remove(sub: { sid: string; etag?: string | undefined }): Promise<boolean> {
    const what = `deleting subscription ${sub.sid} on service ${this.service}`;
    const del = (ifMatch: string) =>
      this.raw((abortSignal) =>
        this.client.subscription.delete(this.opts.resourceGroup, this.opts.serviceName, sub.sid, ifMatch, {
          abortSignal,
          onResponse: (raw) => (deleted = raw.status === 200),
        }),
      );
    let deleted = false;
    let r = await del(sub.etag ?? "*");
    if (!r.ok && statusOf(r.error) === 412 && sub.etag) {
      this.logger.warn(
        { sid: sub.sid },
        "subscription changed outside credhook since its last write; deleting it anyway",
      );
      r = await del("*");
    }
    if (!r.ok && statusOf(r.error) !== 404) throw this.mapped(r.error, what);
    return r.ok && deleted;
  }

  /**
   * PATCHes one subscription. If-Match the known ETag (else the current one, read with HEAD);
   * on 412 the ETag is read again and the PATCH retried once. Undefined when the subscription is gone.
   */
  private async patch(
    sub: { sid: string; etag?: string | undefined },
    changes: { displayName?: string; state?: "cancelled" | "suspended" | "active"; primaryKey?: string },
    what: string,
    secrets: readonly string[] = [],
  ): Promise<StoredSubscription | undefined> {
    const currentEtag = async () => {
      const r = await this.raw((abortSignal) =>
        this.client.subscription.getEntityTag(this.opts.resourceGroup, this.opts.serviceName, sub.sid, { abortSignal }),
      );
      if (r.ok) return r.value.eTag ?? "*";
      if (statusOf(r.error) === 404) return undefined;
      throw this.mapped(r.error, what, secrets);
    };
    let etag = sub.etag ?? (await currentEtag());
    for (let attempt = 0; etag !== undefined; attempt++) {
      const ifMatch = etag;
      const r = await this.raw((abortSignal) =>
        this.client.subscription.update(this.opts.resourceGroup, this.opts.serviceName, sub.sid, ifMatch, changes, {
          abortSignal,
        }),
      );
      if (r.ok)
        return { sid: sub.sid, scope: shortScope(r.value.scope), ...(r.value.eTag ? { etag: r.value.eTag } : {}) };
      const status = statusOf(r.error);
      if (status === 404) return undefined;
      if (status !== 412 || attempt >= 1) throw this.mapped(r.error, what, secrets);
      this.logger.warn({ sid: sub.sid }, "subscription changed outside credhook; retrying with its current ETag");
      etag = await currentEtag();
    }
    return undefined;
  }

  /**
   * PUTs `scopes` under `stem` with `key`: the first alone when `firstAlone` (it
   * proves the key is free; nothing else is tried when it fails), the rest in
   * parallel. Never deletes anything: returns what was written and, if a PUT
   * failed, the first failure with `outcomeUnknown` true when any failed PUT may
   * still land (core compensates; providers never clean up alone).
   */
  private async putAll(
    stem: string,
    scopes: Scope[],
    key: string,
    displayName: string,
    ownerId: string | undefined,
    state: "active" | "suspended",
    firstAlone: boolean,
  ): Promise<{ done: StoredSubscription[]; failure?: CredhookError }> {
    const done: StoredSubscription[] = [];
    const typed = (err: unknown): CredhookError => {
      if (isCredhookError(err)) return err;
      const e = this.mapped(err, `creating the subscriptions of ${stem}`, [key]);
      e.outcomeUnknown = true;
      return e;
    };
    const failure = (failures: CredhookError[]) => {
      const first = failures[0]!;
      first.outcomeUnknown = failures.some((f) => f.outcomeUnknown !== false);
      return { done, failure: first };
    };
    let rest = scopes;
    if (firstAlone && scopes.length > 0) {
      try {
        done.push(await this.put(stem, scopes[0]!, key, displayName, ownerId, state, true));
      } catch (err) {
        return failure([typed(err)]);
      }
      rest = scopes.slice(1);
    }
    const results = await settleAll(
      rest,
      (s) => this.put(stem, s, key, displayName, ownerId, state, false),
      WRITE_CONCURRENCY,
    );
    const failures: CredhookError[] = [];
    for (const r of results) {
      if (r.status === "fulfilled") done.push(r.value);
      else failures.push(typed(r.reason));
    }
    return failures.length > 0 ? failure(failures) : { done };
  }

  /** Puts what exists after a failed create/update into the error (`partial`), for core to compensate. */
  private reported(
    err: CredhookError,
    nativeId: string,
    subs: StoredSubscription[],
    ownerId: string | undefined,
  ): CredhookError {
    if (subs.length > 0 || err.outcomeUnknown) err.partial = { nativeId, resources: this.resources(subs, ownerId) };
    const level = err.outcomeUnknown ? "warn" : "info";
    this.logger[level](
      {
        nativeId,
        subscriptions: subs.map((s) => s.sid),
        outcomeUnknown: err.outcomeUnknown === true,
        status: err.status,
      },
      "subscriptions left for core to compensate (a provider never deletes what a failed write made)",
    );
    return err;
  }

  // ------------------------------------------------------------------ Provider

  /**
   * One subscription per product/API scope of the app, all with the same primary
   * key, ids `<prefix><credentialId>-p|a-<scope>`. Never deletes what it made:
   * a failure after a PUT was accepted throws with `partial` (the subscriptions
   * written) and `outcomeUnknown` (a PUT that timed out or got a 5xx may still land).
   * @throws ValidationError the credential id is not a UUID (the mark needs one), or the key has not 1–256 characters
   * @throws InvalidReference a product/API does not exist, or the service refuses to share one key
   * @throws Conflict the key value is taken by another subscription
   * @throws Throttled | UpstreamError | UpstreamUnavailable | UpstreamTimeout ARM failures
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    if (input.credentialType !== "API_KEY") {
      throw new ValidationError([
        this.errors.message(`Azure API Management issues API_KEY credentials only, not ${input.credentialType}`),
      ]);
    }
    if (!isCredentialId(input.credentialId)) {
      throw new ValidationError([
        this.errors.message(
          `credential id '${input.credentialId}' is not a UUID: the subscription ids that mark credhook's ownership need one`,
        ),
      ]);
    }
    const key = input.apiKeyValue ?? generateApiKeyValue();
    if (key.length < 1 || key.length > 256) {
      throw new ValidationError([this.errors.message(`an APIM subscription key has 1–256 characters`)]);
    }
    const scopes = scopesOf(input.apis, this.opts.productMap, this.opts.apiMap);
    if (scopes.length === 0) throw this.errors.error(InvalidReference, `the app has no API on this gateway`);
    const nativeId = nativeIdOf(this.prefix, lower(input.credentialId));
    const ownerId =
      this.opts.ownerMode === "developer-user" ? await this.ownerOfDeveloper(input.app.developer) : undefined;
    const { done, failure } = await this.putAll(
      nativeId,
      scopes,
      key,
      displayNameOf(input.app),
      ownerId,
      "active",
      true,
    );
    if (failure) throw this.reported(failure, nativeId, done, ownerId);
    this.logger.info({ nativeId, subscriptions: done.map((s) => s.sid) }, "credential created");
    return { nativeId, apiKey: key, resources: this.resources(done, ownerId) };
  }

  /**
   * Reconciles the credential's subscriptions with `desired`, adding before
   * removing: a missing scope (ADDED, or a NONE one deleted out of band) gets a
   * subscription with the credential's key (read with listSecrets) — created
   * **suspended** when an operator suspended any of the credential's
   * subscriptions, so a suspended key never becomes active anywhere through an
   * update; only when every addition succeeded are the scopes no longer wanted
   * (REMOVED) deleted; a changed app name is PATCHed into every displayName.
   * On failure nothing is undone here (core runs the inverse update): the error
   * carries `partial` (the subscriptions there now) and `outcomeUnknown`.
   * @throws NotFound the credential has no live subscription, or is not this gateway's (or that credential's)
   * @throws InvalidReference an added product/API does not exist
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const owner = await this.ownerOf(input);
    if (!owner || !owner.matches) throw this.notOurs(input, owner);
    const members = await this.membersOf(owner);
    const live = members.filter((s) => LIVE_STATES.has(s.state));
    const stored = new Map(storedOf(input.resources).map((s) => [lower(s.sid), s]));
    const etagOf = (sid: string) => stored.get(lower(sid))?.etag;
    const desired = scopesOf(input.desired, this.opts.productMap, this.opts.apiMap);
    const desiredKeys = new Set(desired.map((s) => scopeKey(s.path)));
    const liveByScope = new Map(live.map((s) => [scopeKey(s.scope), s]));
    const toAdd = desired.filter((s) => !liveByScope.has(scopeKey(s.path)));
    const toRemove = live.filter((s) => !desiredKeys.has(scopeKey(s.scope)));
    const kept = live.filter((s) => desiredKeys.has(scopeKey(s.scope)));
    const displayName = displayNameOf(input.app);
    const ownerId =
      kept[0]?.ownerId ??
      live[0]?.ownerId ??
      (this.opts.ownerMode === "developer-user" && toAdd.length > 0
        ? await this.ownerOfDeveloper(input.app.developer)
        : undefined);
    const asStored = (s: ListedSubscription): StoredSubscription => ({
      sid: s.sid,
      scope: s.scope,
      ...(etagOf(s.sid) ? { etag: etagOf(s.sid)! } : {}),
    });

    // A suspended credential stays suspended (issue 9, case 8).
    const suspended = live.filter((s) => s.state === "suspended");
    const state = suspended.length > 0 ? "suspended" : "active";
    if (suspended.length > 0 && toAdd.length > 0) {
      this.logger.warn(
        { nativeId: input.nativeId, suspended: suspended.map((s) => s.sid), adding: toAdd.map((s) => s.path) },
        "an operator suspended this credential's subscriptions: the added ones are created suspended too (activate them in APIM to grant access)",
      );
    }

    // Add before remove: a failure here leaves at least the access the credential had. The key is
    // read only for a subscription to be created with it: listSecrets is a POST, which ARM throttles
    // as a write, so an update that adds nothing (a removal, a rename, a no-op) spends no write on it.
    const key = toAdd.length > 0 ? await this.keyOf(input.nativeId, live) : "";
    const { done: added, failure } = await this.putAll(owner.stem, toAdd, key, displayName, ownerId, state, false);
    if (failure) throw this.reported(failure, input.nativeId, [...live.map(asStored), ...added], ownerId);
    const removed = await settleAll(
      toRemove,
      (s) => this.remove({ sid: s.sid, etag: etagOf(s.sid) }),
      WRITE_CONCURRENCY,
    );
    const removeFailure = removed.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (removeFailure) {
      const stillThere = toRemove.filter((_, i) => removed[i]!.status === "rejected");
      throw this.reported(
        removeFailure.reason as CredhookError,
        input.nativeId,
        [...kept.map(asStored), ...stillThere.map(asStored), ...added],
        ownerId,
      );
    }

    const result: StoredSubscription[] = [...added];
    for (const s of kept) {
      if (s.state !== "active")
        this.logger.warn({ sid: s.sid, state: s.state }, "subscription is not active; left as the operator set it");
      if (s.displayName !== displayName) {
        const patched = await this.patch(
          { sid: s.sid, etag: etagOf(s.sid) },
          { displayName },
          `renaming subscription ${s.sid} on service ${this.service}`,
        );
        if (patched) result.push({ ...patched, scope: s.scope });
        continue;
      }
      result.push(asStored(s));
    }
    this.logger.info(
      { nativeId: input.nativeId, added: added.map((s) => s.sid), removed: toRemove.map((s) => s.sid), state },
      "credential updated",
    );
    // The store lost the record (empty credential id): core keeps the id the mark names.
    return {
      resources: this.resources(result, ownerId),
      ...(input.credentialId === "" ? { credentialId: owner.credentialId } : {}),
    };
  }

  /**
   * Deletes every subscription of the credential (`revokeMode: delete`) or sets the
   * live ones cancelled (`disable`) — only when the native id carries this gateway's
   * mark (or was adopted) and, unless `ref.credentialId` is empty, that credential's.
   * @returns `revoked` (something was deleted/cancelled now), `gone` (nothing left
   * to do), or `not-owned` (subscriptions exist under that id but are not this
   * gateway's or not that credential's: left untouched)
   * @throws Throttled | UpstreamError | UpstreamUnavailable | UpstreamTimeout ARM failures (what failed is retried by the next revoke)
   */
  /**
   * What {@link revoke} and {@link setEnabled} answer when `ref`'s id carries no mark of this gateway or of this
   * credential (`owner` from {@link ownerOf}): `gone` when nothing exists under it, else `not-owned` (logged,
   * left untouched).
   */
  private async notOursOutcome(
    ref: ProviderCredentialRef,
    owner: Awaited<ReturnType<AzureApimProvider["ownerOf"]>>,
  ): Promise<"gone" | "not-owned"> {
    const found = await this.anythingUnder(ref.nativeId);
    if (found.length === 0) return "gone";
    this.logger.info(
      {
        nativeId: ref.nativeId,
        credentialId: ref.credentialId,
        subscriptions: found.map((s) => s.sid),
        markOf: owner?.credentialId ?? null,
      },
      "subscriptions under this id are not this gateway's (or not this credential's); left untouched",
    );
    return "not-owned";
  }

  /**
   * Suspends every live subscription of the credential (`state: suspended`: API Management refuses calls with
   * its keys, "the subscriber cannot call any APIs of the product") or activates them again, after checking the
   * mark as {@link revoke} does (a stale ETag is read again once, as every PATCH here).
   * https://learn.microsoft.com/en-us/rest/api/apimanagement/subscription/update
   * @returns `revoked` when done, `gone` when no live subscription is left, `not-owned` when they are not this credential's
   */
  async setEnabled(ref: ProviderCredentialRef, enabled: boolean): Promise<RevokeOutcome> {
    const owner = await this.ownerOf(ref);
    if (!owner || !owner.matches) return this.notOursOutcome(ref, owner);
    const state = enabled ? "active" : "suspended";
    const live = (await this.membersOf(owner)).filter((s) => LIVE_STATES.has(s.state));
    if (live.length === 0) return "gone"; // revoked (cancelled or deleted): never brought back by an enable
    const targets = live.filter((s) => s.state !== state);
    const stored = new Map(storedOf(ref.resources).map((s) => [lower(s.sid), s.etag]));
    const results = await settleAll(
      targets,
      async (s) => {
        const what = `${enabled ? "activating" : "suspending"} subscription ${s.sid} on service ${this.service}`;
        await this.patch({ sid: s.sid, etag: stored.get(lower(s.sid)) ?? s.etag }, { state }, what);
      },
      WRITE_CONCURRENCY,
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    this.logger.info(
      { nativeId: ref.nativeId, subscriptions: targets.map((s) => s.sid), state },
      `credential ${state}`,
    );
    return "revoked";
  }

  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    const owner = await this.ownerOf(ref);
    if (!owner || !owner.matches) return this.notOursOutcome(ref, owner);
    const members = await this.membersOf(owner);
    const stored = new Map(storedOf(ref.resources).map((s) => [lower(s.sid), s.etag]));
    const targets = this.opts.revokeMode === "delete" ? members : members.filter((s) => LIVE_STATES.has(s.state));
    const results = await settleAll(
      targets,
      async (s) => {
        const etag = stored.get(lower(s.sid)) ?? s.etag;
        if (this.opts.revokeMode === "delete") return this.remove({ sid: s.sid, etag });
        const what = `cancelling subscription ${s.sid} on service ${this.service}`;
        // Revocation wins over an edit made elsewhere: fall back to If-Match * on a 412.
        try {
          return (await this.patch({ sid: s.sid, etag }, { state: "cancelled" }, what)) !== undefined;
        } catch (err) {
          if (!isCredhookError(err) || err.status !== 409) throw err;
          return (await this.patch({ sid: s.sid, etag: "*" }, { state: "cancelled" }, what)) !== undefined;
        }
      },
      WRITE_CONCURRENCY,
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    if (owner.adopted && this.opts.revokeMode === "delete")
      await this.ownership.adoptions.delete(owner.adopted.nativeId);
    const changed = results.some((r) => r.status === "fulfilled" && r.value === true);
    this.logger.info(
      { nativeId: ref.nativeId, subscriptions: targets.map((s) => s.sid), mode: this.opts.revokeMode, changed },
      "credential revoked",
    );
    return changed ? "revoked" : "gone";
  }

  /**
   * Every live subscription carrying this gateway's mark and `search.credentialId`:
   * ONE list filtered by the credential's id stem (`$filter=startswith(name,'<prefix><id>-')`,
   * evaluated by APIM), never a listing of the whole service. Returns one entry (the
   * native id revoke takes) when any exists, else none.
   */
  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    if (!isCredentialId(search.credentialId)) return [];
    const credentialId = lower(search.credentialId);
    const stem = nativeIdOf(this.prefix, credentialId);
    const live = (await this.listOf(stem)).filter((s) => LIVE_STATES.has(s.state));
    return live.length > 0 ? [{ nativeId: stem, credentialId, description: this.describe(live).join("; ") }] : [];
  }

  /**
   * Brings a subscription made outside credhook under this gateway (only
   * `credhook adopt` calls it). APIM cannot rename or tag a subscription, so the
   * mark is an adoption record in the gateway's provider state; from then on
   * update/revoke/readSecret treat `ref.nativeId` as this gateway's, for
   * `ref.credentialId`. Subscriptions added later by updates get this gateway's
   * own ids (`<prefix><credentialId>-p|a-…`) with the adopted key. Idempotent.
   * @throws ValidationError `ref.credentialId` is not a UUID
   * @throws NotFound no subscription `ref.nativeId`, or it is cancelled/expired/rejected
   * @throws Conflict the id carries another credential's or another credhook gateway's mark,
   *   was adopted for another credential, or its scope is none of `ref.apis`' (the next update would delete it)
   */
  async adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult> {
    if (!isCredentialId(ref.credentialId))
      throw new ValidationError([
        this.errors.message(`adopt needs credhook's credential id (a UUID), got '${ref.credentialId}'`),
      ]);
    const credentialId = lower(ref.credentialId);
    const sid = ref.nativeId;
    const own = credentialIdOfNativeId(this.prefix, sid) ?? parseSubscriptionId(this.prefix, sid)?.credentialId;
    if (own) {
      if (own === credentialId && credentialIdOfNativeId(this.prefix, sid)) {
        const owner: Owned = { credentialId, stem: nativeIdOf(this.prefix, credentialId), matches: true };
        const live = (await this.membersOf(owner)).filter((s) => LIVE_STATES.has(s.state));
        if (live.length === 0)
          throw this.errors.error(NotFound, `credential ${sid} has no live subscription on service ${this.service}`);
        return {
          resources: this.resources(
            live.map((s) => ({ sid: s.sid, scope: s.scope, ...(s.etag ? { etag: s.etag } : {}) })),
            live[0]?.ownerId,
          ),
        };
      }
      throw this.errors.error(
        Conflict,
        `subscription ${sid} was made by this gateway for credhook credential ${own}; it cannot be adopted for ${credentialId}`,
      );
    }
    const otherGateway = this.ownership.otherGatewayOwning(sid);
    const otherPrefix = markPrefixOf(sid);
    if (otherGateway || otherPrefix) {
      throw this.errors.error(
        Conflict,
        `subscription ${sid} carries the mark of another credhook gateway (${otherGateway ? `gateway '${otherGateway}'` : `prefix '${otherPrefix}'`}) on service ${this.service}; it is not adopted`,
      );
    }
    const previous = await this.ownership.adoptions.get(sid);
    if (previous && lower(previous.credentialId) !== credentialId) {
      throw this.errors.error(
        Conflict,
        `subscription ${sid} was adopted for credhook credential ${previous.credentialId} already`,
      );
    }
    const found = await this.getOne(sid);
    if (!found)
      throw this.errors.error(NotFound, `there is no subscription ${sid} on service ${this.service} to adopt`);
    if (!LIVE_STATES.has(found.state))
      throw this.errors.error(
        NotFound,
        `subscription ${sid} on service ${this.service} is ${found.state}; only a live subscription can be adopted`,
      );
    const scopes = scopesOf(ref.apis, this.opts.productMap, this.opts.apiMap);
    if (!scopes.some((s) => scopeKey(s.path) === scopeKey(found.scope))) {
      throw this.errors.error(
        Conflict,
        `subscription ${sid} is scoped to ${found.scope}, which none of the app's APIs on this gateway maps to (${scopes.map((s) => s.path).join(", ") || "none"}); ` +
          `adopting it would let the next update delete it: fix the app's APIs or productMap/apiMap first`,
      );
    }
    await this.ownership.adoptions.put({
      nativeId: found.sid,
      credentialId,
      sids: [found.sid],
      adoptedAt: previous?.adoptedAt ?? new Date().toISOString(),
    });
    this.logger.warn(
      { nativeId: found.sid, credentialId, scope: found.scope },
      "subscription made outside credhook adopted: credhook now updates and revokes it",
    );
    return {
      resources: this.resources(
        [{ sid: found.sid, scope: found.scope, ...(found.etag ? { etag: found.etag } : {}) }],
        found.ownerId,
      ),
    };
  }

  /** The credential's key, read with listSecrets. @throws NotFound it has no live subscription, or is not this gateway's */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey: string }> {
    const owner = await this.ownerOf(ref);
    if (!owner || !owner.matches) throw this.notOurs(ref, owner);
    const live = (await this.membersOf(owner)).filter((s) => LIVE_STATES.has(s.state));
    return { apiKey: await this.keyOf(ref.nativeId, live) };
  }

  /** Sets a new primary key (`apiKeyValue`, or a generated one) on every live subscription. @throws NotFound none is live, or the credential is not this gateway's */
  async rotateSecret(ref: ProviderCredentialRef, apiKeyValue?: string): Promise<RotatedSecret> {
    const owner = await this.ownerOf(ref);
    if (!owner || !owner.matches) throw this.notOurs(ref, owner);
    const live = (await this.membersOf(owner)).filter((s) => LIVE_STATES.has(s.state));
    if (live.length === 0)
      throw this.errors.error(
        NotFound,
        `credential ${ref.nativeId} has no live subscription on service ${this.service}`,
      );
    const key = apiKeyValue ?? generateApiKeyValue();
    const stored = new Map(storedOf(ref.resources).map((s) => [lower(s.sid), s.etag]));
    const results = await settleAll(
      live,
      (s) =>
        this.patch(
          { sid: s.sid, etag: stored.get(lower(s.sid)) },
          { primaryKey: key },
          `setting the key of subscription ${s.sid} on service ${this.service}`,
          [key],
        ),
      WRITE_CONCURRENCY,
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    const subs = results.flatMap((r) => (r.status === "fulfilled" && r.value ? [r.value] : []));
    return { apiKey: key, resources: this.resources(subs, live[0]?.ownerId) };
  }

  /**
   * One entry per credential this gateway owns, for `credhook reconcile`: the
   * subscriptions whose id is exactly `<prefix><UUID>-p|a-<scope>` (one list
   * filtered by the prefix; another gateway's longer prefix does not match), and
   * the adopted ones (one GET each). An adopted credential is one entry under
   * the adopted id, which revoke takes to remove all of it.
   */
  async listOwned(): Promise<OwnedResource[]> {
    const prefix = this.prefix;
    const byCredential = new Map<string, { nativeId: string; credentialId: string; parts: string[] }>();
    const listed = await this.listUnder(
      prefix,
      (sid) => parseSubscriptionId(prefix, sid) !== undefined,
      `listing credhook's subscriptions on service ${this.service}`,
    );
    for (const l of listed) {
      const { credentialId, nativeId } = parseSubscriptionId(prefix, l.sid)!;
      const entry = byCredential.get(credentialId) ?? { nativeId, credentialId, parts: [] };
      entry.parts.push(...this.describe([l]));
      byCredential.set(credentialId, entry);
    }
    const out: OwnedResource[] = [];
    for (const record of await this.ownership.adoptions.list()) {
      const owner: Owned = {
        credentialId: lower(record.credentialId),
        stem: nativeIdOf(prefix, lower(record.credentialId)),
        adopted: record,
        matches: true,
      };
      const adopted = (await settleAll(record.sids, (sid) => this.getOne(sid), WRITE_CONCURRENCY)).flatMap((r) => {
        if (r.status === "rejected") throw r.reason;
        return r.value ? [r.value] : [];
      });
      const stemEntry = byCredential.get(owner.credentialId);
      byCredential.delete(owner.credentialId);
      const parts = [...this.describe(adopted, " (adopted)"), ...(stemEntry?.parts ?? [])];
      if (parts.length > 0)
        out.push({ nativeId: record.nativeId, credentialId: owner.credentialId, description: parts.join("; ") });
    }
    for (const e of byCredential.values())
      out.push({ nativeId: e.nativeId, credentialId: e.credentialId, description: e.parts.join("; ") });
    return out;
  }

  /**
   * The APIM product a plan maps to (`productMap`), for core's drift report: a plan mapped to another product is
   * reported changed until `credhook apply` moves its subscriptions. Undefined: an unmapped plan (its id is the
   * product's, defined in APIM).
   */
  planDefinition(planId: string): JsonValue | undefined {
    return this.opts.productMap[planId];
  }

  /**
   * Reads the API Management service (one cheap ARM GET), through core's
   * {@link CachedHealthProbe}: a success is reused for `healthCacheMs`, a failure
   * for min(5 s, `healthCacheMs`); concurrent calls share one probe.
   * @throws UpstreamUnavailable ARM or the service cannot be read, or the service is not in state Succeeded
   */
  health(): Promise<void> {
    return this.healthProbe.check();
  }

  private async probe(): Promise<void> {
    const r = await this.raw((abortSignal) =>
      this.client.apiManagementService.get(this.opts.resourceGroup, this.opts.serviceName, { abortSignal }),
    );
    let error: CredhookError | undefined;
    if (!r.ok) {
      const cause = this.mapped(r.error, `reading service ${this.service}`);
      error = unavailableFrom(this.gateway, cause, r.error);
    } else if (r.value.provisioningState && r.value.provisioningState !== "Succeeded") {
      error = this.errors.error(
        UpstreamUnavailable,
        `API Management service ${this.service} is ${r.value.provisioningState}`,
        30,
      );
    }
    if (error) throw error;
  }
}
