/**
 * @credhook/provider-local: credhook's embedded provider. It issues API keys and
 * OAuth client credentials kept by credhook itself, with no cloud account: the
 * shipped `webhook.config.yaml` routes every API to it.
 *
 * Secrets are generated from `crypto.randomBytes` (base62, no modulo bias); only
 * their SHA-256 digest is stored (in the credential store's provider state), so
 * a secret cannot be read back: a replayed create rotates it instead.
 */
import {
  hashSecret,
  InvalidReference,
  NotFound,
  randomBase62,
  verifySecretHash,
  type CredentialType,
  type GatewayApi,
  type JsonValue,
  type Provider,
  type ProviderContext,
  type ProviderCreateInput,
  type ProviderCredential,
  type ProviderCredentialRef,
  type ProviderFactory,
  type ProviderStateStore,
  type ProviderUpdateInput,
  type RotatedSecret,
} from "@credhook/core";
import type { LocalProviderOptions, LocalCredentialState } from "./types.js";

export type { LocalProviderOptions, LocalCredentialState } from "./types.js";

/** JSON Schema of the `options:` block of a `provider: local` gateway. */
export const localOptionsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    usagePlans: { type: "array", items: { type: "string", minLength: 1 }, uniqueItems: true },
    apis: { type: "array", items: { type: "string", minLength: 1 }, uniqueItems: true },
    revokeMode: { enum: ["delete", "disable"], default: "delete" },
    secretLength: { type: "integer", minimum: 32, maximum: 128, default: 40 },
    tokenUrl: { type: "string", format: "uri" },
  },
} as const;

const KEY_PREFIX = "cred:";

/** The embedded provider for one gateway. */
export class LocalProvider implements Provider {
  readonly capabilities = {
    credentialTypes: ["API_KEY", "CLIENT_CREDENTIALS"] as CredentialType[],
    importsApiKeyValue: true,
    readsBackSecret: false,
  };
  private readonly knownPlans: Set<string> | undefined;
  private readonly knownApis: Set<string> | undefined;

  constructor(
    private readonly options: LocalProviderOptions,
    private readonly state: ProviderStateStore,
    private readonly gateway: string,
  ) {
    this.knownPlans = options.usagePlans ? new Set(options.usagePlans) : undefined;
    this.knownApis = options.apis ? new Set(options.apis) : undefined;
  }

  private check(apis: GatewayApi[]): void {
    const problems: string[] = [];
    for (const a of apis) {
      if (this.knownApis && !this.knownApis.has(a.id)) problems.push(`[gateway ${this.gateway}] API '${a.id}' does not exist`);
      for (const p of a.usagePlans) {
        if (this.knownPlans && !this.knownPlans.has(p)) problems.push(`[gateway ${this.gateway}] usage plan '${p}' does not exist`);
      }
    }
    if (problems.length > 0) throw new InvalidReference(problems[0]!, { messages: problems.slice(1), gateway: this.gateway });
  }

  private async load(nativeId: string): Promise<LocalCredentialState | undefined> {
    const v = await this.state.get(KEY_PREFIX + nativeId);
    return v === undefined ? undefined : (v as unknown as LocalCredentialState);
  }

  private async put(nativeId: string, s: LocalCredentialState): Promise<void> {
    await this.state.put(KEY_PREFIX + nativeId, s as unknown as JsonValue);
  }

  private newSecret(): string {
    return randomBase62(this.options.secretLength ?? 40);
  }

  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    this.check(input.apis);
    const isKey = input.credentialType === "API_KEY";
    const nativeId = (isKey ? "lk" : "lc") + randomBase62(22).toLowerCase();
    const secret = isKey ? (input.apiKeyValue ?? this.newSecret()) : this.newSecret();
    const now = new Date().toISOString();
    await this.put(nativeId, {
      credentialType: input.credentialType,
      credentialId: input.credentialId,
      secretHash: hashSecret(secret),
      enabled: true,
      apis: input.apis,
      appName: input.app.appName,
      developer: input.app.developer,
      createdAt: now,
      updatedAt: now,
    });
    const out: ProviderCredential = { nativeId, resources: { kind: isKey ? "apiKey" : "client" } };
    if (isKey) out.apiKey = secret;
    else {
      out.clientSecret = secret;
      if (this.options.tokenUrl) out.customCredentials = { tokenUrl: this.options.tokenUrl };
    }
    return out;
  }

  async update(input: ProviderUpdateInput): Promise<{ resources: ProviderCredential["resources"] }> {
    const s = await this.load(input.nativeId);
    if (!s || !s.enabled || s.credentialType !== input.credentialType) {
      throw new NotFound(`[gateway ${this.gateway}] ${input.credentialType} '${input.nativeId}' does not exist`, { gateway: this.gateway });
    }
    this.check(input.desired);
    s.apis = input.desired;
    s.appName = input.app.appName;
    s.updatedAt = new Date().toISOString();
    await this.put(input.nativeId, s);
    return { resources: input.resources && Object.keys(input.resources).length > 0 ? input.resources : { kind: s.credentialType === "API_KEY" ? "apiKey" : "client" } };
  }

  async revoke(ref: ProviderCredentialRef): Promise<void> {
    const s = await this.load(ref.nativeId);
    if (!s) return;
    if (this.options.revokeMode === "disable") {
      s.enabled = false;
      s.updatedAt = new Date().toISOString();
      await this.put(ref.nativeId, s);
    } else {
      await this.state.delete(KEY_PREFIX + ref.nativeId);
    }
  }

  async rotateSecret(ref: ProviderCredentialRef, apiKeyValue?: string): Promise<RotatedSecret> {
    const s = await this.load(ref.nativeId);
    if (!s || !s.enabled) throw new NotFound(`[gateway ${this.gateway}] ${ref.credentialType} '${ref.nativeId}' does not exist`, { gateway: this.gateway });
    const secret = s.credentialType === "API_KEY" ? (apiKeyValue ?? this.newSecret()) : this.newSecret();
    s.secretHash = hashSecret(secret);
    s.updatedAt = new Date().toISOString();
    await this.put(ref.nativeId, s);
    return s.credentialType === "API_KEY" ? { apiKey: secret, resources: ref.resources } : { clientSecret: secret, resources: ref.resources };
  }

  /**
   * Checks a presented secret (an API key value, or a client id's secret) the
   * way an embedded gateway would: constant-time comparison with the stored digest.
   * @returns the credential's APIs when valid and enabled, else undefined
   */
  async verify(nativeId: string, secret: string): Promise<GatewayApi[] | undefined> {
    const s = await this.load(nativeId);
    if (!s || !s.enabled || !verifySecretHash(secret, s.secretHash)) return undefined;
    return s.apis;
  }

  async listOwned() {
    const entries = await this.state.list(KEY_PREFIX);
    return entries.map((e) => {
      const s = e.value as unknown as LocalCredentialState;
      return { nativeId: e.key.slice(KEY_PREFIX.length), credentialId: s.credentialId, description: `${s.credentialType} of ${s.developer}/${s.appName}` };
    });
  }

  async health(): Promise<void> {
    await this.state.get("health-probe");
  }
}

/** The `provider: local` factory. */
const localProviderFactory: ProviderFactory<LocalProviderOptions> = {
  type: "local",
  optionsSchema: localOptionsSchema as unknown as Record<string, unknown>,
  create(options: LocalProviderOptions, context: ProviderContext) {
    return new LocalProvider(options, context.state, context.gateway);
  },
};

export default localProviderFactory;
