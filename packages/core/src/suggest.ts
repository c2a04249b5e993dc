/**
 * "Did you mean …?" for names an operator types: an unknown config key, a provider or store name, a gateway
 * a route names, an enum value. The closest known name by Levenshtein distance (fastest-levenshtein:
 * https://github.com/ka-weihe/fastest-levenshtein), compared case-insensitively, when it is close enough to be a typo.
 */
import { distance } from "fastest-levenshtein";

/**
 * Most edits (insertions, deletions, substitutions) between a typed name of `length` characters and a name
 * suggested for it: a third of the length, at least 2 (a swap of two letters, `prot` for `port`, is 2 edits),
 * and always fewer than the length (a 2-letter name is never "corrected" into an unrelated one).
 */
function maxEdits(length: number): number {
  return Math.min(Math.max(2, Math.floor(length / 3)), length - 1);
}

/**
 * The name of `known` closest to `input`, when it is close enough to be what was meant: the smallest
 * Levenshtein distance between the lower-cased names (`AWS` → `aws` is 0), at most {@link maxEdits} of
 * `input`'s length; the first of `known` on a tie.
 * @param input the name as typed
 * @param known the names that exist
 * @returns the suggestion, or undefined when no known name is that close (or `input` is one of `known`)
 */
export function closestName(input: string, known: Iterable<string>): string | undefined {
  const typed = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = maxEdits(input.length) + 1;
  for (const name of known) {
    if (name === input) return undefined;
    const d = distance(typed, name.toLowerCase());
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * ` (did you mean 'port'?)` for {@link closestName} of `input` in `known`, or "" when there is none: the tail
 * of a message that names what was typed.
 */
export function didYouMean(input: string, known: Iterable<string>): string {
  const name = closestName(input, known);
  return name === undefined ? "" : ` (did you mean '${name}'?)`;
}
