/** listOwned (for `credhook reconcile`'s drift report): paginates and keeps only what carries this gateway's mark. */
import { CreateApiKeyCommand } from "@aws-sdk/client-api-gateway";
import { CreateUserPoolClientCommand } from "@aws-sdk/client-cognito-identity-provider";
import { describe, expect, it } from "vitest";
import { clientMark } from "../src/naming.js";
import { createCredential, makeProvider, sdkClients, useSeededFake } from "./helpers.js";

const env = useSeededFake({ enforceQuotas: false });

describe("listOwned", () => {
  it("API_KEY: walks every GetApiKeys page (limit 500) and returns this gateway's keys with their credential ids", async () => {
    const { apigw } = sdkClients(env.fake);
    for (let i = 0; i < 503; i++)
      await apigw.send(
        new CreateApiKeyCommand({
          name: `credhook/bulk/${i}`,
          tags: { "credhook:gateway": "aws-test", "credhook:credential-id": `c${i}` },
        }),
      );
    await apigw.send(new CreateApiKeyCommand({ name: "credhook/by-hand/no-tags" }));
    await apigw.send(
      new CreateApiKeyCommand({
        name: "credhook/other-gateway",
        tags: { "credhook:gateway": "aws-eu", "credhook:credential-id": "x" },
      }),
    );
    await apigw.send(new CreateApiKeyCommand({ name: "someone-else/key" }));
    const provider = await makeProvider(env.fake, env.seed, "API_KEY");
    const { ref } = await createCredential(provider, "API_KEY", []);
    const owned = await provider.listOwned!();
    expect(owned).toHaveLength(504);
    expect(owned.some((o) => /by-hand|other-gateway/.test(o.description))).toBe(false);
    expect(owned.find((o) => o.nativeId === ref.nativeId)).toMatchObject({
      credentialId: ref.credentialId,
      description: 'API key "credhook/dev@example.com/590d83b5c05f"',
    });
    expect(owned.some((o) => o.description.includes("someone-else"))).toBe(false);
    expect(env.fake.stats().calls.GetApiKeys).toBe(2);
    apigw.destroy();
    await provider.close?.();
  });

  it("CLIENT_CREDENTIALS: walks every ListUserPoolClients page (60) and keeps the clients whose name carries this gateway's mark", async () => {
    const { cognito } = sdkClients(env.fake);
    for (let i = 0; i < 61; i++)
      await cognito.send(
        new CreateUserPoolClientCommand({
          UserPoolId: env.seed.poolId,
          ClientName: `credhook-bulk-${i}${clientMark("aws-test", `cred-${i}`)}`,
        }),
      );
    await cognito.send(new CreateUserPoolClientCommand({ UserPoolId: env.seed.poolId, ClientName: "web-frontend" }));
    await cognito.send(
      new CreateUserPoolClientCommand({ UserPoolId: env.seed.poolId, ClientName: "credhook-unmarked" }),
    );
    await cognito.send(
      new CreateUserPoolClientCommand({
        UserPoolId: env.seed.poolId,
        ClientName: `credhook-x${clientMark("aws-eu", "cred-x")}`,
      }),
    );
    const provider = await makeProvider(env.fake, env.seed, "CLIENT_CREDENTIALS");
    const owned = await provider.listOwned!();
    expect(owned).toHaveLength(61);
    expect(owned.find((o) => o.description.includes("credhook-bulk-7@"))?.credentialId).toBe("cred-7");
    expect(owned.some((o) => /web-frontend|unmarked|credhook-x/.test(o.description))).toBe(false);
    expect(env.fake.stats().calls.ListUserPoolClients).toBe(2);
    cognito.destroy();
    await provider.close?.();
  });
});
