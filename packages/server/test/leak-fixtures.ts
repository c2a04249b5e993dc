/**
 * The set-up the leak-response tests share (leak-response.test.ts, secret-scanning.test.ts): one app's key on two
 * AWS fakes (two gateways), an Azure fake and the embedded gateway, and the calls that create and check it.
 */
import { expect } from "vitest";
import { startAwsFake, type AwsFake } from "@credhook/fakes/aws";
import { startApimFake, type ApimFake } from "@credhook/fakes/azure";
import type { TestServer } from "./helpers.js";

/** The fakes of {@link leakGatewaysYaml}: `us` (usage plan `us-gold` on `usapi00001`), `eu` (`eu-gold` on `euapi00001`), `azure` (`gold`, `orders-eu-1`). */
export interface LeakFakes {
  us: AwsFake;
  eu: AwsFake;
  azure: ApimFake;
}

/** Starts the {@link LeakFakes} with their usage plans. */
export async function startLeakFakes(): Promise<LeakFakes> {
  const [us, eu, azure] = await Promise.all([
    startAwsFake(),
    startAwsFake(),
    startApimFake({ products: ["gold"], apis: ["orders-eu-1"] }),
  ]);
  us.apiGateway.addUsagePlan({ id: "us-gold", name: "US Gold", apiStages: [{ apiId: "usapi00001", stage: "prod" }] });
  eu.apiGateway.addUsagePlan({ id: "eu-gold", name: "EU Gold", apiStages: [{ apiId: "euapi00001", stage: "prod" }] });
  return { us, eu, azure };
}

/** Closes the fakes of {@link startLeakFakes} (any not started is skipped). */
export async function closeLeakFakes(fakes: Partial<LeakFakes> | undefined): Promise<void> {
  await Promise.all([fakes?.us?.close(), fakes?.eu?.close(), fakes?.azure?.close()]);
}

const awsGateway = (name: string, fake: AwsFake) => `  ${name}:
    provider: aws
    credentialType: API_KEY
    options: { region: us-east-1, endpoint: "${fake.url}", credentials: { accessKeyId: fake, secretAccessKey: fake } }
`;

/**
 * The `gateways:`, `routes:` and `embeddedGateway:` blocks over `fakes`: `aws-us`, `aws-eu`, `azure`, `local` (the
 * default route, with the embedded gateway's key check on its own port for API `weather` under `/weather/`).
 * @param extra more gateways (YAML under `gateways:`) and their routes (YAML items, before the default route)
 */
export function leakGatewaysYaml(fakes: LeakFakes, extra: { gateways?: string; routes?: string } = {}): string {
  return `gateways:
${awsGateway("aws-us", fakes.us)}${awsGateway("aws-eu", fakes.eu)}  azure:
    provider: azure
    credentialType: API_KEY
    options:
      subscriptionId: 00000000-0000-0000-0000-000000000000
      resourceGroup: rg-credhook
      serviceName: apim-credhook
      endpoint: "${fakes.azure.url}"
      credential: { type: static-token, token: fake }
${extra.gateways ?? ""}  local: { provider: local, credentialType: API_KEY }
routes:
  - { apis: ["usapi00001"], gateway: aws-us }
  - { apis: ["euapi00001"], gateway: aws-eu }
  - { apis: ["orders-eu-*"], gateway: azure }
${extra.routes ?? ""}  - { default: local }
embeddedGateway:
  listen: { port: 0, host: 127.0.0.1 }
  keyCheck:
    apis: [ { pathPrefix: /weather/, api: weather } ]
`;
}

/** An API set on all four gateways of {@link leakGatewaysYaml}. */
export const EVERYWHERE = [
  { id: "usapi00001", usagePlans: [{ id: "us-gold" }] },
  { id: "euapi00001", usagePlans: [{ id: "eu-gold" }] },
  { id: "orders-eu-1", usagePlans: [{ id: "gold" }] },
  { id: "weather" },
];

/** Creates app `appName` (slug: its lowercase) of `dev@example.com` with `apis` through the portal's endpoint; expects 200. */
export async function createKey(
  s: TestServer,
  appName: string,
  apis: Array<{ id: string; usagePlans?: Array<{ id: string }> }>,
): Promise<{ apiKeyId: string; apiKey: string }> {
  const res = await s.call("/v1/createCredentials", {
    appName,
    appSlug: appName.toLowerCase(),
    developer: "dev@example.com",
    apis,
  });
  expect(res.status).toBe(200);
  return res.json as { apiKeyId: string; apiKey: string };
}

/** The embedded gateway's key check of `key` for `GET /weather/today`: its status (200 admitted, 401 refused). */
export function checkKey(s: TestServer, key: string): Promise<number> {
  return fetch(`${s.gatewayUrl}/check`, {
    headers: { "x-api-key": key, "x-original-uri": "/weather/today" },
  }).then((r) => r.status);
}
