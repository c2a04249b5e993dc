/**
 * An in-memory {@link CredentialStore} for orchestration tests: the same
 * contract as the SQLite and PostgreSQL stores (it passes
 * {@link storeConformance}), records copied in and out, nothing durable. Not
 * for production: a restart loses every record — and with it what credhook
 * must revoke.
 */
import { Conflict, NotFound } from "@credhook/core/errors";
import { memoryStateStore } from "@credhook/core/provider-kit";
import type { CredentialRecord, CredentialStore } from "@credhook/core/store";
import type { CredentialType, ProviderStateStore } from "@credhook/core/provider";

/** See the module comment. Per-app locks are core's in-process ones (no `locks`). */
export class MemoryCredentialStore implements CredentialStore {
  private readonly records = new Map<string, CredentialRecord>();
  private readonly states = new Map<string, ProviderStateStore>();
  private closed = false;
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
  async insert(record: CredentialRecord): Promise<void> {
    this.use("insert");
    if (this.records.has(record.id)) throw new Conflict(`a credential record with id '${record.id}' exists`);
    if (this.liveTwin(record))
      throw new Conflict(`the app '${record.appKey}' already has a live ${record.credentialType} credential`);
    this.records.set(record.id, structuredClone(record));
  }

  /** {@inheritDoc CredentialStore.save} */
  async save(record: CredentialRecord): Promise<void> {
    this.use("save");
    if (!this.records.has(record.id)) throw new NotFound(`no credential record with id '${record.id}'`);
    if (this.liveTwin(record))
      throw new Conflict(`the app '${record.appKey}' already has a live ${record.credentialType} credential`);
    this.records.set(record.id, structuredClone(record));
  }

  /** {@inheritDoc CredentialStore.get} */
  async get(id: string): Promise<CredentialRecord | undefined> {
    this.use("get");
    const r = this.records.get(id);
    return r && structuredClone(r);
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
  async delete(id: string): Promise<boolean> {
    this.use("delete");
    return this.records.delete(id);
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
