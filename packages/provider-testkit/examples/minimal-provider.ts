/**
 * A minimal credhook provider: API keys on "Example Cloud", a stand-in for a cloud's SDK
 * client (an in-memory map of keys with tags and usage plans). It passes the testkit's
 * `providerConformance` (test/minimal-provider.test.ts) and is the one CONTRIBUTING.md
 * walks through: replace {@link ExampleCloud}'s calls with your SDK's and keep the rest.
 */
import { randomBytes, randomUUID } from "node:crypto";
import {
  defineProvider,
  type GatewayApi,
  type OptionsOf,
  type ProviderContext,
  type ProviderCreateInput,
  type ProviderCredentialRef,
  type ProviderUpdateInput,
  type ResolvedOptionsOf,
} from "@credhook/core/provider";
import { InvalidReference } from "@credhook/core/errors";
import { keyValueMarker, MarkedResourceProvider, type ResourceRef } from "@credhook/core/provider-kit";

/** One key as Example Cloud holds it. `tags` carry credhook's mark. */
export interface CloudKey {
  id: string;
  value: string;
  name: string;
  plans: string[];
  tags: Record<string, string>;
}

/** Stand-in for a cloud SDK client: one account's keys and the usage plans that exist in it. */
export class ExampleCloud {
  readonly keys = new Map<string, CloudKey>();
  constructor(readonly plans: ReadonlySet<string>) {}
  async createKey(key: Omit<CloudKey, "id">): Promise<CloudKey> {
    const created = { ...key, id: randomUUID().slice(0, 10) };
    this.keys.set(created.id, created);
    return structuredClone(created);
  }
  async getKey(id: string): Promise<CloudKey | undefined> {
    return structuredClone(this.keys.get(id));
  }
  async putKey(key: CloudKey): Promise<void> {
    this.keys.set(key.id, structuredClone(key));
  }
  async deleteKey(id: string): Promise<void> {
    this.keys.delete(id);
  }
  /** Keys that carry every tag of `tags` (clouds filter by tag server-side). */
  async findByTags(tags: Readonly<Record<string, string>>): Promise<CloudKey[]> {
    const match = (k: CloudKey) => Object.entries(tags).every(([name, value]) => k.tags[name] === value);
    return [...this.keys.values()].filter(match).map((k) => structuredClone(k));
  }
}

/**
 * JSON Schema of an `example` gateway's options (`gateways.<name>.options` in
 * webhook.config.yaml), written once: core validates the YAML with it, `pnpm schema`
 * shows its descriptions in editors, and {@link ExampleOptions} is derived from it.
 */
export const optionsSchema = {
  type: "object",
  additionalProperties: false,
  required: ["account", "plans"],
  properties: {
    account: {
      type: "string",
      minLength: 1,
      description: "Account whose keys this gateway manages; gateways naming the same account share it.",
    },
    plans: {
      type: "array",
      items: { type: "string", minLength: 1 },
      description: "Usage plan ids that exist in the account.",
    },
    keyBytes: {
      type: "integer",
      minimum: 16,
      maximum: 64,
      default: 24,
      description: "Random bytes of a generated API key (base64url: 4 characters per 3 bytes). Default 24.",
    },
  },
} as const;

/** Options of an `example` gateway as written in YAML (`keyBytes` optional). */
export type ExampleOptions = OptionsOf<typeof optionsSchema>;

/** The accounts of this process (a real provider builds an SDK client from its options instead). */
export const accounts = new Map<string, ExampleCloud>();

const plansOf = (apis: GatewayApi[]) => [...new Set(apis.flatMap((a) => a.usagePlans))].sort();

/**
 * The Example Cloud provider of one gateway. What every provider of marked resources shares is
 * core's `MarkedResourceProvider` (the ownership check, revoke's `gone` / `not-owned`,
 * findByCredential and listOwned by the mark, typed errors, the cached health probe); what is
 * left is the cloud's: the hooks (one line each) and create, update's writes and readSecret.
 */
export class ExampleProvider extends MarkedResourceProvider<CloudKey, Readonly<Record<string, string>>> {
  readonly capabilities = { credentialTypes: ["API_KEY" as const], importsApiKeyValue: true, readsBackSecret: true };

  constructor(
    private readonly cloud: ExampleCloud,
    private readonly options: ResolvedOptionsOf<typeof optionsSchema>,
    context: ProviderContext,
  ) {
    // the mark: two tags, `credhook-gateway` and `credhook-credential`; a real provider caches health for an option
    const marker = keyValueMarker(context.gateway);
    super({
      gateway: context.gateway,
      logger: context.logger,
      kind: "key",
      product: "Example Cloud",
      marker,
      healthCacheMs: 0,
    });
  }

  protected readonly find = (ref: ResourceRef) => this.cloud.getKey(ref.nativeId);
  protected readonly marksOf = (key: CloudKey) => key.tags;
  protected readonly describe = (key: CloudKey) => ({ nativeId: key.id, description: `key ${key.id} (${key.name})` });
  protected readonly resourcesOf = (key: CloudKey) => ({ plans: key.plans });
  protected readonly remove = (key: CloudKey) => this.cloud.deleteKey(key.id);
  protected readonly findMarked = (credentialId: string) => this.cloud.findByTags(this.marker.mark(credentialId));
  protected readonly listMarked = () => this.cloud.findByTags(this.marker.gatewayMark());
  // a real provider makes one cheap authenticated call here
  protected readonly probe = async () => {};

  /** @throws InvalidReference a usage plan the account does not have (checked before any write) */
  private checkPlans(apis: GatewayApi[]): string[] {
    const plans = plansOf(apis);
    const unknown = plans.filter((p) => !this.cloud.plans.has(p));
    if (unknown.length > 0) throw this.errors.error(InvalidReference, `unknown usage plan(s): ${unknown.join(", ")}`);
    return plans;
  }

  async create(input: ProviderCreateInput) {
    const plans = this.checkPlans(input.apis);
    const key = await this.cloud.createKey({
      value: input.apiKeyValue ?? randomBytes(this.options.keyBytes).toString("base64url"),
      name: input.app.appName,
      plans,
      tags: this.marker.mark(input.credentialId),
    });
    return { nativeId: key.id, apiKey: key.value, resources: this.resourcesOf(key) };
  }

  protected async apply(key: CloudKey, _credentialId: string, input: ProviderUpdateInput) {
    const updated = { ...key, name: input.app.appName, plans: this.checkPlans(input.desired) };
    await this.cloud.putKey(updated);
    return updated;
  }

  async readSecret(ref: ProviderCredentialRef) {
    return { apiKey: (await this.owned(ref)).resource.value };
  }
}

/**
 * What the package default-exports: `provider: <package name>` in webhook.config.yaml
 * loads it. `create` gets the options typed from the schema, defaults applied; a gateway
 * whose `credentialType` is not in `credentialTypes` is refused before it runs.
 */
const exampleProviderFactory = defineProvider({
  type: "example",
  optionsSchema,
  credentialTypes: ["API_KEY"],
  create(options, context) {
    let cloud = accounts.get(options.account);
    if (!cloud) accounts.set(options.account, (cloud = new ExampleCloud(new Set(options.plans))));
    return new ExampleProvider(cloud, options, context);
  },
});
export default exampleProviderFactory;
