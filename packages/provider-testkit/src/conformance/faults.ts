/**
 * The `failure-rules` group: the rules of `core/src/provider.ts` ("Never an orphan") proven by faults the harness
 * arms in its fake (`options.faults`) — a create failing after an accepted write reports `partial` and deletes
 * nothing, a create whose answer is lost reports `outcomeUnknown`, an update adds before it removes.
 */
import { randomUUID } from "node:crypto";
import type { CredhookError } from "@credhook/core/errors";
import type {
  CredentialSearch,
  GatewayApi,
  OwnedResource,
  Provider,
  ProviderCredentialRef,
  ProviderUpdateInput,
} from "@credhook/core/provider";
import { compensateCreate } from "../test-helpers.js";
import {
  app,
  expectEqual,
  fail,
  rejection,
  skip,
  type ConformanceCase,
  type TypeSuite,
  updateInput,
} from "./harness.js";
import type { ArmFault, ConformanceTestContext } from "./options.js";

/** The `failure-rules` tests, in their order. */
export const failureRuleTests: ConformanceCase[] = [
  {
    group: "failure-rules",
    name: "a create failing after an accepted write reports `partial` and deletes nothing: core compensates",
    check: createFailingAfterWrite,
  },
  {
    group: "failure-rules",
    name: "a create whose answer is lost after the write reports `outcomeUnknown`, and core finds what it made",
    check: createAnswerLost,
  },
  {
    group: "failure-rules",
    name: "an update that swaps usage plans adds before it removes: a failing add leaves every plan it had",
    check: updateAddsBeforeRemoving,
  },
];

/** A create failing after an accepted write reports `partial` and deletes nothing: core compensates. */
async function createFailingAfterWrite(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options, credentialType } = s;
  const arm =
    options.faults?.createFailsAfterWrite ??
    skip(ctx, "no faults.createFailsAfterWrite hook: the suite cannot fail a create after its first write");
  const provider = await s.make(ctx);
  const { err, credentialId, before } = await failingCreate(
    s,
    ctx,
    provider,
    arm,
    "p",
    "create with a fault after its first write",
  );
  if (!err.partial)
    fail(
      `a create that failed after an accepted write threw without \`partial\` (${err.message}): core cannot compensate what it made`,
    );
  const found = await findMarked(provider, { credentialId, credentialType, app: app("p"), apis: options.apis });
  if (found.length === 0)
    fail(
      `the provider deleted what its failing create made (partial ${err.partial.nativeId} carries no mark any more): providers never clean up alone`,
    );
  await compensatedCleanly(s, provider, credentialId, "p", err, before);
  await provider.close?.();
}

/** A create whose answer is lost after the write reports `outcomeUnknown`, and core finds what it made. */
async function createAnswerLost(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options, credentialType } = s;
  const arm: ArmFault =
    options.faults?.createAnswerLost ??
    (() => "no faults.createAnswerLost hook: the suite cannot lose a create's answer");
  const provider = await s.make(ctx);
  if (provider.capabilities.writesLandLate === false) {
    await provider.close?.();
    skip(ctx, "the provider declares writesLandLate: false: no write of its lands unseen");
  }
  const { err, credentialId, before } = await failingCreate(s, ctx, provider, arm, "q", "create whose answer is lost");
  if (err.outcomeUnknown !== true)
    fail(
      `a create whose write was applied but whose answer was lost threw without \`outcomeUnknown: true\` (${err.message}): core would trust that nothing exists`,
    );
  await options.faults?.settled?.();
  const found = await findMarked(provider, { credentialId, credentialType, app: app("q"), apis: options.apis });
  if (found.length === 0 && !err.partial)
    fail("the create's write landed, but findByCredential does not find it and the error carries no `partial`");
  await compensatedCleanly(s, provider, credentialId, "q", err, before);
  await provider.close?.();
}

/** An update that swaps usage plans adds before it removes: a failing add leaves every plan it had. */
async function updateAddsBeforeRemoving(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options } = s;
  const arm =
    options.faults?.updateAddFails ??
    skip(ctx, "no faults.updateAddFails hook: the suite cannot fail the attaching of a usage plan");
  const inspect = options.inspect ?? skip(ctx, "no inspect hook: the suite cannot see the credential's usage plans");
  const from =
    options.apis.find((a) => a.usagePlans.length > 0) ?? skip(ctx, "no usage plan in options.apis to swap for addPlan");
  const removed = from.usagePlans[0]!;
  const provider = await s.make(ctx);
  const { ref } = await s.created(provider, "s");
  const had = (await inspect(ref)).usagePlans;
  if (!had) {
    await provider.revoke(ref);
    await provider.close?.();
    skip(ctx, "inspect reports no usagePlans: the suite cannot see what the credential holds");
  }
  const { apiId, planId } = options.addPlan;
  const desired: GatewayApi[] = options.apis.map((a) =>
    a.id === from.id ? { id: a.id, usagePlans: a.usagePlans.filter((p) => p !== removed) } : a,
  );
  const target = desired.find((a) => a.id === apiId);
  if (target) target.usagePlans = [...target.usagePlans, planId];
  else desired.push({ id: apiId, usagePlans: [planId] });
  const changes: ProviderUpdateInput["changes"] = desired.map((a) => {
    const prior = options.apis.find((p) => p.id === a.id);
    return {
      id: a.id,
      action: prior ? "NONE" : "ADDED",
      usagePlans: [
        ...a.usagePlans.map((p) => ({
          id: p,
          action: prior?.usagePlans.includes(p) ? ("NONE" as const) : ("ADDED" as const),
        })),
        ...(a.id === from.id ? [{ id: removed, action: "REMOVED" as const }] : []),
      ],
    };
  });
  await armed(s, ctx, provider, arm, ref);
  const err = await rejection(
    provider.update(updateInput(ref, options.apis, desired, changes)),
    "update whose usage-plan add fails",
  );
  const seen = await inspect(ref);
  if (!seen.live) fail(`the credential is not live after a failing update (${err.message})`);
  const lost = had.filter((p) => !(seen.usagePlans ?? []).includes(p));
  if (lost.length > 0)
    fail(
      `after an update whose add failed the credential lost ${JSON.stringify(lost)}: the provider removed before it added (never less access than before)`,
    );
  await options.faults?.settled?.();
  await provider.revoke({
    ...ref,
    resources: (err.partial?.resources as ProviderCredentialRef["resources"]) ?? ref.resources,
  });
  await provider.close?.();
}

/** Arms `arm`'s fault; a reason it returns ends the test as skipped (after revoking `made` and closing `provider`). */
async function armed(
  s: TypeSuite,
  ctx: ConformanceTestContext,
  provider: Provider,
  arm: ArmFault,
  made?: ProviderCredentialRef,
): Promise<void> {
  const reason = await arm(s.credentialType);
  if (typeof reason !== "string") return;
  if (made) await provider.revoke(made);
  await provider.close?.();
  skip(ctx, reason);
}

/** What carries `credentialId`'s mark: `findByCredential`, else `listOwned` filtered (as core falls back). */
async function findMarked(provider: Provider, search: CredentialSearch): Promise<OwnedResource[]> {
  if (provider.findByCredential) return provider.findByCredential(search);
  if (provider.listOwned) return (await provider.listOwned()).filter((r) => r.credentialId === search.credentialId);
  fail("neither findByCredential nor listOwned: core cannot find what a failed create left");
}

/**
 * Compensates a failed create as core does, then proves nothing is left:
 * nothing carries the credential's mark, and (with `listNativeIds`) the
 * gateway holds what it held `before`.
 */
async function compensatedCleanly(
  s: TypeSuite,
  provider: Provider,
  credentialId: string,
  suffix: string,
  err: CredhookError,
  before: string[] | undefined,
): Promise<void> {
  const { options, credentialType } = s;
  await options.faults?.settled?.();
  await compensateCreate(provider, app(suffix), credentialId, err, options.apis, credentialType);
  const left = await findMarked(provider, { credentialId, credentialType, app: app(suffix), apis: options.apis });
  if (left.length > 0)
    fail(`after core's compensation the failed create still left ${JSON.stringify(left.map((r) => r.nativeId))}`);
  if (options.listNativeIds && before) {
    const after = await options.listNativeIds();
    expectEqual([...after].sort(), [...before].sort(), "native credentials after a compensated create");
  }
}

/**
 * Arms `arm`'s fault, then makes a create of the suite's app `suffix` that must fail (`what` names it in a failure).
 * @returns its typed error, its credential id, and the gateway's native ids before it (with `listNativeIds`)
 */
async function failingCreate(
  s: TypeSuite,
  ctx: ConformanceTestContext,
  provider: Provider,
  arm: ArmFault,
  suffix: string,
  what: string,
): Promise<{ err: CredhookError; credentialId: string; before: string[] | undefined }> {
  const { options, credentialType } = s;
  const before = options.listNativeIds ? await options.listNativeIds() : undefined;
  const credentialId = randomUUID();
  await armed(s, ctx, provider, arm);
  const err = await rejection(
    provider.create({ credentialId, credentialType, app: app(suffix), apis: options.apis }),
    what,
  );
  return { err, credentialId, before };
}
