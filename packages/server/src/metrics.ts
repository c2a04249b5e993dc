/**
 * Prometheus metrics (prom-client) on a private registry, served at
 * `GET /metrics` behind the same Basic auth as the webhook:
 * - `credhook_http_requests_total{route,method,status}`: answered requests;
 * - `credhook_http_request_duration_seconds{route}`: latency histogram (s);
 * - `credhook_errors_total{route,status,code}`: 4xx/5xx answers by HTTP status and credhook error
 *   code (`code="NONE"` for an answer without one), two labels, never one mixing both;
 * - `credhook_gateway_requests_total{gateway,route,outcome}`: requests that touched each gateway;
 * - `credhook_gateway_call_duration_seconds{gateway,operation,outcome}`: every provider call (create,
 *   update, revoke, readSecret, rotateSecret, listOwned, health), outcome `ok` or the error code;
 * - `credhook_revoke_unowned_total{gateway}`: revokes of an id credhook does not know whose resource
 *   exists on the gateway without credhook's mark (left live: someone else's key);
 * - `credhook_embedded_gateway_requests_total{endpoint,status}`: answers of the embedded
 *   gateway (key checks by decision: 200, 401, 403, 429, 503; token, introspection, …);
 * - `credhook_secret_scanning_reports_total{outcome}`: what a secret-scanning alert (docs/leak-response.md) did
 *   with each reported key — `disabled`, `revoked`, `revoked_instead` (a gateway could not turn it off),
 *   `notified`, `skipped`, `failed`, `false_positive` — and alerts refused as a whole: `unauthorized` (no
 *   valid signature), `invalid` (a signed body that is not an alert);
 * - `credhook_build_info{version,node}`: always 1; the running credhook and Node.js versions;
 * - `credhook_store_up`, `credhook_records{status}`, `credhook_records_abandoned`, `credhook_records_unsettled`,
 *   `credhook_records_unfinished`: the store's counts at each scrape ({@link Metrics.watchStore}), never its records;
 * - `credhook_events{status}`: the outbox's events by state (`pending`, `delivered`, `dead`: undeliverable,
 *   kept), read at each scrape; `credhook_event_deliveries_total{outcome}`: delivery attempts (`delivered`, `retry`, `dead`);
 * - `credhook_credential_expiry_total{outcome}`: what the expiry passes did (`warned`, `expired`, `acted`, `failed`);
 *   `credhook_credentials_expiry{state}`: credentials `expiring` (past their warning time) and `expired` (past their
 *   expiry, still in the store), as the last expiry pass counted them (docs/expiry.md);
 * - `credhook_credentials_drift{kind}`: live credentials that differ from the config, by kind (`moved`,
 *   `gateway-missing`, `plans-changed`; docs/gateway-migration.md), as serve's start and its drift pass every
 *   5 minutes counted them ({@link Metrics.observeDrift}) — never read at a scrape;
 * - prom-client's default process and Node.js metrics under their standard names (`process_*`,
 *   `nodejs_*`), as dashboards for Node.js services expect them.
 */
import type { NextFunction, Request, Response } from "express";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { CREDENTIAL_STATUSES, type CredentialStatus, type CredentialStore } from "@credhook/core/store";
import { DRIFT_KINDS, type DriftSummary, type ExpiryPassResult } from "@credhook/core";
import type { GatewayCallObserver } from "./tracing.js";
import { VERSION } from "./version.js";

/** The metrics of one server. */
export interface Metrics {
  registry: Registry;
  /** Middleware that observes every request when its response finishes. */
  observe(req: Request, res: Response, next: NextFunction): void;
  /** Counts a refusal the HTTP layer wrote outside express (malformed HTTP, header timeout…): route `other`, method `-`. */
  refused(status: number, reason: string): void;
  /** `credhook_revoke_unowned_total{gateway}`. */
  unownedRevokes: Counter<"gateway">;
  /** Counts one delivery attempt of an event: `credhook_event_deliveries_total{outcome}`. */
  observeEventAttempt(outcome: "delivered" | "retry" | "dead"): void;
  /** Counts what a secret-scanning alert did: `credhook_secret_scanning_reports_total{outcome}`. */
  observeSecretScanning(outcome: SecretScanningOutcome): void;
  /** Labels the requests to `path` (an endpoint the config adds, e.g. the secret-scanning alerts') with their route instead of `other`. */
  knowRoute(path: string): void;
  /** Counts what one expiry pass did and sets the expiring and expired gauges to its counts (a pass that did not run changes nothing). */
  observeExpiryPass(result: ExpiryPassResult): void;
  /** Sets `credhook_credentials_drift{kind}` to a drift pass's counts. */
  observeDrift(summary: DriftSummary): void;
  /** Counts one answer of the embedded gateway. */
  observeGateway(endpoint: string, status: number): void;
  /** Observes one provider call: `credhook_gateway_call_duration_seconds{gateway,operation,outcome}`. */
  observeGatewayCall: GatewayCallObserver;
  /**
   * Reads `store`'s counts at each scrape (`store.counts()` and the outbox's `counts()`: counters and indexed counts,
   * never the records; one set per scrape, waited for at most {@link STORE_SCRAPE_TIMEOUT_MS}):
   * `credhook_store_up` 1 when it answered, else 0; `credhook_records{status}` (records in each state);
   * `credhook_records_abandoned` (creates whose
   * credential the portal never received, until the sweep cleans them up),
   * `credhook_records_unsettled` (updates whose outcome on a gateway is unknown) and
   * `credhook_records_unfinished` (pending or revoking records last written over
   * {@link UNFINISHED_AFTER_S} s ago: operations a crash interrupted, not yet finished).
   */
  watchStore(store: CredentialStore): void;
}

/** What a secret-scanning alert did with one reported key, or why it refused the alert ({@link Metrics.observeSecretScanning}). */
export type SecretScanningOutcome =
  | "disabled"
  | "revoked"
  | "revoked_instead"
  | "notified"
  | "skipped"
  | "failed"
  | "false_positive"
  | "unauthorized"
  | "invalid";

/** How long a scrape waits for the store before it reports `credhook_store_up 0`, ms. */
export const STORE_SCRAPE_TIMEOUT_MS = 2000;
/** Age after which a pending or revoking record counts as unfinished, s. */
export const UNFINISHED_AFTER_S = 300;

/** The store's figures for one scrape ({@link storeSample}). */
interface StoreSample {
  /** Records in each state, from the store's counters. */
  byStatus: Record<CredentialStatus, number>;
  unsettled: number;
  unfinished: number;
  events: Record<"pending" | "delivered" | "dead", number> | undefined;
}

/**
 * The store's figures for one scrape, from its counts ({@link CredentialStore.counts}: counters the stores keep as
 * they write, and indexed counts of the few unsettled and unfinished records) — never a read of the records, so a
 * scrape costs the same at a thousand records as at a million; undefined when the store did not answer in time.
 */
async function storeSample(store: CredentialStore): Promise<StoreSample | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), STORE_SCRAPE_TIMEOUT_MS);
  });
  const read = (async () => {
    const unfinishedBefore = new Date(Date.now() - UNFINISHED_AFTER_S * 1000).toISOString();
    const [counts, events] = await Promise.all([store.counts(unfinishedBefore), store.outbox?.counts()]);
    return {
      byStatus: counts.byStatus,
      unsettled: counts.unsettled,
      unfinished: counts.unfinished ?? 0,
      events,
    };
  })().catch(() => undefined);
  try {
    return await Promise.race([read, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Creates a private registry with credhook's metrics and the process defaults. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: "credhook_build_info",
    help: "credhook's version and the Node.js version it runs on (always 1).",
    labelNames: ["version", "node"],
    registers: [registry],
  }).set({ version: VERSION, node: process.version }, 1);
  /** A counter on this registry. */
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  const requests = counter("credhook_http_requests_total", "Answered HTTP requests.", ["route", "method", "status"]);
  const duration = new Histogram({
    name: "credhook_http_request_duration_seconds",
    help: "Time to answer a request, seconds.",
    labelNames: ["route"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const errors = counter(
    "credhook_errors_total",
    "4xx/5xx answers by HTTP status and credhook error code (NONE: no code).",
    ["route", "status", "code"],
  );
  const gatewayCalls = new Histogram({
    name: "credhook_gateway_call_duration_seconds",
    help: "Duration of each call credhook made to a gateway's provider, seconds, by outcome (ok or the error code).",
    labelNames: ["gateway", "operation", "outcome"],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const gateways = counter(
    "credhook_gateway_requests_total",
    "Requests that touched a gateway, by outcome (ok or error).",
    ["gateway", "route", "outcome"],
  );
  const unownedRevokes = counter(
    "credhook_revoke_unowned_total",
    "Revokes of an id credhook does not know, whose resource exists on the gateway without credhook's mark (left live).",
    ["gateway"],
  );
  const embedded = counter(
    "credhook_embedded_gateway_requests_total",
    "Answers of the embedded gateway, by endpoint (check, token, introspection, jwks, metadata, other) and status.",
    ["endpoint", "status"],
  );
  const known = new Set([
    "/v1/createCredentials",
    "/v1/updateCredentials",
    "/v1/revokeCredentials",
    "/v1/health",
    "/metrics",
    "/livez",
    "/readyz",
  ]);
  // One labelled child per label set, made once: the key check and the webhook count every request, so labels are not hashed per request.
  const embeddedChildren = new Map<string, { inc(): void }>();
  const durationOf = new Map<string, { observe(seconds: number): void }>();
  const requestsOf = new Map<string, { inc(): void }>();
  const gatewayRequestsOf = new Map<string, { inc(): void }>();
  const gatewayCallsOf = new Map<string, { observe(seconds: number): void }>();
  /** The child of `key` in `children`, made by `make` on first use. */
  const child = <C>(children: Map<string, C>, key: string, make: () => C): C => {
    let c = children.get(key);
    if (!c) {
      c = make();
      children.set(key, c);
    }
    return c;
  };
  const eventAttempts = counter(
    "credhook_event_deliveries_total",
    "Delivery attempts of credential events, by outcome (delivered; retry: a sink refused, tried again later; dead: refused for the last time).",
    ["outcome"],
  );
  const secretScanning = counter(
    "credhook_secret_scanning_reports_total",
    "Keys reported by secret-scanning alerts, by what was done (disabled, revoked, revoked_instead, notified, skipped, failed, false_positive), and alerts refused (unauthorized, invalid).",
    ["outcome"],
  );
  const expiryOutcomes = counter(
    "credhook_credential_expiry_total",
    "What the expiry passes did: warned (credential.expiring written), expired (credential.expired written), acted (an expired credential disabled or revoked), failed (an action to retry).",
    ["outcome"],
  );
  const expiryStates = new Gauge({
    name: "credhook_credentials_expiry",
    help: "Credentials past their expiry warning (expiring) and past their expiry still in the store (expired), as the last expiry pass counted them.",
    labelNames: ["state"],
    registers: [registry],
  });
  const drift = new Gauge({
    name: "credhook_credentials_drift",
    help: "Live credentials that differ from the config, by kind (moved: an API on another gateway than its route; gateway-missing: bound on a gateway the config lacks; plans-changed: a plan's definition changed), as the last drift pass counted them.",
    labelNames: ["kind"],
    registers: [registry],
  });
  return {
    registry,
    unownedRevokes,
    observeDrift(summary) {
      for (const kind of DRIFT_KINDS) drift.set({ kind }, summary.counts[kind]);
    },
    observeSecretScanning(outcome) {
      secretScanning.inc({ outcome });
    },
    knowRoute(path) {
      known.add(path);
    },
    observeExpiryPass(result) {
      if (!result.ran) return;
      for (const outcome of ["warned", "expired", "acted", "failed"] as const)
        expiryOutcomes.inc({ outcome }, result[outcome]);
      expiryStates.set({ state: "expiring" }, result.expiring);
      expiryStates.set({ state: "expired" }, result.expiredLive);
    },
    observeEventAttempt(outcome) {
      eventAttempts.inc({ outcome });
    },
    watchStore(store) {
      // The gauges of one scrape share one sample: the first collect reads the store, the others wait for it.
      let sample: ReturnType<typeof storeSample> | undefined;
      const current = () => {
        if (!sample) {
          sample = storeSample(store);
          void sample.then(() => setTimeout(() => (sample = undefined), 1000).unref());
        }
        return sample;
      };
      const gauge = (name: string, help: string, value: (s: StoreSample | undefined) => number | undefined) =>
        new Gauge({
          name,
          help,
          registers: [registry],
          async collect() {
            const v = value(await current());
            if (v === undefined) this.reset();
            else this.set(v);
          },
        });
      gauge(
        "credhook_store_up",
        `1 when the store answered this scrape's reads within ${STORE_SCRAPE_TIMEOUT_MS} ms, else 0.`,
        (s) => (s ? 1 : 0),
      );
      gauge(
        "credhook_records_abandoned",
        "Records of creates whose credential the portal never received, waiting for the sweep to clean them up.",
        (s) => s?.byStatus.abandoned,
      );
      gauge(
        "credhook_records_unsettled",
        "Records of updates whose outcome on a gateway is unknown, waiting for reconcile.",
        (s) => s?.unsettled,
      );
      new Gauge({
        name: "credhook_records",
        help: "Credential records in the store, by status (pending, active, revoking, abandoned), from the store's counters.",
        labelNames: ["status"],
        registers: [registry],
        async collect() {
          const byStatus = (await current())?.byStatus;
          this.reset();
          if (byStatus) for (const status of CREDENTIAL_STATUSES) this.set({ status }, byStatus[status]);
        },
      });
      new Gauge({
        name: "credhook_events",
        help: "Credential events in the store's outbox, by status (pending; delivered; dead: undeliverable, kept for credhook audit).",
        labelNames: ["status"],
        registers: [registry],
        async collect() {
          const events = (await current())?.events;
          this.reset();
          if (events) for (const [status, n] of Object.entries(events)) this.set({ status }, n);
        },
      });
      gauge(
        "credhook_records_unfinished",
        `Records pending or revoking, last written over ${UNFINISHED_AFTER_S} s ago (interrupted operations not yet finished).`,
        (s) => s?.unfinished,
      );
    },
    observeGatewayCall(gateway, operation, outcome, seconds) {
      child(gatewayCallsOf, `${gateway} ${operation} ${outcome}`, () =>
        gatewayCalls.labels({ gateway, operation, outcome }),
      ).observe(seconds);
    },
    observeGateway(endpoint, status) {
      child(embeddedChildren, `${endpoint} ${status}`, () =>
        embedded.labels({ endpoint, status: String(status) }),
      ).inc();
    },
    observe(req, res, next) {
      const start = performance.now();
      res.on("finish", () => {
        const route = known.has(req.path) ? req.path : "other";
        const status = String(res.statusCode);
        child(durationOf, route, () => duration.labels({ route })).observe((performance.now() - start) / 1000);
        child(requestsOf, `${route} ${req.method} ${status}`, () =>
          requests.labels({ route, method: req.method, status }),
        ).inc();
        if (res.statusCode >= 400) errors.inc({ route, status, code: String(res.locals.errorCode ?? "NONE") });
        const outcome = res.statusCode >= 400 ? "error" : "ok";
        for (const g of (res.locals.gateways as string[] | undefined) ?? []) {
          child(gatewayRequestsOf, `${g} ${route} ${outcome}`, () =>
            gateways.labels({ gateway: g, route, outcome }),
          ).inc();
        }
      });
      next();
    },
    refused(status, reason) {
      requests.inc({ route: "other", method: "-", status: String(status) });
      errors.inc({ route: "other", status: String(status), code: reason });
    },
  };
}
