/**
 * The `ownership` group (docs/architecture.md, "Never an orphan, never someone else's resource"): a revoke naming
 * another credential's id, a resource someone else made (`createForeign`) and another gateway on the same cloud
 * (`otherGateway`) — none of them ever touches what is not its own.
 */
import { randomUUID } from "node:crypto";
import type { ProviderCredentialRef } from "@credhook/core/provider";
import {
  app,
  expectTyped,
  fail,
  revokeOutcome,
  skip,
  type ConformanceCase,
  type TypeSuite,
  unchanged,
  updateInput,
} from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** The `ownership` tests, in their order. */
export const ownershipTests: ConformanceCase[] = [
  {
    group: "ownership",
    name: "revoke naming another credential id leaves the resource alone ('not-owned')",
    check: revokeOfOtherCredentialId,
  },
  {
    group: "ownership",
    name: "a resource someone else created survives a revoke and an update of its id",
    check: foreignResourceSurvives,
  },
  {
    group: "ownership",
    name: "another gateway on the same cloud never revokes or updates this gateway's credential",
    check: otherGatewayKeepsOff,
  },
];

/** Revoke naming another credential id leaves the resource alone ('not-owned'). */
async function revokeOfOtherCredentialId(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options } = s;
  const provider = await s.make(ctx);
  const { ref } = await s.created(provider, "c");
  const outcome = await revokeOutcome(provider, { ...ref, credentialId: randomUUID() });
  if (outcome !== "not-owned") fail(`revoke with another credential's id reported '${outcome}', expected 'not-owned'`);
  if (options.inspect && !(await options.inspect(ref)).live)
    fail("the credential was revoked through another credential's id");
  await provider.revoke(ref);
  await provider.close?.();
}

/** A resource someone else created survives a revoke and an update of its id. */
async function foreignResourceSurvives(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options, credentialType } = s;
  const createForeign =
    options.createForeign ??
    skip(ctx, "no createForeign hook: the suite cannot make a resource outside credhook on this gateway");
  const provider = await s.make(ctx);
  const foreign = await createForeign(credentialType);
  for (const credentialId of ["", randomUUID()]) {
    const ref: ProviderCredentialRef = {
      credentialId,
      credentialType,
      nativeId: foreign.nativeId,
      resources: {},
      app: app("e"),
    };
    const outcome = await revokeOutcome(provider, ref);
    if (outcome === "revoked") fail(`revoke of a foreign resource (credentialId '${credentialId}') reported 'revoked'`);
    if (!(await foreign.exists()))
      fail(`revoke of a foreign resource (credentialId '${credentialId}') removed or changed it`);
    await expectTyped(
      provider.update(updateInput(ref, options.apis, options.apis, unchanged(options.apis))),
      404,
      "update of a foreign resource",
    );
    if (!(await foreign.exists())) fail("update of a foreign resource changed it");
  }
  await provider.close?.();
}

/** Another gateway on the same cloud never revokes or updates this gateway's credential. */
async function otherGatewayKeepsOff(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options, credentialType } = s;
  const otherGateway =
    options.otherGateway ??
    skip(ctx, "no otherGateway hook: the suite cannot build a second gateway on the same cloud");
  const provider = await s.make(ctx);
  const other = await otherGateway(credentialType);
  const { ref } = await s.created(provider, "w");
  for (const credentialId of ["", ref.credentialId]) {
    const outcome = await revokeOutcome(other, { ...ref, credentialId, resources: {} });
    if (outcome === "revoked") fail(`another gateway's revoke (credentialId '${credentialId}') reported 'revoked'`);
    if (options.inspect && !(await options.inspect(ref)).live)
      fail("another gateway revoked this gateway's credential");
  }
  await expectTyped(
    other.update(
      updateInput({ ...ref, credentialId: "", resources: {} }, options.apis, options.apis, unchanged(options.apis)),
    ),
    404,
    "another gateway's update",
  );
  if (other.findByCredential) {
    const seen = await s.findFor(other, ref);
    if (seen.length > 0)
      fail(`another gateway's findByCredential returned this gateway's ${JSON.stringify(seen.map((r) => r.nativeId))}`);
  }
  await provider.revoke(ref);
  await other.close?.();
  await provider.close?.();
}
