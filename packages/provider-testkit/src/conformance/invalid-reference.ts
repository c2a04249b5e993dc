/**
 * The `invalid-reference` group: an unknown usage plan is InvalidReference (422) at create — what the create left
 * reported in `partial`, so that core's compensation leaves nothing — and at update.
 */
import { randomUUID } from "node:crypto";
import type { GatewayApi } from "@credhook/core/provider";
import { compensateCreate } from "../test-helpers.js";
import {
  app,
  expectEqual,
  expectTyped,
  fail,
  rejection,
  skip,
  type ConformanceCase,
  type TypeSuite,
  updateInput,
} from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** Why both tests are skipped without `options.unknownPlan`. */
const noUnknownPlan = "no unknownPlan: the gateway has no notion of a usage plan it does not know";

/** The `invalid-reference` tests, in their order. */
export const invalidReferenceTests: ConformanceCase[] = [
  {
    group: "invalid-reference",
    name: "create with an unknown usage plan throws InvalidReference (422) and reports whatever it left behind",
    check: createWithUnknownPlan,
  },
  {
    group: "invalid-reference",
    name: "update ADDing an unknown usage plan throws InvalidReference (422)",
    check: updateWithUnknownPlan,
  },
];

/** Create with an unknown usage plan throws InvalidReference (422) and reports whatever it left behind. */
async function createWithUnknownPlan(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options, credentialType } = s;
  const unknown = options.unknownPlan ?? skip(ctx, noUnknownPlan);
  const provider = await s.make(ctx);
  const before = options.listNativeIds ? await options.listNativeIds() : undefined;
  const apis: GatewayApi[] = [
    ...options.apis.filter((a) => a.id !== unknown.apiId),
    { id: unknown.apiId, usagePlans: [unknown.planId] },
  ];
  const credentialId = randomUUID();
  const err = await rejection(
    provider.create({ credentialId, credentialType, app: app("i"), apis }),
    "create with an unknown usage plan",
  );
  if (err.status !== 422)
    fail(`create with an unknown usage plan: expected status 422, got ${err.status} (${err.message})`);
  // Providers never clean up alone: what the failed create made is reported, and core (here: the suite) revokes it.
  await compensateCreate(provider, app("i"), credentialId, err, apis, credentialType);
  if (options.listNativeIds && before) {
    const after = await options.listNativeIds();
    expectEqual([...after].sort(), [...before].sort(), "native credentials after a failed create");
  }
  await provider.close?.();
}

/** Update ADDing an unknown usage plan throws InvalidReference (422). */
async function updateWithUnknownPlan(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options } = s;
  const unknown = options.unknownPlan ?? skip(ctx, noUnknownPlan);
  const provider = await s.make(ctx);
  const { ref } = await s.created(provider, "j");
  const desired: GatewayApi[] = [
    ...options.apis.filter((a) => a.id !== unknown.apiId),
    { id: unknown.apiId, usagePlans: [unknown.planId] },
  ];
  await expectTyped(
    provider.update(
      updateInput(ref, options.apis, desired, [
        { id: unknown.apiId, action: "ADDED", usagePlans: [{ id: unknown.planId, action: "ADDED" }] },
      ]),
    ),
    422,
    "update with an unknown usage plan",
  );
  await provider.revoke(ref);
  await provider.close?.();
}
