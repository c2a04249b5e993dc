/**
 * JSON Schema (draft 2020-12) of the `options` block of a `provider: aws` gateway: the
 * one source of the options' type ({@link import("./types.js").AwsProviderOptions},
 * derived with `FromSchema`), their defaults (core's `resolveOptions` applies them, once,
 * as core loads the YAML or in the factory's `create`) and their documentation (each `description`, which
 * editors show from the generated webhook.config.schema.json). Unknown options are rejected
 * (a typo must not silently fall back to a default).
 *
 * A gateway issues one credential type (its `credentialType` in YAML): `API_KEY` uses
 * API Gateway (REST v1) API keys and usage plans; `CLIENT_CREDENTIALS` uses Cognito
 * user-pool app clients and needs `userPoolId` and `resourceServer`.
 */

/** An endpoint URL option with its description. */
const url = <const T extends string>(description: T) =>
  ({ type: "string", pattern: "^(https?://.+)?$", description }) as const;
/** A requests-per-second rate limit with its default and description. */
const rps = <const D extends number, const T extends string>(def: D, description: T) =>
  ({ type: "number", exclusiveMinimum: 0, maximum: 1000, default: def, description }) as const;

/** The options schema core validates `gateways.<name>.options` with. */
export const optionsSchema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "credhook provider-aws options",
  type: "object",
  additionalProperties: false,
  required: ["region"],
  properties: {
    region: {
      type: "string",
      pattern: "^[a-z]{2}(-[a-z]+)+-\\d+$",
      description: "AWS region of the API Gateway / user pool, e.g. `us-east-1`. Required.",
    },
    endpoint: url(
      "Endpoint URL for every AWS service this gateway calls (VPC/FIPS endpoints, LocalStack, the package's fake). An empty string, like leaving it out, means the SDK's regional endpoint.",
    ),
    endpoints: {
      type: "object",
      additionalProperties: false,
      description: "Per-service endpoint overrides; each wins over `endpoint`.",
      properties: {
        apiGateway: url("API Gateway control plane (`apigateway.<region>.amazonaws.com`)."),
        cognito: url("Cognito user pools (`cognito-idp.<region>.amazonaws.com`)."),
        sts: url("STS, used only with `roleArn`."),
      },
    },
    roleArn: {
      type: "string",
      pattern: "^arn:aws[a-z-]*:iam::\\d{12}:role/.+$",
      description:
        "IAM role to assume (with STS AssumeRole) for every call; the source credentials come from the default AWS chain. Lets one credhook manage several accounts. Default: none, the default chain's credentials are used directly.",
    },
    externalId: {
      type: "string",
      minLength: 2,
      maxLength: 1224,
      description: "External id required by the role's trust policy (confused-deputy protection).",
    },
    roleSessionName: {
      type: "string",
      pattern: "^[\\w+=,.@-]{2,64}$",
      description: "Session name of the assumed role, visible in CloudTrail. Default `credhook-<gateway>`.",
    },
    credentials: {
      type: "object",
      additionalProperties: false,
      required: ["accessKeyId", "secretAccessKey"],
      description:
        "Static credentials, for emulators (LocalStack, the fake) only. In production leave this out and use the default chain (instance/task role, SSO, environment) or `roleArn`. Default: the default AWS credential chain.",
      properties: {
        accessKeyId: { type: "string", minLength: 1, description: "Access key id." },
        secretAccessKey: {
          type: "string",
          minLength: 1,
          writeOnly: true,
          description: "Secret access key: write `${VAR}`, never the value.",
        },
        sessionToken: { type: "string", writeOnly: true, description: "Session token of temporary credentials." },
      },
    },
    timeoutMs: {
      type: "integer",
      minimum: 100,
      maximum: 120000,
      default: 10000,
      description:
        "Timeout of one HTTP attempt to AWS, in milliseconds; past it the call fails with 504. Default 10000.",
    },
    maxAttempts: {
      type: "integer",
      minimum: 1,
      maximum: 10,
      default: 4,
      description:
        "SDK attempts per call, the first included (throttling and 5xx are retried with backoff, honouring Retry-After). Default 4.",
    },
    maxQueueWaitMs: {
      type: "integer",
      minimum: 0,
      maximum: 600000,
      default: 30000,
      description:
        "Longest time, in milliseconds, a call may wait in the client-side rate limiter's queue. A call that would wait longer fails at once with 503 and a Retry-After instead of queueing. Default 30000.",
    },
    healthCacheMs: {
      type: "integer",
      minimum: 0,
      maximum: 3600000,
      default: 15000,
      description:
        "How long a successful health check is reused, in milliseconds (a failure is not reused). Default 15000.",
    },
    rateLimits: {
      type: "object",
      additionalProperties: false,
      default: {},
      description:
        "Client-side rate limits, in requests per second. Defaults are AWS's documented per-account quotas (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html, https://docs.aws.amazon.com/cognito/latest/developerguide/quotas.html), so a burst of portal requests queues here instead of being refused by AWS. Lower them when other tools share the account's control-plane quota.",
      properties: {
        createApiKey: rps(5, "CreateApiKey calls per second. Default 5."),
        deleteApiKey: rps(5, "DeleteApiKey calls per second. Default 5."),
        apiGateway: rps(10, "Every other API Gateway call (usage plan keys, reads, updates), per second. Default 10."),
        apiGatewayBurst: {
          type: "integer",
          minimum: 1,
          maximum: 1000,
          default: 40,
          description:
            "Burst size of `apiGateway` (AWS's bucket; credhook keeps one token of it back for network jitter). Default 40.",
        },
        cognitoPerOperation: rps(5, "Each Cognito operation, per user pool, per second. Default 5."),
        windowMarginMs: {
          type: "integer",
          minimum: 0,
          maximum: 5000,
          default: 100,
          description:
            'Milliseconds added to each 1-second window of the "N per second" limits (CreateApiKey, DeleteApiKey, Cognito): at most N attempts leave in any window of 1 s + this margin, so network and event-loop jitter never lets AWS count N + 1 in its own 1-second window. Default 100.',
        },
      },
    },
    revokeMode: {
      enum: ["delete", "disable"],
      default: "delete",
      description:
        "API_KEY: what revoke does. `delete` (DeleteApiKey) or `disable` (enabled=false: the key stays, with its usage plans, and a later update or read-back treats it as gone). The contract allows either. Default `delete`.",
    },
    namePrefix: {
      type: "string",
      pattern: "^[\\w.@=+-]{1,32}$",
      default: "credhook",
      description:
        "First segment of every API key name (`<prefix>/<developer>/<appSlug|appName>`) and Cognito client name. Default `credhook`.",
    },
    userPoolId: {
      type: "string",
      pattern: "^[\\w-]+_[0-9a-zA-Z]+$",
      description: "CLIENT_CREDENTIALS: the user pool id, e.g. `us-east-1_AbCdEf123`.",
    },
    resourceServer: {
      type: "string",
      minLength: 1,
      maxLength: 256,
      pattern: "^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$",
      description:
        "CLIENT_CREDENTIALS: identifier of the resource server holding the scopes, e.g. `https://api.example.com`.",
    },
    scopes: {
      type: "object",
      default: {},
      description:
        "CLIENT_CREDENTIALS: scope names (without the resource-server prefix) per API id. APIs not listed get `defaultScopes`. Default `{}` (every API uses defaultScopes).",
      additionalProperties: {
        type: "array",
        minItems: 1,
        items: { type: "string", pattern: "^[\\x21\\x23-\\x2E\\x30-\\x5B\\x5D-\\x7E]{1,256}$" },
      },
    },
    defaultScopes: {
      type: "array",
      items: { type: "string", minLength: 1, maxLength: 256 },
      default: ["{apiId}"],
      description:
        'CLIENT_CREDENTIALS: scope names for an API absent from `scopes`; `{apiId}` is replaced by the API id. Default `["{apiId}"]`.',
    },
    createMissingScopes: {
      type: "boolean",
      default: true,
      description:
        "CLIENT_CREDENTIALS: add scopes the resource server lacks before creating or updating a client (read-modify-write of the server's scope list). When false a missing scope is a 422. Default true.",
    },
    tokenEndpoint: {
      type: "string",
      pattern: "^https?://.+",
      description:
        "CLIENT_CREDENTIALS: the token endpoint URL returned to developers in customCredentials. Default `https://<domain>/oauth2/token`, or, without `domain`, the user pool's custom or prefix domain (DescribeUserPool).",
    },
    domain: {
      type: "string",
      pattern: "^(https?://)?[A-Za-z0-9.-]+(:\\d+)?$",
      description:
        "CLIENT_CREDENTIALS: the user pool's domain (host), e.g. `auth.example.com` or `myprefix.auth.us-east-1.amazoncognito.com`.",
    },
  },
} as const;
