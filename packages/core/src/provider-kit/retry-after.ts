/**
 * Reading the `Retry-After` an HTTP answer carries (RFC 9110 §10.2.3,
 * https://www.rfc-editor.org/rfc/rfc9110#section-10.2.3): either
 * `delay-seconds` (a non-negative number of seconds) or an `HTTP-date` after
 * which to retry. One reader for every provider.
 */

/**
 * Seconds to wait according to one `Retry-After` value.
 *
 * - `"120"` → 120; a decimal (`"1.5"`, sent by some services although the RFC
 *   says digits only) is read as it is;
 * - an HTTP-date (`"Wed, 21 Oct 2026 07:28:00 GMT"`) → the seconds from `nowMs`
 *   to that date, 0 when it has passed;
 * - absent, empty or unreadable → `undefined`.
 *
 * @param value the header's value (or a modelled field holding it)
 * @param nowMs the current time, ms since the epoch (injectable for tests)
 * @returns seconds (≥ 0, possibly fractional), or undefined
 */
export function parseRetryAfter(
  value: string | number | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "number") return Number.isFinite(value) ? Math.max(0, value) : undefined;
  const text = value.trim();
  if (text === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - nowMs) / 1000);
}

/**
 * Seconds to wait according to an answer's headers: `retry-after-ms` or
 * `x-ms-retry-after-ms` (milliseconds; Azure Resource Manager sends them,
 * https://learn.microsoft.com/azure/azure-resource-manager/management/request-limits-and-throttling)
 * when present and numeric, else `Retry-After` read by {@link parseRetryAfter}.
 *
 * @param get reads one header by its lower-case name (`Headers.get`, a record lookup …)
 * @param nowMs the current time, ms since the epoch (injectable for tests)
 * @returns seconds (≥ 0), or undefined when no header says
 */
export function retryAfterFromHeaders(
  get: (name: string) => string | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  for (const name of ["retry-after-ms", "x-ms-retry-after-ms"]) {
    const ms = get(name)?.trim();
    if (ms && /^\d+(\.\d+)?$/.test(ms)) return Number(ms) / 1000;
  }
  return parseRetryAfter(get("retry-after"), nowMs);
}
