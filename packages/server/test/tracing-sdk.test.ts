/**
 * Traces down to the cloud: with tracing on, each gateway call's span has a child
 * CLIENT span per HTTP request the unmodified cloud SDK sends (AWS and Azure through
 * node:http, Google's REST transport through fetch), and the cloud's request id is
 * recorded on successful calls too. In-memory exporter, against the cloud fakes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { startAwsFake, type AwsFake } from "@credhook/provider-aws/fake";
import { startApimFake, type ApimFake } from "@credhook/provider-azure/fake";
import { startApiKeysFake, type ApiKeysFake } from "@credhook/provider-gcp/fake";
import { cloudRequestIdIn, startTracing, type Tracing } from "../src/index.js";
import { startExampleServer, type TestServer } from "./helpers.js";

const exporter = new InMemorySpanExporter();
let tracing: Tracing | undefined;
beforeAll(async () => {
  tracing = await startTracing({ exporter });
});
afterAll(() => tracing?.shutdown());

const spans = () => exporter.getFinishedSpans();
const childrenOf = (parent: ReadableSpan) => spans().filter((x) => x.parentSpanContext?.spanId === parent.spanContext().spanId);
const isHttp = (s: ReadableSpan) => s.kind === SpanKind.CLIENT && (s.attributes["http.request.method"] ?? s.attributes["http.method"]) !== undefined;
const app = { appName: "Traced App", appSlug: "7raced0app", developer: "developer@example.com" };

/** Creates through `server`; returns the request's SERVER span, its gateway spans and their HTTP children. */
async function tracedCreate(server: TestServer, body: unknown) {
  const res = await server.post("/v1/createCredentials", body);
  expect(res.status).toBe(200);
  const requestId = res.headers.get("x-request-id");
  await new Promise((r) => setTimeout(r, 50)); // the SERVER span ends when the response finished
  const root = spans().find((s) => s.kind === SpanKind.SERVER && s.attributes["credhook.request_id"] === requestId);
  expect(root, "the request's span").toBeDefined();
  const gatewaySpans = childrenOf(root!).filter((s) => s.attributes["credhook.gateway"] !== undefined);
  return { root: root!, gatewaySpans, httpOf: (g: ReadableSpan) => childrenOf(g).filter(isHttp) };
}

describe("AWS (API Gateway through node:http)", () => {
  let fake: AwsFake;
  let server: TestServer;
  beforeAll(async () => {
    fake = await startAwsFake();
    fake.apiGateway.addUsagePlan({ id: "1el57v", name: "Orders Gold", apiStages: [{ apiId: "5aba4csvd4", stage: "prod" }] });
    server = await startExampleServer("aws", { FAKE_URL: fake.url });
  });
  afterAll(async () => {
    await server?.close();
    await fake?.close();
  });

  it("each gateway call has one HTTP child per SDK request, and the successful call records AWS's request id", async () => {
    const { gatewaySpans, httpOf } = await tracedCreate(server, { ...app, apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }] });
    const create = gatewaySpans.find((g) => g.attributes["credhook.operation"] === "create");
    expect(create?.attributes).toMatchObject({ "credhook.provider": "aws", "credhook.outcome": "ok" });
    const http = httpOf(create!);
    // CreateApiKey, then CreateUsagePlanKey: each a request of its own, to the fake.
    expect(http.length).toBeGreaterThanOrEqual(2);
    for (const h of http) expect(String(h.attributes["server.port"] ?? h.attributes["net.peer.port"])).toBe(new URL(fake.url).port);
    const ids = http.map((h) => h.attributes["credhook.cloud_request_id"]);
    for (const id of ids) expect(id).toMatch(/^[0-9a-zA-Z-]{16,}$/);
    expect(ids).toContain(create!.attributes["credhook.cloud_request_id"]);
  });
});

describe("Azure (API Management through node:https/http)", () => {
  let fake: ApimFake;
  let server: TestServer;
  beforeAll(async () => {
    fake = await startApimFake({ products: ["gold", "silver", "bronze"], apis: ["orders"] });
    server = await startExampleServer("azure", { FAKE_URL: fake.url });
  });
  afterAll(async () => {
    await server?.close();
    await fake?.close();
  });

  it("each gateway call has HTTP children for the SDK's requests", async () => {
    const { gatewaySpans, httpOf } = await tracedCreate(server, { ...app, apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }] });
    const create = gatewaySpans.find((g) => g.attributes["credhook.operation"] === "create");
    expect(create?.attributes).toMatchObject({ "credhook.provider": "azure", "credhook.outcome": "ok" });
    expect(httpOf(create!).length).toBeGreaterThanOrEqual(1);
  });
});

describe("Google (API Keys REST transport through fetch)", () => {
  let fake: ApiKeysFake;
  let server: TestServer;
  beforeAll(async () => {
    fake = await startApiKeysFake();
    server = await startExampleServer("gcp", { FAKE_URL: fake.url });
  });
  afterAll(async () => {
    await server?.close();
    await fake?.close();
  });

  it("each gateway call has HTTP children for the SDK's requests", async () => {
    const { gatewaySpans, httpOf } = await tracedCreate(server, { ...app, apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }] });
    const create = gatewaySpans.find((g) => g.attributes["credhook.operation"] === "create");
    expect(create?.attributes).toMatchObject({ "credhook.provider": "gcp", "credhook.outcome": "ok" });
    expect(httpOf(create!).length).toBeGreaterThanOrEqual(1);
  });
});

describe("the instrumentation", () => {
  it("is on only with tracing: node:http is patched now (the tracing-off counterpart is in tracing.test.ts)", async () => {
    expect(((await import("node:http")).request as { __wrapped?: boolean }).__wrapped).toBe(true);
  });
});

describe("cloudRequestIdIn", () => {
  it("reads each cloud's header from node:http headers and from undici's raw list", () => {
    expect(cloudRequestIdIn({ "x-amzn-requestid": "aws-1" })).toBe("aws-1");
    expect(cloudRequestIdIn({ "x-ms-request-id": "azure-1", "x-request-id": "other" })).toBe("azure-1");
    expect(cloudRequestIdIn([Buffer.from("Content-Type"), Buffer.from("application/json"), Buffer.from("X-Goog-Request-Id"), Buffer.from("g-1")])).toBe("g-1");
    expect(cloudRequestIdIn({ "content-type": "application/json" })).toBeUndefined();
  });
});
