/**
 * Traces down to the cloud: with tracing on, each gateway call's span has a child
 * CLIENT span per HTTP request the unmodified cloud SDK sends (AWS and Azure through
 * node:http, Google's REST transport through fetch), and the cloud's request id is
 * recorded on successful calls too. In-memory exporter, against the cloud fakes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { startAwsFake } from "@credhook/fakes/aws";
import { startApimFake } from "@credhook/fakes/azure";
import { startApiKeysFake } from "@credhook/fakes/gcp";
import { cloudRequestIdIn, startTracing, type Tracing } from "../src/index.js";
import { startExampleServer, type TestServer, until } from "./helpers.js";

const exporter = new InMemorySpanExporter();
let tracing: Tracing | undefined;
beforeAll(async () => {
  tracing = await startTracing({ exporter });
});
afterAll(() => tracing?.shutdown());

const spans = () => exporter.getFinishedSpans();
const childrenOf = (parent: ReadableSpan) =>
  spans().filter((x) => x.parentSpanContext?.spanId === parent.spanContext().spanId);
const isHttp = (s: ReadableSpan) =>
  s.kind === SpanKind.CLIENT && (s.attributes["http.request.method"] ?? s.attributes["http.method"]) !== undefined;
const app = { appName: "Traced App", appSlug: "7raced0app", developer: "developer@example.com" };

/** Creates through `server`; returns the request's SERVER span, its gateway spans and their HTTP children. */
async function tracedCreate(server: TestServer, body: unknown) {
  const res = await server.post("/v1/createCredentials", body);
  expect(res.status).toBe(200);
  const requestId = res.headers.get("x-request-id");
  // the SERVER span ends when the response finished
  await until("the request's SERVER span", () =>
    spans().some((s) => s.kind === SpanKind.SERVER && s.attributes["credhook.request_id"] === requestId),
  );
  const root = spans().find((s) => s.kind === SpanKind.SERVER && s.attributes["credhook.request_id"] === requestId);
  expect(root, "the request's span").toBeDefined();
  const gatewaySpans = childrenOf(root!).filter((s) => s.attributes["credhook.gateway"] !== undefined);
  return { root: root!, gatewaySpans, httpOf: (g: ReadableSpan) => childrenOf(g).filter(isHttp) };
}

/** One cloud: its fake (as the operator set it up), the example config that points at it, and whether the fake sends request ids. */
interface Cloud {
  provider: string;
  transport: string;
  start(): Promise<{ url: string; close(): Promise<void> }>;
  /** The least number of HTTP requests a create sends. */
  minRequests: number;
  /** The fake answers with the cloud's request id header, as the cloud does. */
  sendsRequestIds: boolean;
}

const CLOUDS: Record<"aws" | "azure" | "gcp", Cloud> = {
  aws: {
    provider: "aws",
    transport: "API Gateway through node:http",
    async start() {
      const fake = await startAwsFake();
      fake.apiGateway.addUsagePlan({
        id: "1el57v",
        name: "Orders Gold",
        apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }],
      });
      return fake;
    },
    minRequests: 2, // CreateApiKey, then CreateUsagePlanKey
    sendsRequestIds: true,
  },
  azure: {
    provider: "azure",
    transport: "API Management through node:http",
    start: () => startApimFake({ products: ["gold", "silver", "bronze"], apis: ["orders"] }),
    minRequests: 1,
    sendsRequestIds: true,
  },
  gcp: {
    provider: "gcp",
    transport: "API Keys REST transport through fetch",
    start: () => startApiKeysFake(),
    minRequests: 1,
    sendsRequestIds: false,
  },
};

const running: Array<{ fake: { close(): Promise<void> }; server?: TestServer }> = [];
const servers: Partial<Record<keyof typeof CLOUDS, { server: TestServer; port: string }>> = {};
beforeAll(async () => {
  for (const [example, cloud] of Object.entries(CLOUDS) as Array<[keyof typeof CLOUDS, Cloud]>) {
    const fake = await cloud.start();
    const entry: (typeof running)[number] = { fake };
    running.push(entry);
    entry.server = await startExampleServer(example, { FAKE_URL: fake.url });
    servers[example] = { server: entry.server, port: new URL(fake.url).port };
  }
});
afterAll(async () => {
  for (const { fake, server } of running.reverse()) {
    await server?.close();
    await fake.close();
  }
});

for (const [example, cloud] of Object.entries(CLOUDS) as Array<[keyof typeof CLOUDS, Cloud]>) {
  describe(`${cloud.provider} (${cloud.transport})`, () => {
    it(`the create's gateway span has a CLIENT child per HTTP request the SDK sent to the fake${cloud.sendsRequestIds ? ", and the cloud's request id on success" : ""}`, async () => {
      const { server, port } = servers[example]!;
      const { gatewaySpans, httpOf } = await tracedCreate(server, {
        ...app,
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }],
      });
      const create = gatewaySpans.find((g) => g.attributes["credhook.operation"] === "create");
      expect(create?.attributes).toMatchObject({ "credhook.provider": cloud.provider, "credhook.outcome": "ok" });
      const http = httpOf(create!);
      expect(http.length).toBeGreaterThanOrEqual(cloud.minRequests);
      for (const h of http) expect(String(h.attributes["server.port"] ?? h.attributes["net.peer.port"])).toBe(port);
      if (!cloud.sendsRequestIds) return;
      const ids = http.map((h) => h.attributes["credhook.cloud_request_id"]);
      for (const id of ids) expect(id).toMatch(/^[0-9a-zA-Z-]{16,}$/);
      expect(ids).toContain(create!.attributes["credhook.cloud_request_id"]);
    });
  });
}

describe("the instrumentation", () => {
  it("is on only with tracing: node:http is patched now (the tracing-off counterpart is in tracing.test.ts)", async () => {
    expect(((await import("node:http")).request as { __wrapped?: boolean }).__wrapped).toBe(true);
  });
});

describe("cloudRequestIdIn", () => {
  it("the spans' resource names the service and its version (service.version: the package's)", async () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    await until("a finished span", () => spans().length > 0);
    expect(spans()[0]!.resource.attributes).toMatchObject({
      "service.name": "credhook",
      "service.version": pkg.version,
    });
  });

  it("reads each cloud's header from node:http headers and from undici's raw list", () => {
    expect(cloudRequestIdIn({ "x-amzn-requestid": "aws-1" })).toBe("aws-1");
    expect(cloudRequestIdIn({ "x-ms-request-id": "azure-1", "x-request-id": "other" })).toBe("azure-1");
    expect(
      cloudRequestIdIn([
        Buffer.from("Content-Type"),
        Buffer.from("application/json"),
        Buffer.from("X-Goog-Request-Id"),
        Buffer.from("g-1"),
      ]),
    ).toBe("g-1");
    expect(cloudRequestIdIn({ "content-type": "application/json" })).toBeUndefined();
  });
});
