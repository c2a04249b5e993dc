/**
 * The `revoke` group: revoke and revoke again, `revoked` then `gone`, `gone` for what never existed, and an update
 * after a revoke is NotFound (404).
 */
import { randomUUID } from "node:crypto";
import {
  app,
  expectTyped,
  fail,
  revokeOutcome,
  type ConformanceCase,
  type TypeSuite,
  unchanged,
  updateInput,
} from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** The `revoke` tests, in their order. */
export const revokeTests: ConformanceCase[] = [
  { group: "revoke", name: "revoke removes the credential, and revoking again succeeds", check: revokeThenRevokeAgain },
  { group: "revoke", name: "revoke of a credential that never existed succeeds ('gone')", check: revokeOfNeverExisted },
  { group: "revoke", name: "update after revoke throws NotFound (404)", check: updateAfterRevoke },
  {
    group: "revoke",
    name: "revoke reports 'gone' for a credential that is gone, and 'revoked' before",
    check: revokeOutcomes,
  },
];

/** Revoke removes the credential, and revoking again succeeds. */
async function revokeThenRevokeAgain(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options } = s;
  const provider = await s.make(ctx);
  const { ref } = await s.created(provider, "x");
  await provider.revoke(ref);
  if (options.inspect) {
    const seen = await options.inspect(ref);
    if (seen.live) fail("credential still live after revoke");
  }
  await provider.revoke(ref);
  await provider.close?.();
}

/** Revoke of a credential that never existed succeeds ('gone'). */
async function revokeOfNeverExisted(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { credentialType } = s;
  const provider = await s.make(ctx);
  const outcome = await revokeOutcome(provider, {
    credentialId: randomUUID(),
    credentialType,
    nativeId: "doesnotexist0",
    resources: {},
    app: app("z"),
  });
  if (outcome !== "gone") fail(`revoke of a credential that never existed reported '${outcome}', expected 'gone'`);
  await provider.close?.();
}

/** Update after revoke throws NotFound (404). */
async function updateAfterRevoke(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options } = s;
  const provider = await s.make(ctx);
  const { ref } = await s.created(provider, "g");
  await provider.revoke(ref);
  await expectTyped(
    provider.update(updateInput(ref, options.apis, options.apis, unchanged(options.apis))),
    404,
    "update after revoke",
  );
  await provider.close?.();
}

/** Revoke reports 'gone' for a credential that is gone, and 'revoked' before. */
async function revokeOutcomes(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const provider = await s.make(ctx);
  const { ref } = await s.created(provider, "o");
  const first = await revokeOutcome(provider, ref);
  if (first !== "revoked") fail(`first revoke reported '${first}', expected 'revoked'`);
  const second = await revokeOutcome(provider, ref);
  if (second !== "gone") fail(`second revoke reported '${second}', expected 'gone'`);
  await provider.close?.();
}
