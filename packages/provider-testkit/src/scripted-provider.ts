/**
 * A scripted in-memory {@link Provider} for orchestration tests: a gateway
 * that keeps marked resources (API keys or clients, each with its API set) in
 * memory and follows the ownership contract of `core/src/provider.ts` — it
 * reports `partial` and `outcomeUnknown`, never cleans up after itself, finds
 * resources by their mark, and refuses to revoke what it did not mark. Tests
 * script the unpleasant parts of a cloud call by call: a failure before the
 * write, after it (the write applied, the answer lost), or a write that lands
 * later than the error.
 */
import { randomBytes } from "node:crypto";
import { type CredhookError, NotFound, UpstreamTimeout } from "@credhook/core/errors";
import { gatewayError } from "@credhook/core/provider-kit";
import type {
  CredentialSearch,
  CredentialType,
  GatewayApi,
  OwnedResource,
  Provider,
  ProviderCapabilities,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
} from "@credhook/core/provider";

/** The operations a script can target. */
export type ScriptedOperation =
  | "create"
  | "update"
  | "revoke"
  | "setEnabled"
  | "findByCredential"
  | "readSecret"
  | "health";

/**
 * One scripted failure of the next matching call:
 * - `before`: the call fails and changes nothing;
 * - `after`: the call's write is applied, then it fails (outcome unknown to the caller);
 * - `late`: the call fails at once and its write lands `lateMs` later (a cloud finishing work the client gave up on).
 */
export interface ScriptedFault {
  op: ScriptedOperation;
  when: "before" | "after" | "late";
  /** The error thrown. @default UpstreamTimeout (504, outcome unknown unless `when` is "before") */
  error?: CredhookError;
  /** Delay of a `late` write, ms. @default 20 */
  lateMs?: number;
  /** Only calls whose API ids include this one. */
  apiId?: string;
}

/** One resource the scripted gateway holds. */
export interface ScriptedResource {
  nativeId: string;
  /** The credential id of credhook's mark; undefined: someone else made it. */
  credentialId?: string;
  credentialType: CredentialType;
  secret: string;
  apis: GatewayApi[];
  appName: string;
  /** False while turned off by {@link ScriptedProvider.setEnabled}. @default true */
  enabled?: boolean;
}

/** Options of {@link ScriptedProvider}. */
export interface ScriptedProviderOptions {
  /** Gateway name (used in errors and as the mark's gateway). @default "scripted" */
  gateway?: string;
  /** Capabilities to report; merged over API_KEY + CLIENT_CREDENTIALS, imports values, reads back secrets, writes land late. */
  capabilities?: Partial<ProviderCapabilities>;
}

/** Whether `r` carries credhook's mark for `ref` (any credential id when `ref` names none: a revoke by id alone). */
function carriesMark(r: ScriptedResource, ref: ProviderCredentialRef): boolean {
  return r.credentialId !== undefined && (ref.credentialId === "" || r.credentialId === ref.credentialId);
}

/** See the module comment. */
export class ScriptedProvider implements Provider {
  readonly capabilities: ProviderCapabilities;
  readonly gateway: string;
  /** What the gateway holds, by native id. */
  readonly resources = new Map<string, ScriptedResource>();
  /** Every call, in order: operation and native id (or credential id for a create). */
  readonly calls: Array<{ op: ScriptedOperation; id: string }> = [];
  private faults: ScriptedFault[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(options: ScriptedProviderOptions = {}) {
    this.gateway = options.gateway ?? "scripted";
    this.capabilities = {
      credentialTypes: ["API_KEY", "CLIENT_CREDENTIALS"],
      importsApiKeyValue: true,
      readsBackSecret: true,
      writesLandLate: true,
      ...options.capabilities,
    };
  }

  /** Arms a fault for the next matching call (faults fire in the order armed). */
  fail(fault: ScriptedFault): this {
    this.faults.push(fault);
    return this;
  }

  /** Puts a resource someone else made (no mark) under `nativeId`. */
  putForeign(nativeId: string, credentialType: CredentialType = "API_KEY"): void {
    this.resources.set(nativeId, { nativeId, credentialType, secret: "foreign", apis: [], appName: "someone else's" });
  }

  /** The live resources carrying credhook's mark. */
  marked(): ScriptedResource[] {
    return [...this.resources.values()].filter((r) => r.credentialId !== undefined);
  }

  /** Resolves once every late write has landed. */
  async settled(): Promise<void> {
    while (this.timers.size > 0) await new Promise((r) => setTimeout(r, 5));
  }

  /** Runs `write` as the armed fault of `op` directs; returns the write's result. */
  private async run<T>(op: ScriptedOperation, id: string, apis: GatewayApi[], write: () => T): Promise<T> {
    this.calls.push({ op, id });
    const i = this.faults.findIndex(
      (f) => f.op === op && (f.apiId === undefined || apis.some((a) => a.id === f.apiId)),
    );
    if (i < 0) return write();
    const fault = this.faults.splice(i, 1)[0]!;
    const error =
      fault.error ??
      gatewayError(this.gateway, UpstreamTimeout, `the cloud did not answer ${op} in time`, {
        outcomeUnknown: fault.when !== "before",
      });
    if (fault.when === "after") write();
    if (fault.when === "late") {
      const t = setTimeout(() => {
        this.timers.delete(t);
        write();
      }, fault.lateMs ?? 20);
      this.timers.add(t);
    }
    throw error;
  }

  private owned(ref: ProviderCredentialRef): ScriptedResource {
    const r = this.resources.get(ref.nativeId);
    if (!r || !carriesMark(r, ref)) {
      throw gatewayError(this.gateway, NotFound, `no credential of credhook's with id '${ref.nativeId}'`);
    }
    return r;
  }

  /** {@inheritDoc Provider.create} */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    const nativeId = `sc${randomBytes(5).toString("hex")}`;
    const secret = input.apiKeyValue ?? randomBytes(16).toString("hex");
    await this.run("create", input.credentialId, input.apis, () => {
      this.resources.set(nativeId, {
        nativeId,
        credentialId: input.credentialId,
        credentialType: input.credentialType,
        secret,
        apis: structuredClone(input.apis),
        appName: input.app.appName,
      });
    });
    return {
      nativeId,
      ...(input.credentialType === "API_KEY" ? { apiKey: secret } : { clientSecret: secret }),
      resources: { name: input.app.appName },
    };
  }

  /** {@inheritDoc Provider.update} */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const r = this.owned(input);
    await this.run("update", input.nativeId, input.desired, () => {
      r.apis = structuredClone(input.desired);
      r.appName = input.app.appName;
    });
    return { resources: { name: input.app.appName }, ...(r.credentialId ? { credentialId: r.credentialId } : {}) };
  }

  /** {@inheritDoc Provider.revoke} */
  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    const r = this.resources.get(ref.nativeId);
    if (!r) {
      this.calls.push({ op: "revoke", id: ref.nativeId });
      return "gone";
    }
    if (!carriesMark(r, ref)) {
      this.calls.push({ op: "revoke", id: ref.nativeId });
      return "not-owned";
    }
    await this.run("revoke", ref.nativeId, r.apis, () => this.resources.delete(ref.nativeId));
    return "revoked";
  }

  /**
   * {@inheritDoc Provider.setEnabled} Always present; core calls it only for the types the options' `capabilities.disables` names.
   */
  async setEnabled(ref: ProviderCredentialRef, enabled: boolean): Promise<RevokeOutcome> {
    const r = this.resources.get(ref.nativeId);
    if (!r || !carriesMark(r, ref)) {
      this.calls.push({ op: "setEnabled", id: ref.nativeId });
      return r ? "not-owned" : "gone";
    }
    await this.run("setEnabled", ref.nativeId, r.apis, () => {
      r.enabled = enabled;
    });
    return "revoked";
  }

  /** {@inheritDoc Provider.findByCredential} */
  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    return this.run("findByCredential", search.credentialId, search.apis, () =>
      this.marked()
        .filter((r) => r.credentialId === search.credentialId)
        .map((r) => ({
          nativeId: r.nativeId,
          credentialId: r.credentialId!,
          description: `${r.credentialType} '${r.appName}'`,
        })),
    );
  }

  /** {@inheritDoc Provider.listOwned} */
  async listOwned(): Promise<OwnedResource[]> {
    return this.marked().map((r) => ({
      nativeId: r.nativeId,
      credentialId: r.credentialId!,
      description: `${r.credentialType} '${r.appName}'`,
    }));
  }

  /** {@inheritDoc Provider.readSecret} */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey?: string; clientSecret?: string }> {
    const r = this.owned(ref);
    return this.run("readSecret", ref.nativeId, r.apis, () =>
      r.credentialType === "API_KEY" ? { apiKey: r.secret } : { clientSecret: r.secret },
    );
  }

  /** {@inheritDoc Provider.health} */
  async health(): Promise<void> {
    await this.run("health", "", [], () => undefined);
  }

  /** Cancels late writes not yet landed. */
  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
