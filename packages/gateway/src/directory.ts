/**
 * The embedded gateway's view of the credentials the `provider: local`
 * gateways issued: API keys found by the SHA-256 digest of the presented key
 * (through the provider's `key:` index — one point read, no key derivation per
 * request), clients found by client id, both behind a bounded in-memory LRU
 * cache (lru-cache).
 *
 * Coherence:
 * - in this process, every change a provider makes (create, update, revoke,
 *   rotation) drops the affected entries at once, before the webhook answers;
 * - across processes sharing the store, every provider writes a fresh change
 *   stamp after each change; the directory reads the stamps every
 *   `coherenceIntervalMs` and clears the cache when one moved. A lookup that
 *   started before an invalidation never caches its (possibly stale) result.
 */
import { LRUCache } from "lru-cache";
import type { GatewayApi, Logger } from "@credhook/core/provider";
import type { LocalCredentialChange, LocalCredentialReader, LocalCredentialView } from "@credhook/provider-local";

/** A live-or-disabled credential as the gateway checks it. */
export interface CredentialGrant {
  gateway: string;
  /** Native id: the API key id (`lk…`) or client id (`lc…`) the portal knows. */
  nativeId: string;
  /** credhook's credential id (UUID). */
  credentialId: string;
  credentialType: LocalCredentialView["credentialType"];
  appName: string;
  developer: string;
  enabled: boolean;
  /** SHA-256 hex digest of the secret. */
  secretHash: string;
  /** API id → usage plan ids of that API. */
  apis: ReadonlyMap<string, readonly string[]>;
  /** The provider that issued it (for its plans' limits). */
  provider: LocalCredentialReader;
  /** Per-API values the key check answers with, computed once per cached entry. */
  memo: Map<string, unknown>;
}

/** Options of {@link CredentialDirectory}. */
export interface DirectoryOptions {
  /** Entries kept; least recently used evicted first. */
  maxEntries: number;
  /** Longest time an entry is trusted, ms. */
  ttlMs: number;
  /** Period of the change-stamp check, ms; 0 disables it. */
  coherenceIntervalMs: number;
  logger: Logger;
}

const NOT_FOUND = Object.freeze({ notFound: true as const });
type Entry = CredentialGrant | typeof NOT_FOUND;

function grantOf(view: LocalCredentialView, provider: LocalCredentialReader): CredentialGrant {
  return {
    gateway: view.gateway,
    nativeId: view.nativeId,
    credentialId: view.credentialId,
    credentialType: view.credentialType,
    appName: view.appName,
    developer: view.developer,
    enabled: view.enabled,
    secretHash: view.secretHash,
    apis: new Map(view.apis.map((a: GatewayApi) => [a.id, a.usagePlans])),
    provider,
    memo: new Map(),
  };
}

/** Finds credentials of the embedded providers, with a coherent bounded cache. */
export class CredentialDirectory {
  private readonly cache: LRUCache<string, Entry>;
  private readonly keyProviders: LocalCredentialReader[];
  private readonly clientProviders: LocalCredentialReader[];
  private readonly unsubscribe: Array<() => void>;
  /** Incremented by every invalidation; a lookup caches its result only when it did not move meanwhile. */
  private generation = 0;
  private stamps = new Map<string, string | undefined>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  /**
   * @param providers every `provider: local` gateway (API-key and client-credentials ones)
   * @param options cache bounds and coherence period
   */
  constructor(
    private readonly providers: LocalCredentialReader[],
    private readonly options: DirectoryOptions,
  ) {
    this.cache = new LRUCache<string, Entry>({ max: options.maxEntries, ttl: options.ttlMs, ttlAutopurge: false });
    this.keyProviders = providers.filter((p) => p.credentialType === "API_KEY");
    this.clientProviders = providers.filter((p) => p.credentialType === "CLIENT_CREDENTIALS");
    this.unsubscribe = providers.map((p) => p.onChange((c) => this.invalidate(c)));
  }

  /** Reads the providers' change stamps once and starts the periodic check. */
  async start(): Promise<void> {
    for (const p of this.providers) this.stamps.set(p.gatewayName, await p.changeStamp());
    if (this.options.coherenceIntervalMs > 0) {
      this.timer = setInterval(() => void this.checkStamps(), this.options.coherenceIntervalMs);
      this.timer.unref();
    }
  }

  /** Stops the periodic check and the change listeners. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    for (const u of this.unsubscribe) u();
  }

  /** Drops what a change in this process affects. */
  invalidate(change: LocalCredentialChange): void {
    this.generation++;
    for (const h of change.secretHashes) this.cache.delete(`k${h}`);
    this.cache.delete(`c${change.nativeId}`);
  }

  /** Drops every entry (a change made by another process). */
  clear(): void {
    this.generation++;
    this.cache.clear();
  }

  /** Reads every provider's change stamp; clears the cache when one moved. Errors are logged, never thrown. */
  async checkStamps(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      let moved = false;
      for (const p of this.providers) {
        const stamp = await p.changeStamp();
        if (stamp !== this.stamps.get(p.gatewayName)) moved = true;
        this.stamps.set(p.gatewayName, stamp);
      }
      if (moved) this.clear();
    } catch (err) {
      this.options.logger.warn(
        { err: { message: (err as Error).message } },
        "embedded gateway: cannot read the store's change stamps; cached credentials kept",
      );
    } finally {
      this.polling = false;
    }
  }

  /**
   * The cached answer for the API key with digest `secretHash`, without I/O:
   * a grant, `null` when the key is known not to exist, `undefined` when not cached.
   */
  peekKey(secretHash: string): CredentialGrant | null | undefined {
    return this.unwrap(this.cache.get(`k${secretHash}`));
  }

  /** The API key with digest `secretHash` (from the cache, else the store), or null. */
  async findKey(secretHash: string): Promise<CredentialGrant | null> {
    const cached = this.peekKey(secretHash);
    if (cached !== undefined) return cached;
    return this.load(`k${secretHash}`, async () => {
      for (const p of this.keyProviders) {
        const view = await p.findByKeyDigest(secretHash);
        if (view) return grantOf(view, p);
      }
      return null;
    });
  }

  /** The client with id `clientId` of a CLIENT_CREDENTIALS gateway (cache, else store), or null. */
  async findClient(clientId: string): Promise<CredentialGrant | null> {
    const cached = this.unwrap(this.cache.get(`c${clientId}`));
    if (cached !== undefined) return cached;
    return this.load(`c${clientId}`, async () => {
      for (const p of this.clientProviders) {
        const view = await p.findByNativeId(clientId);
        if (view && view.credentialType === "CLIENT_CREDENTIALS") return grantOf(view, p);
      }
      return null;
    });
  }

  /** Number of cached entries (for tests and metrics). */
  get size(): number {
    return this.cache.size;
  }

  private unwrap(e: Entry | undefined): CredentialGrant | null | undefined {
    return e === undefined ? undefined : e === NOT_FOUND ? null : (e as CredentialGrant);
  }

  private async load(key: string, read: () => Promise<CredentialGrant | null>): Promise<CredentialGrant | null> {
    const generation = this.generation;
    const found = await read();
    if (generation === this.generation) this.cache.set(key, found ?? NOT_FOUND);
    return found;
  }
}
