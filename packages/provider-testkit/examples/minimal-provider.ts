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
  type OwnedResource,
  type Provider,
  type ProviderContext,
  type ProviderCredentialRef,
  type ResolvedOptionsOf,
  type RevokeOutcome,
} from "@credhook/core/provider";
import { InvalidReference, NotFound } from "@credhook/core/errors";

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
  /** Keys whose tag `name` has `value` (clouds filter by tag server-side). */
  async findByTag(name: string, value: string): Promise<CloudKey[]> {
    return [...this.keys.values()].filter((k) => k.tags[name] === value).map((k) => structuredClone(k));
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

/** Tag names of credhook's mark: which gateway made the key, for which credential. */
const GATEWAY_TAG = "credhook-gateway";
const CREDENTIAL_TAG = "credhook-credential";

const plansOf = (apis: GatewayApi[]) => [...new Set(apis.flatMap((a) => a.usagePlans))].sort();

/** The Example Cloud provider of one gateway. */
export class ExampleProvider implements Provider {
  readonly capabilities = { credentialTypes: ["API_KEY" as const], importsApiKeyValue: true, readsBackSecret: true };
  constructor(
    private readonly cloud: ExampleCloud,
    private readonly options: ResolvedOptionsOf<typeof optionsSchema>,
    private readonly context: ProviderContext,
  ) {}

  /** @throws InvalidReference a usage plan the account does not have (checked before any write) */
  private checkPlans(apis: GatewayApi[]): string[] {
    const plans = plansOf(apis);
    const unknown = plans.filter((p) => !this.cloud.plans.has(p));
    if (unknown.length > 0)
      throw new InvalidReference(`[gateway ${this.context.gateway}] unknown usage plan(s): ${unknown.join(", ")}`);
    return plans;
  }

  /** The key behind `ref` when it carries this gateway's mark (and `ref.credentialId`'s, when set). */
  private async owned(ref: ProviderCredentialRef): Promise<CloudKey | "gone" | "not-owned"> {
    const key = await this.cloud.getKey(ref.nativeId);
    if (!key) return "gone";
    const mine =
      key.tags[GATEWAY_TAG] === this.context.gateway &&
      (ref.credentialId === "" || key.tags[CREDENTIAL_TAG] === ref.credentialId);
    return mine ? key : "not-owned";
  }

  async create(input: Parameters<Provider["create"]>[0]) {
    const plans = this.checkPlans(input.apis);
    const key = await this.cloud.createKey({
      value: input.apiKeyValue ?? randomBytes(this.options.keyBytes).toString("base64url"),
      name: input.app.appName,
      plans,
      tags: { [GATEWAY_TAG]: this.context.gateway, [CREDENTIAL_TAG]: input.credentialId },
    });
    return { nativeId: key.id, apiKey: key.value, resources: { plans } };
  }

  async update(input: Parameters<Provider["update"]>[0]) {
    const key = await this.owned(input);
    if (typeof key === "string")
      throw new NotFound(`[gateway ${this.context.gateway}] no key ${input.nativeId} of this gateway`);
    const plans = this.checkPlans(input.desired);
    await this.cloud.putKey({ ...key, name: input.app.appName, plans });
    return { resources: { plans }, credentialId: key.tags[CREDENTIAL_TAG] };
  }

  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    const key = await this.owned(ref);
    if (typeof key === "string") return key;
    await this.cloud.deleteKey(key.id);
    return "revoked";
  }

  async findByCredential(search: Parameters<NonNullable<Provider["findByCredential"]>>[0]): Promise<OwnedResource[]> {
    const keys = await this.cloud.findByTag(CREDENTIAL_TAG, search.credentialId);
    return keys
      .filter((k) => k.tags[GATEWAY_TAG] === this.context.gateway)
      .map((k) => ({ nativeId: k.id, credentialId: search.credentialId, description: `key ${k.id} (${k.name})` }));
  }

  async readSecret(ref: ProviderCredentialRef) {
    const key = await this.owned(ref);
    if (typeof key === "string")
      throw new NotFound(`[gateway ${this.context.gateway}] no key ${ref.nativeId} of this gateway`);
    return { apiKey: key.value };
  }

  async health(): Promise<void> {
    // A real provider makes one cheap authenticated call here and throws UpstreamUnavailable when it fails.
  }
}

/**
 * What the package default-exports: `provider: <package name>` in webhook.config.yaml
 * loads it. `create` gets the options typed from the schema, defaults applied.
 */
const exampleProviderFactory = defineProvider({
  type: "example",
  optionsSchema,
  create(options, context) {
    let cloud = accounts.get(options.account);
    if (!cloud) accounts.set(options.account, (cloud = new ExampleCloud(new Set(options.plans))));
    return new ExampleProvider(cloud, options, context);
  },
});
export default exampleProviderFactory;
