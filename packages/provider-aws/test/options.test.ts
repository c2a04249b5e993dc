/** The options schema (as core's config loader applies it) and start-up checks. */
import { describe, expect, it } from "vitest";
import { createAjv, formatConfigErrors, silentLogger } from "@credhook/core";
import { memoryStateStore } from "@credhook/provider-testkit";
import awsProviderFactory from "../src/index.js";

const validate = createAjv({ coerceTypes: true, useDefaults: true }).compile(awsProviderFactory.optionsSchema);
const problems = (o: unknown) => (validate(o) ? [] : formatConfigErrors(validate.errors, "gateways.aws.options"));

describe("options schema", () => {
  it("accepts a minimal block and fills the documented defaults", () => {
    const o: Record<string, unknown> = { region: "eu-west-1" };
    expect(problems(o)).toEqual([]);
    expect(o).toMatchObject({
      timeoutMs: 10000,
      maxAttempts: 4,
      maxQueueWaitMs: 30000,
      healthCacheMs: 15000,
      revokeMode: "delete",
      namePrefix: "credhook",
      createMissingScopes: true,
      defaultScopes: ["{apiId}"],
    });
  });

  it("accepts a full CLIENT_CREDENTIALS block with an assumed role", () => {
    expect(
      problems({
        region: "us-east-1",
        roleArn: "arn:aws:iam::123456789012:role/credhook",
        externalId: "portal-42",
        endpoints: { cognito: "https://cognito-idp-fips.us-east-1.amazonaws.com" },
        userPoolId: "us-east-1_AbCdEf123",
        resourceServer: "https://api.example.com",
        scopes: { a1b2c3d4e5: ["orders.read"] },
        domain: "auth.example.com",
        rateLimits: { cognitoPerOperation: 2 },
      }),
    ).toEqual([]);
  });

  it("rejects a missing region, an unknown option, a bad revokeMode and a bad role ARN, naming each path", () => {
    const out = problems({ regoin: "us-east-1", revokeMode: "archive", roleArn: "role/credhook" });
    expect(out.join("\n")).toContain("region");
    expect(out.join("\n")).toContain("regoin");
    expect(out.join("\n")).toContain("revokeMode");
    expect(out.join("\n")).toContain("roleArn");
  });

  it("CLIENT_CREDENTIALS without userPoolId and resourceServer stops start-up with the YAML paths", () => {
    const ctx = {
      gateway: "m2m",
      configPath: "gateways.m2m.options",
      credentialType: "CLIENT_CREDENTIALS" as const,
      logger: silentLogger,
      state: memoryStateStore(),
    };
    let err: unknown;
    try {
      awsProviderFactory.create({ region: "us-east-1" }, ctx);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({
      code: "CONFIG_INVALID",
      messages: [
        "[provider-aws] gateways.m2m.options.userPoolId is required when credentialType is CLIENT_CREDENTIALS",
        "[provider-aws] gateways.m2m.options.resourceServer is required when credentialType is CLIENT_CREDENTIALS",
      ],
    });
  });

  it("a gateway issues only its own credential type", async () => {
    const ctx = {
      gateway: "keys",
      configPath: "gateways.keys.options",
      credentialType: "API_KEY" as const,
      logger: silentLogger,
      state: memoryStateStore(),
    };
    const p = await awsProviderFactory.create({ region: "us-east-1" }, ctx);
    expect(p.capabilities).toEqual({
      credentialTypes: ["API_KEY"],
      importsApiKeyValue: true,
      readsBackSecret: true,
      apiKeyValuePattern: "^[A-Za-z0-9]{20,128}$",
      disables: ["API_KEY"],
      writesPerSecond: 5, // CreateApiKey's and DeleteApiKey's default quota, for apply's estimate
    });
    await expect(
      p.create({
        credentialId: "x",
        credentialType: "CLIENT_CREDENTIALS",
        app: { appName: "a", developer: "d" },
        apis: [],
      }),
    ).rejects.toMatchObject({ status: 400 });
    await p.close?.();
  });
});
