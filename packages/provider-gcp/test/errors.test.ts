import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isCredhookError } from "@credhook/core/errors";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/fakes/gcp";
import { ManualClock } from "@credhook/fakes/clock";
import { makeProvider, rejection } from "./helpers.js";

let fake: ApiKeysFake;
beforeAll(async () => {
  // The fake's clock stands still: a request it delays (setLatency) is never answered in time.
  fake = await startApiKeysFake({ token: "the-right-token", clock: new ManualClock() });
});
afterAll(() => fake.close());
beforeEach(() => fake.control.reset());

const app = { appName: "Error App", developer: "dev@example.com" };
const apis = [{ id: "orders", usagePlans: [] }];
const good = { credentials: { type: "static-token" as const, token: "the-right-token" } };

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

function expectSafe(err: unknown, ...secrets: string[]) {
  expect(isCredhookError(err)).toBe(true);
  const e = err as Error & { messages: string[]; cause?: Error };
  for (const text of [e.message, ...e.messages, String(e.cause?.message ?? "")]) {
    for (const s of secrets) expect(text).not.toContain(s);
    expect(text).not.toContain('{"error"');
  }
}

describe("error mapping", () => {
  it("a call with no answer within requestTimeoutMs is UpstreamTimeout (504)", async () => {
    const provider = await makeProvider(fake, { ...good, requestTimeoutMs: 100, retry: { maxAttempts: 1 } });
    fake.control.setLatency(1000, { rpcs: ["CreateKey"] });
    const err = await rejection(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 504, code: "UPSTREAM_TIMEOUT" });
    expect((err as Error).message).toMatch(
      /^\[gateway gcp-test\] createKey credhook-\w+: Google API Keys did not answer in time \(no answer within 100 ms\)$/,
    );
    await provider.close();
  });

  it("an endpoint that refuses connections is UpstreamError (502)", async () => {
    const port = await closedPort();
    const provider = await makeProvider(fake, {
      ...good,
      endpoint: `http://127.0.0.1:${port}`,
      retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 },
    });
    const err = await rejection(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 502, code: "UPSTREAM_FAILED" });
    expect((err as Error).message).toMatch(/could not be reached \(ECONNREFUSED\)$/);
    expectSafe(err, "the-right-token");
    await provider.close();
  });

  it("rejected credentials (401) are UpstreamError naming the credentials option, without the token", async () => {
    const provider = await makeProvider(fake, { credentials: { type: "static-token", token: "a-wrong-token" } });
    const err = await rejection(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 502 });
    expect((err as Error).message).toMatch(
      /Google rejected the credentials \(401 UNAUTHENTICATED\); check the gateway's credentials option$/,
    );
    expectSafe(err, "a-wrong-token");
    await provider.close();
  });

  it("a project the principal cannot use (403) is UpstreamError naming the IAM role", async () => {
    const provider = await makeProvider(fake, { ...good, projectId: "someone-elses-project" });
    const err = await rejection(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis }));
    expect(err).toMatchObject({ status: 502 });
    expect((err as Error).message).toContain("roles/serviceusage.apiKeysAdmin");
    expectSafe(err, "the-right-token");
    await provider.close();
  });

  it("a secret never appears in an error, even when a call after getKeyString fails", async () => {
    const provider = await makeProvider(fake, good);
    const credentialId = randomUUID();
    const cred = await provider.create({ credentialId, credentialType: "API_KEY", app, apis });
    fake.control.fail({ status: 500, rpcs: ["GetKeyString"], times: 5 });
    const err = await rejection(
      provider.readSecret({
        credentialId,
        credentialType: "API_KEY",
        nativeId: cred.nativeId,
        resources: cred.resources,
        app,
      }),
    );
    expect(err).toMatchObject({ status: 502 });
    expectSafe(err, cred.apiKey!, "the-right-token");
    await provider.close();
  });

  it("after close(), calls fail with UpstreamUnavailable (503)", async () => {
    const provider = await makeProvider(fake, good);
    await provider.close();
    expect(
      await rejection(provider.create({ credentialId: randomUUID(), credentialType: "API_KEY", app, apis })),
    ).toMatchObject({ status: 503 });
  });
});
