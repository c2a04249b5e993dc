/**
 * Types of a `provider: gcp` gateway's options, derived from their one source, the
 * JSON Schema in `schema.ts` (each option's documentation is its `description` there).
 */
import type { OptionsOf, ResolvedOptionsOf } from "@credhook/core/provider";
import type { optionsSchema } from "./schema.js";

/** Options of the `gcp` provider as written in YAML (`gateways.<name>.options`); see `schema.ts`. */
export type GcpProviderOptions = OptionsOf<typeof optionsSchema>;

/** {@link GcpProviderOptions} with every schema default applied. */
export type GcpProviderOptionsWithDefaults = ResolvedOptionsOf<typeof optionsSchema>;

/** How the provider authenticates to Google (`credentials`; see its description in `schema.ts`). */
export type GcpCredentialsOption = NonNullable<GcpProviderOptions["credentials"]>;

/** Client-side rate limiting (`rateLimit`; see its description in `schema.ts`). */
export type GcpRateLimitOptions = NonNullable<GcpProviderOptions["rateLimit"]>;

/** Retries (`retry`; see its description in `schema.ts`). */
export type GcpRetryOptions = NonNullable<GcpProviderOptions["retry"]>;
