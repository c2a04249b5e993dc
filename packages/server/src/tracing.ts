/**
 * OpenTelemetry traces through `@opentelemetry/api`:
 * - {@link traceRequests}: one SERVER span per webhook request (`POST /v1/createCredentials` …),
 *   continuing an incoming W3C `traceparent`;
 * - {@link traceGateways}: one CLIENT span per gateway call, a child of the request's span,
 *   with the attributes `credhook.gateway`, `credhook.provider`, `credhook.operation`,
 *   `credhook.outcome` (`ok` or the error code) and `credhook.cloud_request_id` where the
 *   cloud's answer carried one;
 * - the cloud SDKs' own HTTP requests: with traces on, the OpenTelemetry HTTP (node:http/https:
 *   AWS SDK, Azure SDK) and undici (global `fetch`: Google's REST transport) instrumentations
 *   make one CLIENT span per request the SDK sends inside a gateway call, a child of the
 *   gateway's span; the cloud's request id in the answer (AWS `x-amzn-RequestId`, Azure
 *   `x-ms-request-id`, Google `x-goog-request-id`…, see {@link CLOUD_REQUEST_ID_HEADERS}) is
 *   recorded on that span and on the gateway span, on success as on failure;
 * - {@link startTracing}: the SDK, exporter and instrumentations, loaded only when the standard `OTEL_*`
 *   variables ask for traces ({@link tracingRequested}); otherwise the API is a no-op and
 *   nothing of the SDK is loaded.
 *
 * Environment variables: https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
 */
import { createRequire, syncBuiltinESMExports } from "node:module";
import type { IncomingHttpHeaders } from "node:http";
import type { NextFunction, Request, Response } from "express";
import {
  context,
  diag,
  DiagLogLevel,
  propagation,
  ProxyTracerProvider,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace-node";
import { ConfigError, isCredhookError } from "@credhook/core/errors";
import type { Gateway } from "@credhook/core";
import type { Provider } from "@credhook/core/provider";
import { VERSION } from "./version.js";

/** Instrumentation scope name of credhook's spans. */
export const TRACER_NAME = "credhook";

const tracer = () => trace.getTracer(TRACER_NAME);

/** What {@link tracingRequested} found in the environment. */
export interface TracingRequest {
  /** `otlp` (OTLP over HTTP, protobuf) or `console` (spans printed on stdout, for debugging). */
  exporter: "otlp" | "console";
}

/**
 * Whether the standard variables enable a trace exporter. Traces are off unless:
 * `OTEL_TRACES_EXPORTER` is `otlp` or `console`, or it is unset and
 * `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set.
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn them off.
 * @throws ConfigError an exporter or OTLP protocol credhook does not ship (zipkin, grpc …)
 */
export function tracingRequested(env: Record<string, string | undefined> = process.env): TracingRequest | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return undefined;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  let exporter: TracingRequest["exporter"] | undefined;
  if (exporters.length === 0)
    exporter = env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? "otlp" : undefined;
  else if (exporters.includes("none")) exporter = undefined;
  else {
    const unknown = exporters.filter((e) => e !== "otlp" && e !== "console");
    if (unknown.length > 0)
      throw new ConfigError([
        `OTEL_TRACES_EXPORTER: ${unknown.join(", ")} is not supported by credhook; use otlp, console or none`,
      ]);
    exporter = exporters.includes("otlp") ? "otlp" : "console";
  }
  if (exporter === "otlp") {
    const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/protobuf";
    if (protocol !== "http/protobuf") {
      throw new ConfigError([
        `OTEL_EXPORTER_OTLP_PROTOCOL: ${protocol} is not supported by credhook; use http/protobuf (the default; an OpenTelemetry Collector accepts it on port 4318)`,
      ]);
    }
  }
  return exporter ? { exporter } : undefined;
}

/** A started tracing SDK. */
export interface Tracing {
  /**
   * Flushes pending spans and stops the SDK (call on shutdown), waiting at most `maxMs` ms
   * (default {@link TRACING_SHUTDOWN_MS}) for an exporter that does not answer: the spans still
   * pending then are dropped, and said so once in the log.
   */
  shutdown(maxMs?: number): Promise<void>;
}

/** How long {@link Tracing.shutdown} waits for the last spans to be exported, ms. */
export const TRACING_SHUTDOWN_MS = 2000;

/** The logger tracing reports to: an export that failed, a flush that did not finish in time. */
export interface TracingLogger {
  warn(fields: object, msg: string): void;
}

/**
 * Routes the SDK's errors (an OTLP export that failed: unreachable or invalid endpoint, a
 * refusing Collector…, which the SDK reports through `diag` and otherwise drops) to `logger`,
 * once: the first one is logged with its message (never a stack), later ones only counted
 * silently — an unreachable Collector would otherwise write a line per batch.
 */
function reportSdkErrorsOnce(logger: TracingLogger | undefined, endpoint: string | undefined): void {
  let reported = false;
  const error = (message: string) => {
    if (reported || !logger) return;
    reported = true;
    let reason = message;
    try {
      reason = (JSON.parse(message) as { message?: string }).message ?? message;
    } catch {
      // not JSON: the message as it is
    }
    logger.warn(
      { endpoint, reason: reason.slice(0, 300) },
      "OpenTelemetry: traces cannot be exported (logged once; spans are dropped until the exporter recovers)",
    );
  };
  const ignore = () => {};
  diag.setLogger(
    { error, warn: ignore, info: ignore, debug: ignore, verbose: ignore },
    { logLevel: DiagLogLevel.ERROR, suppressOverrideMessage: true },
  );
}

/** Options of {@link startTracing}. */
export interface StartTracingOptions {
  env?: Record<string, string | undefined>;
  /**
   * Exporter to use instead of the one the environment names, with a synchronous
   * processor (tests: an `InMemorySpanExporter`). Tracing is then on whatever the environment says.
   */
  exporter?: SpanExporter;
  /** `service.version` resource attribute. @default credhook's {@link VERSION} */
  serviceVersion?: string;
  /** Where the SDK's errors (a failed export) and a late shutdown are reported, once. @default nowhere */
  logger?: TracingLogger;
}

/**
 * Starts the OpenTelemetry SDK when {@link tracingRequested} (or `options.exporter`) asks for it:
 * a NodeTracerProvider (AsyncLocalStorage context, W3C trace context propagation,
 * `OTEL_TRACES_SAMPLER`), a batch processor (`OTEL_BSP_*`) and the OTLP/HTTP protobuf
 * exporter (`OTEL_EXPORTER_OTLP_*ENDPOINT`, `_HEADERS`, `_TIMEOUT`), with the resource
 * `service.name=credhook` and `service.version` (credhook's version) unless `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` say otherwise.
 * The SDK packages are imported only here, only then.
 * @returns the running SDK, or undefined when traces are off
 * @throws ConfigError see {@link tracingRequested}
 */
export async function startTracing(options: StartTracingOptions = {}): Promise<Tracing | undefined> {
  const request = options.exporter ? undefined : tracingRequested(options.env ?? process.env);
  if (!options.exporter && !request) return undefined;
  const [
    { NodeTracerProvider, BatchSpanProcessor, SimpleSpanProcessor, ConsoleSpanExporter },
    { defaultResource, detectResources, envDetector, resourceFromAttributes },
  ] = await Promise.all([import("@opentelemetry/sdk-trace-node"), import("@opentelemetry/resources")]);
  let processor;
  if (options.exporter) processor = new SimpleSpanProcessor(options.exporter);
  else if (request!.exporter === "console") processor = new SimpleSpanProcessor(new ConsoleSpanExporter());
  else {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-proto");
    processor = new BatchSpanProcessor(new OTLPTraceExporter());
  }
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": "credhook", "service.version": options.serviceVersion ?? VERSION }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  const env = options.env ?? process.env;
  reportSdkErrorsOnce(options.logger, env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
  provider.register();
  const stopInstrumentations = await instrumentCloudHttp(provider);
  return {
    async shutdown(maxMs = TRACING_SHUTDOWN_MS) {
      stopInstrumentations();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), maxMs);
      });
      const outcome = await Promise.race([provider.shutdown().catch(() => undefined), late]);
      clearTimeout(timer);
      if (outcome === "late")
        options.logger?.warn({ maxMs }, "OpenTelemetry: the last spans were not exported in time; dropped");
      diag.disable();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/**
 * Response headers that carry a cloud's request id, in the order they are looked for:
 * AWS (`x-amzn-RequestId`: https://docs.aws.amazon.com/apigateway/latest/api/CommonErrors.html,
 * `x-amz-request-id`), Azure (`x-ms-request-id`: https://learn.microsoft.com/en-us/rest/api/azure/#response-headers),
 * Google (`x-goog-request-id`, and `x-request-id` as a last resort).
 */
export const CLOUD_REQUEST_ID_HEADERS = [
  "x-amzn-requestid",
  "x-amz-request-id",
  "x-ms-request-id",
  "x-goog-request-id",
  "x-request-id",
] as const;

/**
 * The cloud request id among response headers: node:http's `IncomingHttpHeaders`
 * (lower-case names) or undici's raw list (`[name, value, name, value…]` as Buffers or strings).
 */
export function cloudRequestIdIn(
  headers: IncomingHttpHeaders | ReadonlyArray<Buffer | string> | undefined,
): string | undefined {
  if (!headers) return undefined;
  let found: Partial<Record<string, string>>;
  if (Array.isArray(headers)) {
    found = {};
    for (let i = 0; i + 1 < headers.length; i += 2) found[String(headers[i]).toLowerCase()] ??= String(headers[i + 1]);
  } else found = headers as Partial<Record<string, string>>;
  for (const name of CLOUD_REQUEST_ID_HEADERS) {
    const v = found[name];
    if (typeof v === "string" && v) return v.slice(0, 200);
  }
  return undefined;
}

/** The gateway spans in progress, by span id: the parents the cloud SDKs' HTTP spans report request ids to. */
const gatewaySpans = new Map<string, Span>();

/** Records a cloud request id found in an HTTP answer on its span and on the gateway span it belongs to. */
function noteCloudAnswer(httpSpan: Span, headers: Parameters<typeof cloudRequestIdIn>[0]): void {
  const id = cloudRequestIdIn(headers);
  if (!id) return;
  httpSpan.setAttribute("credhook.cloud_request_id", id);
  const parentId = (httpSpan as unknown as { parentSpanContext?: { spanId: string } }).parentSpanContext?.spanId;
  const gateway = parentId ? gatewaySpans.get(parentId) : undefined;
  gateway?.setAttribute("credhook.cloud_request_id", id);
}

/**
 * Loads and enables the HTTP (node:http/https) and undici (fetch) instrumentations for
 * `provider`: CLIENT spans only for requests made inside a span (a gateway call; never for
 * the OTLP exporter's own requests), no span for incoming requests (credhook makes its own),
 * and the cloud request id of each answer recorded ({@link noteCloudAnswer}). The SDKs hold
 * `node:http`'s functions from ESM imports too, so the patched functions are synced into
 * the ESM bindings (`module.syncBuiltinESMExports`).
 * @returns a function that disables them again
 */
async function instrumentCloudHttp(
  provider: import("@opentelemetry/sdk-trace-node").NodeTracerProvider,
): Promise<() => void> {
  const [{ registerInstrumentations }, { HttpInstrumentation }, { UndiciInstrumentation }] = await Promise.all([
    import("@opentelemetry/instrumentation"),
    import("@opentelemetry/instrumentation-http"),
    import("@opentelemetry/instrumentation-undici"),
  ]);
  const disable = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        disableIncomingRequestInstrumentation: true,
        requireParentforOutgoingSpans: true,
        responseHook: (span, response) => noteCloudAnswer(span, "headers" in response ? response.headers : undefined),
      }),
      new UndiciInstrumentation({
        requireParentforSpans: true,
        responseHook: (span, { response }) => noteCloudAnswer(span, response.headers),
      }),
    ],
  });
  // The http instrumentation patches node:http / node:https when they are next required; ESM importers see it once synced.
  const require = createRequire(import.meta.url);
  require("node:http");
  require("node:https");
  syncBuiltinESMExports();
  return disable;
}

/** The provider the API delegates to while none is registered (a singleton of @opentelemetry/api). */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/** Whether a tracer provider is registered globally (by {@link startTracing}, or by the embedding application). */
function tracingRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

/** The active span's trace and span ids, for log lines; empty when no span is being recorded or propagated. */
export function traceIds(): { traceId?: string; spanId?: string } {
  const sc = trace.getActiveSpan()?.spanContext();
  if (!sc || !trace.isSpanContextValid(sc)) return {};
  return { traceId: sc.traceId, spanId: sc.spanId };
}

/**
 * Express middleware: a SERVER span for every request whose path starts with
 * `/v1/` (the webhook's endpoints; probes and `/metrics` are left out), named
 * `<METHOD> <path>`, made the active context for the rest of the request. It
 * ends when the response finishes, with `http.response.status_code`, the request
 * id, the gateways and credential id the operation touched, and status ERROR for 5xx.
 */
export function traceRequests() {
  return (req: Request, res: Response, next: NextFunction): void => {
    // Without a registered tracer provider every span is a no-op: skip the context binding too.
    if (!tracingRegistered() || !req.path.startsWith("/v1/")) return next();
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer().startSpan(
      `${req.method} ${req.path}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "http.request.method": req.method,
          "url.path": req.path,
          "http.route": req.path,
          "url.scheme": req.protocol,
        },
      },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    // Body parsing and the response run from stream events: bind them to the request's context.
    context.bind(ctx, req);
    context.bind(ctx, res);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      const attributes: Attributes = { "http.response.status_code": res.statusCode };
      if (req.id !== undefined) attributes["credhook.request_id"] = String(req.id);
      if (res.locals.credentialId) attributes["credhook.credential_id"] = String(res.locals.credentialId);
      if (Array.isArray(res.locals.gateways))
        attributes["credhook.gateways"] = (res.locals.gateways as string[]).map(String);
      if (res.locals.errorCode) attributes["credhook.error_code"] = String(res.locals.errorCode);
      span.setAttributes(attributes);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    res.once("finish", end);
    res.once("close", end);
    context.with(ctx, next);
  };
}

/** The provider methods that reach a gateway, each traced as one span. */
const TRACED_OPERATIONS = new Set(["create", "update", "revoke", "readSecret", "rotateSecret", "listOwned", "health"]);

/**
 * The cloud's request id carried by a provider error's cause chain, where the SDK
 * exposes one: AWS SDK v3 `$metadata.requestId` (x-amzn-RequestId), Azure
 * `RestError.response` header `x-ms-request-id`, or a plain `requestId` string.
 */
export function cloudRequestId(err: unknown): string | undefined {
  let e = err as Record<string, unknown> | undefined;
  for (let depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const aws = (e.$metadata as { requestId?: unknown } | undefined)?.requestId;
    if (typeof aws === "string" && aws) return aws;
    const headers = (e.response as { headers?: { get?: (n: string) => unknown } & Record<string, unknown> } | undefined)
      ?.headers;
    const azure = typeof headers?.get === "function" ? headers.get("x-ms-request-id") : headers?.["x-ms-request-id"];
    if (typeof azure === "string" && azure) return azure;
    if (typeof e.requestId === "string" && e.requestId) return e.requestId;
    e = e.cause as Record<string, unknown> | undefined;
  }
  return undefined;
}

/** Runs `fn` in a CLIENT span for one gateway call; records the outcome (and the error's code and cloud request id). */
async function inGatewaySpan<T>(gateway: Gateway, operation: string, fn: () => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(
    `${operation} ${gateway.name}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        "credhook.gateway": gateway.name,
        "credhook.provider": gateway.providerType,
        "credhook.operation": operation,
      },
    },
    async (span: Span) => {
      const spanId = span.isRecording() ? span.spanContext().spanId : undefined;
      if (spanId) gatewaySpans.set(spanId, span);
      try {
        const out = await fn();
        span.setAttribute("credhook.outcome", "ok");
        return out;
      } catch (err) {
        span.setAttribute("credhook.outcome", isCredhookError(err) ? err.code : "INTERNAL");
        const requestId = cloudRequestId(err);
        if (requestId) span.setAttribute("credhook.cloud_request_id", requestId);
        span.setStatus({ code: SpanStatusCode.ERROR, message: isCredhookError(err) ? err.code : "unexpected error" });
        throw err;
      } finally {
        if (spanId) gatewaySpans.delete(spanId);
        span.end();
      }
    },
  );
}

/** Receives each provider call's gateway, operation, outcome (`ok` or the error code) and duration in seconds (the metrics' histogram). */
export type GatewayCallObserver = (gateway: string, operation: string, outcome: string, seconds: number) => void;

/** Runs `fn` and reports its outcome and duration to `observe`. */
async function timed<T>(
  observe: GatewayCallObserver,
  gateway: string,
  operation: string,
  fn: () => Promise<T>,
): Promise<T> {
  const start = performance.now();
  let outcome = "ok";
  try {
    return await fn();
  } catch (err) {
    outcome = isCredhookError(err) ? err.code : "INTERNAL";
    throw err;
  } finally {
    observe(gateway, operation, outcome, (performance.now() - start) / 1000);
  }
}

/**
 * Wraps one gateway's provider so that every call of a {@link TRACED_OPERATIONS}
 * method runs in its own span (a no-op when traces are off) and, with `observe`,
 * is timed for the metrics. Capabilities, `close` and absent optional methods are
 * passed through unchanged.
 */
export function traceProvider(gateway: Gateway, observe?: GatewayCallObserver): Provider {
  const provider = gateway.provider;
  return new Proxy(provider, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof prop !== "string" || !TRACED_OPERATIONS.has(prop) || typeof value !== "function") return value;
      const call = value as (...a: unknown[]) => Promise<unknown>;
      return (...args: unknown[]) => {
        const run = tracingRegistered()
          ? () => inGatewaySpan(gateway, prop, () => call.apply(target, args))
          : () => call.apply(target, args);
        return observe ? timed(observe, gateway.name, prop, run) : run();
      };
    },
  });
}

/** The same gateways, each with its provider wrapped by {@link traceProvider}. */
export function traceGateways(gateways: Map<string, Gateway>, observe?: GatewayCallObserver): Map<string, Gateway> {
  return new Map([...gateways].map(([name, g]) => [name, { ...g, provider: traceProvider(g, observe) }]));
}
