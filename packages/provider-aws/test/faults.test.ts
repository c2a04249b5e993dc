/**
 * Issue 9 at provider level: each fault the AWS fake can inject, the typed
 * error the provider reports (`partial`, `outcomeUnknown`), and core-style
 * compensation afterwards — revoke the partial, then findByCredential + revoke
 * once late writes landed — leaving zero live resources no credential explains
 * and every foreign resource untouched.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isCredhookError, type CredhookError } from "@credhook/core/errors";
import type {
  CredentialType,
  GatewayApi,
  Provider,
  ProviderCredentialRef,
  ProviderUpdateInput,
} from "@credhook/core/provider";
import type { AwsFake, AwsFakeOptions, ForeignResource } from "@credhook/fakes/aws";
import { ManualClock } from "@credhook/fakes/clock";
import { clientMark } from "../src/naming.js";
import { makeProvider, seededFake, testApp, type Seed } from "./helpers.js";

let fake: AwsFake;
let seed: Seed;
let foreignKey: ForeignResource;
let foreignClient: ForeignResource;
const open: Provider[] = [];

/** Starts the test's fake with someone else's resources in it. */
async function startFake(options: AwsFakeOptions = {}): Promise<void> {
  ({ fake, seed } = await seededFake(options));
  // Someone else's resources in the same account: credhook must never touch them.
  foreignKey = fake.createForeign("API_KEY", {
    name: "credhook/dev@example.com/590d83b5c05f",
    usagePlanIds: [seed.planA],
  });
  foreignClient = fake.createForeign("CLIENT_CREDENTIALS", { name: "credhook-dev@example.com-590d83b5c05f" });
}

beforeEach(() => startFake());

/**
 * Replaces the test's fake by one on a {@link ManualClock}: a late write lands when the test advances
 * it, never while the client still waits or compensation still runs. (Its quotas do not refill
 * meanwhile either: only the few calls of a late-write test run on it.)
 */
async function onManualClock(): Promise<ManualClock> {
  await fake.close();
  const clock = new ManualClock();
  await startFake({ clock });
  return clock;
}
afterEach(async () => {
  // Resources a test adopts on purpose change; the two made above never do.
  expect(fake.foreignTouched().filter((id) => id === foreignKey.nativeId || id === foreignClient.nativeId)).toEqual([]);
  expect([await foreignKey.exists(), await foreignClient.exists()]).toEqual([true, true]);
  for (const p of open.splice(0)) await p.close?.();
  await fake.close();
});

async function provider(
  type: CredentialType,
  extra: Parameters<typeof makeProvider>[3] = {},
  gateway?: string,
): Promise<Provider> {
  const p = await makeProvider(fake, seed, type, extra, undefined, gateway);
  open.push(p);
  return p;
}

const VALUE = "LateLandingValue0123456789abcdefghijklmnopq";
const apisA: GatewayApi[] = [{ id: "a1b2c3d4e5", usagePlans: ["pl4naa"] }];

async function failure(p: Promise<unknown>): Promise<CredhookError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isCredhookError(err)) throw new Error(`expected a typed credhook error, got ${String(err)}`);
  return err;
}

/** What core does after a failed create: revoke the partial, then revoke whatever carries the credential's mark. */
async function compensate(
  p: Provider,
  type: CredentialType,
  credentialId: string,
  err: CredhookError,
  apis: GatewayApi[] = apisA,
): Promise<void> {
  const base = { credentialId, credentialType: type, app: testApp };
  if (err.partial)
    expect(
      await p.revoke({
        ...base,
        nativeId: err.partial.nativeId,
        resources: err.partial.resources as ProviderCredentialRef["resources"],
      }),
    ).toBe("revoked");
  for (const r of await p.findByCredential!({ ...base, apis }))
    expect(await p.revoke({ ...base, nativeId: r.nativeId, resources: {} })).toBe("revoked");
  expect(await p.findByCredential!({ ...base, apis })).toEqual([]);
}

/** Keys/clients that are not the foreign ones. */
const ownKeys = () => [...fake.apiGateway.keys.keys()].filter((id) => id !== foreignKey.nativeId);
const ownClients = () => fake.cognito.allClients().filter((c) => c.ClientId !== foreignClient.nativeId);

describe("API_KEY create faults", () => {
  it("CreateApiKey answering after timeoutMs on every attempt: 504 outcome-unknown; the key that lands later is found by its mark and revoked", async () => {
    const clock = await onManualClock();
    // The held creates never answer in time (the fake's clock stands still); the calls before them have 1 s each.
    const p = await provider("API_KEY", { timeoutMs: 1000, maxAttempts: 2 });
    fake.faults.lateApply(3000, { operation: "CreateApiKey", count: 2 });
    const credentialId = randomUUID();
    const err = await failure(
      p.create({ credentialId, credentialType: "API_KEY", app: testApp, apis: apisA, apiKeyValue: VALUE }),
    );
    expect(err).toMatchObject({ status: 504, code: "UPSTREAM_TIMEOUT", outcomeUnknown: true, partial: undefined });
    expect(fake.stats().calls.CreateApiKey).toBe(2); // the SDK retried: values are unique, so a retry cannot make a second key
    expect(ownKeys()).toEqual([]);
    await clock.whenSleeping(2);
    await clock.advance(3000); // AWS applies the first attempt after the client gave up…
    expect(fake.stats().lateWritesPending).toBe(0); // …and the second one too, refused (409) unseen
    expect(ownKeys()).toHaveLength(1);
    await compensate(p, "API_KEY", credentialId, err);
    expect(ownKeys()).toEqual([]);
  });

  it("CreateApiKey applied then answered 500: the SDK's retry gets 409 for the value and the create uses the key the first attempt made", async () => {
    const p = await provider("API_KEY");
    fake.faults.failAfterApply({ operation: "CreateApiKey", status: 500 });
    const credentialId = randomUUID();
    const cred = await p.create({
      credentialId,
      credentialType: "API_KEY",
      app: testApp,
      apis: apisA,
      apiKeyValue: VALUE,
    });
    expect(ownKeys()).toEqual([cred.nativeId]);
    expect(cred.apiKey).toBe(VALUE);
    expect(fake.apiGateway.plansOfKey(cred.nativeId)).toEqual(["pl4naa"]);
  });

  it("CreateApiKey applied then the connection closed unanswered (no imported value): 502 outcome-unknown; found and revoked", async () => {
    const p = await provider("API_KEY");
    fake.faults.failAfterApply({ operation: "CreateApiKey", drop: true });
    const credentialId = randomUUID();
    const err = await failure(p.create({ credentialId, credentialType: "API_KEY", app: testApp, apis: apisA }));
    expect(err.status).toBeGreaterThanOrEqual(500);
    expect(err.outcomeUnknown).toBe(true);
    expect(ownKeys()).toHaveLength(1);
    await compensate(p, "API_KEY", credentialId, err);
    expect(ownKeys()).toEqual([]);
  });

  it("usage-plan attach 403 (least-privilege IAM), then DeleteApiKey failing 500 four times: the key is reported, never forgotten, and removed by a later revoke", async () => {
    const p = await provider("API_KEY");
    fake.faults.deny({ operation: "CreateUsagePlanKey" });
    const credentialId = randomUUID();
    const err = await failure(
      p.create({ credentialId, credentialType: "API_KEY", app: testApp, apis: apisA, apiKeyValue: VALUE }),
    );
    expect(err).toMatchObject({ status: 502, outcomeUnknown: false, partial: { nativeId: ownKeys()[0] } });
    expect(err.message).toContain("AccessDeniedException");
    expect(fake.stats().calls.DeleteApiKey).toBeUndefined(); // the provider does not clean up alone
    // Core's compensation fails too: DeleteApiKey answers 500 on every attempt.
    fake.faults.serverError({ operation: "DeleteApiKey", status: 500, count: 4 });
    const ref = {
      credentialId,
      credentialType: "API_KEY" as const,
      app: testApp,
      nativeId: err.partial!.nativeId,
      resources: err.partial!.resources as ProviderCredentialRef["resources"],
    };
    expect(await failure(p.revoke(ref))).toMatchObject({ status: 502 });
    expect(fake.stats().calls.DeleteApiKey).toBe(4);
    // The record's hints still find the key; the next compensation (sweep, reconcile) removes it.
    expect(
      (await p.findByCredential!({ credentialId, credentialType: "API_KEY", app: testApp, apis: apisA })).map(
        (r) => r.nativeId,
      ),
    ).toEqual([ref.nativeId]);
    await compensate(p, "API_KEY", credentialId, err);
    expect(ownKeys()).toEqual([]);
  });

  it("429 and 500 on reads during an update are retried by the SDK; a 500 on every attempt of the mark's read fails the revoke instead of reporting 'gone'", async () => {
    const p = await provider("API_KEY");
    const credentialId = randomUUID();
    const cred = await p.create({ credentialId, credentialType: "API_KEY", app: testApp, apis: apisA });
    const ref: ProviderCredentialRef = {
      credentialId,
      credentialType: "API_KEY",
      app: testApp,
      nativeId: cred.nativeId,
      resources: cred.resources,
    };
    fake.faults.throttle({ operation: "GetUsagePlanKey", retryAfterS: 0 });
    fake.faults.serverError({ operation: "GetApiKey", status: 500 });
    await p.update({ ...ref, previous: apisA, desired: apisA, changes: [] });
    fake.faults.serverError({ operation: "GetApiKey", status: 500, count: 4 });
    expect(await failure(p.revoke(ref))).toMatchObject({ status: 502 });
    expect(ownKeys()).toEqual([cred.nativeId]);
    fake.faults.deny({ operation: "GetApiKey" });
    expect(await failure(p.revoke(ref))).toMatchObject({ status: 502, message: expect.stringContaining("denied") });
    expect(await p.revoke(ref)).toBe("revoked");
  });
});

describe("API_KEY update faults: never less access than before", () => {
  const planA = "pl4naa";
  const planC = "pl4ncc";
  const planA2 = "pl4na2";
  const swap = (from: string, to: string, fromApi: string, toApi: string): ProviderUpdateInput["changes"] =>
    fromApi === toApi
      ? [
          {
            id: fromApi,
            action: "NONE",
            usagePlans: [
              { id: from, action: "REMOVED" },
              { id: to, action: "ADDED" },
            ],
          },
        ]
      : [
          { id: fromApi, action: "REMOVED", usagePlans: [{ id: from, action: "REMOVED" }] },
          { id: toApi, action: "ADDED", usagePlans: [{ id: to, action: "ADDED" }] },
        ];
  /** core's inverse update: desired → previous, ADDED ↔ REMOVED. */
  const inverse = (u: ProviderUpdateInput): ProviderUpdateInput => ({
    ...u,
    previous: u.desired,
    desired: u.previous,
    changes: u.changes.map((c) => ({
      id: c.id,
      action: c.action === "ADDED" ? "REMOVED" : c.action === "REMOVED" ? "ADDED" : "NONE",
      usagePlans: c.usagePlans.map((x) => ({
        id: x.id,
        action: x.action === "ADDED" ? "REMOVED" : x.action === "REMOVED" ? "ADDED" : "NONE",
      })),
    })),
  });

  async function keyInPlanA(p: Provider): Promise<ProviderCredentialRef> {
    const credentialId = randomUUID();
    const cred = await p.create({ credentialId, credentialType: "API_KEY", app: testApp, apis: apisA });
    return {
      credentialId,
      credentialType: "API_KEY",
      app: testApp,
      nativeId: cred.nativeId,
      resources: cred.resources,
    };
  }

  it("REMOVED planA + ADDED planC with the attach refused 403: the key stays in planA (attach before detach)", async () => {
    const p = await provider("API_KEY");
    const ref = await keyInPlanA(p);
    fake.faults.deny({ operation: "CreateUsagePlanKey" });
    const update: ProviderUpdateInput = {
      ...ref,
      previous: apisA,
      desired: [{ id: "k1l2m3n4o5", usagePlans: [planC] }],
      changes: swap(planA, planC, "a1b2c3d4e5", "k1l2m3n4o5"),
    };
    expect(await failure(p.update(update))).toMatchObject({ status: 502 });
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planA]);
    expect(fake.stats().calls.DeleteUsagePlanKey).toBeUndefined();
    // core's inverse update changes nothing that is still right
    await p.update(inverse(update));
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planA]);
    // without the fault the swap attaches planC, then detaches planA
    await p.update(update);
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planC]);
  });

  it("a move between two plans of one API stage detaches first (AWS allows one plan per stage); a failed attach is undone by core's inverse update, which is idempotent", async () => {
    const p = await provider("API_KEY");
    const ref = await keyInPlanA(p);
    const update: ProviderUpdateInput = {
      ...ref,
      previous: apisA,
      desired: [{ id: "a1b2c3d4e5", usagePlans: [planA2] }],
      changes: swap(planA, planA2, "a1b2c3d4e5", "a1b2c3d4e5"),
    };
    fake.faults.deny({ operation: "CreateUsagePlanKey" });
    expect(await failure(p.update(update))).toMatchObject({ status: 502 });
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([]); // the one order AWS allows: detach, then attach (which failed)
    await p.update(inverse(update));
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planA]);
    await p.update(inverse(update)); // idempotent
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planA]);
    await p.update(update);
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planA2]);
    // the inverse of a completed move moves the key back, detaching planA2 first
    await p.update(inverse(update));
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planA]);
  });

  it("a usage plan key applied then answered 500: the SDK's retry gets 409, which GetUsagePlanKey confirms as attached", async () => {
    const p = await provider("API_KEY");
    const ref = await keyInPlanA(p);
    const update: ProviderUpdateInput = {
      ...ref,
      previous: apisA,
      desired: [...apisA, { id: "k1l2m3n4o5", usagePlans: [planC] }],
      changes: [{ id: "k1l2m3n4o5", action: "ADDED", usagePlans: [{ id: planC, action: "ADDED" }] }],
    };
    fake.faults.failAfterApply({ operation: "CreateUsagePlanKey", status: 500 });
    await p.update(update);
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planA, planC]);
    expect(fake.stats().calls).toMatchObject({ CreateUsagePlanKey: 3, GetUsagePlanKey: 2 }); // create's attach + 2 attempts; NONE check + the 409's check
  });

  it("a usage plan key refused 500 on every attempt: 502; the inverse update converges", async () => {
    const p = await provider("API_KEY");
    const ref = await keyInPlanA(p);
    const update: ProviderUpdateInput = {
      ...ref,
      previous: apisA,
      desired: [...apisA, { id: "k1l2m3n4o5", usagePlans: [planC] }],
      changes: [{ id: "k1l2m3n4o5", action: "ADDED", usagePlans: [{ id: planC, action: "ADDED" }] }],
    };
    fake.faults.serverError({ operation: "CreateUsagePlanKey", status: 500, count: 4 });
    expect(await failure(p.update(update))).toMatchObject({ status: 502 });
    await p.update(inverse(update));
    expect(fake.apiGateway.plansOfKey(ref.nativeId)).toEqual([planA]);
  });
});

describe("non-idempotent creates are not retried after a timeout (a retry could make a second resource)", () => {
  it.each([
    { type: "API_KEY" as const, operation: "CreateApiKey", live: () => ownKeys() },
    {
      type: "CLIENT_CREDENTIALS" as const,
      operation: "CreateUserPoolClient",
      live: () => ownClients().map((c) => c.ClientId),
    },
  ])(
    "$operation answering after timeoutMs: 504 outcome-unknown after one attempt; what lands is found by its mark and revoked",
    async ({ type, operation, live }) => {
      const clock = await onManualClock();
      const p = await provider(type, { timeoutMs: 1000, maxAttempts: 4 });
      fake.faults.lateApply(3000, { operation, count: 4 });
      const credentialId = randomUUID();
      const err = await failure(p.create({ credentialId, credentialType: type, app: testApp, apis: apisA })); // no imported value
      expect(err).toMatchObject({ status: 504, outcomeUnknown: true });
      expect(fake.stats().calls[operation]).toBe(1);
      expect(live()).toEqual([]);
      await clock.whenSleeping();
      await clock.advance(3000);
      expect(live()).toHaveLength(1);
      await compensate(p, type, credentialId, err);
      expect(live()).toEqual([]);
    },
  );
});

describe("ownership", () => {
  it("API_KEY: a revoke of an unknown id (credentialId '') acts only on this gateway's mark", async () => {
    const mine = await provider("API_KEY");
    const other = await provider("API_KEY", {}, "aws-other");
    const theirs = await other.create({
      credentialId: randomUUID(),
      credentialType: "API_KEY",
      app: testApp,
      apis: [],
    });
    const unknown = (nativeId: string): ProviderCredentialRef => ({
      credentialId: "",
      credentialType: "API_KEY",
      nativeId,
      resources: {},
      app: { appName: "", developer: "" },
    });
    expect(await mine.revoke(unknown(foreignKey.nativeId))).toBe("not-owned");
    expect(await mine.revoke(unknown(theirs.nativeId))).toBe("not-owned");
    expect(await mine.revoke(unknown("nosuchkey0"))).toBe("gone");
    expect(await other.revoke(unknown(theirs.nativeId))).toBe("revoked");
    expect(
      await mine.findByCredential!({ credentialId: randomUUID(), credentialType: "API_KEY", app: testApp, apis: [] }),
    ).toEqual([]);
  });

  it("an update of a record the store lost (credentialId '') acts on this gateway's mark and reports the credential id the mark carries", async () => {
    for (const type of ["API_KEY", "CLIENT_CREDENTIALS"] as const) {
      const p = await provider(type);
      const original = randomUUID();
      const cred = await p.create({ credentialId: original, credentialType: type, app: testApp, apis: apisA });
      const lost = {
        credentialId: "",
        credentialType: type,
        nativeId: cred.nativeId,
        resources: {},
        app: testApp,
        previous: apisA,
        desired: apisA,
        changes: [],
      };
      expect((await p.update(lost)).credentialId).toBe(original);
      const other = await provider(type, {}, "aws-other");
      expect(await failure(other.update(lost))).toMatchObject({ status: 404 });
      const foreign = type === "API_KEY" ? foreignKey : foreignClient;
      expect(await failure(p.update({ ...lost, nativeId: foreign.nativeId }))).toMatchObject({ status: 404 });
    }
  });

  it("API_KEY adopt: tags a foreign key with credhook's mark and attaches the app's plans; another gateway's key is a 409; a missing key a 404", async () => {
    const p = await provider("API_KEY");
    const before = fake.apiGateway.keys.get(foreignKey.nativeId)!;
    const byHand = fake.createForeign("API_KEY", { name: "migrated/key" });
    const credentialId = randomUUID();
    const apis = [...apisA, { id: "k1l2m3n4o5", usagePlans: ["pl4ncc"] }];
    const ref = {
      credentialId,
      credentialType: "API_KEY" as const,
      nativeId: byHand.nativeId,
      resources: {},
      app: testApp,
      apis,
    };
    const { resources } = await p.adopt!(ref);
    expect(await byHand.exists()).toBe(false); // changed: it is credhook's now
    const key = fake.apiGateway.keys.get(byHand.nativeId)!;
    expect(key.tags).toMatchObject({ "credhook:gateway": "aws-test", "credhook:credential-id": credentialId });
    expect(key.name).toBe("migrated/key");
    expect(fake.apiGateway.plansOfKey(byHand.nativeId)).toEqual(["pl4naa", "pl4ncc"]);
    expect(resources).toMatchObject({ keyId: byHand.nativeId, usagePlans: ["pl4naa", "pl4ncc"] });
    await p.adopt!(ref); // idempotent
    expect(await failure(p.adopt!({ ...ref, credentialId: randomUUID() }))).toMatchObject({ status: 409 });
    const other = await provider("API_KEY", {}, "aws-other");
    expect(await failure(other.adopt!({ ...ref, credentialId: randomUUID() }))).toMatchObject({ status: 409 });
    expect(await failure(p.adopt!({ ...ref, nativeId: "nosuchkey0" }))).toMatchObject({ status: 404 });
    expect(await p.revoke({ ...ref, resources })).toBe("revoked");
    expect(fake.apiGateway.keys.get(foreignKey.nativeId)).toEqual(before);
  });

  it("CLIENT_CREDENTIALS adopt: renames the client to carry the mark (readable part kept and cut, never the mark), adds the app's scopes; then update and revoke own it", async () => {
    const p = await provider("CLIENT_CREDENTIALS");
    const long = `legacy-${"x".repeat(140)}`.slice(0, 128);
    const byHand = fake.createForeign("CLIENT_CREDENTIALS", { name: long });
    const credentialId = randomUUID();
    const ref = {
      credentialId,
      credentialType: "CLIENT_CREDENTIALS" as const,
      nativeId: byHand.nativeId,
      resources: {},
      app: testApp,
      apis: apisA,
    };
    expect(await p.revoke(ref)).toBe("not-owned");
    const { resources } = await p.adopt!(ref);
    const client = fake.cognito.pools.get(seed.poolId)!.clients.get(byHand.nativeId)!;
    expect(client.ClientName).toHaveLength(128);
    expect(client.ClientName.endsWith(clientMark("aws-test", credentialId))).toBe(true);
    expect(client.ClientName.startsWith("legacy-xxx")).toBe(true);
    expect(client.AllowedOAuthScopes).toEqual([`${seed.resourceServer}/a1b2c3d4e5`]);
    expect(resources.clientName).toBe(client.ClientName);
    await p.adopt!(ref); // idempotent: same name, no second mark
    expect(fake.cognito.pools.get(seed.poolId)!.clients.get(byHand.nativeId)!.ClientName).toBe(client.ClientName);
    expect(await failure(p.adopt!({ ...ref, credentialId: randomUUID() }))).toMatchObject({ status: 409 });
    await p.update({ ...ref, resources, previous: apisA, desired: apisA, changes: [] });
    expect(await p.revoke({ ...ref, resources })).toBe("revoked");
  });

  it("CLIENT_CREDENTIALS: a client made before marks existed is owned through the store's record (id and exact name), and gets its mark on update", async () => {
    const p = await provider("CLIENT_CREDENTIALS");
    const legacy = fake.createForeign("CLIENT_CREDENTIALS", { name: "credhook-dev@example.com-oldapp" });
    const credentialId = randomUUID();
    const ref: ProviderCredentialRef = {
      credentialId,
      credentialType: "CLIENT_CREDENTIALS",
      nativeId: legacy.nativeId,
      resources: { kind: "cognitoClient", clientId: legacy.nativeId, clientName: "credhook-dev@example.com-oldapp" },
      app: testApp,
    };
    expect(await p.revoke({ ...ref, credentialId: "" })).toBe("not-owned");
    expect(await p.revoke({ ...ref, resources: { ...ref.resources, clientName: "credhook-other" } })).toBe("not-owned");
    const { resources } = await p.update({ ...ref, previous: apisA, desired: apisA, changes: [] });
    expect(resources.clientName).toBe(`credhook-dev@example.com-590d83b5c05f${clientMark("aws-test", credentialId)}`);
    expect(await p.revoke({ ...ref, resources })).toBe("revoked");
  });

  it("CLIENT_CREDENTIALS: a client renamed by hand without the mark is no longer touched", async () => {
    const p = await provider("CLIENT_CREDENTIALS");
    const credentialId = randomUUID();
    const cred = await p.create({ credentialId, credentialType: "CLIENT_CREDENTIALS", app: testApp, apis: apisA });
    fake.cognito.pools.get(seed.poolId)!.clients.get(cred.nativeId)!.ClientName = "renamed-by-hand";
    const ref: ProviderCredentialRef = {
      credentialId,
      credentialType: "CLIENT_CREDENTIALS",
      nativeId: cred.nativeId,
      resources: cred.resources,
      app: testApp,
    };
    expect(await failure(p.update({ ...ref, previous: apisA, desired: apisA, changes: [] }))).toMatchObject({
      status: 404,
      message: expect.stringContaining("credhook adopt"),
    });
    expect(await p.revoke(ref)).toBe("not-owned");
    expect(await failure(p.readSecret!(ref))).toMatchObject({ status: 404 });
  });
});

describe("CLIENT_CREDENTIALS create faults", () => {
  it("CreateUserPoolClient applied then answered 500: 502 outcome-unknown; found and revoked; a 403 is a 502 with nothing to find", async () => {
    const p = await provider("CLIENT_CREDENTIALS");
    fake.faults.failAfterApply({ operation: "CreateUserPoolClient", status: 500 });
    const credentialId = randomUUID();
    const err = await failure(
      p.create({ credentialId, credentialType: "CLIENT_CREDENTIALS", app: testApp, apis: apisA }),
    );
    expect(err).toMatchObject({ status: 502, outcomeUnknown: true });
    expect(ownClients()).toHaveLength(1);
    await compensate(p, "CLIENT_CREDENTIALS", credentialId, err);
    fake.faults.deny({ operation: "CreateUserPoolClient" });
    const denied = await failure(
      p.create({ credentialId: randomUUID(), credentialType: "CLIENT_CREDENTIALS", app: testApp, apis: apisA }),
    );
    expect(denied).toMatchObject({
      status: 502,
      outcomeUnknown: false,
      message: expect.stringContaining("AccessDeniedException"),
    });
    expect(ownClients()).toEqual([]);
  });

  it("a throttled CreateUserPoolClient is retried (a 429 applies nothing) and makes exactly one client", async () => {
    const p = await provider("CLIENT_CREDENTIALS");
    fake.faults.throttle({ operation: "CreateUserPoolClient", count: 2, retryAfterS: 0 });
    await p.create({ credentialId: randomUUID(), credentialType: "CLIENT_CREDENTIALS", app: testApp, apis: apisA });
    expect(fake.stats().calls.CreateUserPoolClient).toBe(3);
    expect(ownClients()).toHaveLength(1);
  });
});
