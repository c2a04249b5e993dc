/**
 * What tells this gateway's subscriptions from everybody else's on a shared
 * API Management service, besides the id format of `naming.ts`:
 *
 * - the gateways of this process that use the same service, each with its
 *   subscription-id prefix — two gateways with one prefix on one service would
 *   own each other's subscriptions, so that is a configuration error;
 * - adoption records: subscriptions made outside credhook that `credhook adopt`
 *   brought under a gateway. APIM cannot rename a subscription nor tag it, so the
 *   mark is a record in the gateway's provider state (core's store).
 */
import { ConfigError } from "@credhook/core/errors";
import type { JsonValue, ProviderStateStore } from "@credhook/core/provider";
import { credentialIdOfNativeId, parseSubscriptionId } from "./naming.js";

/** The gateways of this process on each APIM service: service key → gateway → its prefix and how many providers hold it. */
const services = new Map<string, Map<string, { prefix: string; holders: number }>>();

/** The key of one APIM service: endpoint, Azure subscription, resource group and service name, lower-cased (ARM ids are case-insensitive). */
export function serviceKeyOf(
  endpoint: string,
  subscriptionId: string,
  resourceGroup: string,
  serviceName: string,
): string {
  return [new URL(endpoint).origin, subscriptionId, resourceGroup, serviceName].join("|").toLowerCase();
}

/**
 * Registers `gateway`'s prefix on the service; returns the release function
 * (call it once, when the provider closes). The same gateway may register
 * several times (a restart in one process).
 * @throws ConfigError another gateway of this process uses the same prefix on the same service (compared case-insensitively: APIM ids are)
 */
export function claimPrefix(serviceKey: string, gateway: string, prefix: string, configPath: string): () => void {
  const gateways = services.get(serviceKey) ?? new Map<string, { prefix: string; holders: number }>();
  for (const [other, claim] of gateways) {
    if (other !== gateway && claim.prefix.toLowerCase() === prefix.toLowerCase()) {
      throw new ConfigError([
        `[provider-azure] ${configPath}.subscriptionIdPrefix: gateway '${other}' already uses the prefix '${claim.prefix}' on the same API Management service; ` +
          `each gateway on a service needs its own prefix, or each would own the other's subscriptions`,
      ]);
    }
  }
  const own = gateways.get(gateway);
  gateways.set(gateway, { prefix, holders: own && own.prefix === prefix ? own.holders + 1 : 1 });
  services.set(serviceKey, gateways);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const claim = services.get(serviceKey)?.get(gateway);
    if (!claim || claim.prefix !== prefix) return;
    claim.holders -= 1;
    if (claim.holders <= 0) services.get(serviceKey)!.delete(gateway);
    if (services.get(serviceKey)!.size === 0) services.delete(serviceKey);
  };
}

/** The other gateway of this process (on the same service) whose mark `id` carries — a native or a subscription id — if any. */
export function otherGatewayOwning(serviceKey: string, gateway: string, id: string): string | undefined {
  for (const [other, claim] of services.get(serviceKey) ?? []) {
    if (other === gateway) continue;
    if (credentialIdOfNativeId(claim.prefix, id) || parseSubscriptionId(claim.prefix, id)) return other;
  }
  return undefined;
}

// ------------------------------------------------------------------ adoption records

/** What `credhook adopt` recorded for one adopted credential (no secret). */
export interface AdoptionRecord {
  /** The native id the portal holds (the adopted subscription's id). */
  nativeId: string;
  /** credhook's credential id the subscription was adopted for. */
  credentialId: string;
  /** The adopted subscription ids. */
  sids: string[];
  /** When it was adopted (ISO 8601). */
  adoptedAt: string;
}

const ADOPTION_PREFIX = "adopted:";

/** State key of the adoption record of `nativeId` (ids are case-insensitive). */
function adoptionKey(nativeId: string): string {
  return `${ADOPTION_PREFIX}${nativeId.toLowerCase()}`;
}

function parseRecord(value: JsonValue | undefined): AdoptionRecord | undefined {
  const o = value as
    | { nativeId?: unknown; credentialId?: unknown; sids?: unknown; adoptedAt?: unknown }
    | null
    | undefined;
  if (
    !o ||
    typeof o !== "object" ||
    typeof o.nativeId !== "string" ||
    typeof o.credentialId !== "string" ||
    !Array.isArray(o.sids)
  )
    return undefined;
  return {
    nativeId: o.nativeId,
    credentialId: o.credentialId,
    sids: o.sids.filter((s): s is string => typeof s === "string"),
    adoptedAt: typeof o.adoptedAt === "string" ? o.adoptedAt : "",
  };
}

/** The adoption records of one gateway, kept in its provider state. */
export class Adoptions {
  constructor(private readonly state: ProviderStateStore) {}

  /** The record of `nativeId`, if it was adopted. */
  async get(nativeId: string): Promise<AdoptionRecord | undefined> {
    return parseRecord(await this.state.get(adoptionKey(nativeId)));
  }

  /** Stores (replaces) a record. */
  async put(record: AdoptionRecord): Promise<void> {
    await this.state.put(adoptionKey(record.nativeId), { ...record, sids: [...record.sids] });
  }

  /** Forgets the record of `nativeId` (after everything it names was deleted). */
  async delete(nativeId: string): Promise<void> {
    await this.state.delete(adoptionKey(nativeId));
  }

  /** Every record. */
  async list(): Promise<AdoptionRecord[]> {
    return (await this.state.list(ADOPTION_PREFIX)).flatMap((e) => {
      const r = parseRecord(e.value);
      return r ? [r] : [];
    });
  }
}
