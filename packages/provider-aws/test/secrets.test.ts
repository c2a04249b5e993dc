/** No secret (API key value, client secret) in logs, stored resources or error messages. */
import { describe, expect, it } from "vitest";
import { createCredential, makeProvider, recordingLogger, useSeededFake } from "./helpers.js";

const env = useSeededFake();

describe("secrets", () => {
  it("a full API_KEY lifecycle logs ids but never the key value", async () => {
    const logger = recordingLogger();
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", {}, logger);
    const apis = [{ id: env.seed.apiA, usagePlans: [env.seed.planA] }];
    const { cred, ref } = await createCredential(provider, "API_KEY", apis);
    env.fake.apiGateway.detachKey(env.seed.planA, cred.nativeId);
    await provider.update({
      ...ref,
      previous: apis,
      desired: apis,
      changes: [{ id: env.seed.apiA, action: "NONE", usagePlans: [{ id: env.seed.planA, action: "NONE" }] }],
    });
    await provider.readSecret!(ref);
    await provider.revoke(ref);
    expect(logger.lines.length).toBeGreaterThan(0);
    expect(logger.lines.join("\n")).toContain(cred.nativeId);
    expect(logger.lines.join("\n")).not.toContain(cred.apiKey!);
    expect(JSON.stringify(cred.resources)).not.toContain(cred.apiKey!);
    await provider.close?.();
  });

  it("a full CLIENT_CREDENTIALS lifecycle never logs or stores the client secret", async () => {
    const logger = recordingLogger();
    const provider = await makeProvider(env.fake, env.seed, "CLIENT_CREDENTIALS", {}, logger);
    const { cred, ref } = await createCredential(provider, "CLIENT_CREDENTIALS", [
      { id: env.seed.apiA, usagePlans: [] },
    ]);
    await provider.update({
      ...ref,
      previous: [],
      desired: [{ id: env.seed.apiB, usagePlans: [] }],
      changes: [{ id: env.seed.apiB, action: "ADDED", usagePlans: [] }],
    });
    await provider.readSecret!(ref);
    await provider.revoke(ref);
    const all = [...logger.lines, JSON.stringify(cred.resources), JSON.stringify(cred.customCredentials)].join("\n");
    expect(all).toContain(cred.nativeId);
    expect(all).not.toContain(cred.clientSecret!);
    await provider.close?.();
  });

  it("an AWS error echoing the imported value is redacted in the message", async () => {
    const provider = await makeProvider(env.fake, env.seed, "API_KEY", { maxAttempts: 1 });
    const value = "EchoedSecretValue0123456789abcdefXYZ";
    env.fake.faults.serverError({ operation: "CreateApiKey", status: 400, errorType: "BadRequestException" });
    // make the fake's message echo the value, as a careless service might
    const original = env.fake.faults.take.bind(env.fake.faults);
    env.fake.faults.take = (service, op) => {
      const r = original(service, op);
      if (r.fault?.kind === "error") r.fault = { ...r.fault, message: `bad value ${value}` };
      return r;
    };
    const err = (await createCredential(provider, "API_KEY", [], { apiKeyValue: value }).catch((e: unknown) => e)) as {
      status: number;
      messages: string[];
    };
    expect(err.status).toBe(502);
    expect(err.messages.join(" ")).toContain("bad value ***");
    expect(err.messages.join(" ")).not.toContain(value);
    await provider.close?.();
  });
});
