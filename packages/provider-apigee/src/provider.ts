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
 * credhook's mark is in the app's attributes (`credhook-gateway`, `credhook-credential`: core's
 * `attributeMarker`); nothing without this gateway's mark is changed or deleted, and foreign apps
 * come in only through `adopt`. Developers are shared by a developer's apps and never deleted.
 * What every such provider shares — the ownership check, revoke's outcomes, findByCredential and
 * listOwned by the mark, adopt's checks, `partial` after the first write, typed errors, the cached
 * health probe, the management API's client — is core's `RestGatewayProvider`; this file holds
 * what is Apigee's.
 */
import { Conflict, InvalidReference, NotFound } from "@credhook/core/errors";
import type {
  CredentialSearch,
  CredentialType,
  GatewayApi,
  JsonValue,
  ProviderCapabilities,
  ProviderContext,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderResources,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
  RotatedSecret,
} from "@credhook/core/provider";
import {
  attributeMarker,
  generateApiKeyValue,
  type MarkAttribute,
  randomBase62,
  type ResourceRef,
  RestGatewayProvider,
} from "@credhook/core/provider-kit";
import { APIGEE_PERMISSIONS, authHeaders, googleMessage } from "./client.js";
import type { ApigeeProviderOptionsWithDefaults } from "./schema.js";

/** The fields of an Apigee app the provider reads. */
interface App {
  appId: string;
  name: string;
  developerId?: string;
  developerEmail?: string;
  attributes?: MarkAttribute[];
  credentials?: Array<{
    consumerKey: string;
    consumerSecret: string;
    status?: string;
    apiProducts?: Array<{ apiproduct: string }>;
  }>;
}

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;
const enc = encodeURIComponent;

/** Consumer keys and secrets Apigee accepts on import (keys.create: letters, digits, `_`, `-`, ≤ 2 KB). */
export const APIGEE_KEY_PATTERN = "^[A-Za-z0-9_-]{1,2048}$";

/** The provider of one Apigee gateway; built by the factory in `index.ts`. */
export class ApigeeProvider extends RestGatewayProvider<App, readonly MarkAttribute[]> {
  readonly capabilities: ProviderCapabilities;
  private readonly credentialType: CredentialType;

  /**
   * @param opts the gateway's options, defaults applied
   * @param context the gateway's name, credential type and logger
   */
  constructor(
    private readonly opts: ApigeeProviderOptionsWithDefaults,
    context: Pick<ProviderContext, "gateway" | "credentialType" | "logger">,
  ) {
    super(opts, context, {
      kind: "developer app",
      product: "Apigee",
      marker: attributeMarker(context.gateway),
      client: {
        api: "Apigee management API",
        baseUrl: `${opts.endpoint.replace(/\/+$/, "")}/v1/organizations/${enc(opts.organization)}`,
        headers: authHeaders(opts.credentials),
        messageOf: googleMessage,
        permissionHint: APIGEE_PERMISSIONS,
        // apps.list pages by `startKey`, the first app of the next page (inclusive), `rows` at a time
        paging: {
          query: { expand: "true", rows: "1000" },
          items: "app",
          cursor: "startKey",
          next: { lastItem: "appId" },
        },
      },
    });
    const credentialType = context.credentialType;
    this.credentialType = credentialType;
    this.capabilities = {
      credentialTypes: [credentialType],
      importsApiKeyValue: credentialType === "API_KEY",
      readsBackSecret: true,
      apiKeyValuePattern: APIGEE_KEY_PATTERN,
      // A consumer key's approve/revoke switch (developers.apps.keys, `action=revoke|approve`): both kinds are keys.
      disables: [credentialType],
    };
  }

  // ------------------------------------------------------------------ the app, as RestGatewayProvider asks

  protected readonly find = (ref: ResourceRef) => this.findApp(ref);
  protected readonly marksOf = (app: App) => app.attributes;
  protected readonly describe = (app: App) => ({
    nativeId: this.nativeIdOf(app),
    description: `developer app ${app.name}`,
  });
  protected readonly resourcesOf = (app: App, ref?: ResourceRef) => this.resources(app, this.developerOf(app, ref));
  /** Deletes the app, and with it its keys. */
  protected readonly remove = (app: App, ref: ProviderCredentialRef) =>
    this.api.delete(this.appPath(this.developerOf(app, ref), app.name), `deleting app ${app.name}`);
  /** The app named after the credential under the developer (one GET: the name is deterministic). */
  protected readonly findMarked = async (credentialId: string, search: CredentialSearch) => {
    const developer = search.app.developer.trim().toLowerCase();
    if (!EMAIL.test(developer)) return [];
    const path = this.appPath(developer, this.appNameOf(credentialId));
    const app = await this.api.get<App>(path, "looking for the credential's app");
    return app ? [app] : [];
  };
  protected readonly listMarked = () => this.listApps();
  /** One cheap read of the organisation. */
  protected readonly probe = () => this.api.call("GET", "", "reading the Apigee organisation", { ok: [200] });

  /** The native id of `app`: the app id (API_KEY), the client id of its first key (CLIENT_CREDENTIALS). */
  private nativeIdOf(app: App): string {
    return this.credentialType === "API_KEY" ? app.appId : (app.credentials?.[0]?.consumerKey ?? app.appId);
  }

  private appNameOf(credentialId: string): string {
    return `${this.opts.appNamePrefix}${this.gateway}-${credentialId.toLowerCase()}`.replace(/[^A-Za-z0-9._-]/g, "-");
  }

  /** The app's developer: its e-mail, else the one the reference kept, else its id. */
  private developerOf(app: App, ref?: ResourceRef): string {
    const kept = ref?.resources.developer;
    return app.developerEmail ?? (typeof kept === "string" ? kept : undefined) ?? app.developerId ?? "";
  }

  private resources(app: App, developer: string): ProviderResources {
    return { appId: app.appId, appName: app.name, developer };
  }

  private appPath(developer: string, name: string): string {
    return `/developers/${enc(developer)}/apps/${enc(name)}`;
  }

  /** The `DisplayName` attribute: the portal's app name (Apigee holds at most 255 characters). */
  private displayName(appName: string): MarkAttribute {
    return { name: "DisplayName", value: appName.slice(0, 255) };
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
  private async findApp(ref: ResourceRef): Promise<App | undefined> {
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
   * Every app of the organisation, expanded, every page (`startKey` paging; a server that answers
   * fewer rows than asked is still read whole). `filter` (apps.list's, e.g. `consumerKey=…`)
   * narrows the listing on the server; callers still check what comes back, so a server that
   * ignores it is only slower.
   */
  private listApps(filter?: string): Promise<App[]> {
    return this.api.list<App>("/apps", "listing the organisation's apps", filter ? { filter } : {});
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
        await this.api.delete(
          `${base}/keys/${enc(k.consumerKey)}/apiproducts/${enc(p)}`,
          `removing API product ${p} from a key of app ${app.name}`,
          [k.consumerKey],
        );
      }
    }
  }

  /** Applies the new product set to the credential's keys (add before remove) and the app's new name. */
  protected async apply(app: App, _credentialId: string, input: ProviderUpdateInput): Promise<undefined> {
    const developer = this.developerOf(app, input);
    const products = await this.productsOf(input.desired);
    await this.setProducts(developer, app, this.keysOf(app, input.nativeId), products);
    const display = this.displayName(input.app.appName);
    if (app.attributes?.find((a) => a.name === display.name)?.value !== display.value) {
      const kept = (app.attributes ?? []).filter((a) => a.name !== display.name);
      await this.api.call("POST", `${this.appPath(developer, app.name)}/attributes`, `renaming app ${app.name}`, {
        body: { attribute: [...kept, display] },
        ok: [200],
        idempotent: true,
      });
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
    await this.run(async () => {
      if (await this.api.get(`/developers/${enc(developer)}`, "reading the developer")) return;
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
    });
    const body = {
      name,
      attributes: [...this.marker.mark(input.credentialId), this.displayName(input.app.appName)],
      apiProducts: this.credentialType === "CLIENT_CREDENTIALS" ? products : [],
    };
    const app = await this.createOrFind(`/developers/${enc(developer)}/apps`, body, name, input.credentialId, () =>
      this.api.get<App>(this.appPath(developer, name), `reading app ${name}`),
    );
    return this.afterFirstWrite(
      app,
      () => this.provision(app, developer, input, products),
      this.resources(app, developer),
    );
  }

  /** The writes of a create after the app: its key (API_KEY: imported) and its API products. */
  private async provision(
    app: App,
    developer: string,
    input: ProviderCreateInput,
    products: string[],
  ): Promise<ProviderCredential> {
    const resources = this.resources(app, developer);
    if (this.credentialType === "CLIENT_CREDENTIALS") {
      const cred = app.credentials?.[0];
      if (!cred) throw this.errors.error(NotFound, `app ${app.name} has no credential`);
      await this.setProducts(developer, app, [cred], products);
      return {
        nativeId: cred.consumerKey,
        clientSecret: cred.consumerSecret,
        resources,
        ...(this.opts.tokenUrl ? { customCredentials: { tokenUrl: this.opts.tokenUrl } } : {}),
      };
    }
    const key = input.apiKeyValue ?? generateApiKeyValue();
    const base = this.appPath(developer, app.name);
    if (!app.credentials?.some((c) => c.consumerKey === key)) {
      const res = await this.api.call("POST", `${base}/keys`, `importing the key of app ${app.name}`, {
        body: { consumerKey: key, consumerSecret: randomBase62(40) },
        ok: [200, 201, 409],
        secrets: [key],
      });
      if (
        res.status === 409 &&
        !(await this.api.get(`${base}/keys/${enc(key)}`, `reading the key of app ${app.name}`))
      ) {
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
    for (const c of (app.credentials ?? []).filter((x) => x.consumerKey !== key))
      await this.api.delete(`${base}/keys/${enc(c.consumerKey)}`, `deleting the generated key of app ${app.name}`, [
        c.consumerKey,
      ]);
    this.logger.info({ appId: app.appId, app: app.name }, "credential created on Apigee");
    return { nativeId: app.appId, apiKey: key, resources };
  }

  /**
   * Turns each consumer key of the credential's developer app off (`POST …/keys/{key}?action=revoke`: Apigee then
   * refuses calls and token requests with it) or on again (`action=approve`), after checking the app's mark. The
   * app and its keys stay; credhook's revoke deletes the app, so a revoked credential is `gone`, never approved again.
   * https://cloud.google.com/apigee/docs/reference/apis/apigee/rest/v1/organizations.developers.apps.keys/updateDeveloperAppKey
   */
  async setEnabled(ref: ProviderCredentialRef, enabled: boolean): Promise<RevokeOutcome> {
    return this.run(async () => {
      const app = await this.ownedOr(ref);
      if (typeof app === "string") return app;
      const base = this.appPath(this.developerOf(app, ref), app.name);
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

  /**
   * Brings an app made outside credhook under this gateway: adds credhook's mark to its
   * attributes (its keys and products stay as they are). Idempotent for the same credential.
   * @throws NotFound no such app (or, for client credentials, no app holding that client id); and `adoptWith`'s errors
   */
  adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult> {
    return this.adoptWith(ref, async (app) => {
      const developer = this.developerOf(app);
      const display = app.attributes?.find((a) => a.name === "DisplayName") ?? this.displayName(ref.app.appName);
      const kept = (app.attributes ?? []).filter((a) => a.name !== "DisplayName");
      const attribute = [...this.marker.withMark(kept, ref.credentialId), display];
      await this.api.call("POST", `${this.appPath(developer, app.name)}/attributes`, `marking app ${app.name}`, {
        body: { attribute },
        ok: [200],
        idempotent: true,
      });
      return this.resources(app, developer);
    });
  }

  /** The consumer key (API_KEY) or the client id's secret. @throws NotFound none, or not this gateway's */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey?: string; clientSecret?: string }> {
    const { resource: app } = await this.owned(ref);
    const key = this.keysOf(app, ref.nativeId).find((c) => c.status !== "revoked");
    if (!key) throw this.errors.error(NotFound, `app ${app.name} has no live key`);
    return this.credentialType === "API_KEY" ? { apiKey: key.consumerKey } : { clientSecret: key.consumerSecret };
  }

  /** API_KEY: imports a new key with the old keys' products, then deletes the old keys (add before remove). */
  async rotateSecret(ref: ProviderCredentialRef, apiKeyValue?: string): Promise<RotatedSecret> {
    if (this.credentialType !== "API_KEY")
      throw this.errors.error(Conflict, "a client secret is read back, not rotated, on Apigee");
    const { resource: app } = await this.owned(ref);
    const developer = this.developerOf(app, ref);
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
        await this.api.delete(`${base}/keys/${enc(c.consumerKey)}`, `deleting an old key of app ${app.name}`, [
          c.consumerKey,
          key,
        ]);
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
}
