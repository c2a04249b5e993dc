/**
 * The Kong Gateway provider: one app's API key is a Kong *consumer* (username
 * `<prefix><gateway>-<credential id>`) holding
 * - a *key-auth* credential whose `key` is the imported value (the same value as the app's other gateways),
 * - one *ACL* group per API (the group an `acl` plugin on the API's service or route allows),
 * - a consumer-scoped *rate-limiting* plugin carrying the limits of the app's usage plans.
 *
 * Every entity carries credhook's mark in its `tags` (core's `tagMarker`): `credhook`,
 * `credhook-gw:<gateway>`, `credhook-cred:<credential id>` (and `credhook-plan:<plan>` on the
 * plugin). What every such provider shares — the ownership check before any change, revoke's
 * outcomes, findByCredential and listOwned by the tags, adopt's checks, `partial` after the
 * first write, typed errors, the cached health probe — is core's `MarkedResourceProvider`; this
 * file holds what is Kong's. Kong deletes a consumer's credentials, ACLs and plugins with it, so
 * revoke is one DELETE after the mark is checked.
 *
 * The Admin API: https://developer.konghq.com/api/gateway/admin-ee/ (entities, paging by
 * `offset`, tags); errors: Kong's `kong/db/errors.lua` (code 2 schema violation → 400, code 5
 * unique constraint violation → 409, whose `UNIQUE violation detected on '{key="…"}'` quotes a
 * key: redacted by each call's `secrets`).
 */
import { Conflict, NotFound } from "@credhook/core/errors";
import type { GatewayApi, JsonValue, ProviderContext } from "@credhook/core/provider";
import type { ProviderCreateInput, ProviderCredentialRef } from "@credhook/core/provider";
import * as kit from "@credhook/core/provider-kit";
import { KONG_PLAN_RULE, WINDOWS } from "./limits.js";
import type { KongProviderOptionsWithDefaults } from "./schema.js";

/** Kong's entity fields the provider reads. */
interface KongEntity {
  id: string;
  tags?: string[] | null;
  [field: string]: unknown;
}

/** What the RBAC role (or Konnect token) needs; said with every 401/403. */
const KONG_PERMISSIONS =
  "the Admin API refused the token: grant its RBAC role create/read/update/delete on /consumers, /consumers/*, /consumers/*/*, /consumers/*/*/* and /plugins/* (Kong Enterprise), or the Konnect token the Control Plane Admin role on this control plane";

/** The header of the `auth` option: Kong Enterprise RBAC's `Kong-Admin-Token`, Konnect's Bearer token, or none. */
function authHeaders(auth: KongProviderOptionsWithDefaults["auth"]): Record<string, string> {
  if (auth.type === "rbac-token") return { "kong-admin-token": auth.token };
  return auth.type === "bearer" ? { authorization: `Bearer ${auth.token}` } : {};
}

/** The message of Kong's error body (`message`, or Konnect's `detail`). */
function kongMessage(json: unknown): string | undefined {
  const o = json as { message?: unknown; detail?: unknown } | undefined;
  return typeof o?.message === "string" ? o.message : typeof o?.detail === "string" ? o.detail : undefined;
}

/** The provider of one Kong gateway; built by the factory in `index.ts`. */
export class KongProvider extends kit.RestGatewayProvider<KongEntity, readonly string[]> {
  /** API keys only; a caller-chosen value is imported; the key reads back from key-auth. */
  readonly capabilities = { credentialTypes: ["API_KEY" as const], importsApiKeyValue: true, readsBackSecret: true };

  /**
   * @param opts the gateway's options, defaults applied
   * @param context the gateway's name and logger
   */
  constructor(
    private readonly opts: KongProviderOptionsWithDefaults,
    context: Pick<ProviderContext, "gateway" | "logger">,
  ) {
    super(opts, context, {
      kind: "consumer",
      product: "Kong",
      marker: kit.tagMarker(context.gateway),
      client: {
        api: "Kong Admin API",
        baseUrl: opts.adminUrl,
        headers: authHeaders(opts.auth),
        messageOf: kongMessage,
        permissionHint: KONG_PERMISSIONS,
        // lists page by an opaque `offset`, in pages of at most 1000 (Kong's largest)
        paging: { query: { size: "1000" }, items: "data", cursor: "offset", next: { field: "offset" } },
      },
    });
  }

  // ------------------------------------------------------------------ the consumer, as MarkedResourceProvider asks

  protected readonly find = (ref: kit.ResourceRef) => this.consumer(ref.nativeId);
  protected readonly marksOf = (c: KongEntity) => c.tags;
  protected readonly describe = (c: KongEntity) => ({ nativeId: c.id, description: `consumer ${c.username ?? c.id}` });
  protected readonly resourcesOf = (c: KongEntity) => ({ consumerId: c.id, username: String(c.username ?? "") });
  /** Kong deletes the consumer's key-auth credentials, ACLs and plugins with it. */
  protected readonly remove = (c: KongEntity) => this.api.delete(`/consumers/${c.id}`, `deleting consumer ${c.id}`);
  /** One list filtered by the gateway's and the credential's tags. */
  protected readonly findMarked = (id: string) =>
    this.consumers(`looking for credential ${id}`, this.marker.mark(id).slice(1));
  protected readonly listMarked = () => this.consumers("listing credhook's consumers", this.marker.gatewayMark());
  /** `GET /consumers?size=1`, which also proves the RBAC read permission. */
  protected readonly probe = () => this.api.call("GET", "/consumers?size=1", "reading the Admin API", { ok: [200] });

  /** The consumer `idOrName` names (its id or its username), or undefined. */
  private async consumer(idOrName: string): Promise<KongEntity | undefined> {
    if (idOrName.length === 0) return undefined;
    return this.api.get<KongEntity>(`/consumers/${encodeURIComponent(idOrName)}`, `reading consumer ${idOrName}`);
  }

  /** The consumers carrying every tag of `tags`, every page. */
  private consumers(what: string, tags: readonly string[]): Promise<KongEntity[]> {
    return this.api.list<KongEntity>("/consumers", what, { tags: tags.join(",") });
  }

  /** The entities of a consumer's `kind` (`key-auth`, `acls`, `plugins`), every page. */
  private children(c: KongEntity, kind: string): Promise<KongEntity[]> {
    return this.api.list<KongEntity>(`/consumers/${c.id}/${kind}`, `listing the ${kind} of consumer ${c.id}`);
  }

  /** ACL groups of `apis` (apiMap, else the id). */
  private groupsOf(apis: GatewayApi[]): string[] {
    return [...new Set(apis.map((a) => this.opts.apiMap[a.id] ?? a.id))].sort();
  }

  // ------------------------------------------------------------------ writes

  /** Adds the key-auth credential `key` (409 with the same key on this consumer: already there). @throws Conflict the key belongs to another consumer */
  private async addKey(c: KongEntity, key: string, credentialId: string): Promise<KongEntity> {
    const path = `/consumers/${c.id}/key-auth`;
    const body = { key, tags: this.marker.mark(credentialId) };
    const what = `adding the key-auth credential of consumer ${c.id}`;
    const res = await this.api.call("POST", path, what, { body, ok: [201, 409], secrets: [key] });
    const mine =
      res.status === 201 ? (res.json as KongEntity) : (await this.children(c, "key-auth")).find((k) => k.key === key);
    if (mine) return mine;
    throw this.errors.error(
      Conflict,
      "the API key value is already a key-auth credential of another consumer on Kong (409 unique constraint violation on key)",
    );
  }

  /**
   * Brings the consumer's ACL groups and rate-limiting plugin to what `desired` needs: adds missing
   * groups, sets the plugin (or removes it: no plan), then removes the groups credhook added that
   * are no longer needed (add before remove). What has no mark of this gateway is left as it is;
   * what already is as wanted is not written again.
   * @throws InvalidReference a usage plan not in `plans`; PolicyViolation plans whose merged limits
   *   Kong refuses (see `limits.ts`): both before any write
   * @throws Conflict the consumer has a rate-limiting plugin credhook did not create
   */
  protected async apply(c: KongEntity, credentialId: string, input: { desired: GatewayApi[] }): Promise<undefined> {
    const { plans, limits } = kit.planLimitsOf(input.desired, this.opts.plans, KONG_PLAN_RULE, this.errors);
    const groups = this.groupsOf(input.desired);
    const tags = this.marker.mark(credentialId);
    const at = `/consumers/${c.id}`;
    const acls = await this.children(c, "acls");
    for (const group of groups.filter((g) => !acls.some((a) => a.group === g)))
      await this.api.call("POST", `${at}/acls`, `adding consumer ${c.id} to ACL group ${group}`, {
        body: { group, tags },
        ok: [201, 409],
      });
    const rl = (await this.children(c, "plugins")).find((p) => p.name === "rate-limiting");
    if (rl && this.markOf(rl) === undefined)
      throw this.errors.error(
        Conflict,
        `consumer ${c.id} has a rate-limiting plugin (${rl.id}) credhook did not create; remove it or adopt the consumer again`,
      );
    const what = `setting the rate-limiting plugin of consumer ${c.id}`;
    if (!limits) {
      if (rl) await this.api.delete(`/plugins/${rl.id}`, `removing the rate-limiting plugin of consumer ${c.id}`);
    } else {
      const windows = Object.fromEntries(WINDOWS.map((w) => [w, limits[w] ?? null]));
      const config = { ...windows, policy: this.opts.policy, limit_by: "consumer" };
      const body = { config, tags: [...tags, ...plans.map((p) => `credhook-plan:${kit.tagValue(p)}`)] };
      const created = { name: "rate-limiting", ...body };
      if (!rl) await this.api.call("POST", `${at}/plugins`, what, { body: created, ok: [201] });
      else if (!kit.holds(rl, body)) await this.api.call("PATCH", `/plugins/${rl.id}`, what, { body, ok: [200] });
    }
    const unwanted = acls.filter((a) => !groups.includes(a.group as string) && this.markOf(a) !== undefined);
    for (const a of unwanted)
      await this.api.delete(`${at}/acls/${a.id}`, `removing consumer ${c.id} from ACL group ${a.group}`);
  }

  // ------------------------------------------------------------------ the provider interface

  /**
   * Creates the consumer, its key-auth credential (the imported value, or a generated one),
   * ACL groups and rate-limiting plugin, all marked. A retried create finds the consumer
   * its deterministic username names (409) and carries on.
   * @throws InvalidReference a usage plan not in `plans` (before any write)
   * @throws PolicyViolation the app's plans merge into limits Kong refuses (before any write)
   * @throws Conflict the key value is another consumer's, or the username is taken by a consumer without this credential's mark
   * @throws Throttled | UpstreamError | UpstreamUnavailable | UpstreamTimeout Admin API failures, with `partial` once the consumer exists
   */
  async create(input: ProviderCreateInput) {
    const { credentialId, apis } = input;
    kit.planLimitsOf(apis, this.opts.plans, KONG_PLAN_RULE, this.errors);
    const username = `${this.opts.usernamePrefix}${this.gateway}-${credentialId.toLowerCase()}`;
    const body = { username, tags: this.marker.mark(credentialId) };
    const consumer = await this.createOrFind("/consumers", body, username, credentialId, () => this.consumer(username));
    const key = input.apiKeyValue ?? kit.generateApiKeyValue();
    await this.afterFirstWrite(consumer, async () => {
      await this.addKey(consumer, key, credentialId);
      await this.apply(consumer, credentialId, { desired: apis });
    });
    this.logger.info({ consumer: consumer.id, username }, "credential created on Kong");
    return { nativeId: consumer.id, apiKey: key, resources: this.resourcesOf(consumer) };
  }

  /**
   * Brings a consumer made outside credhook under this gateway: adds credhook's tags to its key-auth
   * credentials, the ACL groups of `ref.apis`, its rate-limiting plugin and, last, the consumer.
   * @throws NotFound the consumer has no key-auth credential (and `adoptWith`'s errors)
   */
  adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }) {
    return this.adoptWith(ref, async (c) => {
      const keys = await this.children(c, "key-auth");
      if (keys.length === 0)
        throw this.errors.error(NotFound, `consumer ${ref.nativeId} has no key-auth credential to adopt`);
      const groups = this.groupsOf(ref.apis);
      const acls = (await this.children(c, "acls")).filter((a) => groups.includes(a.group as string));
      const plugins = (await this.children(c, "plugins")).filter((p) => p.name === "rate-limiting");
      const paths = [
        ...keys.map((k) => [k, `/consumers/${c.id}/key-auth/${k.id}`] as const),
        ...acls.map((a) => [a, `/consumers/${c.id}/acls/${a.id}`] as const),
        ...plugins.map((p) => [p, `/plugins/${p.id}`] as const),
        [c, `/consumers/${c.id}`] as const, // the consumer last: until it carries the mark, nothing of it counts as credhook's
      ];
      let marked = c;
      for (const [e, path] of paths) {
        const body = { tags: this.marker.withMark(e.tags, ref.credentialId) };
        marked = (await this.api.call("PATCH", path, `marking ${path}`, { body, ok: [200] })).json as KongEntity;
      }
      return this.resourcesOf(marked);
    });
  }

  /** The key of the consumer's marked key-auth credential. @throws NotFound none, or not this gateway's */
  async readSecret(ref: ProviderCredentialRef) {
    const { resource: c } = await this.owned(ref);
    const keys = await this.run(() => this.children(c, "key-auth"));
    const key = keys.find((k) => this.markOf(k) !== undefined && typeof k.key === "string");
    if (!key) throw this.errors.error(NotFound, `consumer ${c.id} has no key-auth credential of credhook's`);
    return { apiKey: key.key as string };
  }

  /** Adds a new key-auth credential, then deletes the consumer's other marked ones (add before remove). */
  async rotateSecret(ref: ProviderCredentialRef, apiKeyValue?: string) {
    const { resource: c, credentialId } = await this.owned(ref);
    const key = apiKeyValue ?? kit.generateApiKeyValue();
    await this.run(async () => {
      const added = await this.addKey(c, key, credentialId);
      for (const k of await this.children(c, "key-auth"))
        if (k.id !== added.id && this.markOf(k) !== undefined)
          await this.api.delete(`/consumers/${c.id}/key-auth/${k.id}`, `deleting key-auth credential ${k.id}`);
    });
    return { apiKey: key, resources: this.resourcesOf(c) };
  }

  /** A plan's limits as the `plans` option gives them, for core's drift report (undefined: not defined there). */
  planDefinition(planId: string): JsonValue | undefined {
    return Object.hasOwn(this.opts.plans, planId) ? (this.opts.plans[planId] as unknown as JsonValue) : undefined;
  }
}
