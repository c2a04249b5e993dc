/**
 * CLIENT_CREDENTIALS on Amazon Cognito: one user-pool app client per
 * credential, with a generated secret, only the client_credentials grant, and
 * custom scopes of one resource server.
 *
 * Ownership: app clients have no tags, so credhook marks each one in its
 * ClientName with the suffix `@ch.<gateway hash>.<credential id>`
 * (naming.ts `clientMark`); update, revoke and read-back read it first.
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
import { Conflict, InvalidReference, NotFound, UpstreamError, ValidationError } from "@credhook/core/errors";
import { KeyedLock, gatewayError, gatewayMessage } from "@credhook/core/provider-kit";
import type {
  GatewayApi,
  OwnedResource,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
} from "@credhook/core/provider";
import { awsErrorName, isAwsNotFound, toTypedError, reportPartial } from "./errors.js";
import { clientName, gatewayMark, markedClientName, ownsClient, parseClientMark } from "./naming.js";
import { limitEveryAttempt, mayHaveLanded, retryOnlyUnapplied, sdkConfig, type Runtime } from "./runtime.js";
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
export function fullUpdateInput(
  described: UserPoolClientType,
  changes: Partial<UpdateUserPoolClientCommandInput>,
): UpdateUserPoolClientCommandInput {
  const input: Record<string, unknown> = { UserPoolId: described.UserPoolId, ClientId: described.ClientId };
  for (const f of UPDATABLE_FIELDS) if (described[f] !== undefined) input[f] = described[f];
  return { ...(input as unknown as UpdateUserPoolClientCommandInput), ...changes };
}

/** A credential id as a mark holds it when it is a hash of one (`h` + 40 hex): the real id cannot be told. */
const HASHED_ID = /^h[0-9a-f]{40}$/;

/** The Cognito half of the AWS provider. */
export class ClientCredentialsIssuer {
  /** Every call but CreateUserPoolClient; the SDK retries throttling, timeouts and 5xx. */
  private readonly client: CognitoIdentityProviderClient;
  /** CreateUserPoolClient: not idempotent, so retried only when an attempt was certainly not applied. */
  private readonly createClient: CognitoIdentityProviderClient;
  private readonly poolId: string;
  private readonly rs: string;
  /** Serialises this process's read-modify-writes of one resource server's scope list. */
  private static readonly scopeLock = new KeyedLock();
  private tokenEndpointUrl: string | undefined;

  constructor(private readonly rt: Runtime) {
    const config = sdkConfig(rt.options, "cognito", rt.gateway);
    this.client = new CognitoIdentityProviderClient(config);
    this.createClient = new CognitoIdentityProviderClient({
      ...config,
      retryStrategy: retryOnlyUnapplied(rt.options.maxAttempts),
    });
    this.poolId = rt.options.userPoolId!;
    this.rs = rt.options.resourceServer!;
    for (const c of [this.client, this.createClient])
      limitEveryAttempt(c, rt, (op) => rt.limiters.cognito(this.poolId, op));
    const o = rt.options;
    if (o.tokenEndpoint) this.tokenEndpointUrl = o.tokenEndpoint;
    else if (o.domain)
      this.tokenEndpointUrl = `${/^https?:\/\//.test(o.domain) ? o.domain : `https://${o.domain}`}/oauth2/token`;
  }

  private get gw(): string {
    return this.rt.gateway;
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
      throw gatewayError(
        this.gw,
        InvalidReference,
        `the app's APIs need ${full.length} scopes; a Cognito app client can have at most ${MAX_SCOPES_PER_CLIENT}`,
      );
    }
    const names = full.map((s) => s.slice(this.rs.length + 1));
    await ClientCredentialsIssuer.scopeLock.run(`${this.poolId}|${this.rs}`, async () => {
      let server;
      try {
        ({ ResourceServer: server } = await this.client.send(
          new DescribeResourceServerCommand({ UserPoolId: this.poolId, Identifier: this.rs }),
        ));
      } catch (err) {
        if (isAwsNotFound(err)) {
          throw gatewayError(
            this.gw,
            UpstreamError,
            `resource server ${this.rs} or user pool ${this.poolId} does not exist (check options.resourceServer and options.userPoolId)`,
            { cause: err },
          );
        }
        throw toTypedError(err, `DescribeResourceServer ${this.rs}`, this.gw);
      }
      const existing = server?.Scopes ?? [];
      const missing = names.filter((n) => !existing.some((s) => s.ScopeName === n));
      if (missing.length === 0) return;
      if (!this.rt.options.createMissingScopes) {
        const msgs = missing.map((n) =>
          gatewayMessage(
            this.gw,
            `scope ${this.rs}/${n} (API ${this.scopeOwner(apis, n) ?? "?"}) does not exist on the resource server`,
          ),
        );
        throw new InvalidReference(msgs[0]!, { gateway: this.gw, messages: msgs.slice(1) });
      }
      const scopes = [
        ...existing,
        ...missing.map((n) => ({
          ScopeName: n,
          ScopeDescription: `API ${this.scopeOwner(apis, n) ?? n} (added by credhook)`.slice(0, 256),
        })),
      ];
      await this.client
        .send(
          new UpdateResourceServerCommand({
            UserPoolId: this.poolId,
            Identifier: this.rs,
            Name: server?.Name ?? this.rs,
            Scopes: scopes,
          }),
        )
        .catch((err: unknown) => {
          if (awsErrorName(err) === "LimitExceededException") {
            throw gatewayError(
              this.gw,
              InvalidReference,
              `resource server ${this.rs} cannot hold more scopes (${scopes.length} needed)`,
              { cause: err },
            );
          }
          throw toTypedError(err, `UpdateResourceServer ${this.rs}`, this.gw);
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
          this.rt.logger.warn(
            { resourceServer: this.rs },
            "a scope vanished from the resource server meanwhile: adding it again",
          );
          scopes = await this.ensureScopes(apis);
          continue;
        }
        if (awsErrorName(err) === "ScopeDoesNotExistException") {
          throw gatewayError(
            this.gw,
            InvalidReference,
            `${what}: a scope does not exist on resource server ${this.rs}`,
            { cause: err },
          );
        }
        if (awsErrorName(err) === "LimitExceededException") {
          throw gatewayError(
            this.gw,
            UpstreamError,
            `${what}: user pool ${this.poolId} reached a Cognito quota (app clients per pool: 1,000)`,
            { cause: err },
          );
        }
        throw toTypedError(err, what, this.gw);
      }
    }
  }

  /** The token endpoint URL: configured, or derived from the pool's custom or prefix domain. */
  private async tokenEndpoint(): Promise<string | undefined> {
    if (this.tokenEndpointUrl) return this.tokenEndpointUrl;
    try {
      const { UserPool } = await this.client.send(new DescribeUserPoolCommand({ UserPoolId: this.poolId }));
      if (UserPool?.CustomDomain) this.tokenEndpointUrl = `https://${UserPool.CustomDomain}/oauth2/token`;
      else if (UserPool?.Domain)
        this.tokenEndpointUrl = `https://${UserPool.Domain}.auth.${this.rt.options.region}.amazoncognito.com/oauth2/token`;
    } catch (err) {
      this.rt.logger.warn(
        { awsError: awsErrorName(err) },
        "could not read the user pool's domain for the token endpoint",
      );
    }
    return this.tokenEndpointUrl;
  }

  private resources(c: { ClientId: string; ClientName: string }, scopes: string[]): ClientResources {
    return {
      kind: "cognitoClient",
      region: this.rt.options.region,
      userPoolId: this.poolId,
      clientId: c.ClientId,
      clientName: c.ClientName,
      scopes,
    };
  }

  /**
   * CreateUserPoolClient with GenerateSecret, only client_credentials, the
   * app's scopes (added to the resource server first when missing), and a name
   * ending with this gateway's and the credential's mark.
   * customCredentials carries `tokenEndpoint` and `scopes` (space-separated).
   *
   * Never deletes what it made: a create that may have been applied unseen
   * (timeout, no answer, 5xx — not retried, since a retry could make a second
   * client) throws with `outcomeUnknown: true`; core finds the client by its mark.
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    const name = clientName(this.rt.options.namePrefix, input.app, this.gw, input.credentialId);
    let created;
    let unanswered = false; // a CreateUserPoolClient attempt may have been applied unseen
    try {
      created = await this.withScopes(input.apis, `CreateUserPoolClient "${name}"`, (scopes) =>
        this.createClient
          .send(
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
          )
          .catch((err: unknown) => {
            unanswered ||= mayHaveLanded(err);
            throw err;
          })
          .then((r) => ({ client: r.UserPoolClient, scopes })),
      );
    } catch (err) {
      throw reportPartial(toTypedError(err, `CreateUserPoolClient "${name}"`, this.gw), undefined, unanswered);
    }
    const c = created.client;
    if (!c?.ClientId || !c.ClientSecret) {
      throw gatewayError(this.gw, UpstreamError, `CreateUserPoolClient returned no client id or secret`, {
        ...(c?.ClientId
          ? {
              partial: {
                nativeId: c.ClientId,
                resources: this.resources({ ClientId: c.ClientId, ClientName: name }, created.scopes),
              },
            }
          : {}),
        outcomeUnknown: !c?.ClientId,
      });
    }
    const endpoint = await this.tokenEndpoint();
    this.rt.logger.info(
      { clientId: c.ClientId, scopes: created.scopes, credentialId: input.credentialId },
      "Cognito app client created",
    );
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

  /** DescribeUserPoolClient, or undefined when the client does not exist. */
  private async describe(clientId: string): Promise<UserPoolClientType | undefined> {
    try {
      const { UserPoolClient } = await this.client.send(
        new DescribeUserPoolClientCommand({ UserPoolId: this.poolId, ClientId: clientId }),
      );
      return UserPoolClient;
    } catch (err) {
      if (isAwsNotFound(err)) return undefined;
      throw toTypedError(err, `DescribeUserPoolClient ${clientId}`, this.gw);
    }
  }

  /**
   * True when the described client is this gateway's (and, unless
   * `ref.credentialId` is empty, this credential's): its name carries the
   * mark — or, for a client created before marks existed, the store's record
   * names exactly this client id and unmarked name.
   */
  private owns(c: UserPoolClientType, ref: ProviderCredentialRef): boolean {
    if (ownsClient(c.ClientName, this.gw, ref.credentialId)) return true;
    return (
      ref.credentialId !== "" &&
      !parseClientMark(c.ClientName ?? "") &&
      ref.resources.clientId === c.ClientId &&
      ref.resources.clientName === c.ClientName
    );
  }

  /** Describe + ownership check. @throws NotFound the client is gone or not this gateway's/credential's */
  private async ownedClient(ref: ProviderCredentialRef): Promise<UserPoolClientType> {
    const clientId = ref.nativeId;
    const c = await this.describe(clientId);
    if (!c) throw gatewayError(this.gw, NotFound, `app client ${clientId} does not exist in user pool ${this.poolId}`);
    if (!this.owns(c, ref)) {
      this.rt.logger.warn(
        { clientId, credentialId: ref.credentialId },
        "app client lacks this gateway's or this credential's mark: left untouched",
      );
      throw gatewayError(
        this.gw,
        NotFound,
        `app client ${clientId} is not credhook's client of this ${ref.credentialId ? "credential" : "gateway"} (its name carries no matching mark); bring it under credhook with \`credhook adopt\``,
      );
    }
    return c;
  }

  /**
   * Describe (ownership check) → scopes of `desired`, name (with the mark
   * kept), and the client_credentials flow → Update with the full description
   * (UpdateUserPoolClient resets omitted fields). Skips the Update when
   * nothing differs; repairs drift otherwise. A client made before marks
   * existed gets its mark here. With an empty `credentialId` (core lost the
   * record) the gateway's mark suffices, and the result carries the
   * credential id of the name's mark.
   * @throws NotFound the client does not exist, or is not this gateway's/credential's
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const clientId = input.nativeId;
    const described = await this.ownedClient(input);
    const markId = parseClientMark(described.ClientName ?? "")?.credentialId ?? input.credentialId;
    const name = clientName(this.rt.options.namePrefix, input.app, this.gw, markId);
    const result = await this.withScopes(input.desired, `UpdateUserPoolClient ${clientId}`, async (scopes) => {
      const same =
        described.ClientName === name &&
        JSON.stringify([...(described.AllowedOAuthScopes ?? [])].sort()) === JSON.stringify(scopes) &&
        JSON.stringify(described.AllowedOAuthFlows ?? []) === JSON.stringify(["client_credentials"]) &&
        described.AllowedOAuthFlowsUserPoolClient === true;
      if (same) return { scopes, changed: false };
      await this.client.send(
        new UpdateUserPoolClientCommand(
          fullUpdateInput(described, {
            ClientName: name,
            AllowedOAuthScopes: scopes,
            AllowedOAuthFlows: ["client_credentials"],
            AllowedOAuthFlowsUserPoolClient: true,
          }),
        ),
      );
      return { scopes, changed: true };
    });
    this.rt.logger.info({ clientId, scopes: result.scopes, changed: result.changed }, "Cognito app client updated");
    // A record the store lost (empty credential id): tell core the id the name's mark carries.
    const marked = input.credentialId === "" && !HASHED_ID.test(markId) ? markId : undefined;
    return {
      resources: this.resources({ ClientId: clientId, ClientName: name }, result.scopes),
      ...(marked ? { credentialId: marked } : {}),
    };
  }

  /**
   * Describe (ownership check), then DeleteUserPoolClient.
   * @returns `revoked`; `gone` when the client does not exist; `not-owned` when its name lacks this gateway's (or the credential's) mark
   */
  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    const c = await this.describe(ref.nativeId);
    if (!c) {
      this.rt.logger.info({ clientId: ref.nativeId }, "app client already gone: revoke is a no-op");
      return "gone";
    }
    if (!this.owns(c, ref)) {
      this.rt.logger.warn(
        { clientId: ref.nativeId, credentialId: ref.credentialId },
        "revoke of an app client without this gateway's or this credential's mark: left untouched",
      );
      return "not-owned";
    }
    try {
      await this.client.send(new DeleteUserPoolClientCommand({ UserPoolId: this.poolId, ClientId: ref.nativeId }));
    } catch (err) {
      if (isAwsNotFound(err)) return "gone";
      throw toTypedError(err, `DeleteUserPoolClient ${ref.nativeId}`, this.gw);
    }
    this.rt.logger.info({ clientId: ref.nativeId }, "Cognito app client deleted");
    return "revoked";
  }

  /** DescribeUserPoolClient's ClientSecret, of a client with this gateway's and the credential's mark. @throws NotFound the client is gone or not ours */
  async readSecret(ref: ProviderCredentialRef): Promise<{ clientSecret: string }> {
    const c = await this.ownedClient(ref);
    if (!c.ClientSecret) throw gatewayError(this.gw, UpstreamError, `app client ${ref.nativeId} has no secret`);
    return { clientSecret: c.ClientSecret };
  }

  /** Every app client of the pool (ListUserPoolClients, 60 per page: Cognito has no name filter). */
  private async *listClients(): AsyncGenerator<{ ClientId?: string; ClientName?: string }> {
    let next: string | undefined;
    do {
      const page = await this.client
        .send(
          new ListUserPoolClientsCommand({
            UserPoolId: this.poolId,
            MaxResults: 60,
            ...(next ? { NextToken: next } : {}),
          }),
        )
        .catch((err: unknown) => {
          throw toTypedError(err, `ListUserPoolClients ${this.poolId}`, this.gw);
        });
      yield* page.UserPoolClients ?? [];
      next = page.NextToken;
    } while (next);
  }

  /** The app clients whose name carries this gateway's and `credentialId`'s mark (ListUserPoolClients). */
  async findByCredential(credentialId: string): Promise<OwnedResource[]> {
    const out: OwnedResource[] = [];
    if (!credentialId) return out;
    for await (const c of this.listClients()) {
      if (ownsClient(c.ClientName, this.gw, credentialId))
        out.push({ nativeId: c.ClientId!, credentialId, description: `Cognito app client "${c.ClientName}"` });
    }
    return out;
  }

  /** Every app client of the pool whose name carries this gateway's mark, with the credential id the mark holds. */
  async listOwned(): Promise<OwnedResource[]> {
    const out: OwnedResource[] = [];
    const mine = gatewayMark(this.gw);
    for await (const c of this.listClients()) {
      const mark = parseClientMark(c.ClientName ?? "");
      if (mark?.gatewayHash !== mine) continue;
      out.push({
        nativeId: c.ClientId!,
        ...(HASHED_ID.test(mark.credentialId) ? {} : { credentialId: mark.credentialId }),
        description: `Cognito app client "${c.ClientName}"`,
      });
    }
    return out;
  }

  /**
   * Brings an app client made outside credhook under this gateway: renames it
   * to carry the mark (its own name kept as the readable part, cut to fit
   * 128 characters) and adds the scopes of `ref.apis` it lacks (adopt never
   * removes a scope or changes its flows), in one full-description
   * UpdateUserPoolClient. Id and secret are unchanged. Idempotent.
   * @throws NotFound no client `ref.nativeId` in the pool
   * @throws Conflict the name carries another gateway's or another credential's mark
   */
  async adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult> {
    if (!ref.credentialId)
      throw new ValidationError([gatewayMessage(this.gw, `adopt needs the credential id to mark the app client with`)]);
    const clientId = ref.nativeId;
    const described = await this.describe(clientId);
    if (!described)
      throw gatewayError(this.gw, NotFound, `app client ${clientId} does not exist in user pool ${this.poolId}`);
    const current = described.ClientName ?? "";
    const mark = parseClientMark(current);
    if (mark && !ownsClient(current, this.gw, ref.credentialId)) {
      throw gatewayError(
        this.gw,
        Conflict,
        `app client ${clientId} already carries credhook's mark of another ${mark.gatewayHash !== gatewayMark(this.gw) ? "gateway" : "credential"}: it is not free to adopt`,
        {},
      );
    }
    const name = markedClientName(mark ? mark.readable : current, this.gw, ref.credentialId);
    const scopes = await this.withScopes(ref.apis, `UpdateUserPoolClient ${clientId} (adopt)`, async (wanted) => {
      const all = [...new Set([...(described.AllowedOAuthScopes ?? []), ...wanted])].sort();
      if (name !== current || all.length !== (described.AllowedOAuthScopes ?? []).length) {
        await this.client.send(
          new UpdateUserPoolClientCommand(fullUpdateInput(described, { ClientName: name, AllowedOAuthScopes: all })),
        );
      }
      return all;
    });
    this.rt.logger.info(
      { clientId, credentialId: ref.credentialId },
      "Cognito app client adopted: renamed to carry credhook's mark",
    );
    return { resources: this.resources({ ClientId: clientId, ClientName: name }, scopes) };
  }

  /** One cheap read: DescribeResourceServer (proves the pool, the resource server and the permissions). */
  async probe(): Promise<void> {
    try {
      await this.client.send(new DescribeResourceServerCommand({ UserPoolId: this.poolId, Identifier: this.rs }));
    } catch (err) {
      if (isAwsNotFound(err))
        throw gatewayError(
          this.gw,
          UpstreamError,
          `resource server ${this.rs} or user pool ${this.poolId} does not exist`,
          { cause: err },
        );
      throw toTypedError(err, "DescribeResourceServer (health)", this.gw);
    }
  }

  /** Releases the SDK clients' sockets. */
  close(): void {
    this.client.destroy();
    this.createClient.destroy();
  }
}
