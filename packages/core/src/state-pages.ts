/**
 * Paged reads of a provider's state ({@link ProviderStateStore.listPage}): the bounds of a page that every store
 * computes alike ({@link statePageBounds}), and the walk a provider reads its state with ({@link statePages}).
 */
import type { JsonValue, ProviderStateStore, StatePage, StatePageQuery } from "./provider.js";
import { compareBytes, pageLimitOf, pagesOf } from "./store-pages.js";

/** The page size a provider's walk of its state reads ({@link statePages}' default). */
export const STATE_PAGE_LIMIT = 500;

/** The key range of one {@link ProviderStateStore.listPage} page: what a store's query reads. */
export interface StatePageBounds {
  /** Most entries in the page (checked). */
  limit: number;
  /** The range's lower bound: the prefix (inclusive) or the cursor (exclusive). */
  from: string;
  /** True when `from` is the prefix (`key >= from`), false when it is the cursor (`key > from`). */
  inclusive: boolean;
  /** The range's upper bound (exclusive): the first string after every key that starts with the prefix; absent for the prefix "" (no bound). */
  to: string | undefined;
}

/**
 * The key range of a page of `prefix`'s entries after `query.after`: a range of the state table's primary key, so
 * that a page reads its own rows only (a prefix's last page does not read the keys after the prefix's).
 * @throws ValidationError a limit that is not an integer from 1 to 1,000
 */
export function statePageBounds(prefix: string, query: StatePageQuery): StatePageBounds {
  const limit = pageLimitOf(query.limit, "state.listPage");
  const to = prefixEnd(prefix);
  // A cursor before the prefix (another walk's) starts at the prefix: the page still holds only the prefix's keys.
  return query.after !== undefined && compareBytes(query.after, prefix) >= 0
    ? { limit, from: query.after, inclusive: false, to }
    : { limit, from: prefix, inclusive: true, to };
}

/**
 * The first string after every string that starts with `prefix` (in UTF-8 byte order, which is code-point order):
 * the prefix with its last code point raised by one — a last code point that is the highest one dropped first.
 * Undefined when there is none (the prefix "" or only U+10FFFF).
 */
function prefixEnd(prefix: string): string | undefined {
  const points = [...prefix];
  while (points.length > 0) {
    const last = points.pop()!.codePointAt(0)!;
    if (last === 0x10ffff) continue;
    // U+D800–U+DFFF are not characters (no UTF-8 form): the one after U+D7FF is U+E000.
    return points.join("") + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
  }
  return undefined;
}

/**
 * A page of `rows` read for `bounds` (at most `bounds.limit + 1` rows in key order, values as stored): the first
 * `limit` entries, and `next` when a row beyond them shows that the walk goes on (no empty last page is read).
 */
export function statePageOf(rows: Array<{ key: string; value: JsonValue }>, bounds: StatePageBounds): StatePage {
  if (rows.length <= bounds.limit) return { entries: rows };
  const entries = rows.slice(0, bounds.limit);
  return { entries, next: entries.at(-1)!.key };
}

/**
 * The entries whose key starts with `prefix`, a page at a time in key order ({@link pagesOf}: each page read when
 * the one before has been consumed, one held): through {@link ProviderStateStore.listPage}, or, on a store without
 * it (a third party's), its whole {@link ProviderStateStore.list} as one page.
 * @param limit entries per page, 1 to 1,000 @default {@link STATE_PAGE_LIMIT}
 * @throws whatever the store throws reading a page
 */
export async function* statePages(
  state: ProviderStateStore,
  prefix: string,
  limit = STATE_PAGE_LIMIT,
): AsyncGenerator<StatePage["entries"]> {
  if (!state.listPage) {
    yield await state.list(prefix);
    return;
  }
  const listPage = state.listPage.bind(state);
  for await (const page of pagesOf((after) => listPage(prefix, { limit, ...(after !== undefined ? { after } : {}) })))
    yield page.entries;
}
