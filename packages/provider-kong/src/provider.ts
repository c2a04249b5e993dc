/**
 * The Kong Gateway provider: one app's API key is a Kong *consumer* (username
 * `<prefix><gateway>-<credential id>`) holding
 * - a *key-auth* credential whose `key` is the imported value (the same value as the app's other gateways),
 * - one *ACL* group per API (the group an `acl` plugin on the API's service or route allows),
 * - a consumer-scoped *rate-limiting* plugin carrying the limits of the app's usage plans.
 *
 * Every entity carries credhook's mark in its `tags`: `credhook`, `credhook-gw:<gateway>`,
 * `credhook-cred:<credential id>` (and `credhook-plan:<plan>` on the plugin). Nothing
 * without this gateway's mark is ever changed or deleted; foreign consumers come in
 * only through `adopt`, which adds the mark.
 *
 * Kong deletes a consumer's credentials, ACLs and plugins with it, so revoke is one
 * DELETE after the mark is checked.
 */
import {
  Conflict,
  InvalidReference,
  NotFound,
  PolicyViolation,
  ValidationError,
  isCredhookError,
  type CredhookError,
} from "@credhook/core/errors";
import {
  CachedHealthProbe,
  GatewayErrors,
  HttpCallFailed,
  generateApiKeyValue,
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
import type { KongAdmin, KongEntity } from "./admin.js";
import {
  describeInversions,
  mergePlans,
  PERIOD_ORDER_RULE,
  periodInversions,
  type PlanLimits,
  WINDOWS,
} from "./limits.js";

/** Options after defaults, as the provider uses them. */
export interface ResolvedKongOptions {
  apiMap: Record<string, string>;
  plans: Record<string, PlanLimits>;
  policy: string;
  usernamePrefix: string;
  healthCacheMs: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const GW_TAG = "credhook-gw:";
const CRED_TAG = "credhook-cred:";
const PLAN_TAG = "credhook-plan:";

/** Tag-safe form of a name: Kong tags hold no `,`, `/` or non-printable characters. */
export function tagValue(name: string): string {
  return encodeURIComponent(name);
}

/** The credential id a set of tags marks for `gateway`, `""` when marked for the gateway without one, undefined when not this gateway's. */
export function markOf(tags: string[] | null | undefined, gateway: string): string | undefined {
  if (!tags?.includes(`${GW_TAG}${tagValue(gateway)}`)) return undefined;
  return (
    tags
      .find((t) => t.startsWith(CRED_TAG))
      ?.slice(CRED_TAG.length)
      .toLowerCase() ?? ""
  );
}

/**
 * True when the plugin `rl` already has `config` (each of its fields; Kong answers `null` for an unset
 * window) and exactly the tags `tags` (in any order): setting them again would change nothing.
 */
function sameSettings(rl: KongEntity, config: Record<string, unknown>, tags: string[]): boolean {
  const current = (rl.config ?? {}) as Record<string, unknown>;
  const had = new Set(rl.tags ?? []);
  return (
    Object.entries(config).every(([k, v]) => (current[k] ?? null) === v) &&
    had.size === new Set(tags).size &&
    tags.every((t) => had.has(t))
  );
}

/** The provider; built by the factory in `index.ts`. */
export class KongProvider implements Provider {
  /** API keys only; a caller-chosen value is imported; the key reads back from key-auth. */
  readonly capabilities: ProviderCapabilities = {
    credentialTypes: ["API_KEY"],
    importsApiKeyValue: true,
    readsBackSecret: true,
  };

  private readonly errors: GatewayErrors;
  private readonly healthProbe: CachedHealthProbe;

  constructor(
    private readonly admin: KongAdmin,
    private readonly opts: ResolvedKongOptions,
    private readonly gateway: string,
    private readonly logger: Logger,
    private readonly release: () => Promise<void> = async () => {},
  ) {
    this.errors = new GatewayErrors(gateway);
    this.healthProbe = new CachedHealthProbe(() => this.probe(), { successTtlMs: opts.healthCacheMs });
  }

  /** Stops the client-side rate limiter. */
  async close(): Promise<void> {
    await this.release();
  }

  // ------------------------------------------------------------------ marks and mapping

  /** The tags of everything made for `credentialId`. */
  private mark(credentialId: string): string[] {
    return ["credhook", `${GW_TAG}${tagValue(this.gateway)}`, `${CRED_TAG}${credentialId.toLowerCase()}`];
  }

  private usernameOf(credentialId: string): string {
    return `${this.opts.usernamePrefix}${this.gateway}-${credentialId.toLowerCase()}`;
  }

  private resources(c: KongEntity): ProviderResources {
    return { consumerId: c.id, username: typeof c.username === "string" ? c.username : "" };
  }

  /** ACL groups of `apis` (apiMap, else the id). */
  private groupsOf(apis: GatewayApi[]): string[] {
    return [...new Set(apis.map((a) => this.opts.apiMap[a.id] ?? a.id))].sort();
  }

  /**
   * The plans of `apis` and their merged limits: each window takes the largest limit of the plans.
   * @throws InvalidReference a plan the `plans` option does not define
   * @throws PolicyViolation (422) the plans are each valid but their merge is not: Kong's rate-limiting
   *   plugin would refuse it (a longer window's limit lower than a shorter one's, see `limits.ts`)
   */
  private limitsOf(apis: GatewayApi[]): { plans: string[]; limits: PlanLimits | undefined } {
    const plans = [...new Set(apis.flatMap((a) => a.usagePlans))].sort();
    const unknown = plans.filter((p) => !Object.hasOwn(this.opts.plans, p));
    if (unknown.length > 0) {
      throw this.errors.error(
        InvalidReference,
        `usage plan ${unknown.map((p) => `'${p}'`).join(", ")} is not defined in this gateway's 'plans' option; known: ${Object.keys(this.opts.plans).join(", ") || "none"}`,
      );
    }
    if (plans.length === 0) return { plans, limits: undefined };
    const { limits, source } = mergePlans(plans, this.opts.plans);
    const inversions = periodInversions(limits);
    if (inversions.length > 0) {
      throw this.errors.error(
        PolicyViolation,
        `usage plans ${plans.map((p) => `'${p}'`).join(", ")} cannot be combined on this gateway: merged (each window the largest limit of the plans) they give ${describeInversions(limits, inversions, source)}, and ${PERIOD_ORDER_RULE}; give the app plans that fit together, or change the gateway's 'plans' option`,
      );
    }
    return { plans, limits };
  }

  /** Core's typed error of a failed call (the call's own, or any other error as it is). */
  private typed(err: unknown): CredhookError {
    if (err instanceof HttpCallFailed) return err.typed;
    if (isCredhookError(err)) return err;
    throw err;
  }

  /** `err` with `partial`: the consumer exists and core compensates (the provider never cleans up alone). */
  private withPartial(err: unknown, consumer: KongEntity): CredhookError {
    const typed = this.typed(err);
    typed.partial = { nativeId: consumer.id, resources: this.resources(consumer) };
    return typed;
  }

  /** The consumer `nativeId` names (id or username), or undefined. */
  private async consumer(nativeId: string): Promise<KongEntity | undefined> {
    if (nativeId.length === 0) return undefined;
    return this.admin.get<KongEntity>(`/consumers/${encodeURIComponent(nativeId)}`, `reading consumer ${nativeId}`);
  }

  /** The consumer of `ref` when it carries this gateway's mark and (unless empty) `ref.credentialId`'s. @throws NotFound otherwise */
  private async owned(
    ref: Pick<ProviderCredentialRef, "nativeId" | "credentialId">,
  ): Promise<{ consumer: KongEntity; credentialId: string }> {
    const c = await this.consumer(ref.nativeId).catch((e) => Promise.reject(this.typed(e)));
    if (!c) throw this.errors.error(NotFound, `consumer ${ref.nativeId} does not exist on Kong`);
    const credentialId = markOf(c.tags, this.gateway);
    if (credentialId === undefined || (ref.credentialId !== "" && credentialId !== ref.credentialId.toLowerCase())) {
      throw this.errors.error(
        NotFound,
        `consumer ${ref.nativeId} does not carry this gateway's mark${credentialId !== undefined ? ` for credential ${ref.credentialId}` : ""}; nothing was changed`,
      );
    }
    return { consumer: c, credentialId };
  }

  // ------------------------------------------------------------------ writes

  /** Adds the key-auth credential `key` (409 with the same key on this consumer: already there). @throws Conflict the key belongs to another consumer */
  private async addKey(consumer: KongEntity, key: string, credentialId: string): Promise<KongEntity> {
    const path = `/consumers/${consumer.id}/key-auth`;
    const res = await this.admin.call("POST", path, `adding the key-auth credential of consumer ${consumer.id}`, {
      body: { key, tags: this.mark(credentialId) },
      ok: [201, 409],
      secrets: [key],
    });
    if (res.status === 201) return res.json as KongEntity;
    const mine = (await this.admin.list(path, `listing the key-auth credentials of consumer ${consumer.id}`)).find(
      (k) => k.key === key,
    );
    if (mine) return mine;
    throw this.errors.error(
      Conflict,
      `the API key value is already a key-auth credential of another consumer on Kong (409 unique constraint violation on key)`,
    );
  }

  /**
   * Brings the consumer's ACL groups and rate-limiting plugin to what `apis` need:
   * adds missing groups, sets the plugin (unless it already has these limits and plans: a no-op update writes nothing),
   * then removes the groups credhook added that are no longer needed (add before remove).
   * Entities without this gateway's mark are left as they are.
   * @throws InvalidReference | PolicyViolation from {@link limitsOf}, before any write
   */
  private async applyAccess(consumer: KongEntity, credentialId: string, apis: GatewayApi[]): Promise<void> {
    const { plans, limits } = this.limitsOf(apis);
    const groups = this.groupsOf(apis);
    const tags = this.mark(credentialId);
    const cpath = `/consumers/${consumer.id}`;
    const acls = await this.admin.list(`${cpath}/acls`, `listing the ACL groups of consumer ${consumer.id}`);
    const has = new Set(acls.map((a) => a.group as string));
    for (const group of groups.filter((g) => !has.has(g))) {
      await this.admin.call("POST", `${cpath}/acls`, `adding consumer ${consumer.id} to ACL group ${group}`, {
        body: { group, tags },
        ok: [201, 409],
      });
    }
    const plugins = await this.admin.list(`${cpath}/plugins`, `listing the plugins of consumer ${consumer.id}`);
    const rl = plugins.find((p) => p.name === "rate-limiting");
    if (rl && markOf(rl.tags, this.gateway) === undefined) {
      throw this.errors.error(
        Conflict,
        `consumer ${consumer.id} has a rate-limiting plugin (${rl.id}) credhook did not create; remove it or adopt the consumer again`,
      );
    }
    const what = `setting the rate-limiting plugin of consumer ${consumer.id}`;
    const planTags = [...tags, ...plans.map((p) => `${PLAN_TAG}${tagValue(p)}`)];
    if (limits) {
      const config = {
        ...Object.fromEntries(WINDOWS.map((w) => [w, limits[w] ?? null])),
        policy: this.opts.policy,
        limit_by: "consumer",
      };
      if (rl) {
        if (!sameSettings(rl, config, planTags))
          await this.admin.call("PATCH", `/plugins/${rl.id}`, what, { body: { config, tags: planTags }, ok: [200] });
      } else
        await this.admin.call("POST", `${cpath}/plugins`, what, {
          body: { name: "rate-limiting", config, tags: planTags },
          ok: [201],
        });
    } else if (rl) {
      await this.admin.call(
        "DELETE",
        `/plugins/${rl.id}`,
        `removing the rate-limiting plugin of consumer ${consumer.id}`,
        { ok: [204, 404] },
      );
    }
    const wanted = new Set(groups);
    for (const acl of acls.filter(
      (a) => !wanted.has(a.group as string) && markOf(a.tags, this.gateway) !== undefined,
    )) {
      await this.admin.call(
        "DELETE",
        `${cpath}/acls/${acl.id}`,
        `removing consumer ${consumer.id} from ACL group ${String(acl.group)}`,
        { ok: [204, 404] },
      );
    }
  }

  /**
   * Creates the consumer, its key-auth credential (the imported value, or a generated one),
   * ACL groups and rate-limiting plugin, all marked. A retried create finds the consumer
   * its deterministic username names (409) and carries on.
   * @throws InvalidReference a usage plan not in `plans` (before any write)
   * @throws PolicyViolation the app's plans merge into limits Kong refuses (before any write)
   * @throws Conflict the key value is another consumer's, or the username is taken by a consumer without this credential's mark
   * @throws Throttled | UpstreamError | UpstreamUnavailable | UpstreamTimeout Admin API failures, with `partial` once the consumer exists
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    this.limitsOf(input.apis);
    const username = this.usernameOf(input.credentialId);
    let consumer: KongEntity;
    try {
      const res = await this.admin.call("POST", "/consumers", `creating consumer ${username}`, {
        body: { username, tags: this.mark(input.credentialId) },
        ok: [201, 409],
      });
      consumer =
        res.status === 201 ? (res.json as KongEntity) : ((await this.consumer(username)) ?? { id: "", tags: [] });
    } catch (err) {
      throw this.typed(err);
    }
    if (markOf(consumer.tags, this.gateway) !== input.credentialId.toLowerCase()) {
      throw this.errors.error(
        Conflict,
        `consumer username ${username} is taken by a consumer without this credential's mark`,
      );
    }
    const key = input.apiKeyValue ?? generateApiKeyValue();
    try {
      await this.addKey(consumer, key, input.credentialId);
      await this.applyAccess(consumer, input.credentialId, input.apis);
    } catch (err) {
      throw this.withPartial(err, consumer);
    }
    this.logger.info({ consumer: consumer.id, username }, "credential created on Kong");
    return { nativeId: consumer.id, apiKey: key, resources: this.resources(consumer) };
  }

  /**
   * Applies the app's new API/plan set: ACL groups added, the plugin set, groups removed (add before remove);
   * what already is as wanted is not written again.
   * @throws NotFound the consumer is gone or not this gateway's (this credential's)
   * @throws InvalidReference a usage plan not in `plans` (before any write)
   * @throws PolicyViolation the new plans merge into limits Kong refuses (before any write)
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const { consumer, credentialId } = await this.owned(input);
    try {
      await this.applyAccess(consumer, credentialId, input.desired);
    } catch (err) {
      throw this.typed(err);
    }
    return { resources: this.resources(consumer), ...(input.credentialId === "" ? { credentialId } : {}) };
  }

  /**
   * Deletes the consumer (Kong deletes its key-auth credentials, ACLs and plugins with it)
   * when it carries this gateway's mark and, unless `ref.credentialId` is empty, that credential's.
   */
  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    try {
      const c = await this.consumer(ref.nativeId);
      if (!c) return "gone";
      const credentialId = markOf(c.tags, this.gateway);
      if (credentialId === undefined || (ref.credentialId !== "" && credentialId !== ref.credentialId.toLowerCase())) {
        this.logger.info(
          { nativeId: ref.nativeId, credentialId: ref.credentialId },
          "consumer is not this gateway's (or not this credential's); left untouched",
        );
        return "not-owned";
      }
      await this.admin.call("DELETE", `/consumers/${c.id}`, `deleting consumer ${c.id}`, { ok: [204, 404] });
      this.logger.info({ consumer: c.id }, "credential revoked on Kong");
      return "revoked";
    } catch (err) {
      throw this.typed(err);
    }
  }

  /** The consumers carrying this gateway's and `search.credentialId`'s tags (one tag-filtered list). */
  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    if (!UUID.test(search.credentialId)) return [];
    const tags = this.mark(search.credentialId).slice(1);
    return this.describe(
      await this.admin
        .list("/consumers", `looking for credential ${search.credentialId}`, tags)
        .catch((e) => Promise.reject(this.typed(e))),
    );
  }

  /** Every consumer carrying this gateway's tag (paged by offset). */
  async listOwned(): Promise<OwnedResource[]> {
    const tags = [`${GW_TAG}${tagValue(this.gateway)}`];
    return this.describe(
      await this.admin
        .list("/consumers", "listing credhook's consumers", tags)
        .catch((e) => Promise.reject(this.typed(e))),
    );
  }

  private describe(consumers: KongEntity[]): OwnedResource[] {
    return consumers.map((c) => {
      const credentialId = markOf(c.tags, this.gateway);
      return {
        nativeId: c.id,
        ...(credentialId ? { credentialId } : {}),
        description: `consumer ${String(c.username ?? c.id)}`,
      };
    });
  }

  /**
   * Brings a consumer made outside credhook under this gateway: adds credhook's tags to the
   * consumer, its key-auth credentials, the ACL groups of `ref.apis` and its rate-limiting
   * plugin. Idempotent for the same credential.
   * @throws ValidationError `ref.credentialId` is not a UUID
   * @throws NotFound no such consumer, or it has no key-auth credential
   * @throws Conflict it carries another gateway's or credential's mark
   */
  async adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult> {
    if (!UUID.test(ref.credentialId))
      throw new ValidationError([
        this.errors.message(`adopt needs credhook's credential id (a UUID), got '${ref.credentialId}'`),
      ]);
    try {
      const c = await this.consumer(ref.nativeId);
      if (!c) throw this.errors.error(NotFound, `there is no consumer ${ref.nativeId} on Kong to adopt`);
      const mark = markOf(c.tags, this.gateway);
      const foreignMark = (c.tags ?? []).find((t) => t.startsWith(GW_TAG) || t.startsWith(CRED_TAG));
      if (mark === ref.credentialId.toLowerCase()) return { resources: this.resources(c) };
      if (foreignMark)
        throw this.errors.error(
          Conflict,
          `consumer ${ref.nativeId} carries another credhook mark (${foreignMark}); it is not adopted`,
        );
      const cpath = `/consumers/${c.id}`;
      const keys = await this.admin.list(`${cpath}/key-auth`, `listing the key-auth credentials of consumer ${c.id}`);
      if (keys.length === 0)
        throw this.errors.error(NotFound, `consumer ${ref.nativeId} has no key-auth credential to adopt`);
      const tags = this.mark(ref.credentialId);
      const withMark = (e: KongEntity) => ({ tags: [...new Set([...(e.tags ?? []), ...tags])] });
      const groups = new Set(this.groupsOf(ref.apis));
      const acls = (await this.admin.list(`${cpath}/acls`, `listing the ACL groups of consumer ${c.id}`)).filter((a) =>
        groups.has(a.group as string),
      );
      const plugins = (await this.admin.list(`${cpath}/plugins`, `listing the plugins of consumer ${c.id}`)).filter(
        (p) => p.name === "rate-limiting",
      );
      for (const k of keys)
        await this.admin.call("PATCH", `${cpath}/key-auth/${k.id}`, `marking key-auth credential ${k.id}`, {
          body: withMark(k),
          ok: [200],
        });
      for (const a of acls)
        await this.admin.call("PATCH", `${cpath}/acls/${a.id}`, `marking ACL ${a.id}`, {
          body: withMark(a),
          ok: [200],
        });
      for (const p of plugins)
        await this.admin.call("PATCH", `/plugins/${p.id}`, `marking plugin ${p.id}`, { body: withMark(p), ok: [200] });
      // The consumer last: until it carries the mark, nothing of it counts as credhook's.
      const res = await this.admin.call("PATCH", cpath, `marking consumer ${c.id}`, { body: withMark(c), ok: [200] });
      this.logger.warn(
        { consumer: c.id, credentialId: ref.credentialId },
        "consumer made outside credhook adopted: credhook now updates and revokes it",
      );
      return { resources: this.resources(res.json as KongEntity) };
    } catch (err) {
      throw this.typed(err);
    }
  }

  /** The key of the consumer's marked key-auth credential. @throws NotFound none, or not this gateway's */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey: string }> {
    const { consumer } = await this.owned(ref);
    const keys = await this.admin
      .list(`/consumers/${consumer.id}/key-auth`, `reading the key of consumer ${consumer.id}`)
      .catch((e) => Promise.reject(this.typed(e)));
    const key = keys.find((k) => markOf(k.tags, this.gateway) !== undefined && typeof k.key === "string");
    if (!key) throw this.errors.error(NotFound, `consumer ${consumer.id} has no key-auth credential of credhook's`);
    return { apiKey: key.key as string };
  }

  /** Adds a new key-auth credential, then deletes the consumer's other marked ones (add before remove). */
  async rotateSecret(ref: ProviderCredentialRef, apiKeyValue?: string): Promise<RotatedSecret> {
    const { consumer, credentialId } = await this.owned(ref);
    const key = apiKeyValue ?? generateApiKeyValue();
    try {
      const added = await this.addKey(consumer, key, credentialId);
      const path = `/consumers/${consumer.id}/key-auth`;
      for (const k of await this.admin.list(path, `listing the key-auth credentials of consumer ${consumer.id}`)) {
        if (k.id !== added.id && markOf(k.tags, this.gateway) !== undefined)
          await this.admin.call("DELETE", `${path}/${k.id}`, `deleting key-auth credential ${k.id}`, {
            ok: [204, 404],
          });
      }
    } catch (err) {
      throw this.typed(err);
    }
    return { apiKey: key, resources: this.resources(consumer) };
  }

  /**
   * A plan's limits as the `plans` option gives them (what its consumers' rate-limiting plugin carries): core keeps
   * their fingerprint, and a plan whose limits change is reported as drift until `credhook apply` updates the
   * plugins. Undefined: a plan the option does not define.
   */
  planDefinition(planId: string): JsonValue | undefined {
    return Object.hasOwn(this.opts.plans, planId) ? (this.opts.plans[planId] as unknown as JsonValue) : undefined;
  }

  /** One cheap read (`GET /consumers?size=1`, which also proves the RBAC read permission), cached. */
  health(): Promise<void> {
    return this.healthProbe.check();
  }

  private async probe(): Promise<void> {
    try {
      await this.admin.call("GET", "/consumers?size=1", "reading the Admin API", { ok: [200] });
    } catch (err) {
      throw unavailableFrom(this.gateway, this.typed(err), err);
    }
  }
}
