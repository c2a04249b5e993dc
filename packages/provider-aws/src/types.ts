/**
 * Types of a `provider: aws` gateway: its options, derived from their one source, the
 * JSON Schema in `schema.ts` (each option's documentation is its `description` there),
 * and what the provider stores per credential.
 */
import type { OptionsOf, ResolvedOptionsOf } from "@credhook/core/provider";
import type { optionsSchema } from "./schema.js";

/** Options of one `provider: aws` gateway as written in YAML (the `options:` block of a `gateways:` entry); see `schema.ts`. */
export type AwsProviderOptions = OptionsOf<typeof optionsSchema>;

/** {@link AwsProviderOptions} with every schema default applied. */
export type AwsProviderOptionsWithDefaults = ResolvedOptionsOf<typeof optionsSchema>;

/** Client-side rate limits, in requests per second (`rateLimits`; see its description in `schema.ts`). */
export type RateLimitOptions = NonNullable<AwsProviderOptions["rateLimits"]>;

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
