/**
 * Pure functions over API sets: an app's identity key, grouping by gateway,
 * applying a request's ADDED / REMOVED / NONE changes, and the changes between
 * two sets (for rollbacks, repairs and replayed creates). No I/O.
 */
import type { ApiChange } from "../contract.js";
import type { AppIdentity, GatewayApi, ProviderUpdateInput } from "../provider.js";
import type { GatewayApiWithGateway, GatewayBinding } from "../credential-record.js";

/**
 * Identity of an app in the store: `slug:<developer>/<appSlug>` when the portal sends a slug, else
 * `app:<developer>/<appName>`. In each value `%` is written `%25` and `/` is written `%2F`, so the
 * one bare `/` separates the two values and no two (developer, value) pairs share a key; the
 * developer is part of both forms, so a replayed create only ever matches the same developer's app.
 * (Keys of stores written before this encoding are rewritten by the store's migration.)
 */
export function appKeyOf(app: AppIdentity): string {
  const esc = (v: string) => v.replace(/%/g, "%25").replace(/\//g, "%2F");
  return `${app.appSlug ? "slug" : "app"}:${esc(app.developer)}/${esc(app.appSlug || app.appName)}`;
}

/** Groups APIs by gateway, keeping first-seen order of gateways and APIs. */
export function groupByGateway(apis: GatewayApiWithGateway[]): Map<string, GatewayApi[]> {
  const out = new Map<string, GatewayApi[]>();
  for (const a of apis) {
    const list = out.get(a.gateway) ?? [];
    list.push({ id: a.id, usagePlans: [...a.usagePlans] });
    out.set(a.gateway, list);
  }
  return out;
}

/**
 * The APIs each gateway grants: {@link groupByGateway} of `apis`, plus on each binding with a dual-homed mark
 * ({@link GatewayBinding.dualHomed}) its dual-homed APIs that are still in `apis`, with the usage plans `apis` gives
 * them (a dual-homed API follows the app's API set: one `apis` no longer has is granted nowhere).
 */
export function heldByGateway(
  apis: GatewayApiWithGateway[],
  bindings: readonly Pick<GatewayBinding, "gateway" | "dualHomed">[],
): Map<string, GatewayApi[]> {
  const out = groupByGateway(apis);
  for (const b of bindings) {
    for (const id of b.dualHomed?.apiIds ?? []) {
      const api = apis.find((a) => a.id === id);
      if (!api || api.gateway === b.gateway) continue;
      const list = out.get(b.gateway) ?? [];
      if (!list.some((a) => a.id === id)) list.push({ id, usagePlans: [...api.usagePlans] });
      out.set(b.gateway, list);
    }
  }
  return out;
}

/** The distinct elements of `xs`, in first-seen order. */
export const uniq = <T>(xs: T[]): T[] => [...new Set(xs)];

/**
 * The app's API set after an update: REMOVED drops an API; ADDED adds it (or
 * merges its plans); NONE keeps it. Within an API, a plan marked REMOVED is
 * dropped and any other plan is kept or added. APIs the request does not
 * mention are kept. New APIs get their gateway from `route`.
 */
export function applyChanges(
  current: GatewayApiWithGateway[],
  changes: ApiChange[],
  route: (apiId: string) => string,
): GatewayApiWithGateway[] {
  const out = current.map((a) => ({ ...a, usagePlans: [...a.usagePlans] }));
  for (const c of changes) {
    const idx = out.findIndex((a) => a.id === c.id);
    if (c.action === "REMOVED") {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    const api = idx >= 0 ? out[idx]! : { id: c.id, gateway: route(c.id), usagePlans: [] as string[] };
    for (const p of c.usagePlans ?? []) {
      if (p.action === "REMOVED") api.usagePlans = api.usagePlans.filter((x) => x !== p.id);
      else if (!api.usagePlans.includes(p.id)) api.usagePlans.push(p.id);
    }
    if (idx < 0) out.push(api);
  }
  return out;
}

/** The changes that take a gateway's API set from `from` to `to` (for rollbacks and repairs). */
export function changesBetween(from: GatewayApi[], to: GatewayApi[]): ProviderUpdateInput["changes"] {
  const ids = uniq([...to.map((a) => a.id), ...from.map((a) => a.id)]);
  return ids.map((id) => {
    const want = to.find((a) => a.id === id);
    const had = from.find((a) => a.id === id);
    const plans = uniq([...(want?.usagePlans ?? []), ...(had?.usagePlans ?? [])]);
    return {
      id,
      action: want && had ? "NONE" : want ? "ADDED" : "REMOVED",
      usagePlans: plans.map((p) => ({
        id: p,
        action:
          want?.usagePlans.includes(p) && had?.usagePlans.includes(p)
            ? "NONE"
            : want?.usagePlans.includes(p)
              ? "ADDED"
              : "REMOVED",
      })),
    };
  });
}

/**
 * The contract changes that take an app's API set from `from` to `to` (a
 * replayed create with another API set): per API id NONE / ADDED / REMOVED,
 * and per usage plan likewise; empty when the sets are equal.
 */
export function changesForReplay(from: GatewayApiWithGateway[], to: GatewayApiWithGateway[]): ApiChange[] {
  const changes = changesBetween(from, to);
  const same = changes.every((c) => c.action === "NONE" && c.usagePlans.every((p) => p.action === "NONE"));
  return same ? [] : changes;
}
