/**
 * Options of one `provider: aws` gateway (the `options:` block of a
 * `gateways:` entry). Validated by {@link import("./schema.js").optionsSchema}.
 *
 * A gateway issues one credential type (its `credentialType` in YAML):
 * `API_KEY` uses API Gateway (REST v1) API keys and usage plans;
 * `CLIENT_CREDENTIALS` uses Cognito user-pool app clients and needs
 * {@link AwsProviderOptions.userPoolId} and {@link AwsProviderOptions.resourceServer}.
 */
export interface AwsProviderOptions {
  /** AWS region of the API Gateway / user pool, e.g. `us-east-1`. Required. */
  region: string;

  /**
   * Endpoint URL for every AWS service this gateway calls (VPC/FIPS endpoints,
   * LocalStack, the package's fake). An empty string means the SDK default.
   * @default the SDK's regional endpoint
   */
  endpoint?: string;
  /** Per-service endpoint overrides; each wins over {@link AwsProviderOptions.endpoint}. */
  endpoints?: {
    /** API Gateway control plane (`apigateway.<region>.amazonaws.com`). */
    apiGateway?: string;
    /** Cognito user pools (`cognito-idp.<region>.amazonaws.com`). */
    cognito?: string;
    /** STS, used only with {@link AwsProviderOptions.roleArn}. */
    sts?: string;
  };

  /**
   * IAM role to assume (with STS AssumeRole) for every call; the source
   * credentials come from the default AWS chain. Lets one credhook manage
   * several accounts. @default none: the default chain's credentials are used directly
   */
  roleArn?: string;
  /** External id required by the role's trust policy (confused-deputy protection). */
  externalId?: string;
  /** Session name of the assumed role, visible in CloudTrail. @default `credhook-<gateway>` */
  roleSessionName?: string;
  /**
   * Static credentials, for emulators (LocalStack, the fake) only. In production
   * leave this out and use the default chain (instance/task role, SSO, env) or
   * {@link AwsProviderOptions.roleArn}. @default the default AWS credential chain
   */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };

  /** Timeout of one HTTP attempt to AWS, in milliseconds; past it the call fails with 504. @default 10000 */
  timeoutMs?: number;
  /** SDK attempts per call, the first included (throttling and 5xx are retried with backoff, honouring Retry-After). @default 4 */
  maxAttempts?: number;
  /**
   * Longest time, in milliseconds, a call may wait in the client-side rate
   * limiter's queue. A call that would wait longer fails at once with 503 and a
   * Retry-After instead of queueing. @default 30000
   */
  maxQueueWaitMs?: number;
  /** Client-side rate limits (requests per second), below AWS's control-plane quotas. */
  rateLimits?: RateLimitOptions;
  /** How long a successful health check is reused, in milliseconds (a failure is not reused). @default 15000 */
  healthCacheMs?: number;

  /**
   * API_KEY: what revoke does. `delete` (DeleteApiKey) or `disable`
   * (enabled=false: the key stays, with its usage plans, and a later update or
   * read-back treats it as gone). The contract allows either. @default "delete"
   */
  revokeMode?: "delete" | "disable";
  /** First segment of every API key name (`<prefix>/<developer>/<appSlug|appName>`) and Cognito client name. @default "credhook" */
  namePrefix?: string;

  /** CLIENT_CREDENTIALS: the user pool id, e.g. `us-east-1_AbCdEf123`. */
  userPoolId?: string;
  /** CLIENT_CREDENTIALS: identifier of the resource server holding the scopes, e.g. `https://api.example.com`. */
  resourceServer?: string;
  /**
   * CLIENT_CREDENTIALS: scope names (without the resource-server prefix) per API
   * id. APIs not listed get {@link AwsProviderOptions.defaultScopes}.
   * @default {} (every API uses defaultScopes)
   */
  scopes?: Record<string, string[]>;
  /**
   * CLIENT_CREDENTIALS: scope names for an API absent from {@link AwsProviderOptions.scopes};
   * `{apiId}` is replaced by the API id. @default ["{apiId}"]
   */
  defaultScopes?: string[];
  /**
   * CLIENT_CREDENTIALS: add scopes the resource server lacks before creating or
   * updating a client (read-modify-write of the server's scope list). When
   * false a missing scope is a 422. @default true
   */
  createMissingScopes?: boolean;
  /**
   * CLIENT_CREDENTIALS: the token endpoint URL returned to developers in
   * customCredentials. @default `https://<domain>/oauth2/token`, or, without
   * `domain`, the user pool's custom or prefix domain (DescribeUserPool)
   */
  tokenEndpoint?: string;
  /** CLIENT_CREDENTIALS: the user pool's domain (host), e.g. `auth.example.com` or `myprefix.auth.us-east-1.amazoncognito.com`. */
  domain?: string;
}

/**
 * Client-side rate limits, in requests per second. Defaults are AWS's
 * documented per-account quotas
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html,
 * https://docs.aws.amazon.com/cognito/latest/developerguide/quotas.html), so a
 * burst of portal requests queues here instead of being refused by AWS.
 * Lower them when other tools share the account's control-plane quota.
 */
export interface RateLimitOptions {
  /** CreateApiKey calls per second. @default 5 */
  createApiKey?: number;
  /** DeleteApiKey calls per second. @default 5 */
  deleteApiKey?: number;
  /** Every other API Gateway call (usage plan keys, reads, updates), per second. @default 10 */
  apiGateway?: number;
  /** Burst size of {@link RateLimitOptions.apiGateway}. @default 40 */
  apiGatewayBurst?: number;
  /** Each Cognito operation, per user pool, per second. @default 5 */
  cognitoPerOperation?: number;
  /**
   * Milliseconds added to each 1-second window of the "N per second" limits
   * (CreateApiKey, DeleteApiKey, Cognito): at most N attempts leave in any
   * window of 1 s + this margin, so network and event-loop jitter never lets
   * AWS count N + 1 in its own 1-second window. @default 100
   */
  windowMarginMs?: number;
}

/** What the provider stores for an API key (core keeps it; no secret). */
export interface ApiKeyResources {
  [key: string]: string | string[];
  kind: "apiKey";
  region: string;
  keyId: string;
  /** Key name in API Gateway. */
  name: string;
  /** Usage plans the key was attached to by the last create/update, sorted. */
  usagePlans: string[];
}

/** What the provider stores for a Cognito app client (no secret). */
export interface ClientResources {
  [key: string]: string | string[];
  kind: "cognitoClient";
  region: string;
  userPoolId: string;
  clientId: string;
  clientName: string;
  /** Full scopes granted (`<resourceServer>/<name>`), sorted. */
  scopes: string[];
}
