/**
 * A provider that follows every failure rule of `core/src/provider.ts`, on an
 * in-memory cloud that pages its lists, takes one call per usage plan and lets
 * a test arm faults — and the deliberately wrong variants the testkit's own
 * tests run the conformance suite on, to prove each failure-rule and paging
 * check fails a provider that breaks its rule.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { InvalidReference, NotFound, UpstreamError, UpstreamTimeout, type CredhookError } from "@credhook/core/errors";
import type {
  CredentialSearch,
  GatewayApi,
  OwnedResource,
  Provider,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
} from "@credhook/core/provider";

/** One key in the {@link PagedCloud}. */
interface CloudKey {
  id: string;
  value: string;
  plans: string[];
  /** credhook's mark: gateway and credential id. */
  gateway: string;
  credentialId: string;
}

/** A fault of the next matching cloud call: `attach` refused (nothing applied); `lost`: a create applied, its answer lost. */
export type CloudFault = "attach" | "lost";

/** An in-memory cloud: keys, the usage plans that exist, lists in pages of `pageSize`, and armed faults. */
export class PagedCloud {
  readonly keys = new Map<string, CloudKey>();
  private readonly faults: CloudFault[] = [];
  constructor(
    readonly plans: ReadonlySet<string>,
    readonly pageSize = 2,
  ) {}
  /** Arms `fault` for the next matching call. */
  arm(fault: CloudFault): void {
    this.faults.push(fault);
  }
  private fires(fault: CloudFault): boolean {
    const i = this.faults.indexOf(fault);
    if (i >= 0) this.faults.splice(i, 1);
    return i >= 0;
  }
  createKey(key: Omit<CloudKey, "id" | "plans">): CloudKey {
    const made = { ...key, id: randomUUID().slice(0, 12), plans: [] };
    this.keys.set(made.id, made);
    if (this.fires("lost")) throw new Error("socket hang up");
    return structuredClone(made);
  }
  attach(id: string, plan: string): void {
    if (this.fires("attach")) throw new Error("attach refused");
    this.keys.get(id)?.plans.push(plan);
  }
  detach(id: string, plan: string): void {
    const key = this.keys.get(id);
    if (key) key.plans = key.plans.filter((p) => p !== plan);
  }
  /** One page of every key, from `token` (an offset); `next` when more follow. */
  list(token = 0): { items: CloudKey[]; next?: number } {
    const items = [...this.keys.values()].slice(token, token + this.pageSize).map((k) => structuredClone(k));
    return token + this.pageSize < this.keys.size ? { items, next: token + this.pageSize } : { items };
  }
}

/** The correct provider of one gateway on a {@link PagedCloud}: API keys only. */
export class PagedProvider implements Provider {
  readonly capabilities = { credentialTypes: ["API_KEY" as const], importsApiKeyValue: false, readsBackSecret: false };
  constructor(
    readonly cloud: PagedCloud,
    readonly gateway = "paged",
  ) {}

  protected plansOf(apis: GatewayApi[]): string[] {
    const plans = [...new Set(apis.flatMap((a) => a.usagePlans))];
    const unknown = plans.filter((p) => !this.cloud.plans.has(p));
    if (unknown.length > 0) throw new InvalidReference(`unknown usage plan(s): ${unknown.join(", ")}`);
    return plans;
  }

  protected owned(ref: ProviderCredentialRef): CloudKey | "gone" | "not-owned" {
    const key = this.cloud.keys.get(ref.nativeId);
    if (!key) return "gone";
    const mine = key.gateway === this.gateway && (ref.credentialId === "" || key.credentialId === ref.credentialId);
    return mine ? key : "not-owned";
  }

  /** Attaches each plan; a refused attach is a typed error with `partial` (the key stays: core compensates). */
  protected attachAll(id: string, plans: string[]): void {
    for (const plan of plans) {
      try {
        this.cloud.attach(id, plan);
      } catch (err) {
        throw new UpstreamError(`attaching ${plan} failed: ${(err as Error).message}`, {
          partial: { nativeId: id, resources: {} },
        });
      }
    }
  }

  protected createKey(input: ProviderCreateInput): CloudKey {
    try {
      return this.cloud.createKey({
        value: randomBytes(24).toString("base64url"),
        gateway: this.gateway,
        credentialId: input.credentialId,
      });
    } catch (err) {
      throw new UpstreamTimeout(`no answer to the create: ${(err as Error).message}`, { outcomeUnknown: true });
    }
  }

  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    const plans = this.plansOf(input.apis);
    const key = this.createKey(input);
    this.attachAll(key.id, plans);
    return { nativeId: key.id, apiKey: key.value, resources: {} };
  }

  /** Adds the new plans, then removes the old ones. */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const key = this.owned(input);
    if (typeof key === "string") throw new NotFound(`no key ${input.nativeId} of this gateway`);
    const plans = this.plansOf(input.desired);
    this.attachAll(
      key.id,
      plans.filter((p) => !key.plans.includes(p)),
    );
    for (const p of key.plans.filter((p) => !plans.includes(p))) this.cloud.detach(key.id, p);
    return { resources: {}, credentialId: key.credentialId };
  }

  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    const key = this.owned(ref);
    if (typeof key === "string") return key;
    this.cloud.keys.delete(key.id);
    return "revoked";
  }

  /** Every page of the cloud's list (`firstOnly`: the first alone, the paging bug). */
  protected listAll(firstOnly = false): CloudKey[] {
    const all: CloudKey[] = [];
    let token: number | undefined = 0;
    while (token !== undefined) {
      const page = this.cloud.list(token);
      all.push(...page.items);
      token = firstOnly ? undefined : page.next;
    }
    return all.filter((k) => k.gateway === this.gateway);
  }

  protected owner(k: CloudKey): OwnedResource {
    return { nativeId: k.id, credentialId: k.credentialId, description: `key ${k.id}` };
  }

  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    return this.listAll()
      .filter((k) => k.credentialId === search.credentialId)
      .map((k) => this.owner(k));
  }

  async listOwned(): Promise<OwnedResource[]> {
    return this.listAll().map((k) => this.owner(k));
  }

  async health(): Promise<void> {}
}

/** Deletes the key when attaching a plan fails (and still reports it as `partial`): cleans up alone. */
export class DeletesAfterFailingCreate extends PagedProvider {
  override async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    const plans = this.plansOf(input.apis);
    const key = this.createKey(input);
    try {
      this.attachAll(key.id, plans);
    } catch (err) {
      this.cloud.keys.delete(key.id);
      throw err;
    }
    return { nativeId: key.id, apiKey: key.value, resources: {} };
  }
}

/** Leaves the key when attaching a plan fails, but throws without `partial`. */
export class DropsPartial extends PagedProvider {
  override async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    try {
      return await super.create(input);
    } catch (err) {
      throw new UpstreamError((err as CredhookError).message, {
        outcomeUnknown: (err as CredhookError).outcomeUnknown,
      });
    }
  }
}

/** Reports a lost create answer as a plain failure, without `outcomeUnknown`. */
export class DropsOutcomeUnknown extends PagedProvider {
  protected override createKey(input: ProviderCreateInput): CloudKey {
    try {
      return super.createKey(input);
    } catch (err) {
      throw new UpstreamError((err as CredhookError).message);
    }
  }
}

/** Removes the old plans before it adds the new ones. */
export class RemovesBeforeAdd extends PagedProvider {
  override async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const key = this.owned(input);
    if (typeof key === "string") throw new NotFound(`no key ${input.nativeId} of this gateway`);
    const plans = this.plansOf(input.desired);
    for (const p of key.plans.filter((p) => !plans.includes(p))) this.cloud.detach(key.id, p);
    this.attachAll(
      key.id,
      plans.filter((p) => !key.plans.includes(p)),
    );
    return { resources: {}, credentialId: key.credentialId };
  }
}

/** `findByCredential` reads only the first page of the cloud's list. */
export class FindsOnFirstPage extends PagedProvider {
  override async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    return this.listAll(true)
      .filter((k) => k.credentialId === search.credentialId)
      .map((k) => this.owner(k));
  }
}

/** `listOwned` reads only the first page of the cloud's list. */
export class ListsFirstPage extends PagedProvider {
  override async listOwned(): Promise<OwnedResource[]> {
    return this.listAll(true).map((k) => this.owner(k));
  }
}
