/**
 * Prometheus metrics (prom-client) on a private registry, served at
 * `GET /metrics` behind the same Basic auth as the webhook:
 * - `credhook_http_requests_total{route,method,status}`: answered requests;
 * - `credhook_http_request_duration_seconds{route}`: latency histogram (s);
 * - `credhook_errors_total{route,code}`: 4xx/5xx answers by credhook error code;
 * - `credhook_gateway_requests_total{gateway,route,outcome}`: requests that touched each gateway;
 * - Node.js process metrics with the `credhook_` prefix.
 */
import type { NextFunction, Request, Response } from "express";
import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";

/** The metrics of one server. */
export interface Metrics {
  registry: Registry;
  /** Middleware that observes every request when its response finishes. */
  observe(req: Request, res: Response, next: NextFunction): void;
}

/** Creates a private registry with credhook's metrics and the process defaults. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "credhook_" });
  const requests = new Counter({ name: "credhook_http_requests_total", help: "Answered HTTP requests.", labelNames: ["route", "method", "status"], registers: [registry] });
  const duration = new Histogram({
    name: "credhook_http_request_duration_seconds",
    help: "Time to answer a request, seconds.",
    labelNames: ["route"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const errors = new Counter({ name: "credhook_errors_total", help: "4xx/5xx answers by error code.", labelNames: ["route", "code"], registers: [registry] });
  const gateways = new Counter({
    name: "credhook_gateway_requests_total",
    help: "Requests that touched a gateway, by outcome (ok or error).",
    labelNames: ["gateway", "route", "outcome"],
    registers: [registry],
  });
  const known = new Set(["/v1/createCredentials", "/v1/updateCredentials", "/v1/revokeCredentials", "/v1/health", "/metrics"]);
  return {
    registry,
    observe(req, res, next) {
      const end = duration.startTimer();
      res.on("finish", () => {
        const route = known.has(req.path) ? req.path : "other";
        end({ route });
        requests.inc({ route, method: req.method, status: String(res.statusCode) });
        if (res.statusCode >= 400) errors.inc({ route, code: String(res.locals.errorCode ?? res.statusCode) });
        for (const g of (res.locals.gateways as string[] | undefined) ?? []) {
          gateways.inc({ gateway: g, route, outcome: res.statusCode >= 400 ? "error" : "ok" });
        }
      });
      next();
    },
  };
}
