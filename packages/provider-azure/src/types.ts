/**
 * Types of the `azure` provider's options, derived from their one source, the JSON
 * Schema in `schema.ts` (each option's documentation is its `description` there).
 */
import type { OptionsOf, ResolvedOptionsOf } from "@credhook/core/provider";
import type { optionsSchema } from "./schema.js";

/** Options of the `azure` provider as written in YAML (`gateways.<name>.options`); see `schema.ts`. */
export type AzureProviderOptions = OptionsOf<typeof optionsSchema>;

/** {@link AzureProviderOptions} with every schema default applied. */
export type AzureProviderOptionsWithDefaults = ResolvedOptionsOf<typeof optionsSchema>;

/** How the provider authenticates to Azure Resource Manager (`credential`; see its description in `schema.ts`). */
export type AzureCredentialOption = NonNullable<AzureProviderOptions["credential"]>;

/** What `revoke` does to the credential's subscriptions. */
export type RevokeMode = AzureProviderOptionsWithDefaults["revokeMode"];

/** Who owns the subscriptions the provider creates. */
export type OwnerMode = AzureProviderOptionsWithDefaults["ownerMode"];
