/** API_KEY update: ADDED / REMOVED / NONE (with drift repair), idempotence, unknown plans, rename. */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { GatewayApi, Provider, ProviderCredentialRef, ProviderUpdateInput } from "@credhook/core/provider";
import type { AwsFake } from "@credhook/fakes/aws";
import { createCredential, makeProvider, seededFake, type Seed } from "./helpers.js";

let fake: AwsFake;
let seed: Seed;
let provider: Provider;
let ref: ProviderCredentialRef;
let base: GatewayApi[];

beforeEach(async () => {
  ({ fake, seed } = await seededFake());
  provider = await makeProvider(fake, seed, "API_KEY");
  base = [
    { id: seed.apiA, usagePlans: [seed.planA] },
    { id: seed.apiB, usagePlans: [seed.planB] },
  ];
  ({ ref } = await createCredential(provider, "API_KEY", base));
});
afterEach(async () => {
  await provider.close?.();
  await fake.close();
});

const none = (apis: GatewayApi[]): ProviderUpdateInput["changes"] =>
  apis.map((a) => ({ id: a.id, action: "NONE", usagePlans: a.usagePlans.map((p) => ({ id: p, action: "NONE" })) }));

function input(
  previous: GatewayApi[],
  desired: GatewayApi[],
  changes: ProviderUpdateInput["changes"],
  extra: Partial<ProviderUpdateInput> = {},
): ProviderUpdateInput {
  return { ...ref, previous, desired, changes, ...extra };
}

describe("API_KEY update", () => {
  it("ADDED attaches the new API's plan; REMOVED detaches it", async () => {
    const withC = [...base, { id: seed.apiC, usagePlans: [seed.planC] }];
    await provider.update(
      input(base, withC, [
        ...none(base),
        { id: seed.apiC, action: "ADDED", usagePlans: [{ id: seed.planC, action: "ADDED" }] },
      ]),
    );
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([seed.planA, seed.planB, seed.planC].sort());
    const res = await provider.update(
      input(withC, base, [
        ...none(base),
        { id: seed.apiC, action: "REMOVED", usagePlans: [{ id: seed.planC, action: "REMOVED" }] },
      ]),
    );
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([seed.planA, seed.planB].sort());
    expect(res.resources.usagePlans).toEqual([seed.planA, seed.planB].sort());
  });

  it("ADDED of a plan already attached and REMOVED of a plan already detached both succeed", async () => {
    await provider.update(
      input(base, base, [
        { id: seed.apiA, action: "NONE", usagePlans: [{ id: seed.planA, action: "ADDED" }] },
        ...none(base).slice(1),
      ]),
    );
    fake.apiGateway.detachKey(seed.planB, ref.nativeId);
    const desired = [base[0]!, { id: seed.apiB, usagePlans: [] }];
    await provider.update(
      input(base, desired, [
        none(base)[0]!,
        { id: seed.apiB, action: "NONE", usagePlans: [{ id: seed.planB, action: "REMOVED" }] },
      ]),
    );
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([seed.planA]);
  });

  it("NONE re-attaches a plan the key was removed from behind credhook's back (drift repair)", async () => {
    fake.apiGateway.detachKey(seed.planA, ref.nativeId);
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([seed.planB]);
    await provider.update(input(base, base, none(base)));
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([seed.planA, seed.planB].sort());
  });

  it("NONE with no drift only reads (no attach call)", async () => {
    fake.faults.resetStats();
    await provider.update(input(base, base, none(base)));
    expect(fake.stats().calls.CreateUsagePlanKey).toBeUndefined();
    expect(fake.stats().calls.GetUsagePlanKey).toBe(2);
  });

  it("moves the key between two plans of one API stage (detach before attach)", async () => {
    const desired = [{ id: seed.apiA, usagePlans: [seed.planA2] }, base[1]!];
    await provider.update(
      input(base, desired, [
        {
          id: seed.apiA,
          action: "NONE",
          usagePlans: [
            { id: seed.planA, action: "REMOVED" },
            { id: seed.planA2, action: "ADDED" },
          ],
        },
        none(base)[1]!,
      ]),
    );
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([seed.planA2, seed.planB].sort());
  });

  it("ADDED of an unknown plan is a 422 and changes nothing", async () => {
    const desired = base.map((a) => (a.id === seed.apiB ? { id: a.id, usagePlans: ["zzzzzz"] } : a));
    const err = await provider
      .update(
        input(base, desired, [
          none(base)[0]!,
          {
            id: seed.apiB,
            action: "NONE",
            usagePlans: [
              { id: seed.planB, action: "REMOVED" },
              { id: "zzzzzz", action: "ADDED" },
            ],
          },
        ]),
      )
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 422, message: "[gateway aws-test] usage plan zzzzzz does not exist" });
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([seed.planA, seed.planB].sort());
  });

  it("a rename renames a slug-less key and updates its app tag and description", async () => {
    const app = { appName: "Old Name", developer: "dev@example.com" };
    const { ref: r } = await createCredential(provider, "API_KEY", base, { app });
    const renamed = { ...app, appName: "New Name" };
    const res = await provider.update({
      ...r,
      app: renamed,
      previous: base,
      desired: base,
      changes: none(base),
      previousAppName: "Old Name",
    });
    const key = fake.apiGateway.keys.get(r.nativeId)!;
    expect(key.name).toBe("credhook/dev@example.com/New Name");
    expect(key.tags["credhook:app"]).toBe("New Name");
    expect(key.description).toContain('"New Name"');
    expect(res.resources.name).toBe("credhook/dev@example.com/New Name");
  });

  it("a rename of an app with a slug keeps the slug-based name and updates the app tag", async () => {
    await provider.update({
      ...ref,
      app: { ...ref.app, appName: "Renamed" },
      previous: base,
      desired: base,
      changes: none(base),
      previousAppName: ref.app.appName,
    });
    const key = fake.apiGateway.keys.get(ref.nativeId)!;
    expect(key.name).toBe("credhook/dev@example.com/590d83b5c05f");
    expect(key.tags["credhook:app"]).toBe("Renamed");
  });

  it("a missing key is a 404 naming it", async () => {
    fake.apiGateway.keys.delete(ref.nativeId);
    await expect(provider.update(input(base, base, none(base)))).rejects.toMatchObject({
      status: 404,
      message: `[gateway aws-test] API key ${ref.nativeId} does not exist`,
    });
  });
});
