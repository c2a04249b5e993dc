/**
 * The `paging` group: with the fake's lists paged small (`options.paging`), `findByCredential` and `listOwned`
 * find what lies beyond the first page.
 */
import type { ProviderCredentialRef } from "@credhook/core/provider";
import { fail, skip, type ConformanceCase, type TypeSuite } from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** The `paging` tests, in their order. */
export const pagingTests: ConformanceCase[] = [
  {
    group: "paging",
    name: "findByCredential and listOwned find credentials beyond a list's first page",
    check: findsBeyondFirstPage,
  },
];

/** FindByCredential and listOwned find credentials beyond a list's first page. */
async function findsBeyondFirstPage(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options } = s;
  const { pageSize } =
    options.paging ?? skip(ctx, "no paging option: the harness does not page the fake's lists small");
  const provider = await s.make(ctx);
  if (!provider.findByCredential && !provider.listOwned) {
    await provider.close?.();
    fail("neither findByCredential nor listOwned: core cannot find a credential by its mark");
  }
  const refs: ProviderCredentialRef[] = [];
  for (let i = 0; i < 2 * pageSize + 1; i++) refs.push((await s.created(provider, `pg${i}`)).ref);
  if (provider.findByCredential) {
    for (const ref of refs) {
      const found = await s.findFor(provider, ref);
      if (!found.some((r) => r.nativeId === ref.nativeId))
        fail(
          `findByCredential did not find ${ref.nativeId}, one of ${refs.length} credentials in lists of pages of ${pageSize}: it reads only part of the pages`,
        );
    }
  }
  if (provider.listOwned) {
    const owned = await provider.listOwned();
    const missing = refs.filter(
      (ref) => !owned.some((r) => r.nativeId === ref.nativeId || r.credentialId === ref.credentialId),
    );
    if (missing.length > 0)
      fail(
        `listOwned misses ${missing.length} of ${refs.length} credentials in lists of pages of ${pageSize}: it reads only part of the pages`,
      );
  }
  for (const ref of refs) await provider.revoke(ref);
  await provider.close?.();
}
