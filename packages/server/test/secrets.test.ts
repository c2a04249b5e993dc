import { afterAll, beforeAll, expect, it } from "vitest";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { LOCAL_YAML, PASSWORD, startTestServer, type TestServer } from "./helpers.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer(LOCAL_YAML);
});
afterAll(() => s.close());

it("no secret reaches the logs or the SQLite files in plaintext", async () => {
  const secrets: string[] = [PASSWORD];
  const key = await (
    await s.post("/v1/createCredentials", {
      appName: "Secretive",
      developer: "s@example.com",
      apis: [{ id: "5aba4csvd4" }],
    })
  ).json();
  const client = await (
    await s.post("/v1/createCredentials", { appName: "Machine", developer: "s@example.com", apis: [{ id: "m2m-a" }] })
  ).json();
  secrets.push(key.apiKey, client.clientSecret);
  // replay rotates: the new secret must not be stored either
  const replay = await (
    await s.post("/v1/createCredentials", {
      appName: "Secretive",
      developer: "s@example.com",
      apis: [{ id: "5aba4csvd4" }],
    })
  ).json();
  secrets.push(replay.apiKey);
  await s.post("/v1/updateCredentials", {
    credentialType: "API_KEY",
    apiKeyId: key.apiKeyId,
    apis: [{ id: "5aba4csvd4", action: "NONE" }],
  });
  // a revoke request carries the secret in its body; a wrong password attempt carries one in its header
  await s.post("/v1/revokeCredentials", {
    credentialType: "CLIENT_CREDENTIALS",
    clientId: client.clientId,
    clientSecret: client.clientSecret,
  });
  await fetch(`${s.url}/v1/health`, {
    headers: { authorization: `Basic ${Buffer.from(`portal:${key.apiKey}`).toString("base64")}` },
  });

  expect(secrets.every((x) => typeof x === "string" && x.length >= 20)).toBe(true);
  const logs = s.logs.join("\n");
  expect(s.logs.length).toBeGreaterThan(5);
  const files = readdirSync(s.dir).filter((f) => f.startsWith("credhook.db"));
  expect(files).toContain("credhook.db");
  const db = files.map((f) => readFileSync(join(s.dir, f)).toString("latin1")).join("\n");
  // the store does hold the credential ids (so the check reads real content)
  expect(db).toContain(key.apiKeyId);
  for (const secret of secrets) {
    expect(logs).not.toContain(secret);
    expect(db).not.toContain(secret);
    expect(logs).not.toContain(Buffer.from(secret).toString("base64"));
  }
  expect(logs).not.toMatch(/authorization":"Basic/i);
});
