/**
 * The switch (`setEnabled`, part of the `revoke` group): off and on again for the credential types
 * `capabilities.disables` names, idempotent, `not-owned` for another credential's id, `gone` after a revoke.
 */
import { randomUUID } from "node:crypto";
import { expectEqual, fail, revokeOutcome, skip, type ConformanceCase, type TypeSuite } from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** The `setEnabled` (group `revoke`) tests, in their order. */
export const disableTests: ConformanceCase[] = [
  {
    group: "revoke",
    name: "setEnabled turns a credential off and on where declared; another credential's id is 'not-owned'",
    check: setEnabledOffAndOn,
  },
];

/** SetEnabled turns a credential off and on where declared; another credential's id is 'not-owned'. */
async function setEnabledOffAndOn(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { credentialType } = s;
  const provider = await s.make(ctx);
  if (!(provider.capabilities.disables ?? []).includes(credentialType))
    skip(ctx, `capabilities.disables does not name ${credentialType}: the gateway has no switch`);
  if (!provider.setEnabled) fail(`capabilities.disables names ${credentialType} but setEnabled is missing`);
  const { ref } = await s.created(provider, "d");
  expectEqual(await provider.setEnabled(ref, false), "revoked", "setEnabled(false)");
  expectEqual(await provider.setEnabled(ref, false), "revoked", "setEnabled(false) again (idempotent)");
  expectEqual(
    await provider.setEnabled({ ...ref, credentialId: randomUUID() }, true),
    "not-owned",
    "setEnabled naming another credential id",
  );
  expectEqual(await provider.setEnabled(ref, true), "revoked", "setEnabled(true)");
  expectEqual(await revokeOutcome(provider, ref), "revoked", "revoke of an enabled-again credential");
  expectEqual(await provider.setEnabled(ref, false), "gone", "setEnabled after revoke");
  await provider.close?.();
}
