/**
 * The `update` group: ADDED, REMOVED and NONE usage-plan changes (the cloud's plan set compared after each, with
 * `inspect`), and a renamed app.
 */
import type { GatewayApi, ProviderUpdateInput } from "@credhook/core/provider";
import { expectEqual, fail, plansOf, type ConformanceCase, type TypeSuite, unchanged, updateInput } from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** The `update` tests, in their order. */
export const updateTests: ConformanceCase[] = [
  {
    group: "update",
    name: "update applies ADDED, then REMOVED, then NONE to the usage-plan set",
    check: updateAppliesPlanChanges,
  },
  { group: "update", name: "update of a renamed app succeeds", check: updateOfRenamedApp },
];

/** Update applies ADDED, then REMOVED, then NONE to the usage-plan set. */
async function updateAppliesPlanChanges(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options } = s;
  const provider = await s.make(ctx);
  const { ref } = await s.created(provider, "u");
  const { apiId, planId } = options.addPlan;
  const before = options.apis;
  const hasApi = before.some((a) => a.id === apiId);
  const withPlan: GatewayApi[] = hasApi
    ? before.map((a) => (a.id === apiId ? { id: a.id, usagePlans: [...a.usagePlans, planId] } : a))
    : [...before, { id: apiId, usagePlans: [planId] }];

  // ADDED
  const addChanges = unchanged(before).filter((c) => c.id !== apiId);
  const apiBefore = before.find((a) => a.id === apiId);
  addChanges.push({
    id: apiId,
    action: hasApi ? "NONE" : "ADDED",
    usagePlans: [
      ...(apiBefore?.usagePlans ?? []).map((p) => ({ id: p, action: "NONE" as const })),
      { id: planId, action: "ADDED" as const },
    ],
  });
  let res = await provider.update(updateInput(ref, before, withPlan, addChanges));
  ref.resources = res.resources;
  if (options.inspect) {
    const seen = await options.inspect(ref);
    if (!seen.live) fail("credential not live after update ADDED");
    if (seen.usagePlans) expectEqual([...seen.usagePlans].sort(), plansOf(withPlan), "usage plans after ADDED");
  }

  // REMOVED
  const removeChanges: ProviderUpdateInput["changes"] = addChanges.map((c) =>
    c.id === apiId
      ? {
          ...c,
          action: "NONE" as const,
          usagePlans: c.usagePlans.map((p) =>
            p.id === planId ? { id: p.id, action: "REMOVED" as const } : { id: p.id, action: "NONE" as const },
          ),
        }
      : c,
  );
  res = await provider.update(updateInput(ref, withPlan, before, removeChanges));
  ref.resources = res.resources;
  if (options.inspect) {
    const seen = await options.inspect(ref);
    if (seen.usagePlans) expectEqual([...seen.usagePlans].sort(), plansOf(before), "usage plans after REMOVED");
  }

  // NONE: nothing changes, and it succeeds
  res = await provider.update(updateInput(ref, before, before, unchanged(before)));
  ref.resources = res.resources;
  if (options.inspect) {
    const seen = await options.inspect(ref);
    if (!seen.live) fail("credential not live after update NONE");
    if (seen.usagePlans) expectEqual([...seen.usagePlans].sort(), plansOf(before), "usage plans after NONE");
  }
  await provider.revoke(ref);
  await provider.close?.();
}

/** Update of a renamed app succeeds. */
async function updateOfRenamedApp(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options } = s;
  const provider = await s.make(ctx);
  const { ref } = await s.created(provider, "n");
  const renamed = { ...ref, app: { ...ref.app, appName: `${ref.app.appName} Renamed` } };
  const res = await provider.update({
    ...renamed,
    previous: options.apis,
    desired: options.apis,
    changes: unchanged(options.apis),
    previousAppName: ref.app.appName,
  });
  await provider.revoke({ ...renamed, resources: res.resources });
  await provider.close?.();
}
