/**
 * An in-memory {@link CredentialStore} for orchestration tests: the same
 * contract as the SQLite and PostgreSQL stores (it passes
 * {@link storeConformance}), records copied in and out, nothing durable. Not
 * for production: a restart loses every record — and with it what credhook
 * must revoke.
 */
import { Conflict, NotFound } from "@credhook/core/errors";
import { memoryStateStore } from "@credhook/core/provider-kit";
import {
  comparePositions,
  CREDENTIAL_STATUSES,
  matchesListQuery,
  pageOfExamined,
  pageStartOf,
  type CredentialCounts,
  type CredentialEvent,
  type CredentialListQuery,
  type CredentialPage,
  type CredentialRecord,
  type CredentialStatus,
  type CredentialStore,
  type EventOutbox,
  type EventSettlementOf,
  type EventStatus,
  type ExaminedRow,
  type PageWalk,
  type StoredEvent,
  type UnsettledListQuery,
} from "@credhook/core/store";
import type { CredentialType, ProviderStateStore } from "@credhook/core/provider";

/** The app key, slug and name an event names (what `credhook audit --app` matches). */
export function eventAppNames(event: CredentialEvent): string[] {
  const app = event.data.app;
  return [event.subject, ...(app?.appSlug ? [app.appSlug] : []), ...(app?.appName ? [app.appName] : [])];
}

/**
 * An {@link EventOutbox} in memory, with the semantics every store's outbox has (the store
 * conformance suite checks them): claims an app's oldest pending event at a time, leases, pruning.
 */
export class MemoryOutbox implements EventOutbox {
  private readonly events: Array<StoredEvent & { holder?: string; leaseUntil?: string }> = [];
  private seq = 0;

  /** Adds events (the store's writes call it after their record change succeeded). */
  add(events: readonly CredentialEvent[]): void {
    for (const event of events)
      this.events.push({
        seq: ++this.seq,
        event: structuredClone(event),
        status: "pending",
        attempts: 0,
        nextAttemptAt: event.time,
        sinksDone: [],
      });
  }

  /** {@inheritDoc EventOutbox.append} */
  async append(events: readonly CredentialEvent[]): Promise<void> {
    this.add(events);
  }

  /** {@inheritDoc EventOutbox.claim} */
  async claim(now: string, leaseUntil: string, holder: string, limit: number): Promise<StoredEvent[]> {
    const heads = new Map<string, (typeof this.events)[number]>();
    for (const e of this.events)
      if (e.status === "pending" && !heads.has(e.event.subject)) heads.set(e.event.subject, e);
    const out: StoredEvent[] = [];
    for (const e of [...heads.values()].sort((a, b) => a.seq - b.seq)) {
      if (out.length >= limit) break;
      if (e.nextAttemptAt > now || (e.leaseUntil !== undefined && e.leaseUntil > now)) continue;
      e.holder = holder;
      e.leaseUntil = leaseUntil;
      out.push(copyOf(e));
    }
    return out;
  }

  /** {@inheritDoc EventOutbox.settle} */
  async settle(id: string, holder: string, s: Parameters<EventOutbox["settle"]>[2]): Promise<boolean> {
    const e = this.events.find((x) => x.event.id === id);
    if (!e || e.holder !== holder) return false;
    Object.assign(e, {
      status: s.status,
      attempts: s.attempts,
      nextAttemptAt: s.nextAttemptAt,
      sinksDone: [...s.sinksDone],
    });
    if (s.lastError !== undefined) e.lastError = s.lastError;
    if (s.settledAt !== undefined) e.settledAt = s.settledAt;
    delete e.holder;
    delete e.leaseUntil;
    return true;
  }

  /** {@inheritDoc EventOutbox.settleAll} */
  async settleAll(holder: string, settlements: readonly EventSettlementOf[]): Promise<string[]> {
    const settled: string[] = [];
    for (const { id, ...s } of settlements) if (await this.settle(id, holder, s)) settled.push(id);
    return settled;
  }

  /** {@inheritDoc EventOutbox.list} */
  async list(filter: Parameters<EventOutbox["list"]>[0] = {}): Promise<StoredEvent[]> {
    const matched = this.events.filter(
      (e) =>
        (filter.app === undefined || eventAppNames(e.event).includes(filter.app)) &&
        (filter.since === undefined || e.event.time >= filter.since) &&
        (filter.status === undefined || e.status === filter.status) &&
        (filter.fingerprint === undefined || e.event.data.keyFingerprint === filter.fingerprint) &&
        (filter.credentialId === undefined || e.event.data.credentialId === filter.credentialId),
    );
    return matched.slice(-(filter.limit ?? 1000)).map(copyOf);
  }

  /** {@inheritDoc EventOutbox.counts} */
  async counts(): Promise<Record<EventStatus, number>> {
    const out: Record<EventStatus, number> = { pending: 0, delivered: 0, dead: 0 };
    for (const e of this.events) out[e.status] += 1;
    return out;
  }

  /** {@inheritDoc EventOutbox.prune} */
  async prune(before: string, limit = Number.POSITIVE_INFINITY): Promise<number> {
    const old = this.events.filter((e) => e.status !== "pending" && e.event.time < before);
    const gone = new Set(old.sort((a, b) => a.event.time.localeCompare(b.event.time)).slice(0, limit));
    for (let i = this.events.length - 1; i >= 0; i--) if (gone.has(this.events[i]!)) this.events.splice(i, 1);
    return gone.size;
  }

  /** {@inheritDoc EventOutbox.settleUnsent} */
  async settleUnsent(now: string, limit = Number.POSITIVE_INFINITY): Promise<number> {
    let n = 0;
    for (const e of this.events) {
      if (n >= limit) break;
      if (e.status !== "pending" || (e.leaseUntil !== undefined && e.leaseUntil > now)) continue;
      e.status = "delivered";
      e.settledAt = now;
      delete e.holder;
      delete e.leaseUntil;
      n += 1;
    }
    return n;
  }

  /** {@inheritDoc EventOutbox.requeueDead} */
  async requeueDead(now: string, app?: string): Promise<number> {
    let n = 0;
    for (const e of this.events) {
      if (e.status !== "dead" || (app !== undefined && !eventAppNames(e.event).includes(app))) continue;
      e.status = "pending";
      e.attempts = 0;
      e.nextAttemptAt = now;
      delete e.settledAt;
      delete e.holder;
      delete e.leaseUntil;
      n += 1;
    }
    return n;
  }
}

function copyOf(e: StoredEvent & { holder?: string; leaseUntil?: string }): StoredEvent {
  const { holder: _h, leaseUntil: _l, ...rest } = e;
  return structuredClone(rest);
}

/**
 * See the module comment. Per-app locks are core's in-process ones (no `locks`). No `getMany` (optional): core reads
 * its batches a `get` per id, so the orchestration tests keep that path tested.
 */
export class MemoryCredentialStore implements CredentialStore {
  private readonly records = new Map<string, CredentialRecord>();
  private readonly states = new Map<string, ProviderStateStore>();
  private closed = false;
  /** The event outbox: events of a record write are added only when the write succeeds. */
  readonly outbox = new MemoryOutbox();
  /** Calls per method name, for tests that count store work. */
  readonly calls: Record<string, number> = {};

  private use(method: string): void {
    if (this.closed) throw new Error("the memory store is closed");
    this.calls[method] = (this.calls[method] ?? 0) + 1;
  }

  private all(): CredentialRecord[] {
    return [...this.records.values()];
  }

  /** A live record of `appKey` + type other than `id`, which a write of `id` would collide with. */
  private liveTwin(r: CredentialRecord): CredentialRecord | undefined {
    if (r.status === "abandoned") return undefined;
    return this.all().find(
      (x) =>
        x.id !== r.id && x.appKey === r.appKey && x.credentialType === r.credentialType && x.status !== "abandoned",
    );
  }

  /** {@inheritDoc CredentialStore.init} */
  async init(): Promise<void> {
    this.use("init");
  }

  /** {@inheritDoc CredentialStore.insert} */
  async insert(record: CredentialRecord, events: readonly CredentialEvent[] = []): Promise<void> {
    this.use("insert");
    if (this.records.has(record.id)) throw new Conflict(`a credential record with id '${record.id}' exists`);
    if (this.liveTwin(record))
      throw new Conflict(`the app '${record.appKey}' already has a live ${record.credentialType} credential`);
    this.records.set(record.id, structuredClone(record));
    this.outbox.add(events);
  }

  /** {@inheritDoc CredentialStore.save} */
  async save(record: CredentialRecord, events: readonly CredentialEvent[] = []): Promise<void> {
    this.use("save");
    if (!this.records.has(record.id)) throw new NotFound(`no credential record with id '${record.id}'`);
    if (this.liveTwin(record))
      throw new Conflict(`the app '${record.appKey}' already has a live ${record.credentialType} credential`);
    this.records.set(record.id, structuredClone(record));
    this.outbox.add(events);
  }

  /** {@inheritDoc CredentialStore.get} */
  async get(id: string): Promise<CredentialRecord | undefined> {
    this.use("get");
    const r = this.records.get(id);
    return r && structuredClone(r);
  }

  /** {@inheritDoc CredentialStore.findByFingerprint} */
  async findByFingerprint(fingerprint: string): Promise<CredentialRecord[]> {
    this.use("findByFingerprint");
    return structuredClone(this.sorted("createdAt").filter((x) => x.keyFingerprint === fingerprint));
  }

  /** {@inheritDoc CredentialStore.findByPublicId} */
  async findByPublicId(credentialType: CredentialType, publicId: string): Promise<CredentialRecord | undefined> {
    this.use("findByPublicId");
    const r = this.sorted("createdAt").find((x) => x.credentialType === credentialType && x.publicId === publicId);
    return r && structuredClone(r);
  }

  /** {@inheritDoc CredentialStore.findByAppKey} */
  async findByAppKey(appKey: string, credentialType: CredentialType): Promise<CredentialRecord | undefined> {
    this.use("findByAppKey");
    const r = this.all().find(
      (x) => x.appKey === appKey && x.credentialType === credentialType && x.status !== "abandoned",
    );
    return r && structuredClone(r);
  }

  /** {@inheritDoc CredentialStore.listAbandoned} */
  async listAbandoned(appKey?: string): Promise<CredentialRecord[]> {
    this.use("listAbandoned");
    return structuredClone(
      this.sorted("updatedAt").filter((x) => x.status === "abandoned" && (appKey === undefined || x.appKey === appKey)),
    );
  }

  /** {@inheritDoc CredentialStore.listUnsettled} */
  async listUnsettled(): Promise<CredentialRecord[]> {
    this.use("listUnsettled");
    return structuredClone(this.sorted("updatedAt").filter((x) => x.unsettled !== undefined));
  }

  /** {@inheritDoc CredentialStore.delete} */
  async delete(id: string, events: readonly CredentialEvent[] = []): Promise<boolean> {
    this.use("delete");
    const existed = this.records.delete(id);
    if (existed) this.outbox.add(events);
    return existed;
  }

  /** {@inheritDoc CredentialStore.listUnfinished} */
  async listUnfinished(before: string): Promise<CredentialRecord[]> {
    this.use("listUnfinished");
    return structuredClone(
      this.sorted("updatedAt").filter(
        (x) => (x.status === "pending" || x.status === "revoking") && x.updatedAt < before,
      ),
    );
  }

  /** {@inheritDoc CredentialStore.countUnfinishedSince} */
  async countUnfinishedSince(since: string): Promise<number> {
    this.use("countUnfinishedSince");
    return this.all().filter((x) => (x.status === "pending" || x.status === "revoking") && x.updatedAt >= since).length;
  }

  /** {@inheritDoc CredentialStore.list} */
  async list(): Promise<CredentialRecord[]> {
    this.use("list");
    return structuredClone(this.sorted("createdAt"));
  }

  /** {@inheritDoc CredentialStore.listPage} A filter of every record, sorted: the same pages as the SQL stores, each of `limit` records. */
  async listPage(query: CredentialListQuery = {}): Promise<CredentialPage> {
    this.use("listPage");
    const rows = this.all()
      .filter((r) => matchesListQuery(r, query))
      .map((r) => ({ position: r.createdAt, id: r.id, record: r }));
    return this.page("listPage", rows, query.after, query.limit);
  }

  /** {@inheritDoc CredentialStore.listUnsettledPage} */
  async listUnsettledPage(query: UnsettledListQuery = {}): Promise<CredentialPage> {
    this.use("listUnsettledPage");
    const rows = this.all().flatMap((r) =>
      r.unsettled && (query.dueAt === undefined || r.unsettled.settleUntil <= query.dueAt)
        ? [{ position: r.unsettled.settleUntil, id: r.id, record: r }]
        : [],
    );
    return this.page("listUnsettledPage", rows, query.after, query.limit);
  }

  /** The page of `walk` after the cursor `after`: `rows` (every match, in any order) sorted by position, copied. */
  private page(
    walk: PageWalk,
    rows: ExaminedRow[],
    after: string | undefined,
    limit: number | undefined,
  ): CredentialPage {
    const start = pageStartOf(walk, {
      ...(after !== undefined ? { after } : {}),
      ...(limit !== undefined ? { limit } : {}),
    });
    const ahead = rows.filter((r) => !start.after || comparePositions(r, start.after) > 0).sort(comparePositions);
    return structuredClone(pageOfExamined(walk, ahead, start.limit, start.limit));
  }

  /** {@inheritDoc CredentialStore.counts} Counted (in memory, a count is as cheap as a counter). */
  async counts(unfinishedBefore?: string): Promise<CredentialCounts> {
    this.use("counts");
    const byStatus = Object.fromEntries(CREDENTIAL_STATUSES.map((s) => [s, 0])) as Record<CredentialStatus, number>;
    for (const r of this.all()) byStatus[r.status] += 1;
    return {
      byStatus,
      unsettled: this.all().filter((r) => r.unsettled).length,
      ...(unfinishedBefore !== undefined
        ? {
            unfinished: this.all().filter(
              (r) => (r.status === "pending" || r.status === "revoking") && r.updatedAt < unfinishedBefore,
            ).length,
          }
        : {}),
    };
  }

  /** {@inheritDoc CredentialStore.stateFor} */
  stateFor(gateway: string): ProviderStateStore {
    let s = this.states.get(gateway);
    if (!s) this.states.set(gateway, (s = memoryStateStore()));
    return s;
  }

  /** {@inheritDoc CredentialStore.health} */
  async health(): Promise<void> {
    this.use("health");
  }

  /** {@inheritDoc CredentialStore.close} */
  async close(): Promise<void> {
    this.closed = true;
  }

  private sorted(by: "createdAt" | "updatedAt"): CredentialRecord[] {
    return this.all().sort((a, b) => (a[by] < b[by] ? -1 : a[by] > b[by] ? 1 : 0));
  }
}
