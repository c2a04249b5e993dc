/**
 * Delivery of the credential events (docs/events.md): `credhook serve` claims the events the store's
 * outbox holds — each app's oldest undelivered one at a time, so an app's events arrive in order — and
 * POSTs each to every configured sink in CloudEvents' structured JSON mode (the `cloudevents` package),
 * signed per the Standard Webhooks specification (the `standardwebhooks` package: `webhook-id` is the
 * event's id on every attempt, so a sink drops a redelivery by it). At least once: an event is marked
 * delivered only after every sink that wants it answered 2xx; a refusal is retried with exponential
 * backoff, and after `events.retry.maxAttempts` the event is `dead` — kept and visible, never dropped.
 * On PostgreSQL the claims are leases shared by every instance: each event is sent by one of them.
 */
import { randomUUID } from "node:crypto";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { hostname } from "node:os";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { CloudEvent, HTTP } from "cloudevents";
import { Webhook } from "standardwebhooks";
import {
  type CredentialEvent,
  type EventSettlementOf,
  type EventSinkConfig,
  type EventsConfig,
  type Logger,
  PRUNE_BATCH_SIZE,
  type StoredEvent,
} from "@credhook/core";
import { isStoreFailure } from "@credhook/core/errors";
import type { EventOutbox } from "@credhook/core/store";

/** The outcome of one delivery attempt of one event, for the metrics. */
export type DeliveryOutcome = "delivered" | "retry" | "dead";

/** Options of {@link EventDeliverer}. */
export interface EventDelivererOptions {
  logger: Logger;
  /** The clock, ms since the epoch: attempt times, backoff, leases and the signature's timestamp. @default Date.now */
  now?: () => number;
  /** This instance's name in its claims. @default `<hostname>:<pid>:<random>` */
  holder?: string;
  /** Called once per attempt of an event, with its outcome (the metric `credhook_event_deliveries_total`). */
  onAttempt?: (outcome: DeliveryOutcome) => void;
}

/** What one {@link EventDeliverer.pass} did. */
export interface DeliveryPass {
  /** Events claimed in this pass. */
  claimed: number;
  delivered: number;
  /** Refused by a sink, tried again later. */
  retried: number;
  /** Refused for the last time: now `dead`. */
  dead: number;
}

/** A sink's name in `sinksDone`, the logs and `credhook audit`: its `name`, or its URL's origin and path (never user-info or query). */
export function sinkName(sink: Pick<EventSinkConfig, "url" | "name">): string {
  if (sink.name) return sink.name;
  const u = new URL(sink.url);
  return `${u.origin}${u.pathname}`;
}

/** Whether `sink` wants events of `type` (its `types`, else every type). */
function wants(sink: EventSinkConfig, type: string): boolean {
  return !sink.types || sink.types.includes(type);
}

/**
 * The HTTP request of one delivery of `event`: CloudEvents structured mode (`content-type:
 * application/cloudevents+json`), plus the Standard Webhooks headers `webhook-id` (the event's id),
 * `webhook-timestamp` (seconds, at `nowMs`) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of
 * `id.timestamp.body` with the sink's secret).
 * @throws TypeError the event is not a valid CloudEvent (the `cloudevents` package's validation)
 */
export function signedRequest(
  event: CredentialEvent,
  secret: string,
  nowMs: number,
): { headers: Record<string, string>; body: string } {
  const message = HTTP.structured(new CloudEvent<CredentialEvent["data"]>({ ...event }));
  const body = String(message.body);
  const timestamp = new Date(nowMs);
  const signature = new Webhook(secret).sign(event.id, timestamp, body);
  return {
    headers: {
      ...(message.headers as Record<string, string>),
      "webhook-id": event.id,
      "webhook-timestamp": String(Math.floor(nowMs / 1000)),
      "webhook-signature": signature,
    },
    body,
  };
}

/**
 * The delay before the next attempt after `attempts` failed ones: `initialDelayMs × 2^(attempts-1)`,
 * at most `maxDelayMs` (no jitter: each app has one event in flight, so retries do not herd), ms.
 */
export function retryDelayMs(retry: EventsConfig["retry"], attempts: number): number {
  return Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** Math.max(0, Math.min(attempts - 1, 40)));
}

/** See the module comment. One per serving process; {@link pass} is run by {@link startEventDelivery}'s loop. */
export class EventDeliverer {
  private readonly now: () => number;
  readonly holder: string;
  /**
   * How long a claim is held, ms: longer than one attempt's POSTs to every sink, one after the other, can take (a
   * pass sends its batch at once and settles it when the slowest attempt ended).
   */
  readonly leaseMs: number;

  /** The keep-alive connections to the sinks (a batch's POSTs reuse them pass after pass). */
  private readonly agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

  constructor(
    private readonly outbox: EventOutbox,
    private readonly config: EventsConfig,
    private readonly options: EventDelivererOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.holder = options.holder ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.leaseMs = 60_000 + 2 * config.sinks.reduce((sum, s) => sum + s.timeoutMs, 0);
  }

  /**
   * One pass: claims up to `events.batchSize` due events (each of another app: an app's next event is claimed only
   * once the one before it is settled, so concurrency never reorders an app's events), sends them all at once, each
   * to the sinks that have not accepted it yet, one sink after the other, then settles the batch in one store write
   * (`EventOutbox.settleAll`; one `settle` per event on a store without it). With no sink configured, settles up to
   * `events.batchSize` pending events as delivered in one write (`EventOutbox.settleUnsent`; {@link drain} follows a
   * full batch with another pass).
   * @throws the store's failure (StoreUnavailable) when it cannot claim; a settle that fails is logged, and its events are claimed again once their leases run out
   */
  async pass(): Promise<DeliveryPass> {
    const now = this.now();
    if (this.config.sinks.length === 0) {
      // No sink: the events are kept for `credhook audit` only, and settled a batch at a time (one write a pass).
      const settled = await this.outbox.settleUnsent(new Date(now).toISOString(), this.config.batchSize);
      return { claimed: settled, delivered: settled, retried: 0, dead: 0 };
    }
    const claimed = await this.outbox.claim(
      new Date(now).toISOString(),
      new Date(now + this.leaseMs).toISOString(),
      this.holder,
      this.config.batchSize,
    );
    const out: DeliveryPass = { claimed: claimed.length, delivered: 0, retried: 0, dead: 0 };
    if (claimed.length === 0) return out;
    const attempts = await Promise.all(claimed.map((stored) => this.attempt(stored)));
    const settled = await this.settleAll(attempts.map((a) => a.settlement));
    for (const { stored, settlement, outcome, errors } of attempts) {
      const { event } = stored;
      if (settled === undefined) continue; // the store failed: logged once for the batch
      this.options.onAttempt?.(outcome);
      out[outcome === "retry" ? "retried" : outcome] += 1;
      if (!settled.has(event.id)) {
        this.options.logger.warn(
          { eventId: event.id, type: event.type },
          "event delivery: the claim ran out before the attempt ended; another instance delivers it (the sink may see it twice: same webhook-id)",
        );
      } else if (outcome === "dead") {
        this.options.logger.error(
          { eventId: event.id, type: event.type, subject: event.subject, attempts: settlement.attempts, errors },
          "event undeliverable: kept as dead (credhook audit --undelivered); the app's later events go on",
        );
      } else if (outcome === "retry") {
        this.options.logger.warn(
          { eventId: event.id, type: event.type, attempts: settlement.attempts, errors },
          "event delivery failed; retried with backoff",
        );
      }
    }
    return out;
  }

  /**
   * Passes one after the other, with no cap on their number, while each claims a full batch of `events.batchSize`: a
   * backlog drains at once, yielding to the event loop between two passes (so requests, and `/livez`, are answered
   * meanwhile), until a pass claims less or `stopped()` says so.
   * @returns the sums of the passes' figures
   * @throws as {@link pass}
   */
  async drain(stopped: () => boolean = () => false): Promise<DeliveryPass> {
    const sum: DeliveryPass = { claimed: 0, delivered: 0, retried: 0, dead: 0 };
    while (!stopped()) {
      const r = await this.pass();
      for (const k of Object.keys(sum) as Array<keyof DeliveryPass>) sum[k] += r[k];
      if (r.claimed < this.config.batchSize) break;
      await yieldToEventLoop();
    }
    return sum;
  }

  /**
   * Records a batch's settlements: `settleAll` in one write, or one `settle` each on a store without it.
   * @returns the ids settled (an id missing lost its claim); undefined when the store failed (logged here)
   */
  private async settleAll(settlements: EventSettlementOf[]): Promise<Set<string> | undefined> {
    try {
      if (this.outbox.settleAll) return new Set(await this.outbox.settleAll(this.holder, settlements));
      const settled = await Promise.all(settlements.map(({ id, ...s }) => this.outbox.settle(id, this.holder, s)));
      return new Set(settlements.filter((_, i) => settled[i]).map((s) => s.id));
    } catch (err) {
      this.options.logger.error(
        { events: settlements.length, err: isStoreFailure(err) ? String(err) : (err as Error).message },
        "event delivery: the attempts could not be recorded; their events are sent again once their claims run out",
      );
      return undefined;
    }
  }

  /** One attempt of one claimed event: its POSTs to the sinks that want it and have not accepted it yet, and how it ended. */
  private async attempt(stored: StoredEvent): Promise<{
    stored: StoredEvent;
    settlement: EventSettlementOf;
    outcome: DeliveryOutcome;
    errors: string[];
  }> {
    const { event } = stored;
    const done = new Set(stored.sinksDone);
    const errors: string[] = [];
    for (const sink of this.config.sinks) {
      const name = sinkName(sink);
      if (done.has(name) || !wants(sink, event.type)) continue;
      const error = await this.post(sink, event);
      if (error === undefined) done.add(name);
      else errors.push(`${name}: ${error}`);
    }
    const attempts = stored.attempts + 1;
    const now = this.now();
    const at = new Date(now).toISOString();
    let outcome: DeliveryOutcome;
    if (errors.length === 0) outcome = "delivered";
    else if (attempts >= this.config.retry.maxAttempts) outcome = "dead";
    else outcome = "retry";
    const settlement: EventSettlementOf = {
      id: event.id,
      status: outcome === "retry" ? "pending" : outcome,
      attempts,
      nextAttemptAt: outcome === "retry" ? new Date(now + retryDelayMs(this.config.retry, attempts)).toISOString() : at,
      sinksDone: [...done],
      ...(errors.length > 0 ? { lastError: errors.join("; ") } : {}),
      ...(outcome !== "retry" ? { settledAt: at } : {}),
    };
    return { stored, settlement, outcome, errors };
  }

  /**
   * POSTs `event` to `sink` with node:http(s) on this deliverer's keep-alive agents (a third of `fetch`'s CPU per
   * request: 140 against 470 µs measured at 200 in flight, which decided whether a backlog drains at 1,000 a second).
   * Redirects are not followed (a 3xx is a refusal). A request on a kept-alive connection the sink had just closed
   * (`ECONNRESET` on a reused socket, https://nodejs.org/api/http.html#requestreusedsocket) is sent again once, at once.
   * @returns undefined when it answered 2xx, else the reason (secret-free)
   */
  private async post(sink: EventSinkConfig, event: CredentialEvent, again = true): Promise<string | undefined> {
    let signed: ReturnType<typeof signedRequest>;
    try {
      signed = signedRequest(event, sink.secret, this.now());
    } catch (err) {
      return (err as Error).message; // not a valid CloudEvent: refused like a sink's refusal, then dead
    }
    const { headers, body } = signed;
    const url = new URL(sink.url);
    const https = url.protocol === "https:";
    const signal = AbortSignal.timeout(sink.timeoutMs);
    const outcome = await new Promise<{ status: number } | { error: NodeJS.ErrnoException; reused: boolean }>(
      (done) => {
        const req = (https ? httpsRequest : httpRequest)(
          url,
          {
            method: "POST",
            headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
            agent: https ? this.agents.https : this.agents.http,
            signal,
          },
          (res) => {
            res.resume();
            res.on("end", () => done({ status: res.statusCode ?? 0 }));
            res.on("error", (error) => done({ error, reused: false }));
          },
        );
        req.on("error", (error) => done({ error, reused: req.reusedSocket }));
        req.end(body);
      },
    );
    if ("status" in outcome)
      return outcome.status >= 200 && outcome.status < 300 ? undefined : `HTTP ${outcome.status}`;
    const { error, reused } = outcome;
    if (signal.aborted) return `no answer within ${sink.timeoutMs} ms`;
    if (again && reused && error.code === "ECONNRESET") return this.post(sink, event, false);
    return error.code ?? error.message;
  }

  /** Closes the connections the deliverer keeps open to its sinks. */
  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /**
   * Deletes delivered and dead events older than `events.retentionDays` (0: keeps them), {@link PRUNE_BATCH_SIZE} per
   * store write with a turn of the event loop between two, until a batch comes back short or `stopped()` says so.
   * @returns how many were deleted
   */
  async prune(stopped: () => boolean = () => false): Promise<number> {
    if (this.config.retentionDays <= 0) return 0;
    const before = new Date(this.now() - this.config.retentionDays * 86_400_000).toISOString();
    let pruned = 0;
    while (!stopped()) {
      const n = await this.outbox.prune(before, PRUNE_BATCH_SIZE);
      pruned += n;
      if (n < PRUNE_BATCH_SIZE) break;
      await yieldToEventLoop();
    }
    return pruned;
  }
}

/** How often the delivery loop prunes old events, ms. */
export const PRUNE_INTERVAL_MS = 3_600_000;

/**
 * `credhook serve`'s delivery loop: a {@link EventDeliverer.pass} every `events.pollIntervalMs` (passes
 * follow one another, with no cap, while each claims a full batch of `events.batchSize`), and pruning once an hour
 * and at start.
 * @returns a function that stops the loop and waits for a pass in progress
 */
export function startEventDelivery(
  outbox: EventOutbox,
  config: EventsConfig,
  options: EventDelivererOptions,
): () => Promise<void> {
  const deliverer = new EventDeliverer(outbox, config, options);
  const now = options.now ?? Date.now;
  let lastPrune = Number.NEGATIVE_INFINITY;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const run = async () => {
    try {
      if (now() - lastPrune >= PRUNE_INTERVAL_MS) {
        lastPrune = now();
        const pruned = await deliverer.prune(() => stopped);
        if (pruned > 0) options.logger.info({ pruned }, "events older than events.retentionDays pruned");
      }
      await deliverer.drain(() => stopped);
    } catch (err) {
      // A store outage is logged by the store, once per state change: not again every pass.
      (isStoreFailure(err) ? options.logger.debug : options.logger.error).call(
        options.logger,
        { err: String(err) },
        "event delivery pass failed",
      );
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = run().finally(() => {
        running = undefined;
        schedule();
      });
    }, config.pollIntervalMs);
    timer.unref();
  };
  schedule();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
    deliverer.close();
  };
}
