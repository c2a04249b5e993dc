/**
 * `credhook check-config` prints every gateway's options with the secret ones masked: the
 * options each built-in provider's schema marks `writeOnly` (client secrets, keys, tokens) and a
 * third-party provider's `headers` that carry an `Authorization` credential — through
 * checkConfig and checkConfigReport, the two functions the command runs.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { checkConfig, checkConfigReport } from "../src/check-config.js";
import { importProviderModule, loadConfigFile } from "../src/index.js";
import { apiKeyStubProvider } from "./fixtures/stub-provider.js";

const SECRETS = {
  AWS_SECRET: "aws-secret-access-key-0001",
  AWS_SESSION: "aws-session-token-0002",
  AZURE_SECRET: "azure-client-secret-0003",
  GCP_TOKEN: "gcp-static-token-0004",
  APIGEE_TOKEN: "apigee-static-token-0005",
  KONG_TOKEN: "kong-rbac-token-0006",
  HEADER: "Bearer header-credential-0007",
};

/** A third-party provider whose `headers` option carries a credential. */
const headersProvider = apiKeyStubProvider("headers", {
  type: "object",
  additionalProperties: false,
  required: ["url"],
  properties: {
    url: { type: "string", description: "Base URL of the gateway's admin API." },
    headers: {
      type: "object",
      additionalProperties: { type: "string" },
      writeOnly: true,
      description: "Headers of every call, e.g. `Authorization`: secret.",
    },
  },
});

const YAML = `
server:
  auth:
    users:
      - { username: portal, password: "check-config-secrets-password" }
store: { sqlite: ./data/credhook.db }
gateways:
  aws:
    provider: aws
    credentialType: API_KEY
    options:
      region: eu-west-1
      endpoint: http://127.0.0.1:9
      credentials: { accessKeyId: AKIAEXAMPLE, secretAccessKey: "${SECRETS.AWS_SECRET}", sessionToken: "${SECRETS.AWS_SESSION}" }
  azure:
    provider: azure
    credentialType: API_KEY
    options:
      subscriptionId: 11111111-2222-3333-4444-555555555555
      resourceGroup: rg
      serviceName: apim
      credential: { type: client-secret, tenantId: t, clientId: c, clientSecret: "${SECRETS.AZURE_SECRET}" }
  gcp:
    provider: gcp
    credentialType: API_KEY
    options:
      projectId: p
      serviceTemplate: "{apiId}.apigateway.p.cloud.goog"
      credentials: { type: static-token, token: "${SECRETS.GCP_TOKEN}" }
  apigee:
    provider: apigee
    credentialType: API_KEY
    options:
      organization: org
      credentials: { type: static-token, token: "${SECRETS.APIGEE_TOKEN}" }
  kong:
    provider: kong
    credentialType: API_KEY
    options:
      adminUrl: http://127.0.0.1:9
      auth: { type: rbac-token, token: "${SECRETS.KONG_TOKEN}" }
  third-party:
    provider: credhook-provider-headers
    credentialType: API_KEY
    options:
      url: https://gateway.example.com/admin
      headers: { Authorization: "${SECRETS.HEADER}" }
routes:
  - default: aws
`;

const dir = mkdtempSync(join(tmpdir(), "credhook-check-config-secrets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("check-config's report masks every provider's secret options and a third party's credential header", async () => {
  const file = join(dir, "webhook.config.yaml");
  writeFileSync(file, YAML);
  const importModule = async (specifier: string) =>
    specifier === "credhook-provider-headers" ? { default: headersProvider } : importProviderModule(specifier);
  const config = await loadConfigFile(file, { importModule });
  const gateways = await checkConfig(config, importModule);
  try {
    const report = checkConfigReport(config, gateways, []);
    for (const secret of Object.values(SECRETS)) expect(report).not.toContain(secret);
    const options = (gateway: string) =>
      JSON.parse(new RegExp(`^  ${gateway}: .*\\n    options: (.*)$`, "m").exec(report)![1]!) as Record<
        string,
        unknown
      >;
    expect(options("aws").credentials).toEqual({
      accessKeyId: "AKIAEXAMPLE",
      secretAccessKey: "****",
      sessionToken: "****",
    });
    expect(options("azure").credential).toEqual({
      type: "client-secret",
      tenantId: "t",
      clientId: "c",
      clientSecret: "****",
    });
    expect(options("gcp").credentials).toEqual({ type: "static-token", token: "****" });
    expect(options("apigee").credentials).toEqual({ type: "static-token", token: "****" });
    expect(options("kong").auth).toEqual({ type: "rbac-token", token: "****" });
    expect(options("third-party")).toEqual({ url: "https://gateway.example.com/admin", headers: "****" });
  } finally {
    await Promise.allSettled([...gateways.values()].map((g) => g.provider.close?.()));
  }
});
