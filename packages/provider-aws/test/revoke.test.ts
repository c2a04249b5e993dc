/** Revoke: delete (twice is fine), disable mode, and both credential types. */
import { describe, expect, it } from "vitest";
import { createCredential, makeProvider, useSeededFake } from "./helpers.js";

const env = useSeededFake();

describe("revoke", () => {
  it("API_KEY: deletes the key (and so its plan memberships); revoking twice succeeds", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY");
    const { ref } = await createCredential(provider, "API_KEY", [{ id: env.seed.apiA, usagePlans: [env.seed.planA] }]);
    expect(await provider.revoke(ref)).toBe("revoked");
    expect(env.fake.apiGateway.keys.has(ref.nativeId)).toBe(false);
    expect(env.fake.apiGateway.plans.get(env.seed.planA)?.keys.size).toBe(0);
    expect(await provider.revoke(ref)).toBe("gone");
    // the mark is read before the delete; a key already gone needs no delete
    expect(env.fake.stats().calls).toMatchObject({ GetApiKey: 2, DeleteApiKey: 1 });
    await provider.close?.();
  });

  it("API_KEY with revokeMode disable: the key stays, disabled; update and read-back then answer 404", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { revokeMode: "disable" });
    const apis = [{ id: env.seed.apiA, usagePlans: [env.seed.planA] }];
    const { ref } = await createCredential(provider, "API_KEY", apis);
    expect(await provider.revoke(ref)).toBe("revoked");
    expect(await provider.revoke(ref)).toBe("gone");
    expect(env.fake.apiGateway.keys.get(ref.nativeId)?.enabled).toBe(false);
    expect(env.fake.stats().calls.DeleteApiKey).toBeUndefined();
    await expect(provider.readSecret!(ref)).rejects.toMatchObject({
      status: 404,
      message: expect.stringContaining("disabled"),
    });
    await expect(provider.update({ ...ref, previous: apis, desired: apis, changes: [] })).rejects.toMatchObject({
      status: 404,
    });
    await provider.close?.();
  });

  it("CLIENT_CREDENTIALS: deletes the app client; revoking twice succeeds", async () => {
    const provider = await makeProvider(env.fake, env.seed, "CLIENT_CREDENTIALS");
    const { ref } = await createCredential(provider, "CLIENT_CREDENTIALS", [{ id: env.seed.apiA, usagePlans: [] }]);
    expect(env.fake.cognito.allClients()).toHaveLength(1);
    expect(await provider.revoke(ref)).toBe("revoked");
    expect(env.fake.cognito.allClients()).toHaveLength(0);
    expect(await provider.revoke(ref)).toBe("gone");
    expect(env.fake.stats().calls).toMatchObject({ DescribeUserPoolClient: 2, DeleteUserPoolClient: 1 });
    await provider.close?.();
  });

  it("a failing delete is a typed 5xx, not success", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { maxAttempts: 1 });
    const { ref } = await createCredential(provider, "API_KEY", []);
    env.fake.faults.serverError({ operation: "DeleteApiKey", status: 500 });
    await expect(provider.revoke(ref)).rejects.toMatchObject({ status: 502, code: "UPSTREAM_FAILED" });
    expect(env.fake.apiGateway.keys.has(ref.nativeId)).toBe(true);
    await provider.close?.();
  });
});
