/**
 * Secret redaction for text that leaves a provider (error messages, logged
 * causes). One rule for every provider: every value the caller marks secret is
 * replaced, whatever its length.
 */

/** What a redacted secret is replaced with. */
export const REDACTED = "***";

/**
 * Replaces every occurrence of each secret in `text` with {@link REDACTED}.
 * Every non-empty value is redacted, whatever its length; `undefined`, `null`
 * and empty strings are ignored. Longer secrets are replaced first, so a secret
 * that contains another is not left half visible.
 *
 * @param text the text to clean (an SDK's message, a response body …)
 * @param secrets the values that must not appear (an imported key, a client secret …)
 * @returns `text` without any of the secrets
 */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | null | undefined>): string {
  const values = secrets
    .filter((s): s is string => typeof s === "string" && s.length > 0)
    .sort((a, b) => b.length - a.length);
  let out = text;
  for (const s of values) out = out.split(s).join(REDACTED);
  return out;
}

/** True when `text` contains any of the (non-empty) secrets. */
export function containsSecret(text: string, secrets: ReadonlyArray<string | null | undefined>): boolean {
  return secrets.some((s) => typeof s === "string" && s.length > 0 && text.includes(s));
}
