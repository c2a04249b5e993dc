/**
 * @credhook/provider-local: credhook's embedded provider. It issues API keys and
 * OAuth client credentials kept by credhook itself, with no cloud account: the
 * shipped `webhook.config.yaml` routes every API to it.
 *
 * Secrets are generated from `crypto.randomBytes` (base62, no modulo bias); only
 * their SHA-256 digest is stored (in the credential store's provider state), so
 * a secret cannot be read back: a replayed create rotates it instead.
 *
 * Provider state keys (namespaced to the gateway):
 * - `cred:<nativeId>`: the credential ({@link LocalCredentialState});
 * - `key:<sha256 hex>`: `{ nativeId }`, the index the embedded gateway's key
 *   check finds an API key by (one point read, no key-derivation per request);
 * - `cid:<credentialId>:<nativeId>`: `true`, the index `findByCredential` finds a
 *   credential's native ids by (a range of a few keys, not every key);
 * - `meta:changed`: a fresh random stamp written after every change, so that
 *   caches in other processes sharing the store see that something changed;
 * - `meta:key-index-complete`: `true` once every API key has its `key:` entry,
 *   `meta:credential-index-complete`: once every credential has its `cid:` entry
 *   (`ensureKeyIndex` then reads no key at start-up).
 *
 * The embedded gateway (`@credhook/gateway`) enforces what this provider issues (key checks
 * for NGINX/Envoy, OAuth client credentials, plan limits): it reads the credentials through
 * {@link localCredentialReader}, this package's one door for it.
 */
import { randomUUID } from "node:crypto";
import { Conflict, InvalidReference, NotFound } from "@credhook/core/errors";
import {
  defineProvider,
  type CredentialType,
  type GatewayApi,
  type JsonValue,
  type Provider,
  type ProviderContext,
  type ProviderCreateInput,
  type ProviderCredential,
  type ProviderCredentialRef,
  type ProviderStateStore,
  type ProviderUpdateInput,
  type ProviderUpdateResult,
  type CredentialSearch,
  type OwnedResource,
  type RevokeOutcome,
  type RotatedSecret,
  type StateChange,
  statePages,
  writeState,
} from "@credhook/core/provider";
import { hashSecret, randomBase62, verifySecretHash, gatewayError, gatewayMessage } from "@credhook/core/provider-kit";
import { newNativeId } from "./native-id.js";
import { optionsSchema } from "./schema.js";
import type {
  KeyIndexPass,
  LocalCredentialChange,
  LocalCredentialReader,
  LocalCredentialState,
  LocalCredentialView,
  LocalProviderOptions,
  UsagePlanDefinition,
  UsagePlanLimits,
} from "./types.js";

export type {
  KeyIndexPass,
  LocalCredentialChange,
  LocalCredentialReader,
  LocalCredentialState,
  LocalCredentialView,
  LocalProviderOptions,
  UsagePlanDefinition,
  UsagePlanLimits,
} from "./types.js";

export { optionsSchema } from "./schema.js";

const KEY_PREFIX = "cred:";
/** Provider-state key prefix of the API-key index: `key:<sha256 hex of the key>` → `{ nativeId }`. */
const KEY_INDEX_PREFIX = "key:";
/** Provider-state key of the change stamp (a fresh UUID after every change). */
const CHANGE_STAMP_KEY = "meta:changed";
/**
 * Provider-state key that says every API key of this gateway has its `key:` entry: written by the first
 * {@link LocalProvider.ensureKeyIndex} pass that completes. Every write since keeps the two together (one atomic
 * state write, or the entry written before the credential and removed after it), so no later start reads the keys.
 */
const KEY_INDEX_COMPLETE_KEY = "meta:key-index-complete";
/** Provider-state key prefix of the credential-id index: `cid:<credentialId>:<nativeId>` → `true`. */
const CREDENTIAL_INDEX_PREFIX = "cid:";
/**
 * Provider-state key that says every credential has its `cid:` entry (written with the credential in one state
 * write since the index exists; older ones by {@link LocalProvider.ensureKeyIndex}'s pass, which then writes this).
 * Until then {@link LocalProvider.findByCredential} reads every credential, a page at a time; after, it does only when
 * the index names none (a credential written by an instance of an older version has no entry).
 */
const CREDENTIAL_INDEX_COMPLETE_KEY = "meta:credential-index-complete";
/** The prefix of credential `credentialId`'s `cid:` entries. */
const credentialIndexPrefix = (credentialId: string) => `${CREDENTIAL_INDEX_PREFIX}${credentialId}:`;

/** The embedded provider for one gateway. */
export class LocalProvider implements Provider, LocalCredentialReader {
  readonly capabilities = {
    credentialTypes: ["API_KEY", "CLIENT_CREDENTIALS"] as CredentialType[],
    importsApiKeyValue: true,
    readsBackSecret: false,
    // Its state is credhook's own store: a write is done when the call returns.
    writesLandLate: false,
    disables: ["API_KEY", "CLIENT_CREDENTIALS"] as CredentialType[],
  };
  private readonly knownPlans: Set<string> | undefined;
  private readonly knownApis: Set<string> | undefined;
  private readonly limits = new Map<string, UsagePlanLimits>();
  private readonly listeners = new Set<(change: LocalCredentialChange) => void>();
  private defaultTokenUrl: string | undefined;
  /** True once the store's `cid:` index was seen complete (it never becomes incomplete again). */
  private credentialIndexSeen = false;

  /**
   * @param options the gateway's options (schema-valid)
   * @param state the gateway's provider state (from the credential store)
   * @param gateway the gateway's name (key under `gateways:`)
   * @param credentialType the credential type the gateway issues (from YAML)
   */
  constructor(
    private readonly options: LocalProviderOptions,
    private readonly state: ProviderStateStore,
    private readonly gateway: string,
    readonly credentialType: CredentialType = "API_KEY",
  ) {
    const plans = (options.usagePlans ?? []).map((p): UsagePlanDefinition => (typeof p === "string" ? { id: p } : p));
    this.knownPlans = options.usagePlans ? new Set(plans.map((p) => p.id)) : undefined;
    for (const p of plans)
      if (p.rate || p.quota)
        this.limits.set(p.id, { ...(p.rate ? { rate: p.rate } : {}), ...(p.quota ? { quota: p.quota } : {}) });
    this.knownApis = options.apis ? new Set(options.apis) : undefined;
  }

  /** The gateway's name (key under `gateways:`). */
  get gatewayName(): string {
    return this.gateway;
  }

  /** The limits of usage plan `planId`, or undefined when it has none. */
  planLimits(planId: string): UsagePlanLimits | undefined {
    return this.limits.get(planId);
  }

  /** Every usage plan of this gateway that has limits. */
  limitedPlans(): ReadonlyMap<string, UsagePlanLimits> {
    return this.limits;
  }

  /**
   * Sets the token endpoint URL returned as customCredentials.tokenUrl when the
   * `tokenUrl` option is not set (the embedded gateway's, once it listens).
   */
  useTokenUrl(url: string): void {
    this.defaultTokenUrl = url;
  }

  /**
   * Calls `listener` after every change this provider makes to a credential
   * (create, update, revoke, rotation), in this process.
   * @returns a function that removes the listener
   */
  onChange(listener: (change: LocalCredentialChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Writes a change of credential `nativeId` and a fresh change stamp (for other processes) at once
   * ({@link writeState}: one transaction on credhook's stores, so the stamp is seen with the change,
   * never before it), then tells the in-process listeners.
   */
  private async changed(nativeId: string, secretHashes: string[], changes: StateChange[]): Promise<void> {
    await writeState(this.state, [...changes, { key: CHANGE_STAMP_KEY, value: randomUUID() }]);
    for (const l of this.listeners) l({ gateway: this.gateway, nativeId, secretHashes });
  }

  /** The change that stores credential `nativeId`'s state. */
  private stateChange(nativeId: string, s: LocalCredentialState): StateChange {
    return { key: KEY_PREFIX + nativeId, value: s as unknown as JsonValue };
  }

  /** The current change stamp (a UUID written after every change), or undefined before the first change. */
  async changeStamp(): Promise<string | undefined> {
    const v = await this.state.get(CHANGE_STAMP_KEY);
    return typeof v === "string" ? v : undefined;
  }

  /**
   * The API key whose SHA-256 hex digest is `secretHash`, found through the
   * `key:` index (one point read of the index, one of the credential), or
   * undefined when no credential of this gateway has that key. A disabled
   * credential is returned with `enabled: false`.
   */
  async findByKeyDigest(secretHash: string): Promise<LocalCredentialView | undefined> {
    const idx = (await this.state.get(KEY_INDEX_PREFIX + secretHash)) as { nativeId?: unknown } | undefined;
    if (!idx || typeof idx.nativeId !== "string") return undefined;
    const s = await this.load(idx.nativeId);
    // A stale index entry (a crash between two writes) never grants anything: the digest must match.
    if (!s || s.credentialType !== "API_KEY" || s.secretHash !== secretHash) return undefined;
    return this.view(idx.nativeId, s);
  }

  /** The credential with native id `nativeId` (an API key id or client id), or undefined. */
  async findByNativeId(nativeId: string): Promise<LocalCredentialView | undefined> {
    const s = await this.load(nativeId);
    return s ? this.view(nativeId, s) : undefined;
  }

  /** The state as the gateway sees it: a suspended credential is not enabled. */
  private view(nativeId: string, s: LocalCredentialState): LocalCredentialView {
    return { ...s, enabled: s.enabled && !s.suspended, nativeId, gateway: this.gateway };
  }

  /**
   * Adds the `key:` index entry of every API key and the `cid:` entry of every credential that lacks one (credentials
   * created before the index existed), once per store: the first pass that completes marks each index complete, and
   * every later call is two point reads — a start-up does not read every key (1.84 s of a 4.0 s start at 97,000 keys
   * before). The pass reads the credentials a page at a time ({@link statePages}) and writes each page's entries at once.
   * @returns how many credentials got an entry (0 once both indexes are complete)
   */
  async ensureKeyIndex(pass: KeyIndexPass = {}): Promise<number> {
    const keysDone = pass.keys === false || (await this.state.get(KEY_INDEX_COMPLETE_KEY)) === true;
    const idsDone = pass.credentialIds === false || (await this.credentialIndexComplete());
    if (keysDone && idsDone) return 0;
    let added = 0;
    for await (const page of statePages(this.state, KEY_PREFIX)) {
      if (pass.signal?.aborted) return added; // not marked complete: the next start goes on
      // A page's point reads at once: one round trip of the store's latency a page, not one a credential.
      const perCredential = await Promise.all(
        page.map(async (e): Promise<StateChange[]> => {
          const s = e.value as unknown as LocalCredentialState;
          const nativeId = e.key.slice(KEY_PREFIX.length);
          const changes: StateChange[] = [];
          if (!keysDone && s.credentialType === "API_KEY") {
            const idx = (await this.state.get(KEY_INDEX_PREFIX + s.secretHash)) as { nativeId?: string } | undefined;
            if (idx?.nativeId !== nativeId) changes.push(this.indexChange(nativeId, s.secretHash));
          }
          if (!idsDone && typeof s.credentialId === "string") {
            const entry = this.credentialIndexChange(s.credentialId, nativeId);
            if ((await this.state.get(entry.key)) === undefined) changes.push(entry);
          }
          return changes;
        }),
      );
      const changes = perCredential.flat();
      added += perCredential.filter((c) => c.length > 0).length;
      if (changes.length > 0) await writeState(this.state, changes);
    }
    await writeState(this.state, [
      ...(keysDone ? [] : [{ key: KEY_INDEX_COMPLETE_KEY, value: true }]),
      ...(idsDone ? [] : [{ key: CREDENTIAL_INDEX_COMPLETE_KEY, value: true }]),
    ]);
    if (!idsDone) this.credentialIndexSeen = true;
    return added;
  }

  /** Whether every credential has its `cid:` entry (a point read until it has been seen so, then none). */
  private async credentialIndexComplete(): Promise<boolean> {
    this.credentialIndexSeen ||= (await this.state.get(CREDENTIAL_INDEX_COMPLETE_KEY)) === true;
    return this.credentialIndexSeen;
  }

  /** The change that adds credential `credentialId`'s index entry of `nativeId`. */
  private credentialIndexChange(credentialId: string, nativeId: string): { key: string; value: JsonValue } {
    return { key: credentialIndexPrefix(credentialId) + nativeId, value: true };
  }

  /** The change that points the index entry of `secretHash` at `nativeId`. */
  private indexChange(nativeId: string, secretHash: string): StateChange {
    return { key: KEY_INDEX_PREFIX + secretHash, value: { nativeId } };
  }

  /** @throws Conflict another live API key of this gateway than `nativeId` has the digest `secretHash` */
  private async checkUnique(nativeId: string, secretHash: string): Promise<void> {
    const other = await this.findByKeyDigest(secretHash);
    if (other && other.nativeId !== nativeId) {
      throw gatewayError(this.gateway, Conflict, `an API key with this value exists already`);
    }
  }

  /** The change that removes the index entry of `secretHash` when it points at `nativeId` (none when it points elsewhere, or is gone). */
  private async unindexChanges(nativeId: string, secretHash: string): Promise<StateChange[]> {
    const idx = (await this.state.get(KEY_INDEX_PREFIX + secretHash)) as { nativeId?: string } | undefined;
    return idx?.nativeId === nativeId ? [{ key: KEY_INDEX_PREFIX + secretHash, delete: true }] : [];
  }

  private check(apis: GatewayApi[]): void {
    const problems: string[] = [];
    for (const a of apis) {
      if (this.knownApis && !this.knownApis.has(a.id))
        problems.push(gatewayMessage(this.gateway, `API '${a.id}' does not exist`));
      for (const p of a.usagePlans) {
        if (this.knownPlans && !this.knownPlans.has(p))
          problems.push(gatewayMessage(this.gateway, `usage plan '${p}' does not exist`));
      }
    }
    if (problems.length > 0)
      throw new InvalidReference(problems[0]!, { messages: problems.slice(1), gateway: this.gateway });
  }

  private async load(nativeId: string): Promise<LocalCredentialState | undefined> {
    const v = await this.state.get(KEY_PREFIX + nativeId);
    return v === undefined ? undefined : (v as unknown as LocalCredentialState);
  }

  /**
   * The credential's state when it belongs to `credentialId` (any credential
   * of this gateway when `credentialId` is empty). Its state lives in this
   * gateway's namespace of credhook's own store: that is its mark.
   */
  private async loadOwned(
    nativeId: string,
    credentialId: string,
  ): Promise<LocalCredentialState | undefined | "not-owned"> {
    const s = await this.load(nativeId);
    if (!s) return undefined;
    return credentialId !== "" && s.credentialId !== credentialId ? "not-owned" : s;
  }

  private newSecret(): string {
    return randomBase62(this.options.secretLength ?? 40);
  }

  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    this.check(input.apis);
    const isKey = input.credentialType === "API_KEY";
    const nativeId = newNativeId(isKey ? "lk" : "lc");
    const secret = isKey ? (input.apiKeyValue ?? this.newSecret()) : this.newSecret();
    const secretHash = hashSecret(secret);
    const now = new Date().toISOString();
    // A value read from another gateway may be another key's; a value generated here or by core (238 random bits) cannot be.
    if (isKey && input.apiKeyValue !== undefined && !input.apiKeyValueGenerated)
      await this.checkUnique(nativeId, secretHash);
    // The index entries, the credential and the change stamp are one write: the key index alone grants
    // nothing (findByKeyDigest needs the credential), nor does the credential alone (the key check
    // finds keys through the index); the credential-id entry is there as soon as the credential is.
    const state: LocalCredentialState = {
      credentialType: input.credentialType,
      credentialId: input.credentialId,
      secretHash,
      enabled: true,
      apis: input.apis,
      appName: input.app.appName,
      developer: input.app.developer,
      createdAt: now,
      updatedAt: now,
    };
    await this.changed(
      nativeId,
      [secretHash],
      [
        ...(isKey ? [this.indexChange(nativeId, secretHash)] : []),
        this.credentialIndexChange(input.credentialId, nativeId),
        this.stateChange(nativeId, state),
      ],
    );
    const out: ProviderCredential = { nativeId, resources: { kind: isKey ? "apiKey" : "client" } };
    if (isKey) out.apiKey = secret;
    else {
      out.clientSecret = secret;
      const tokenUrl = this.options.tokenUrl ?? this.defaultTokenUrl;
      if (tokenUrl) out.customCredentials = { tokenUrl };
    }
    return out;
  }

  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const s = await this.loadOwned(input.nativeId, input.credentialId);
    if (!s || s === "not-owned" || !s.enabled || s.credentialType !== input.credentialType) {
      throw gatewayError(this.gateway, NotFound, `${input.credentialType} '${input.nativeId}' does not exist`);
    }
    this.check(input.desired);
    s.apis = input.desired;
    s.appName = input.app.appName;
    s.updatedAt = new Date().toISOString();
    await this.changed(input.nativeId, [s.secretHash], [this.stateChange(input.nativeId, s)]);
    return {
      resources:
        input.resources && Object.keys(input.resources).length > 0
          ? input.resources
          : { kind: s.credentialType === "API_KEY" ? "apiKey" : "client" },
      ...(input.credentialId === "" ? { credentialId: s.credentialId } : {}),
    };
  }

  /**
   * Turns the credential off (`suspended`: every key check and token request refuses it at once, through the
   * change listeners) or on again; its digest is kept. {@inheritDoc Provider.setEnabled}
   */
  async setEnabled(ref: ProviderCredentialRef, enabled: boolean): Promise<RevokeOutcome> {
    const s = await this.loadOwned(ref.nativeId, ref.credentialId);
    if (s === "not-owned") return "not-owned";
    if (!s || !s.enabled) return "gone";
    if (!s.suspended === enabled) return "revoked"; // already so: idempotent
    if (enabled) delete s.suspended;
    else s.suspended = true;
    s.updatedAt = new Date().toISOString();
    await this.changed(ref.nativeId, [s.secretHash], [this.stateChange(ref.nativeId, s)]);
    return "revoked";
  }

  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    const s = await this.loadOwned(ref.nativeId, ref.credentialId);
    if (s === "not-owned") return "not-owned";
    if (!s || !s.enabled) return "gone";
    const hash = s.secretHash;
    if (this.options.revokeMode === "disable") {
      s.enabled = false;
      s.secretHash = ""; // a disabled key is never checked again: its digest is not kept either
      s.updatedAt = new Date().toISOString();
      await this.changed(ref.nativeId, [hash], [this.stateChange(ref.nativeId, s)]);
    } else {
      // Both deletes and the stamp in one write: a key never passes a check after a partly done
      // revoke either way (with a third-party store's one-by-one writes), since a check needs both.
      await this.changed(
        ref.nativeId,
        [hash],
        [
          ...(await this.unindexChanges(ref.nativeId, hash)),
          { key: credentialIndexPrefix(s.credentialId) + ref.nativeId, delete: true },
          { key: KEY_PREFIX + ref.nativeId, delete: true },
        ],
      );
    }
    return "revoked";
  }

  /**
   * This gateway's live credentials of `search.credentialId`: the credentials its `cid:` entries name (a few point
   * reads, whatever the gateway holds). On a store whose index is not complete yet (written by a version before it,
   * until {@link ensureKeyIndex}'s pass), every credential read a page at a time.
   */
  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    const found: OwnedResource[] = [];
    if (await this.credentialIndexComplete()) {
      const prefix = credentialIndexPrefix(search.credentialId);
      for await (const page of statePages(this.state, prefix))
        for (const e of page) {
          const nativeId = e.key.slice(prefix.length);
          const s = await this.load(nativeId);
          // An entry whose credential is gone (a crash between two writes of a store without atomic writes) names nothing.
          if (s?.credentialId === search.credentialId && s.enabled) found.push(this.owned(nativeId, s));
        }
      if (found.length > 0) return found;
    }
    // Nothing indexed (or no index yet): a paged read of every credential says so for sure. An instance of an older
    // version sharing the store (a rolling upgrade) writes no `cid:` entry, and a search that missed its live key
    // would leave an orphan; core searches only where a write's outcome is unknown, so this read is rare.
    for await (const page of this.listOwnedPages())
      found.push(...page.filter((r) => r.credentialId === search.credentialId && r.live));
    return found;
  }

  async rotateSecret(ref: ProviderCredentialRef, apiKeyValue?: string): Promise<RotatedSecret> {
    const s = await this.loadOwned(ref.nativeId, ref.credentialId);
    if (!s || s === "not-owned" || !s.enabled)
      throw gatewayError(this.gateway, NotFound, `${ref.credentialType} '${ref.nativeId}' does not exist`);
    const secret = s.credentialType === "API_KEY" ? (apiKeyValue ?? this.newSecret()) : this.newSecret();
    const oldHash = s.secretHash;
    s.secretHash = hashSecret(secret);
    s.updatedAt = new Date().toISOString();
    // The new index entry, the credential and the old entry's removal in one write with the stamp, as a create's.
    const changes: StateChange[] = [];
    if (s.credentialType === "API_KEY") {
      await this.checkUnique(ref.nativeId, s.secretHash);
      changes.push(this.indexChange(ref.nativeId, s.secretHash));
    }
    changes.push(this.stateChange(ref.nativeId, s));
    if (s.credentialType === "API_KEY" && oldHash !== s.secretHash)
      changes.push(...(await this.unindexChanges(ref.nativeId, oldHash)));
    await this.changed(ref.nativeId, [oldHash, s.secretHash], changes);
    return s.credentialType === "API_KEY"
      ? { apiKey: secret, resources: ref.resources }
      : { clientSecret: secret, resources: ref.resources };
  }

  /**
   * Checks a presented secret (an API key value, or a client id's secret) the
   * way an embedded gateway would: constant-time comparison with the stored digest.
   * @returns the credential's APIs when valid and enabled, else undefined
   */
  async verify(nativeId: string, secret: string): Promise<GatewayApi[] | undefined> {
    const s = await this.load(nativeId);
    if (!s || !s.enabled || s.suspended || !verifySecretHash(secret, s.secretHash)) return undefined;
    return s.apis;
  }

  /** Every credential of this gateway ({@link listOwnedPages}' pages, held together: `credhook adopt`). */
  async listOwned(): Promise<Array<OwnedResource & { live: boolean }>> {
    const all: Array<OwnedResource & { live: boolean }> = [];
    for await (const page of this.listOwnedPages()) all.push(...page);
    return all;
  }

  /**
   * Every credential of this gateway, a page of its state at a time ({@link statePages}: each page read when the one
   * before has been consumed), `live` false for a revoked one kept disabled (`revokeMode: disable`).
   */
  async *listOwnedPages(): AsyncGenerator<Array<OwnedResource & { live: boolean }>> {
    for await (const page of statePages(this.state, KEY_PREFIX))
      yield page.map((e) => this.owned(e.key.slice(KEY_PREFIX.length), e.value as unknown as LocalCredentialState));
  }

  /** Credential `nativeId` as {@link listOwned} reports it. */
  private owned(nativeId: string, s: LocalCredentialState): OwnedResource & { live: boolean } {
    return {
      nativeId,
      credentialId: s.credentialId,
      live: s.enabled,
      description: `${s.credentialType} of ${s.developer}/${s.appName}${s.enabled ? "" : " (disabled)"}`,
    };
  }

  async health(): Promise<void> {
    await this.state.get("health-probe");
  }
}

/**
 * The embedded gateway's reader of `provider`'s credentials ({@link LocalCredentialReader}) when it is a
 * `provider: local` gateway's, else undefined (any other provider: the gateway has nothing to read there).
 */
export function localCredentialReader(provider: Provider): LocalCredentialReader | undefined {
  return provider instanceof LocalProvider ? provider : undefined;
}

/** The `provider: local` factory: options typed from, and defaulted by, `schema.ts`. */
const localProviderFactory = defineProvider({
  type: "local",
  optionsSchema,
  problems(options, context) {
    const seen = new Set<string>();
    return (options.usagePlans ?? []).flatMap((p, i) => {
      const id = typeof p === "string" ? p : p.id;
      const twice = seen.has(id);
      seen.add(id);
      return twice
        ? [`${context.configPath}.usagePlans[${i}]${typeof p === "string" ? "" : ".id"} '${id}' is listed twice`]
        : [];
    });
  },
  create: (options, context: ProviderContext) =>
    new LocalProvider(options, context.state, context.gateway, context.credentialType),
});

export default localProviderFactory;
