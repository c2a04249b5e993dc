/**
 * JSON Schema (draft 2020-12) of the `options:` block of a `provider: local` gateway:
 * the one source of the options' type ({@link import("./types.js").LocalProviderOptions},
 * derived with `FromSchema`), their defaults (core's `defineProvider` applies them) and
 * their documentation (each `description`, which editors show from
 * the generated webhook.config.schema.json).
 */

/** A limit: a whole number of requests, at least 1. */
const positiveInt = <const T extends string>(description: T) => ({ type: "integer", minimum: 1, description }) as const;

/** JSON Schema of the `options:` block of a `provider: local` gateway. */
export const optionsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    usagePlans: {
      type: "array",
      uniqueItems: true,
      description:
        "Usage plans this gateway knows: plan ids, or `{ id, rate, quota }` objects whose limits the embedded gateway enforces per credential (429 + `Retry-After` beyond them). When set, a request naming any other plan is answered 422 (InvalidReference). Default: unset, every plan id is accepted and none is limited.",
      items: {
        oneOf: [
          { type: "string", minLength: 1, description: "A usage plan id, as the portal sends it, without limits." },
          {
            type: "object",
            additionalProperties: false,
            required: ["id"],
            description:
              "A usage plan with limits, enforced per credential by the embedded gateway's key check and token endpoint. A plan without limits admits every request.",
            properties: {
              id: { type: "string", minLength: 1, description: "Usage plan id, as the portal sends it." },
              rate: {
                type: "object",
                additionalProperties: false,
                minProperties: 1,
                description:
                  "Request rate, in fixed windows that start at a credential's first request (rate-limiter-flexible): `perSecond` requests per 1 s window, `perMinute` per 60 s window. Both may be set; both apply.",
                properties: {
                  perSecond: positiveInt("Requests per 1 s window."),
                  perMinute: positiveInt("Requests per 60 s window."),
                },
              },
              quota: {
                type: "object",
                additionalProperties: false,
                minProperties: 1,
                description:
                  "Request quota per calendar period in UTC: `perDay` resets at 00:00 UTC, `perMonth` at 00:00 UTC on the 1st. Both may be set; both apply.",
                properties: {
                  perDay: positiveInt("Requests per UTC day."),
                  perMonth: positiveInt("Requests per UTC calendar month."),
                },
              },
            },
          },
        ],
      },
    },
    apis: {
      type: "array",
      items: { type: "string", minLength: 1 },
      uniqueItems: true,
      description:
        "API ids this gateway knows. When set, any other id is answered 422. Default: unset, every id is accepted.",
    },
    revokeMode: {
      enum: ["delete", "disable"],
      default: "delete",
      description: "`delete` removes the credential on revoke; `disable` keeps it, disabled. Default `delete`.",
    },
    secretLength: {
      type: "integer",
      minimum: 32,
      maximum: 128,
      default: 40,
      description: "Length of generated secrets, in base62 characters (≈ 5.95 bits each). Default 40.",
    },
    tokenUrl: {
      type: "string",
      format: "uri",
      description:
        "Token endpoint URL returned in customCredentials.tokenUrl of CLIENT_CREDENTIALS credentials. Default: the embedded gateway's token endpoint when `embeddedGateway:` is configured, else none.",
    },
  },
} as const;
