/**
 * JSON Schema (draft 2020-12) of the `options` block of a `provider: aws`
 * gateway; mirrors {@link import("./types.js").AwsProviderOptions}. Unknown
 * options are rejected (a typo must not silently fall back to a default).
 */
const url = { type: "string", pattern: "^(https?://.+)?$", description: "http(s) URL, or empty for the SDK default" };
const rps = { type: "number", exclusiveMinimum: 0, maximum: 1000 };

/** The options schema core validates `gateways.<name>.options` with. */
export const optionsSchema: Record<string, unknown> = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "credhook provider-aws options",
  type: "object",
  additionalProperties: false,
  required: ["region"],
  properties: {
    region: { type: "string", pattern: "^[a-z]{2}(-[a-z]+)+-\\d+$", description: "AWS region, e.g. us-east-1" },
    endpoint: url,
    endpoints: {
      type: "object",
      additionalProperties: false,
      properties: { apiGateway: url, cognito: url, sts: url },
    },
    roleArn: { type: "string", pattern: "^arn:aws[a-z-]*:iam::\\d{12}:role/.+$" },
    externalId: { type: "string", minLength: 2, maxLength: 1224 },
    roleSessionName: { type: "string", pattern: "^[\\w+=,.@-]{2,64}$" },
    credentials: {
      type: "object",
      additionalProperties: false,
      required: ["accessKeyId", "secretAccessKey"],
      properties: {
        accessKeyId: { type: "string", minLength: 1 },
        secretAccessKey: { type: "string", minLength: 1 },
        sessionToken: { type: "string" },
      },
    },
    timeoutMs: { type: "integer", minimum: 100, maximum: 120000, default: 10000 },
    maxAttempts: { type: "integer", minimum: 1, maximum: 10, default: 4 },
    maxQueueWaitMs: { type: "integer", minimum: 0, maximum: 600000, default: 30000 },
    healthCacheMs: { type: "integer", minimum: 0, maximum: 3600000, default: 15000 },
    rateLimits: {
      type: "object",
      additionalProperties: false,
      properties: {
        createApiKey: rps,
        deleteApiKey: rps,
        apiGateway: rps,
        apiGatewayBurst: { type: "integer", minimum: 1, maximum: 1000 },
        cognitoPerOperation: rps,
        windowMarginMs: { type: "integer", minimum: 0, maximum: 5000, default: 100 },
      },
    },
    revokeMode: { enum: ["delete", "disable"], default: "delete" },
    namePrefix: { type: "string", pattern: "^[\\w.@=+-]{1,32}$", default: "credhook" },
    userPoolId: { type: "string", pattern: "^[\\w-]+_[0-9a-zA-Z]+$" },
    resourceServer: { type: "string", minLength: 1, maxLength: 256, pattern: "^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$" },
    scopes: {
      type: "object",
      additionalProperties: {
        type: "array",
        minItems: 1,
        items: { type: "string", pattern: "^[\\x21\\x23-\\x2E\\x30-\\x5B\\x5D-\\x7E]{1,256}$" },
      },
    },
    defaultScopes: { type: "array", items: { type: "string", minLength: 1, maxLength: 256 }, default: ["{apiId}"] },
    createMissingScopes: { type: "boolean", default: true },
    tokenEndpoint: { type: "string", pattern: "^https?://.+" },
    domain: { type: "string", pattern: "^(https?://)?[A-Za-z0-9.-]+(:\\d+)?$" },
  },
};
