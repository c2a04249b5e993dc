/**
 * The AWS provider of one gateway: API_KEY through {@link ApiKeyIssuer},
 * CLIENT_CREDENTIALS through {@link ClientCredentialsIssuer}, chosen by the
 * gateway's `credentialType`.
 */
import { CachedHealthProbe, gatewayError, gatewayMessage } from "@credhook/core/provider-kit";
import { isCredhookError, retryAfterOf, UpstreamUnavailable, ValidationError } from "@credhook/core/errors";
import type {
  CredentialSearch,
  CredentialType,
  GatewayApi,
  OwnedResource,
  Provider,
  ProviderCapabilities,
  ProviderContext,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
} from "@credhook/core/provider";
import { ApiKeyIssuer } from "./api-keys.js";
import { ClientCredentialsIssuer } from "./client-credentials.js";
import { acquireLimiters } from "./limits.js";
import { endpointFor, type Runtime } from "./runtime.js";
import type { AwsProviderOptionsWithDefaults } from "./types.js";

type Issuer = ApiKeyIssuer | ClientCredentialsIssuer;

/** A provider instance for one `provider: aws` gateway. */
export class AwsProvider implements Provider {
  readonly capabilities: ProviderCapabilities;
  private readonly issuer: Issuer;
  private readonly releaseLimiters: () => Promise<void>;
  private readonly healthProbe: CachedHealthProbe;

  /**
   * @param o the gateway's options, defaults applied and checked by the factory (`index.ts`)
   * @param context the gateway's name, credential type, logger and shared rate slots
   */
  constructor(
    o: AwsProviderOptionsWithDefaults,
    private readonly context: ProviderContext,
  ) {
    const type = context.credentialType;
    const identity = o.roleArn ?? o.credentials?.accessKeyId ?? "default-chain";
    const service = type === "API_KEY" ? "apiGateway" : "cognito";
    const quotaScope = `${o.region}|${identity}|${endpointFor(o, service) ?? "aws"}`;
    const { set, release } = acquireLimiters(quotaScope, o.rateLimits);
    this.releaseLimiters = release;
    const rt: Runtime = {
      gateway: context.gateway,
      options: o,
      logger: context.logger,
      limiters: set,
      quotaScope,
      ...(context.rateSlots ? { rateSlots: context.rateSlots } : {}),
    };
    this.issuer = type === "API_KEY" ? new ApiKeyIssuer(rt) : new ClientCredentialsIssuer(rt);
    const gateway = context.gateway;
    this.healthProbe = new CachedHealthProbe(
      () =>
        this.issuer.probe().catch((err: unknown) => {
          throw isCredhookError(err)
            ? new UpstreamUnavailable(err.message, retryAfterOf(err) ?? 5, { gateway, cause: err })
            : gatewayError(gateway, UpstreamUnavailable, "health check failed", 5, { cause: err });
        }),
      { successTtlMs: o.healthCacheMs, failureTtlMs: 0 },
    );
    this.capabilities = {
      credentialTypes: [type],
      importsApiKeyValue: type === "API_KEY",
      readsBackSecret: true,
      // "an alphanumeric string between 20 and 128 characters" (CreateApiKey value):
      // https://docs.aws.amazon.com/apigateway/latest/api/API_CreateApiKey.html
      ...(type === "API_KEY" ? { apiKeyValuePattern: "^[A-Za-z0-9]{20,128}$" } : {}),
      // An API key's `enabled` flag (UpdateApiKey /enabled); a Cognito app client has no such switch. Under
      // `revokeMode: disable` the flag already means "revoked": an enable would bring a revoked key back.
      disables: type === "API_KEY" && o.revokeMode !== "disable" ? ["API_KEY"] : [],
      // CreateApiKey's and DeleteApiKey's quota (5/s by default), or Cognito's per operation: a move's narrowest write.
      writesPerSecond:
        type === "API_KEY"
          ? Math.min(o.rateLimits.createApiKey, o.rateLimits.deleteApiKey)
          : o.rateLimits.cognitoPerOperation,
    };
  }

  private check(type: CredentialType): void {
    if (type !== this.context.credentialType) {
      throw new ValidationError([
        gatewayMessage(this.context.gateway, `issues ${this.context.credentialType}, not ${type}`),
      ]);
    }
  }

  /** @inheritdoc */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    this.check(input.credentialType);
    return this.issuer.create(input);
  }

  /** @inheritdoc */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    this.check(input.credentialType);
    return this.issuer.update(input);
  }

  /** @inheritdoc */
  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    this.check(ref.credentialType);
    return this.issuer.revoke(ref);
  }

  /**
   * An API key's `enabled` flag, after checking its mark (UpdateApiKey `replace /enabled`): API Gateway refuses
   * calls with a disabled key (403). https://docs.aws.amazon.com/apigateway/latest/api/API_UpdateApiKey.html
   * @throws ValidationError for a client-credentials gateway (its capabilities say it cannot)
   */
  async setEnabled(ref: ProviderCredentialRef, enabled: boolean): Promise<RevokeOutcome> {
    this.check(ref.credentialType);
    if (!(this.issuer instanceof ApiKeyIssuer))
      throw new ValidationError([gatewayMessage(this.context.gateway, "a Cognito app client cannot be disabled")]);
    return this.issuer.setEnabled(ref, enabled);
  }

  /**
   * API keys: GetApiKeys by the name the app gives, filtered by the
   * `credhook:gateway` and `credhook:credential-id` tags. App clients:
   * ListUserPoolClients filtered by the name's mark (Cognito has no filter).
   */
  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    this.check(search.credentialType);
    return this.issuer.findByCredential(search.credentialId, search.app);
  }

  /** @inheritdoc */
  async adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult> {
    this.check(ref.credentialType);
    return this.issuer.adopt(ref);
  }

  /** @inheritdoc */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey?: string; clientSecret?: string }> {
    this.check(ref.credentialType);
    return this.issuer.readSecret(ref);
  }

  /** @inheritdoc */
  async listOwned(): Promise<OwnedResource[]> {
    return this.issuer.listOwned();
  }

  /**
   * One cheap read (API Gateway GetApiKeys limit=1, or Cognito
   * DescribeResourceServer), through core's {@link CachedHealthProbe}: a
   * success is reused for `healthCacheMs`; a failure is not reused (its TTL is
   * 0: the next check probes again); concurrent checks share one call.
   * @throws UpstreamUnavailable the probe failed (the cause says why)
   */
  health(): Promise<void> {
    return this.healthProbe.check();
  }

  /** Destroys the SDK client and releases the shared rate limiters. */
  async close(): Promise<void> {
    this.issuer.close();
    await this.releaseLimiters();
  }
}
