import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { ConfigError, UpstreamError } from "@credhook/core/errors";
import { cloudRequestId, startTracing, tracingRequested, type Tracing } from "../src/index.js";
import { AUTH, LOCAL_YAML, startTestServer, type TestServer, until } from "./helpers.js";

const FAULTY = fileURLToPath(new URL("./fixtures/faulty-provider.ts", import.meta.url));
const YAML = LOCAL_YAML.replace(
  "routes:\n",
  `  faulty: { provider: ${FAULTY}, credentialType: API_KEY, options: { label: traced } }\nroutes:\n  - { apis: [throttle, "fine-*"], gateway: faulty }\n`,
);

describe("tracingRequested: the standard OTEL_* variables", () => {
  it("is off by default and on for an OTLP endpoint or an explicit exporter", () => {
    expect(tracingRequested({})).toBeUndefined();
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({ exporter: "otlp" });
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toEqual({
      exporter: "otlp",
    });
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: "console" })).toEqual({ exporter: "console" });
    expect(
      tracingRequested({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }),
    ).toBeUndefined();
    expect(tracingRequested({ OTEL_SDK_DISABLED: "true", OTEL_TRACES_EXPORTER: "otlp" })).toBeUndefined();
  });

  it("off, startTracing loads nothing and patches nothing: node:http's request stays Node's own", async () => {
    expect(await startTracing({ env: {} })).toBeUndefined();
    expect((request as { __wrapped?: boolean }).__wrapped).toBeUndefined();
    expect(((await import("node:https")).request as { __wrapped?: boolean }).__wrapped).toBeUndefined();
  });

  it("names what it does not support instead of ignoring it", () => {
    expect(() => tracingRequested({ OTEL_TRACES_EXPORTER: "zipkin" })).toThrow(ConfigError);
    expect(() => tracingRequested({ OTEL_TRACES_EXPORTER: "zipkin" })).toThrow(
      "OTEL_TRACES_EXPORTER: zipkin is not supported by credhook; use otlp, console or none",
    );
    expect(() =>
      tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }),
    ).toThrow(/grpc is not supported/);
  });
});

describe("cloudRequestId", () => {
  it("finds AWS's and Azure's request ids in a provider error's cause", () => {
    const aws = Object.assign(new Error("TooManyRequestsException"), {
      $metadata: { httpStatusCode: 429, requestId: "7f3c0a6e-aws" },
    });
    expect(cloudRequestId(new UpstreamError("[gateway aws] failed", { cause: aws }))).toBe("7f3c0a6e-aws");
    const azure = Object.assign(new Error("RestError"), {
      response: { headers: { get: (n: string) => (n === "x-ms-request-id" ? "b2e1-azure" : undefined) } },
    });
    expect(cloudRequestId(new UpstreamError("[gateway azure] failed", { cause: azure }))).toBe("b2e1-azure");
    expect(cloudRequestId(new UpstreamError("no id"))).toBeUndefined();
  });
});

describe("traces of webhook requests (in-memory exporter)", () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing | undefined;
  let s: TestServer;
  beforeAll(async () => {
    tracing = await startTracing({ exporter });
    s = await startTestServer(YAML);
  });
  afterAll(async () => {
    await s.close();
    await tracing?.shutdown();
  });

  const spans = () => exporter.getFinishedSpans();
  const childrenOf = (parent: ReadableSpan) =>
    spans().filter((x) => x.parentSpanContext?.spanId === parent.spanContext().spanId);

  it("one SERVER span per request, continuing the caller's traceparent, with one CLIENT child per gateway; log lines carry the trace id", async () => {
    exporter.reset();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const res = await s.post(
      "/v1/createCredentials",
      {
        appName: "Traced",
        developer: "t@example.com",
        apis: [{ id: "5aba4csvd4", usagePlans: [{ id: "1el57v" }] }, { id: "fine-1" }],
      },
      { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { apiKeyId: string };
    await until("the request's SERVER span", () => spans().some((x) => x.kind === SpanKind.SERVER)); // it ends once the response finished
    const server = spans().filter((x) => x.kind === SpanKind.SERVER);
    expect(server.map((x) => x.name)).toEqual(["POST /v1/createCredentials"]);
    const root = server[0]!;
    expect(root.spanContext().traceId).toBe(traceId);
    expect(root.parentSpanContext?.spanId).toBe("00f067aa0ba902b7");
    expect(root.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/createCredentials",
      "http.response.status_code": 200,
      "credhook.gateways": ["local", "faulty"],
    });
    expect(root.attributes["credhook.request_id"]).toBe(res.headers.get("x-request-id"));
    const children = childrenOf(root);
    expect(children.map((c) => c.name).sort()).toEqual(["create faulty", "create local"]);
    for (const c of children) {
      expect(c.kind).toBe(SpanKind.CLIENT);
      expect(c.spanContext().traceId).toBe(traceId);
      expect(c.attributes["credhook.operation"]).toBe("create");
      expect(c.attributes["credhook.outcome"]).toBe("ok");
    }
    expect(children.find((c) => c.name === "create local")!.attributes).toMatchObject({
      "credhook.gateway": "local",
      "credhook.provider": "local",
    });
    expect(children.find((c) => c.name === "create faulty")!.attributes).toMatchObject({
      "credhook.gateway": "faulty",
      "credhook.provider": FAULTY,
    });
    // no secret in any span
    expect(JSON.stringify(spans().map((x) => x.attributes))).not.toMatch(/[0-9A-Za-z]{40}/);

    const lines = s.logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.credentialId !== undefined && l.traceId === traceId);
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(["credential created", "request completed"]));

    // the next request is another trace: revoke touches both gateways again
    exporter.reset();
    expect((await s.post("/v1/revokeCredentials", { credentialType: "API_KEY", apiKeyId: body.apiKeyId })).status).toBe(
      204,
    );
    await until("the request's SERVER span", () => spans().some((x) => x.kind === SpanKind.SERVER)); // it ends once the response finished
    const revoke = spans().find((x) => x.kind === SpanKind.SERVER)!;
    expect(revoke.name).toBe("POST /v1/revokeCredentials");
    expect(revoke.spanContext().traceId).not.toBe(traceId);
    expect(
      childrenOf(revoke)
        .map((c) => c.name)
        .sort(),
    ).toEqual(["revoke faulty", "revoke local"]);
  });

  it("a body that arrives in pieces keeps its gateway spans under the request's span", async () => {
    exporter.reset();
    const body = JSON.stringify({ appName: "Slow body", developer: "t@example.com", apis: [{ id: "5aba4csvd4" }] });
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${s.url}/v1/createCredentials`, {
        method: "POST",
        headers: { authorization: AUTH, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.write(body.slice(0, 10));
      setTimeout(() => req.end(body.slice(10)), 100);
    });
    expect(status).toBe(200);
    await until("the request's SERVER span", () => spans().some((x) => x.kind === SpanKind.SERVER)); // it ends once the response finished
    const root = spans().find((x) => x.kind === SpanKind.SERVER)!;
    expect(childrenOf(root).map((c) => c.name)).toEqual(["create local"]);
  });

  it("a failing gateway call is an ERROR span with the error code as outcome; the request span records the 503", async () => {
    exporter.reset();
    const res = await s.post("/v1/createCredentials", {
      appName: "Throttled",
      developer: "t@example.com",
      apis: [{ id: "throttle" }],
    });
    expect(res.status).toBe(503);
    await until("the request's SERVER span", () => spans().some((x) => x.kind === SpanKind.SERVER)); // it ends once the response finished
    const root = spans().find((x) => x.kind === SpanKind.SERVER)!;
    expect(root.status.code).toBe(SpanStatusCode.ERROR);
    expect(root.attributes).toMatchObject({ "http.response.status_code": 503, "credhook.error_code": "THROTTLED" });
    const [gateway] = childrenOf(root);
    expect(gateway).toBeDefined();
    expect(gateway!.name).toBe("create faulty");
    expect(gateway!.status.code).toBe(SpanStatusCode.ERROR);
    expect(gateway!.attributes["credhook.outcome"]).toBe("THROTTLED");
  });

  it("probes and /metrics make no spans", async () => {
    exporter.reset();
    expect((await fetch(`${s.url}/livez`)).status).toBe(204);
    expect((await fetch(`${s.url}/readyz`)).status).toBe(204);
    await new Promise((r) => setTimeout(r, 20));
    expect(spans()).toEqual([]);
  });
});

describe("traces exported over OTLP/HTTP (protobuf) when OTEL_EXPORTER_OTLP_ENDPOINT is set", () => {
  it("posts the request's spans to the collector's /v1/traces", async () => {
    const received: Array<{ path: string; type: string; body: Buffer }> = [];
    const collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({ path: req.url ?? "", type: String(req.headers["content-type"]), body: Buffer.concat(chunks) });
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      });
    });
    await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
    const saved = { ...process.env };
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    process.env.OTEL_SERVICE_NAME = "credhook-under-test";
    let tracing: Tracing | undefined;
    try {
      tracing = await startTracing();
      expect(tracing).toBeDefined();
      const s = await startTestServer(YAML);
      try {
        expect(
          (
            await s.post("/v1/createCredentials", {
              appName: "Exported",
              developer: "e@example.com",
              apis: [{ id: "5aba4csvd4" }],
            })
          ).status,
        ).toBe(200);
      } finally {
        await s.close();
      }
      await tracing!.shutdown(); // flushes the batch
      tracing = undefined;
      expect(received.length).toBeGreaterThan(0);
      expect(received[0]!.path).toBe("/v1/traces");
      expect(received[0]!.type).toBe("application/x-protobuf");
      const all = Buffer.concat(received.map((r) => r.body)).toString("latin1");
      expect(all).toContain("POST /v1/createCredentials");
      expect(all).toContain("create local");
      expect(all).toContain("credhook-under-test");
    } finally {
      await tracing?.shutdown();
      process.env = saved;
      collector.close();
    }
  });
});
