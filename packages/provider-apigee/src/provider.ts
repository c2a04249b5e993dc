/**
 * The Apigee X provider: one app's credential is an Apigee *developer app*
 * (`<prefix><gateway>-<credential id>`) of the portal developer (an Apigee
 * *developer*, found by e-mail or created), whose *credential* is associated with
 * the *API products* of the app's usage plans (or, for an API with no plan, the
 * API's product):
 * - API_KEY: the imported value becomes the app's consumer key through the keys
 *   `create` call, so one key spans Apigee and the other gateways; the key Apigee
 *   generated with the app is deleted once the imported one holds the products
 *   (add before remove). `apiKeyId` is the app id.
 * - CLIENT_CREDENTIALS: the app's consumer key and secret are the client id and
 *   secret for Apigee's OAuthV2 token endpoint (client_credentials grant).
 *
 * credhook's mark is in the app's attributes (`credhook-gateway`, `credhook-credential`);
 * nothing without this gateway's mark is changed or deleted, and foreign apps come in
 * only through `adopt`. Developers are shared by a developer's apps and never deleted.
 */
import {
  CachedHealthProbe,
  GatewayErrors,
  HttpCallFailed,
  generateApiKeyValue,
  randomBase62,
  unavailableFrom,
} from "@credhook/core/provider-kit";
import {
  Conflict,
  type CredhookError,
  InvalidReference,
  isCredhookError,
  NotFound,
  ValidationError,
} from "@credhook/core/errors";
import type {
  CredentialSearch,
  CredentialType,
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
import type { ApigeeClient } from "./client.js";

/** Options after defaults, as the provider uses them. */
export interface ResolvedApigeeOptions {
  productMap: Record<string, string>;
  apiMap: Record<string, string>;
  appNamePrefix: string;
  tokenUrl?: string;
  healthCacheMs: number;
}

/** The fields of an Apigee app the provider reads. */
interface App {
  appId: string;
  name: string;
  developerId?: string;
  developerEmail?: string;
  attributes?: Array<{ name: string; value: string }>;
  credentials?: Array<{
    consumerKey: string;
    consumerSecret: string;
    status?: string;
    apiProducts?: Array<{ apiproduct: string }>;
  }>;
}

const GATEWAY_ATTR = "credhook-gateway";
const CREDENTIAL_ATTR = "credhook-credential";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;
const enc = encodeURIComponent;

/** Consumer keys and secrets Apigee accepts on import (keys.create: letters, digits, `_`, `-`, ≤ 2 KB). */
export const APIGEE_KEY_PATTERN = "^[A-Za-z0-9_-]{1,2048}$";

/** The provider; built by the factory in `index.ts`. */
export class ApigeeProvider implements Provider {
  readonly capabilities: ProviderCapabilities;
  private readonly errors: GatewayErrors;
  private readonly healthProbe: CachedHealthProbe;

  constructor(
    private readonly api: ApigeeClient,
    private readonly opts: ResolvedApigeeOptions,
    private readonly gateway: string,
    private readonly credentialType: CredentialType,
    private readonly logger: Logger,
    private readonly release: () => Promise<void> = async () => {},
  ) {
    this.capabilities = {
      credentialTypes: [credentialType],
      importsApiKeyValue: credentialType === "API_KEY",
      readsBackSecret: true,
      apiKeyValuePattern: APIGEE_KEY_PATTERN,
      // A consumer key's approve/revoke switch (developers.apps.keys, `action=revoke|approve`): both kinds are keys.
      disables: [credentialType],
    };
    this.errors = new GatewayErrors(gateway);
    this.healthProbe = new CachedHealthProbe(() => this.probe(), { successTtlMs: opts.healthCacheMs });
  }

  /** Stops the client-side rate limiter. */
  async close(): Promise<void> {
    await this.release();
  }

  // ------------------------------------------------------------------ marks, names, lookups

  private appNameOf(credentialId: string): string {
    return `${this.opts.appNamePrefix}${this.gateway}-${credentialId.toLowerCase()}`.replace(/[^A-Za-z0-9._-]/g, "-");
  }

  private attributes(credentialId: string, appName: string): Array<{ name: string; value: string }> {
    return [
      { name: GATEWAY_ATTR, value: this.gateway },
      { name: CREDENTIAL_ATTR, value: credentialId.toLowerCase() },
      { name: "DisplayName", value: appName.slice(0, 255) },
    ];
  }

  /** The credential id the app's attributes mark for this gateway (undefined: not this gateway's). */
  private markOf(app: App): string | undefined {
    const attr = (n: string) => app.attributes?.find((a) => a.name === n)?.value;
    return attr(GATEWAY_ATTR) === this.gateway ? (attr(CREDENTIAL_ATTR) ?? "").toLowerCase() : undefined;
  }

  private developerOf(app: App, fallback?: string): string {
    return app.developerEmail ?? fallback ?? app.developerId ?? "";
  }

  private resources(app: App, developer: string): ProviderResources {
    return { appId: app.appId, appName: app.name, developer };
  }

  private appPath(developer: string, name: string): string {
    return `/developers/${enc(developer)}/apps/${enc(name)}`;
  }

  private typed(err: unknown): CredhookError {
    if (err instanceof HttpCallFailed) return err.typed;
    if (isCredhookError(err)) return err;
    throw err;
  }

  /** Runs `fn`, turning a failed call into core's typed error. */
  private async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.typed(err);
    }
  }

  /**
   * The API products of `apis` (productMap for plans, apiMap for APIs without one), each checked to exist.
   * @throws InvalidReference a product the organisation does not have
   */
  private async productsOf(apis: GatewayApi[]): Promise<string[]> {
    const names = [
      ...new Set(
        apis.flatMap((a) =>
          a.usagePlans.length > 0
            ? a.usagePlans.map((p) => this.opts.productMap[p] ?? p)
            : [this.opts.apiMap[a.id] ?? a.id],
        ),
      ),
    ].sort();
    const found = await this.run(() =>
      Promise.all(names.map((n) => this.api.get(`/apiproducts/${enc(n)}`, `reading API product ${n}`))),
    );
    const missing = names.filter((_, i) => found[i] === undefined);
    if (missing.length > 0)
      throw this.errors.error(
        InvalidReference,
        `API product ${missing.map((m) => `'${m}'`).join(", ")} does not exist in the Apigee organisation`,
      );
    return names;
  }

  /** The app a reference names: by the stored app id, else by the native id (an app id, or a client id found among the organisation's apps). */
  private async find(
    ref: Pick<ProviderCredentialRef, "nativeId" | "resources" | "credentialType">,
  ): Promise<App | undefined> {
    const appId =
      typeof ref.resources.appId === "string"
        ? ref.resources.appId
        : ref.credentialType === "API_KEY"
          ? ref.nativeId
          : undefined;
    if (appId !== undefined) {
      if (appId.length === 0 || appId.includes("/")) return undefined;
      const app = await this.api.get<App>(`/apps/${enc(appId)}`, `reading app ${appId}`);
      if (
        app &&
        ref.credentialType === "CLIENT_CREDENTIALS" &&
        !app.credentials?.some((c) => c.consumerKey === ref.nativeId)
      )
        return undefined;
      return app;
    }
    return (await this.listApps(`consumerKey=${ref.nativeId}`)).find((a) =>
      a.credentials?.some((c) => c.consumerKey === ref.nativeId),
    );
  }

  /**
   * Every app of the organisation, expanded, paged by `startKey` (the first app of the next
   * page, inclusive) and `rows`. It pages until a page brings nothing new, so a server that
   * answers fewer rows than asked is still read whole (one more call at the end). `filter`
   * (apps.list's, e.g. `consumerKey=…`) narrows the listing on the server; callers still check
   * what comes back, so a server that ignores it is only slower.
   */
  private async listApps(filter?: string): Promise<App[]> {
    const out: App[] = [];
    let startKey: string | undefined;
    for (;;) {
      const q = new URLSearchParams({
        expand: "true",
        rows: "1000",
        ...(filter ? { filter } : {}),
        ...(startKey ? { startKey } : {}),
      });
      const page =
        (
          (await this.api.call("GET", `/apps?${q}`, "listing the organisation's apps", { ok: [200] })).json as
            | { app?: App[] }
            | undefined
        )?.app ?? [];
      const fresh = startKey ? page.filter((a) => a.appId !== startKey) : page;
      out.push(...fresh);
      if (fresh.length === 0) return out;
      startKey = page[page.length - 1]!.appId;
    }
  }

  /** The app of `ref` with this gateway's (and, unless empty, `ref.credentialId`'s) mark. @throws NotFound otherwise */
  private async owned(ref: ProviderCredentialRef): Promise<{ app: App; credentialId: string; developer: string }> {
    const app = await this.run(() => this.find(ref));
    if (!app) throw this.errors.error(NotFound, `credential ${ref.nativeId} does not exist on Apigee`);
    const credentialId = this.markOf(app);
    if (credentialId === undefined || (ref.credentialId !== "" && credentialId !== ref.credentialId.toLowerCase())) {
      throw this.errors.error(
        NotFound,
        `app ${app.name} does not carry this gateway's mark${credentialId !== undefined ? ` for credential ${ref.credentialId}` : ""}; nothing was changed`,
      );
    }
    return {
      app,
      credentialId,
      developer: this.developerOf(
        app,
        typeof ref.resources.developer === "string" ? ref.resources.developer : undefined,
      ),
    };
  }

  /** The credentials of `app` this credential is: the client id's (CLIENT_CREDENTIALS), else every one. */
  private keysOf(app: App, nativeId: string): NonNullable<App["credentials"]> {
    const all = app.credentials ?? [];
    return this.credentialType === "CLIENT_CREDENTIALS" ? all.filter((c) => c.consumerKey === nativeId) : all;
  }

  /** Associates `products` with each key (add first), then removes every other product (add before remove). */
  private async setProducts(
    developer: string,
    app: App,
    keys: NonNullable<App["credentials"]>,
    products: string[],
  ): Promise<void> {
    const base = this.appPath(developer, app.name);
    for (const k of keys) {
      const has = new Set((k.apiProducts ?? []).map((p) => p.apiproduct));
      const add = products.filter((p) => !has.has(p));
      if (add.length > 0)
        await this.api.call(
          "POST",
          `${base}/keys/${enc(k.consumerKey)}`,
          `adding API products to a key of app ${app.name}`,
          { body: { apiProducts: add }, ok: [200], secrets: [k.consumerKey], idempotent: true },
        );
    }
    const wanted = new Set(products);
    for (const k of keys) {
      for (const p of (k.apiProducts ?? []).map((x) => x.apiproduct).filter((x) => !wanted.has(x))) {
        await this.api.call(
          "DELETE",
          `${base}/keys/${enc(k.consumerKey)}/apiproducts/${enc(p)}`,
          `removing API product ${p} from a key of app ${app.name}`,
          { ok: [200, 404], secrets: [k.consumerKey] },
        );
      }
    }
  }

  // ------------------------------------------------------------------ provider interface

  /**
   * Creates (or, retried, finds) the developer and the marked app, imports the key (API_KEY)
   * and associates the API products.
   * @throws InvalidReference an unknown API product, or a developer that is not an e-mail address (before any write)
   * @throws Conflict the key value is another app's, or the app name is taken without this credential's mark
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    const developer = input.app.developer.trim().toLowerCase();
    if (!EMAIL.test(developer))
      throw this.errors.error(
        InvalidReference,
        "Apigee developers are e-mail addresses: the app's developer is not one",
      );
    const products = await this.productsOf(input.apis);
    const name = this.appNameOf(input.credentialId);
    const app = await this.run(async () => {
      if (!(await this.api.get(`/developers/${enc(developer)}`, "reading the developer"))) {
        await this.api.call("POST", "/developers", "creating the developer", {
          body: {
            email: developer,
            firstName: developer.split("@")[0],
            lastName: "(portal)",
            userName: developer.slice(0, 255),
            attributes: [{ name: "created-by", value: "credhook" }],
          },
          ok: [200, 201, 409],
        });
      }
      const res = await this.api.call("POST", `/developers/${enc(developer)}/apps`, `creating app ${name}`, {
        body: {
          name,
          attributes: this.attributes(input.credentialId, input.app.appName),
          apiProducts: this.credentialType === "CLIENT_CREDENTIALS" ? products : [],
        },
        ok: [200, 201, 409],
      });
      return res.status === 409
        ? await this.api.get<App>(this.appPath(developer, name), `reading app ${name}`)
        : (res.json as App);
    });
    if (!app || this.markOf(app) !== input.credentialId.toLowerCase())
      throw this.errors.error(Conflict, `app name ${name} is taken by an app without this credential's mark`);
    const resources = this.resources(app, developer);
    try {
      if (this.credentialType === "CLIENT_CREDENTIALS") {
        const cred = app.credentials?.[0];
        if (!cred) throw this.errors.error(NotFound, `app ${name} has no credential`);
        await this.setProducts(developer, app, [cred], products);
        return {
          nativeId: cred.consumerKey,
          clientSecret: cred.consumerSecret,
          resources,
          ...(this.opts.tokenUrl ? { customCredentials: { tokenUrl: this.opts.tokenUrl } } : {}),
        };
      }
      const key = input.apiKeyValue ?? generateApiKeyValue();
      const base = this.appPath(developer, name);
      if (!app.credentials?.some((c) => c.consumerKey === key)) {
        const res = await this.api.call("POST", `${base}/keys`, `importing the key of app ${name}`, {
          body: { consumerKey: key, consumerSecret: randomBase62(40) },
          ok: [200, 201, 409],
          secrets: [key],
        });
        if (res.status === 409 && !(await this.api.get(`${base}/keys/${enc(key)}`, `reading the key of app ${name}`))) {
          throw this.errors.error(
            Conflict,
            "the API key value is already a consumer key of another app in the Apigee organisation (409 ALREADY_EXISTS)",
          );
        }
      }
      const mine = {
        consumerKey: key,
        consumerSecret: "",
        apiProducts: app.credentials?.find((c) => c.consumerKey === key)?.apiProducts ?? [],
      };
      await this.setProducts(developer, app, [mine], products);
      // Add before remove: the key Apigee generated with the app goes once the imported one holds the products.
      for (const c of (app.credentials ?? []).filter((x) => x.consumerKey !== key)) {
        await this.api.call(
          "DELETE",
          `${base}/keys/${enc(c.consumerKey)}`,
          `deleting the generated key of app ${name}`,
          { ok: [200, 404], secrets: [c.consumerKey] },
        );
      }
      this.logger.info({ appId: app.appId, app: name }, "credential created on Apigee");
      return { nativeId: app.appId, apiKey: key, resources };
    } catch (err) {
      const typed = this.typed(err);
      typed.partial = {
        nativeId: this.credentialType === "API_KEY" ? app.appId : (app.credentials?.[0]?.consumerKey ?? app.appId),
        resources,
      };
      throw typed;
    }
  }

  /** Applies the new product set to the credential's keys (add before remove) and the app's new name. @throws NotFound not this gateway's */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const { app, credentialId, developer } = await this.owned(input);
    const products = await this.productsOf(input.desired);
    await this.run(async () => {
      await this.setProducts(developer, app, this.keysOf(app, input.nativeId), products);
      const display = app.attributes?.find((a) => a.name === "DisplayName")?.value;
      if (display !== input.app.appName.slice(0, 255)) {
        const kept = (app.attributes ?? []).filter((a) => a.name !== "DisplayName");
        await this.api.call("POST", `${this.appPath(developer, app.name)}/attributes`, `renaming app ${app.name}`, {
          body: { attribute: [...kept, { name: "DisplayName", value: input.app.appName.slice(0, 255) }] },
          ok: [200],
          idempotent: true,
        });
      }
    });
    return { resources: this.resources(app, developer), ...(input.credentialId === "" ? { credentialId } : {}) };
  }

  /** Deletes the app (and with it its keys) when it carries this gateway's mark and, unless empty, `ref.credentialId`'s. */
  /**
   * Turns each consumer key of the credential's developer app off (`POST …/keys/{key}?action=revoke`: Apigee then
   * refuses calls and token requests with it) or on again (`action=approve`), after checking the app's mark. The
   * app and its keys stay; credhook's revoke deletes the app, so a revoked credential is `gone`, never approved again.
   * https://cloud.google.com/apigee/docs/reference/apis/apigee/rest/v1/organizations.developers.apps.keys/updateDeveloperAppKey
   */
  async setEnabled(ref: ProviderCredentialRef, enabled: boolean): Promise<RevokeOutcome> {
    return this.run(async () => {
      const owned = await this.ownedApp(ref);
      if (typeof owned === "string") return owned;
      const { app, developer } = owned;
      const base = this.appPath(developer, app.name);
      const status = enabled ? "approved" : "revoked";
      for (const k of (app.credentials ?? []).filter((c) => c.status !== status)) {
        await this.api.call(
          "POST",
          `${base}/keys/${enc(k.consumerKey)}?action=${enabled ? "approve" : "revoke"}`,
          `${enabled ? "approving" : "revoking"} a key of app ${app.name}`,
          { ok: [200, 204], secrets: [k.consumerKey], idempotent: true },
        );
      }
      this.logger.info({ appId: app.appId, status }, `credential ${enabled ? "enabled" : "disabled"} on Apigee`);
      return "revoked";
    });
  }

  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    return this.run(async () => {
      const owned = await this.ownedApp(ref);
      if (typeof owned === "string") return owned;
      const { app, developer } = owned;
      await this.api.call("DELETE", this.appPath(developer, app.name), `deleting app ${app.name}`, { ok: [200, 404] });
      this.logger.info({ appId: app.appId }, "credential revoked on Apigee");
      return "revoked";
    });
  }

  /**
   * The developer app of `ref` and its developer when it carries this gateway's mark (and, when `ref.credentialId`
   * is set, that credential's): what {@link revoke} and {@link setEnabled} act on. `gone` when there is no such app,
   * `not-owned` (logged, left untouched) when it is not ours.
   */
  private async ownedApp(ref: ProviderCredentialRef): Promise<{ app: App; developer: string } | "gone" | "not-owned"> {
    const app = await this.find(ref);
    if (!app) return "gone";
    const mark = this.markOf(app);
    if (mark === undefined || (ref.credentialId !== "" && mark !== ref.credentialId.toLowerCase())) {
      this.logger.info(
        { nativeId: ref.nativeId, credentialId: ref.credentialId },
        "app is not this gateway's (or not this credential's); left untouched",
      );
      return "not-owned";
    }
    const developer = this.developerOf(
      app,
      typeof ref.resources.developer === "string" ? ref.resources.developer : undefined,
    );
    return { app, developer };
  }

  private ownedResource(app: App): OwnedResource {
    const credentialId = this.markOf(app);
    const nativeId = this.credentialType === "API_KEY" ? app.appId : (app.credentials?.[0]?.consumerKey ?? app.appId);
    return { nativeId, ...(credentialId ? { credentialId } : {}), description: `developer app ${app.name}` };
  }

  /** The app named after the credential under the developer (one GET: the name is deterministic). */
  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    const developer = search.app.developer.trim().toLowerCase();
    if (!UUID.test(search.credentialId) || !EMAIL.test(developer)) return [];
    const app = await this.run(() =>
      this.api.get<App>(
        this.appPath(developer, this.appNameOf(search.credentialId)),
        "looking for the credential's app",
      ),
    );
    return app && this.markOf(app) === search.credentialId.toLowerCase() ? [this.ownedResource(app)] : [];
  }

  /** Every app of the organisation with this gateway's mark. */
  async listOwned(): Promise<OwnedResource[]> {
    return (await this.run(() => this.listApps()))
      .filter((a) => this.markOf(a) !== undefined)
      .map((a) => this.ownedResource(a));
  }

  /**
   * Brings an app made outside credhook under this gateway: adds credhook's mark to its
   * attributes (its keys and products stay as they are). Idempotent for the same credential.
   * @throws ValidationError `ref.credentialId` is not a UUID
   * @throws NotFound no such app (or, for client credentials, no app holding that client id)
   * @throws Conflict it carries another gateway's or credential's mark
   */
  async adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult> {
    if (!UUID.test(ref.credentialId))
      throw new ValidationError([
        this.errors.message(`adopt needs credhook's credential id (a UUID), got '${ref.credentialId}'`),
      ]);
    return this.run(async () => {
      const app = await this.find(ref);
      if (!app) throw this.errors.error(NotFound, `there is no app ${ref.nativeId} on Apigee to adopt`);
      const developer = this.developerOf(app);
      const mark = this.markOf(app);
      if (mark === ref.credentialId.toLowerCase()) return { resources: this.resources(app, developer) };
      const foreign = app.attributes?.find((a) => a.name === GATEWAY_ATTR || a.name === CREDENTIAL_ATTR);
      if (foreign)
        throw this.errors.error(
          Conflict,
          `app ${app.name} carries another credhook mark (${foreign.name}=${foreign.value}); it is not adopted`,
        );
      const kept = (app.attributes ?? []).filter((a) => a.name !== "DisplayName");
      const attribute = [
        ...kept,
        ...this.attributes(
          ref.credentialId,
          app.attributes?.find((a) => a.name === "DisplayName")?.value ?? ref.app.appName,
        ),
      ];
      await this.api.call("POST", `${this.appPath(developer, app.name)}/attributes`, `marking app ${app.name}`, {
        body: { attribute },
        ok: [200],
        idempotent: true,
      });
      this.logger.warn(
        { appId: app.appId, credentialId: ref.credentialId },
        "app made outside credhook adopted: credhook now updates and revokes it",
      );
      return { resources: this.resources(app, developer) };
    });
  }

  /** The consumer key (API_KEY) or the client id's secret. @throws NotFound none, or not this gateway's */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey?: string; clientSecret?: string }> {
    const { app } = await this.owned(ref);
    const key = this.keysOf(app, ref.nativeId).find((c) => c.status !== "revoked");
    if (!key) throw this.errors.error(NotFound, `app ${app.name} has no live key`);
    return this.credentialType === "API_KEY" ? { apiKey: key.consumerKey } : { clientSecret: key.consumerSecret };
  }

  /** API_KEY: imports a new key with the old keys' products, then deletes the old keys (add before remove). */
  async rotateSecret(ref: ProviderCredentialRef, apiKeyValue?: string): Promise<RotatedSecret> {
    if (this.credentialType !== "API_KEY")
      throw this.errors.error(Conflict, "a client secret is read back, not rotated, on Apigee");
    const { app, developer } = await this.owned(ref);
    const key = apiKeyValue ?? generateApiKeyValue();
    const base = this.appPath(developer, app.name);
    const old = app.credentials ?? [];
    const products = [...new Set(old.flatMap((c) => (c.apiProducts ?? []).map((p) => p.apiproduct)))];
    await this.run(async () => {
      await this.api.call("POST", `${base}/keys`, `importing a new key of app ${app.name}`, {
        body: { consumerKey: key, consumerSecret: randomBase62(40) },
        ok: [200, 201],
        secrets: [key],
      });
      if (products.length > 0)
        await this.api.call(
          "POST",
          `${base}/keys/${enc(key)}`,
          `adding API products to the new key of app ${app.name}`,
          { body: { apiProducts: products }, ok: [200], secrets: [key], idempotent: true },
        );
      for (const c of old)
        await this.api.call("DELETE", `${base}/keys/${enc(c.consumerKey)}`, `deleting an old key of app ${app.name}`, {
          ok: [200, 404],
          secrets: [c.consumerKey, key],
        });
    });
    return { apiKey: key, resources: this.resources(app, developer) };
  }

  /**
   * The API product a plan maps to (`productMap`), for core's drift report. Undefined: an unmapped plan (its id is
   * the product's, defined in Apigee).
   */
  planDefinition(planId: string): JsonValue | undefined {
    return this.opts.productMap[planId];
  }

  /** One cheap read of the organisation, cached. @throws UpstreamUnavailable */
  health(): Promise<void> {
    return this.healthProbe.check();
  }

  private async probe(): Promise<void> {
    try {
      await this.api.call("GET", "", "reading the Apigee organisation", { ok: [200] });
    } catch (err) {
      throw unavailableFrom(this.gateway, this.typed(err), err);
    }
  }
}
