/**
 * CLIENT_CREDENTIALS on Amazon Cognito: one user-pool app client per
 * credential, with a generated secret, only the client_credentials grant, and
 * custom scopes of one resource server.
 *
 * API reference: https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/
 */
import {
  CognitoIdentityProviderClient,
  CreateUserPoolClientCommand,
  DeleteUserPoolClientCommand,
  DescribeResourceServerCommand,
  DescribeUserPoolClientCommand,
  DescribeUserPoolCommand,
  ListUserPoolClientsCommand,
  UpdateResourceServerCommand,
  UpdateUserPoolClientCommand,
  type UpdateUserPoolClientCommandInput,
  type UserPoolClientType,
} from "@aws-sdk/client-cognito-identity-provider";
import {
  InvalidReference,
  KeyedLock,
  NotFound,
  UpstreamError,
  type GatewayApi,
  type OwnedResource,
  type ProviderCreateInput,
  type ProviderCredential,
  type ProviderCredentialRef,
  type ProviderUpdateInput,
  type ProviderUpdateResult,
} from "@credhook/core";
import { awsErrorName, isAwsNotFound, mapAwsError } from "./errors.js";
import { clientName } from "./naming.js";
import { sdkConfig, type Runtime } from "./runtime.js";
import type { ClientResources } from "./types.js";

/** Scopes per app client (https://docs.aws.amazon.com/cognito/latest/developerguide/quotas.html). */
const MAX_SCOPES_PER_CLIENT = 50;

/**
 * Fields of a described client that UpdateUserPoolClient accepts. Update resets
 * every field it is not given, so each one present is copied back.
 * (https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_UpdateUserPoolClient.html)
 */
const UPDATABLE_FIELDS = [
  "ClientName",
  "RefreshTokenValidity",
  "AccessTokenValidity",
  "IdTokenValidity",
  "TokenValidityUnits",
  "ReadAttributes",
  "WriteAttributes",
  "ExplicitAuthFlows",
  "SupportedIdentityProviders",
  "CallbackURLs",
  "LogoutURLs",
  "DefaultRedirectURI",
  "AllowedOAuthFlows",
  "AllowedOAuthScopes",
  "AllowedOAuthFlowsUserPoolClient",
  "AnalyticsConfiguration",
  "PreventUserExistenceErrors",
  "EnableTokenRevocation",
  "EnablePropagateAdditionalUserContextData",
  "AuthSessionValidity",
  "RefreshTokenRotation",
] as const satisfies ReadonlyArray<keyof UpdateUserPoolClientCommandInput>;

/** The full UpdateUserPoolClient input that keeps everything `described` has, with `changes` applied. */
export function fullUpdateInput(described: UserPoolClientType, changes: Partial<UpdateUserPoolClientCommandInput>): UpdateUserPoolClientCommandInput {
  const input: Record<string, unknown> = { UserPoolId: described.UserPoolId, ClientId: described.ClientId };
  for (const f of UPDATABLE_FIELDS) if (described[f] !== undefined) input[f] = described[f];
  return { ...(input as unknown as UpdateUserPoolClientCommandInput), ...changes };
}

/** The Cognito half of the AWS provider. */
export class ClientCredentialsIssuer {
  private readonly client: CognitoIdentityProviderClient;
  private readonly poolId: string;
  private readonly rs: string;
  /** Serialises this process's read-modify-writes of one resource server's scope list. */
  private static readonly scopeLock = new KeyedLock();
  private tokenEndpointUrl: string | undefined;

  constructor(private readonly rt: Runtime) {
    this.client = new CognitoIdentityProviderClient(sdkConfig(rt.options, "cognito", rt.gateway));
    this.poolId = rt.options.userPoolId!;
    this.rs = rt.options.resourceServer!;
    const o = rt.options;
    if (o.tokenEndpoint) this.tokenEndpointUrl = o.tokenEndpoint;
    else if (o.domain) this.tokenEndpointUrl = `${/^https?:\/\//.test(o.domain) ? o.domain : `https://${o.domain}`}/oauth2/token`;
  }

  private get gw(): string {
    return this.rt.gateway;
  }

  /** Runs one Cognito operation under its own per-pool rate limit (errors are left to the caller to map). */
  private async call<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    return this.rt.limited(this.rt.limiters.cognito(this.poolId, operation), fn);
  }

  /** Scope names (without the resource-server prefix) of one API: the configured mapping, else defaultScopes with `{apiId}` replaced. */
  scopeNamesOf(apiId: string): string[] {
    return this.rt.options.scopes[apiId] ?? this.rt.options.defaultScopes.map((s) => s.replaceAll("{apiId}", apiId));
  }

  /** Full scopes (`<resourceServer>/<name>`) of `apis`, unique and sorted. */
  scopesOf(apis: GatewayApi[]): string[] {
    return [...new Set(apis.flatMap((a) => this.scopeNamesOf(a.id)).map((n) => `${this.rs}/${n}`))].sort();
  }

  private scopeOwner(apis: GatewayApi[], scopeName: string): string | undefined {
    return apis.find((a) => this.scopeNamesOf(a.id).includes(scopeName))?.id;
  }

  /**
   * Makes sure every scope of `apis` exists on the resource server: Describe,
   * then (when some are missing and createMissingScopes) UpdateResourceServer
   * with the whole list plus the missing ones (Update replaces the list).
   * @throws InvalidReference a scope is missing and createMissingScopes is false, or more than 50 scopes
   */
  private async ensureScopes(apis: GatewayApi[]): Promise<string[]> {
    const full = this.scopesOf(apis);
    if (full.length > MAX_SCOPES_PER_CLIENT) {
      throw new InvalidReference(`[gateway ${this.gw}] the app's APIs need ${full.length} scopes; a Cognito app client can have at most ${MAX_SCOPES_PER_CLIENT}`, { gateway: this.gw });
    }
    const names = full.map((s) => s.slice(this.rs.length + 1));
    await ClientCredentialsIssuer.scopeLock.run(`${this.poolId}|${this.rs}`, async () => {
      let server;
      try {
        ({ ResourceServer: server } = await this.call("DescribeResourceServer", () =>
          this.client.send(new DescribeResourceServerCommand({ UserPoolId: this.poolId, Identifier: this.rs })),
        ));
      } catch (err) {
        if (isAwsNotFound(err)) {
          throw new UpstreamError(`[gateway ${this.gw}] resource server ${this.rs} or user pool ${this.poolId} does not exist (check options.resourceServer and options.userPoolId)`, {
            gateway: this.gw,
            cause: err,
          });
        }
        throw mapAwsError(err, `DescribeResourceServer ${this.rs}`, this.gw);
      }
      const existing = server?.Scopes ?? [];
      const missing = names.filter((n) => !existing.some((s) => s.ScopeName === n));
      if (missing.length === 0) return;
      if (!this.rt.options.createMissingScopes) {
        const msgs = missing.map((n) => `[gateway ${this.gw}] scope ${this.rs}/${n} (API ${this.scopeOwner(apis, n) ?? "?"}) does not exist on the resource server`);
        throw new InvalidReference(msgs[0]!, { gateway: this.gw, messages: msgs.slice(1) });
      }
      const scopes = [...existing, ...missing.map((n) => ({ ScopeName: n, ScopeDescription: `API ${this.scopeOwner(apis, n) ?? n} (added by credhook)`.slice(0, 256) }))];
      await this.call("UpdateResourceServer", () =>
        this.client.send(new UpdateResourceServerCommand({ UserPoolId: this.poolId, Identifier: this.rs, Name: server?.Name ?? this.rs, Scopes: scopes })),
      ).catch((err: unknown) => {
        if (awsErrorName(err) === "LimitExceededException") {
          throw new InvalidReference(`[gateway ${this.gw}] resource server ${this.rs} cannot hold more scopes (${scopes.length} needed)`, { gateway: this.gw, cause: err });
        }
        throw mapAwsError(err, `UpdateResourceServer ${this.rs}`, this.gw);
      });
      this.rt.logger.info({ resourceServer: this.rs, added: missing }, "scopes added to the resource server");
    });
    return full;
  }

  /** Runs a client write; on ScopeDoesNotExistException (a concurrent writer dropped a scope) ensures the scopes again and retries once. */
  private async withScopes<T>(apis: GatewayApi[], what: string, fn: (scopes: string[]) => Promise<T>): Promise<T> {
    let scopes = await this.ensureScopes(apis);
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn(scopes);
      } catch (err) {
        if (awsErrorName(err) === "ScopeDoesNotExistException" && attempt === 0) {
          this.rt.logger.warn({ resourceServer: this.rs }, "a scope vanished from the resource server meanwhile: adding it again");
          scopes = await this.ensureScopes(apis);
          continue;
        }
        if (awsErrorName(err) === "ScopeDoesNotExistException") {
          throw new InvalidReference(`[gateway ${this.gw}] ${what}: a scope does not exist on resource server ${this.rs}`, { gateway: this.gw, cause: err });
        }
        if (awsErrorName(err) === "LimitExceededException") {
          throw new UpstreamError(`[gateway ${this.gw}] ${what}: user pool ${this.poolId} reached a Cognito quota (app clients per pool: 1,000)`, { gateway: this.gw, cause: err });
        }
        throw mapAwsError(err, what, this.gw);
      }
    }
  }

  /** The token endpoint URL: configured, or derived from the pool's custom or prefix domain. */
  private async tokenEndpoint(): Promise<string | undefined> {
    if (this.tokenEndpointUrl) return this.tokenEndpointUrl;
    try {
      const { UserPool } = await this.call("DescribeUserPool", () => this.client.send(new DescribeUserPoolCommand({ UserPoolId: this.poolId })));
      if (UserPool?.CustomDomain) this.tokenEndpointUrl = `https://${UserPool.CustomDomain}/oauth2/token`;
      else if (UserPool?.Domain) this.tokenEndpointUrl = `https://${UserPool.Domain}.auth.${this.rt.options.region}.amazoncognito.com/oauth2/token`;
    } catch (err) {
      this.rt.logger.warn({ awsError: awsErrorName(err) }, "could not read the user pool's domain for the token endpoint");
    }
    return this.tokenEndpointUrl;
  }

  private resources(c: { ClientId: string; ClientName: string }, scopes: string[]): ClientResources {
    return { kind: "cognitoClient", region: this.rt.options.region, userPoolId: this.poolId, clientId: c.ClientId, clientName: c.ClientName, scopes };
  }

  /**
   * CreateUserPoolClient with GenerateSecret, only client_credentials, and the
   * app's scopes (added to the resource server first when missing).
   * customCredentials carries `tokenEndpoint` and `scopes` (space-separated).
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    const name = clientName(this.rt.options.namePrefix, input.app);
    const created = await this.withScopes(input.apis, `CreateUserPoolClient "${name}"`, (scopes) =>
      this.call("CreateUserPoolClient", () =>
        this.client.send(
          new CreateUserPoolClientCommand({
            UserPoolId: this.poolId,
            ClientName: name,
            GenerateSecret: true,
            AllowedOAuthFlows: ["client_credentials"],
            AllowedOAuthScopes: scopes,
            AllowedOAuthFlowsUserPoolClient: true,
            ExplicitAuthFlows: ["ALLOW_REFRESH_TOKEN_AUTH"],
            PreventUserExistenceErrors: "ENABLED",
            EnableTokenRevocation: true,
          }),
        ),
      ).then((r) => ({ client: r.UserPoolClient, scopes })),
    );
    const c = created.client;
    if (!c?.ClientId || !c.ClientSecret) throw new UpstreamError(`[gateway ${this.gw}] CreateUserPoolClient returned no client id or secret`, { gateway: this.gw });
    const endpoint = await this.tokenEndpoint();
    this.rt.logger.info({ clientId: c.ClientId, scopes: created.scopes, credentialId: input.credentialId }, "Cognito app client created");
    return {
      nativeId: c.ClientId,
      clientSecret: c.ClientSecret,
      resources: this.resources({ ClientId: c.ClientId, ClientName: name }, created.scopes),
      customCredentials: {
        ...(endpoint ? { tokenEndpoint: endpoint } : {}),
        grantType: "client_credentials",
        scopes: created.scopes.join(" "),
      },
    };
  }

  private async describe(clientId: string): Promise<UserPoolClientType> {
    try {
      const { UserPoolClient } = await this.call("DescribeUserPoolClient", () =>
        this.client.send(new DescribeUserPoolClientCommand({ UserPoolId: this.poolId, ClientId: clientId })),
      );
      if (!UserPoolClient) throw new NotFound(`[gateway ${this.gw}] app client ${clientId} does not exist in user pool ${this.poolId}`, { gateway: this.gw });
      return UserPoolClient;
    } catch (err) {
      if (isAwsNotFound(err)) throw new NotFound(`[gateway ${this.gw}] app client ${clientId} does not exist in user pool ${this.poolId}`, { gateway: this.gw, cause: err });
      throw mapAwsError(err, `DescribeUserPoolClient ${clientId}`, this.gw);
    }
  }

  /**
   * Describe → set scopes of `desired`, name, and the client_credentials flow →
   * Update with the full description (UpdateUserPoolClient resets omitted
   * fields). Skips the Update when nothing differs; repairs drift otherwise.
   * @throws NotFound the client does not exist
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const clientId = input.nativeId;
    const described = await this.describe(clientId);
    const name = clientName(this.rt.options.namePrefix, input.app);
    const result = await this.withScopes(input.desired, `UpdateUserPoolClient ${clientId}`, async (scopes) => {
      const same =
        described.ClientName === name &&
        JSON.stringify([...(described.AllowedOAuthScopes ?? [])].sort()) === JSON.stringify(scopes) &&
        JSON.stringify(described.AllowedOAuthFlows ?? []) === JSON.stringify(["client_credentials"]) &&
        described.AllowedOAuthFlowsUserPoolClient === true;
      if (same) return { scopes, changed: false };
      await this.call("UpdateUserPoolClient", () =>
        this.client.send(
          new UpdateUserPoolClientCommand(
            fullUpdateInput(described, { ClientName: name, AllowedOAuthScopes: scopes, AllowedOAuthFlows: ["client_credentials"], AllowedOAuthFlowsUserPoolClient: true }),
          ),
        ),
      );
      return { scopes, changed: true };
    });
    this.rt.logger.info({ clientId, scopes: result.scopes, changed: result.changed }, "Cognito app client updated");
    return { resources: this.resources({ ClientId: clientId, ClientName: name }, result.scopes) };
  }

  /** DeleteUserPoolClient; a client already gone is success. */
  async revoke(ref: ProviderCredentialRef): Promise<void> {
    try {
      await this.call("DeleteUserPoolClient", () => this.client.send(new DeleteUserPoolClientCommand({ UserPoolId: this.poolId, ClientId: ref.nativeId })));
      this.rt.logger.info({ clientId: ref.nativeId }, "Cognito app client deleted");
    } catch (err) {
      if (isAwsNotFound(err)) {
        this.rt.logger.info({ clientId: ref.nativeId }, "app client already gone: revoke is a no-op");
        return;
      }
      throw mapAwsError(err, `DeleteUserPoolClient ${ref.nativeId}`, this.gw);
    }
  }

  /** DescribeUserPoolClient's ClientSecret. @throws NotFound the client is gone */
  async readSecret(ref: ProviderCredentialRef): Promise<{ clientSecret: string }> {
    const c = await this.describe(ref.nativeId);
    if (!c.ClientSecret) throw new UpstreamError(`[gateway ${this.gw}] app client ${ref.nativeId} has no secret`, { gateway: this.gw });
    return { clientSecret: c.ClientSecret };
  }

  /** Every app client of the pool whose name starts with `<namePrefix>-` (ListUserPoolClients, paginated). */
  async listOwned(): Promise<OwnedResource[]> {
    const out: OwnedResource[] = [];
    let next: string | undefined;
    do {
      const page = await this.call("ListUserPoolClients", () =>
        this.client.send(new ListUserPoolClientsCommand({ UserPoolId: this.poolId, MaxResults: 60, ...(next ? { NextToken: next } : {}) })),
      ).catch((err: unknown) => {
        throw mapAwsError(err, `ListUserPoolClients ${this.poolId}`, this.gw);
      });
      for (const c of page.UserPoolClients ?? []) {
        if (c.ClientName?.startsWith(`${this.rt.options.namePrefix}-`)) out.push({ nativeId: c.ClientId!, description: `Cognito app client "${c.ClientName}"` });
      }
      next = page.NextToken;
    } while (next);
    return out;
  }

  /** One cheap read: DescribeResourceServer (proves the pool, the resource server and the permissions). */
  async probe(): Promise<void> {
    try {
      await this.call("DescribeResourceServer", () => this.client.send(new DescribeResourceServerCommand({ UserPoolId: this.poolId, Identifier: this.rs })));
    } catch (err) {
      if (isAwsNotFound(err)) throw new UpstreamError(`[gateway ${this.gw}] resource server ${this.rs} or user pool ${this.poolId} does not exist`, { gateway: this.gw, cause: err });
      throw mapAwsError(err, "DescribeResourceServer (health)", this.gw);
    }
  }

  /** Releases the SDK client's sockets. */
  close(): void {
    this.client.destroy();
  }
}
