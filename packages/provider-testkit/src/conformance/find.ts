/**
 * The `find` group: `findByCredential` finds what a create made by the credential id alone, nothing for another
 * id, nothing after a revoke.
 */
import { randomUUID } from "node:crypto";
import { fail, type ConformanceCase, type TypeSuite } from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** The `find` tests, in their order. */
export const findTests: ConformanceCase[] = [
  {
    group: "find",
    name: "findByCredential finds what create made by the credential id alone, and nothing after revoke",
    check: findByCredentialId,
  },
];

/** FindByCredential finds what create made by the credential id alone, and nothing after revoke. */
async function findByCredentialId(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const provider = await s.make(ctx);
  if (!provider.findByCredential)
    fail("findByCredential is missing: core cannot find a create whose outcome is unknown");
  const { ref } = await s.created(provider, "f");
  const found = await s.findFor(provider, ref);
  if (!found.some((r) => r.nativeId === ref.nativeId))
    fail(`findByCredential did not return ${ref.nativeId} (got ${JSON.stringify(found.map((r) => r.nativeId))})`);
  for (const r of found)
    if (r.credentialId !== undefined && r.credentialId !== ref.credentialId)
      fail(`findByCredential returned another credential's resource ${r.nativeId}`);
  const other = await s.findFor(provider, ref, randomUUID());
  if (other.length > 0)
    fail(`findByCredential of an unknown credential id returned ${JSON.stringify(other.map((r) => r.nativeId))}`);
  for (const r of found)
    await provider.revoke({
      ...ref,
      nativeId: r.nativeId,
      resources: r.nativeId === ref.nativeId ? ref.resources : {},
    });
  const after = await s.findFor(provider, ref);
  if (after.length > 0)
    fail(`findByCredential after revoke still returned ${JSON.stringify(after.map((r) => r.nativeId))}`);
  await provider.close?.();
}
