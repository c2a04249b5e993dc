import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { keyIdFor } from "../src/mapping.js";
import { makeProvider, rejection } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  fake = await startApiKeysFake();
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Slow App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];

describe("long-running operations are bounded", () => {
  it("a create whose operation never finishes fails with UpstreamTimeout (504) reporting the key, deletes nothing itself, and a retried create resumes it", async () => {
    const provider = await makeProvider(fake, { operationTimeoutMs: 200 });
    fake.control.holdOperations(true);
    const credentialId = randomUUID();
    const err = await rejection(provider.create({ credentialId, credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({
      status: 504,
      code: "UPSTREAM_TIMEOUT",
      outcomeUnknown: true,
      partial: { nativeId: keyIdFor(credentialId, "credhook-") },
    });
    expect((err as Error).message).toMatch(
      /^\[gateway gcp-test\] createKey credhook-[a-z2-7]+: operation operations\/\S+ not done within 200 ms$/,
    );
    const polls = fake.requests().filter((r) => r.rpc === "GetOperation").length;
    expect(polls).toBeGreaterThan(1);

    // polling stopped: no further polls arrive once the call has failed
    await new Promise((r) => setTimeout(r, 100));
    expect(fake.requests().filter((r) => r.rpc === "GetOperation").length).toBe(polls);
    // providers never clean up alone: the key is left for core, which revokes the reported partial
    expect(fake.requests().some((r) => r.rpc === "DeleteKey")).toBe(false);
    expect(fake.keys().filter((k) => !k.deleteTime)).toHaveLength(1);

    fake.control.holdOperations(false);
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    expect(fake.keys()).toHaveLength(1);
    expect(fake.key(cred.nativeId)!.deleteTime).toBeUndefined();
    expect(cred.apiKey).toBe(fake.key(cred.nativeId)!.keyString);
    await provider.close();
  });

  it("a revoke whose delete operation never finishes fails with UpstreamTimeout (504)", async () => {
    // The key is made with the default operation timeout (a busy machine can take longer than 150 ms to finish it) …
    const creator = await makeProvider(fake);
    const credentialId = randomUUID();
    const cred = await creator.create({ credentialId, credentialType: "API_KEY", app, apis });
    await creator.close();
    // … and revoked by a gateway whose operations are bounded at 150 ms.
    const provider = await makeProvider(fake, { operationTimeoutMs: 150 });
    fake.control.holdOperations(true);
    const err = await rejection(
      provider.revoke({
        credentialId,
        credentialType: "API_KEY",
        nativeId: cred.nativeId,
        resources: cred.resources,
        app,
      }),
    );
    expect(err).toMatchObject({ status: 504 });
    expect((err as Error).message).toContain(`deleteKey ${cred.nativeId}`);
    await provider.close();
  });
});
