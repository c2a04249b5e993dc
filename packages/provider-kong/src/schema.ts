/**
 * JSON Schema (draft 2020-12) of the `kong` provider's options (the `options:` block
 * of a `gateways:` entry with `provider: kong`): the one source of their type, their
 * defaults and their documentation.
 */

import type { OptionsOf, ResolvedOptionsOf } from "@credhook/core/provider";
import { restClientOptions, windowPlansOption } from "@credhook/core/provider-kit";
import { WINDOWS } from "./limits.js";

/** One branch of the `auth` option: a token (a secret) of `type`. */
function tokenAuth<const T extends string>(type: T, description: string) {
  const token = { type: "string", minLength: 1, writeOnly: true, description } as const;
  return {
    type: "object",
    additionalProperties: false,
    required: ["type", "token"],
    properties: { type: { const: type }, token },
  } as const;
}

/** The options schema core validates `gateways.<name>.options` with. */
export const optionsSchema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "credhook kong provider options",
  type: "object",
  additionalProperties: false,
  required: ["adminUrl"],
  properties: {
    adminUrl: {
      type: "string",
      pattern: "^https?://[^\\s/]+(/.*)?$",
      description:
        "Base URL of the Admin API, with the workspace when Kong Enterprise uses one: `http://kong-admin:8001`, `https://kong-admin.internal:8444/team-a`, or a Konnect control plane's `https://us.api.konghq.com/v2/control-planes/<control-plane id>/core-entities`.",
    },
    auth: {
      description:
        "How the provider authenticates to the Admin API. `none` (default): an Admin API reachable only from a trusted network. `rbac-token`: Kong Enterprise RBAC, the user's token in the `Kong-Admin-Token` header (write `${KONG_ADMIN_TOKEN}`, never the value). `bearer`: a Konnect personal or system access token in `Authorization: Bearer` (write `${KONNECT_TOKEN}`).",
      default: { type: "none" },
      oneOf: [
        { type: "object", additionalProperties: false, required: ["type"], properties: { type: { const: "none" } } },
        tokenAuth("rbac-token", "The RBAC user's token."),
        tokenAuth("bearer", "The Konnect access token."),
      ],
    },
    apiMap: {
      type: "object",
      additionalProperties: { type: "string", pattern: "^[^,/\\s]+$" },
      default: {},
      description:
        "Portal API id → the ACL group the consumer joins for it (the group an `acl` plugin on that API's service or route allows). Unmapped ids are used as they are. Default `{}` (identity).",
    },
    plans: windowPlansOption(
      WINDOWS,
      "Portal usage plan id → its limits, set on the consumer's `rate-limiting` plugin. A plan not listed here is unknown (422). With several plans, each window takes the largest limit of them. Kong's plugin requires second <= minute <= hour <= day <= month <= year wherever both are set (`kong/plugins/rate-limiting/schema.lua`, https://github.com/Kong/kong/blob/master/kong/plugins/rate-limiting/schema.lua): a plan that breaks it is a configuration error, and a request whose plans merge into limits that break it answers 422 (credhook warns of such pairs at start). Default `{}`: an app with no usage plan gets no rate-limiting plugin.",
    ),
    policy: {
      enum: ["local", "cluster", "redis"],
      default: "local",
      description:
        "The rate-limiting plugin's `policy` (where counters live). Konnect and DB-less/hybrid data planes need `local` or `redis`. Default `local`.",
    },
    usernamePrefix: {
      type: "string",
      pattern: "^[A-Za-z0-9_.-]{1,40}$",
      default: "credhook-",
      description:
        "Prefix of the consumer usernames the provider creates (`<prefix><gateway>-<credential id>`). Default `credhook-`.",
    },
    ...restClientOptions({
      call: "Admin API call",
      timeoutMs: 10000,
      rateLimit: {
        requests: 0,
        windowMs: 1000,
        description:
          "Client-side limit of Admin API calls: at most `requests` in any sliding window of `windowMs` (plus 50 ms for clock jitter), retries included; 0 requests: no limit. Self-hosted Kong does not throttle its Admin API; Konnect rate-limits its APIs per organisation and answers 429 with Retry-After (Konnect API reference, https://developer.konghq.com/api/): set it below your organisation's limit there. Default: no limit.",
      },
    }),
  },
} as const;

/** Options of the `kong` provider as written in YAML (`gateways.<name>.options`). */
export type KongProviderOptions = OptionsOf<typeof optionsSchema>;

/** {@link KongProviderOptions} with every schema default applied: what the provider is built from. */
export type KongProviderOptionsWithDefaults = ResolvedOptionsOf<typeof optionsSchema>;
