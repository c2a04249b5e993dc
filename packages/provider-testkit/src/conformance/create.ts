/**
 * The `create` and `read-back` groups: what a create returns (a native id, a secret kept out of
 * what core stores), an imported API key value used as given, and the secret read back.
 */
import { randomUUID } from "node:crypto";
import { app, expectEqual, expectTyped, fail, plansOf, skip, type ConformanceCase, type TypeSuite } from "./harness.js";
import type { ConformanceTestContext } from "./options.js";

/** The `create` and `read-back` tests, in their order. */
export const createTests: ConformanceCase[] = [
  {
    group: "create",
    name: "create returns a native id and a secret, and stores no secret in resources",
    check: createReturnsIdAndSecret,
  },
  {
    group: "create",
    name: "create imports the caller's API key value when the provider accepts one",
    only: "API_KEY",
    check: createImportsKeyValue,
  },
  {
    group: "read-back",
    name: "readSecret returns the live secret when the provider reads back",
    check: readSecretReturnsLiveSecret,
  },
];

/** Create returns a native id and a secret, and stores no secret in resources. */
async function createReturnsIdAndSecret(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options, credentialType } = s;
  const provider = await s.make(ctx);
  const { cred, ref } = await s.created(provider, "a");
  if (typeof cred.nativeId !== "string" || cred.nativeId.length === 0) fail("nativeId must be a non-empty string");
  const secret = credentialType === "API_KEY" ? cred.apiKey : cred.clientSecret;
  if (typeof secret !== "string" || secret.length < 20)
    fail(`the ${credentialType === "API_KEY" ? "apiKey" : "clientSecret"} must be a string of ≥ 20 characters`);
  if (credentialType === "API_KEY" && cred.clientSecret !== undefined)
    fail("an API_KEY credential carries no clientSecret");
  if (credentialType === "CLIENT_CREDENTIALS" && cred.apiKey !== undefined)
    fail("a CLIENT_CREDENTIALS credential carries no apiKey");
  const stored = JSON.stringify(cred.resources);
  if (stored.includes(secret)) fail("resources (stored by core) contain the secret in plaintext");
  if (cred.customCredentials) {
    for (const [k, v] of Object.entries(cred.customCredentials)) {
      if (typeof v !== "string") fail(`customCredentials.${k} must be a string`);
      if (v.includes(secret)) fail(`customCredentials.${k} contains the secret`);
    }
  }
  if (options.inspect) {
    const seen = await options.inspect(ref);
    if (!seen.live) fail("the created credential is not live in the cloud");
    if (seen.usagePlans) expectEqual([...seen.usagePlans].sort(), plansOf(options.apis), "usage plans after create");
  }
  await provider.revoke(ref);
  await provider.close?.();
}

/** Create imports the caller's API key value when the provider accepts one. */
async function createImportsKeyValue(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { options, credentialType } = s;
  const provider = await s.make(ctx);
  if (!provider.capabilities.importsApiKeyValue) {
    await provider.close?.();
    skip(ctx, "the provider does not import API key values (capabilities.importsApiKeyValue is false)");
  }
  const value = `Conf${randomUUID().replace(/-/g, "")}Value`;
  const credentialId = randomUUID();
  const cred = await provider.create({
    credentialId,
    credentialType,
    app: app("v"),
    apis: options.apis,
    apiKeyValue: value,
  });
  expectEqual(cred.apiKey, value, "apiKey of an imported value");
  await provider.revoke({
    credentialId,
    credentialType,
    nativeId: cred.nativeId,
    resources: cred.resources,
    app: app("v"),
  });
  await provider.close?.();
}

/** ReadSecret returns the live secret when the provider reads back. */
async function readSecretReturnsLiveSecret(s: TypeSuite, ctx: ConformanceTestContext): Promise<void> {
  const { credentialType } = s;
  const provider = await s.make(ctx);
  if (!provider.capabilities.readsBackSecret) {
    await provider.close?.();
    if (provider.readSecret) fail("readsBackSecret is false but readSecret is implemented");
    skip(ctx, "the provider does not read secrets back (capabilities.readsBackSecret is false)");
  }
  if (!provider.readSecret) fail("readsBackSecret is true but readSecret is missing");
  const { cred, ref } = await s.created(provider, "r");
  const back = await provider.readSecret(ref);
  if (credentialType === "API_KEY") expectEqual(back.apiKey, cred.apiKey, "read-back apiKey");
  else expectEqual(back.clientSecret, cred.clientSecret, "read-back clientSecret");
  await provider.revoke(ref);
  await expectTyped(provider.readSecret(ref), 404, "readSecret after revoke");
  await provider.close?.();
}
