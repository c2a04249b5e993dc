/** roleArn / externalId: every call is signed with the assumed role's temporary credentials. */
import { describe, expect, it } from "vitest";
import { createCredential, makeProvider, useSeededFake } from "./helpers.js";

const env = useSeededFake();
const ROLE = "arn:aws:iam::123456789012:role/credhook-apigw";

describe("assumed role", () => {
  it("assumes the role once (with the external id and session name) and signs API Gateway calls with it", async () => {
    env.fake.sts.addRole(ROLE, "portal-42");
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { roleArn: ROLE, externalId: "portal-42" });
    await createCredential(provider, "API_KEY", [{ id: env.seed.apiA, usagePlans: [env.seed.planA] }]);
    await provider.health();
    expect(env.fake.sts.assumed).toHaveLength(1);
    const [assumed] = env.fake.sts.assumed;
    expect(assumed).toMatchObject({
      RoleArn: ROLE,
      ExternalId: "portal-42",
      RoleSessionName: "credhook-aws-test",
      callerAccessKeyId: "AKIDFAKE",
    });
    const apiCalls = env.fake.requests().filter((r) => r.service === "apigateway");
    expect(apiCalls.map((r) => r.operation)).toEqual(["CreateApiKey", "CreateUsagePlanKey", "GetApiKeys"]);
    for (const r of apiCalls) expect(r.accessKeyId).toBe(assumed!.accessKeyId);
    await provider.close?.();
  });

  it("a refused AssumeRole (wrong external id) is a typed 502 and nothing is created", async () => {
    env.fake.sts.addRole(ROLE, "the-right-one");
    const provider = await makeProvider(env.fake, env.seed, "CLIENT_CREDENTIALS", {
      roleArn: ROLE,
      externalId: "wrong-one",
      maxAttempts: 1,
    });
    const err = await createCredential(provider, "CLIENT_CREDENTIALS", [{ id: env.seed.apiA, usagePlans: [] }]).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({
      status: 502,
      code: "UPSTREAM_FAILED",
      message: expect.stringContaining("[gateway aws-test]"),
    });
    expect(env.fake.cognito.allClients()).toEqual([]);
    expect(env.fake.requests().filter((r) => r.service === "cognito")).toEqual([]);
    await provider.close?.();
  });
});
