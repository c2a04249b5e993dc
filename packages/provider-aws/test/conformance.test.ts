/**
 * The provider-testkit conformance suite, for both credential types, against the AWS fake.
 * The contract is what it checks, not AWS's quotas (limits.test.ts, burst.test.ts and the
 * fault tests hold those): the fake enforces none and the provider's limiters are opened
 * wide, so the suite's hundred-odd sequential creates do not wait 5 per second.
 */
import { afterAll, beforeAll, it } from "vitest";
import type { CredentialType } from "@credhook/core/provider";
import { providerConformance } from "@credhook/provider-testkit";
import type { AwsFake } from "@credhook/fakes/aws";
import { makeProvider as makeLimitedProvider, seededFake, type Seed } from "./helpers.js";

/** No client-side limit worth the name (the schema's maximum, 1000 per second). */
const unthrottled = {
  rateLimits: {
    createApiKey: 1000,
    deleteApiKey: 1000,
    apiGateway: 1000,
    apiGatewayBurst: 1000,
    cognitoPerOperation: 1000,
  },
};
const makeProvider: typeof makeLimitedProvider = (f, s, type, extra = {}, ...rest) =>
  makeLimitedProvider(f, s, type, { ...unthrottled, ...extra }, ...rest);

let fake: AwsFake;
let seed: Seed;
beforeAll(async () => {
  // GetApiKeys and ListUserPoolClients in pages of 2 whatever the client asks: the suite's paging check crosses pages.
  ({ fake, seed } = await seededFake({
    enforceQuotas: false,
    apiGateway: { maxPageSize: 2 },
    cognito: { maxPageSize: 2 },
  }));
});
afterAll(async () => {
  await fake.close();
});

// Ids are fixed by seededFake(); the suite's options are built before the fake starts.
const apis = [
  { id: "a1b2c3d4e5", usagePlans: ["pl4naa"] },
  { id: "f6g7h8i9j0", usagePlans: ["pl4nbb"] },
];

/** The API-key suites' options: plans on the fake, and what the fake holds for a key. */
const apiKeyOptions = {
  credentialTypes: ["API_KEY" as const],
  apis,
  addPlan: { apiId: "k1l2m3n4o5", planId: "pl4ncc" },
  unknownPlan: { apiId: "k1l2m3n4o5", planId: "zzzzzz" },
  inspect: async (ref: { nativeId: string }) => {
    const key = fake.apiGateway.keys.get(ref.nativeId);
    return { live: !!key && key.enabled, usagePlans: key ? fake.apiGateway.plansOfKey(key.id) : [] };
  },
};

/**
 * The failure rules: an API key exists when attaching it to a plan is denied (403); CreateApiKey is
 * applied and answered 500 (a generated key's create is not resent); attaching the new plan is denied.
 * A Cognito app client is one CreateUserPoolClient and its update one UpdateUserPoolClient.
 */
const faults = {
  createFailsAfterWrite: (type: CredentialType) =>
    type === "API_KEY"
      ? fake.faults.deny({ operation: "CreateUsagePlanKey" })
      : "a Cognito app client is one CreateUserPoolClient: no write follows it",
  createAnswerLost: (type: CredentialType) =>
    fake.faults.failAfterApply({ operation: type === "API_KEY" ? "CreateApiKey" : "CreateUserPoolClient" }),
  updateAddFails: (type: CredentialType) =>
    type === "API_KEY"
      ? fake.faults.deny({ operation: "CreateUsagePlanKey" })
      : "a Cognito app client's scopes change in one UpdateUserPoolClient",
};

/** Ownership: a resource made by hand in the same account, and a second gateway on the same account. */
const ownershipOptions = {
  createForeign: async (type: CredentialType) => fake.createForeign(type, { usagePlanIds: ["pl4naa"] }),
  otherGateway: (type: CredentialType) => makeProvider(fake, seed, type, {}, undefined, "aws-other"),
};

providerConformance(it, (type) => makeProvider(fake, seed, type), {
  ...apiKeyOptions,
  ...ownershipOptions,
  name: "aws conformance",
  listNativeIds: async () => [...fake.apiGateway.keys.keys()],
  faults,
  paging: { pageSize: 2 },
});

providerConformance(it, (type) => makeProvider(fake, seed, type), {
  ...ownershipOptions,
  name: "aws conformance",
  credentialTypes: ["CLIENT_CREDENTIALS"],
  apis,
  addPlan: { apiId: "k1l2m3n4o5", planId: "pl4ncc" },
  inspect: async (ref) => ({ live: fake.cognito.allClients().some((c) => c.ClientId === ref.nativeId) }),
  listNativeIds: async () => fake.cognito.allClients().map((c) => c.ClientId),
  faults,
  paging: { pageSize: 2 },
});

providerConformance(it, (type) => makeProvider(fake, seed, type, { revokeMode: "disable" }), {
  ...apiKeyOptions,
  ...ownershipOptions,
  name: "aws conformance (revokeMode disable)",
  faults,
  paging: { pageSize: 2 },
});
