/**
 * Pure mapping from credhook's view of a credential (app, APIs, usage plans)
 * to a Google API key: keyId, displayName, annotations and
 * `restrictions.apiTargets`. No I/O.
 * Key fields: https://cloud.google.com/api-keys/docs/reference/rest/v2/projects.locations.keys
 */
import { createHash } from "node:crypto";
import { gatewayError } from "@credhook/core/provider-kit";
import { InvalidReference } from "@credhook/core/errors";
import type { AppIdentity, GatewayApi } from "@credhook/core/provider";

/** A Google `keyId`: `[a-z]([a-z0-9-]{0,61}[a-z0-9])?`, unique per project (https://cloud.google.com/api-keys/docs/reference/rest/v2/projects.locations.keys/create). */
export const KEY_ID_PATTERN = /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Allowed `keyIdPrefix`: a lowercase letter, then up to 30 of `[a-z0-9-]`. */
export const KEY_ID_PREFIX_PATTERN = /^[a-z][a-z0-9-]{0,30}$/;

/** Longest displayName Google accepts (characters). */
export const DISPLAY_NAME_MAX = 63;

/** Annotation keys credhook writes on every key it manages. */
export const ANNOTATIONS = {
  /** credhook's credential id (UUID): marks the key as credhook's. */
  credentialId: "credhook.io/credential-id",
  /** Gateway name (YAML key under `gateways:`). */
  gateway: "credhook.io/gateway",
  /** Portal app name. */
  app: "credhook.io/app",
  /** Portal app slug, when sent. */
  appSlug: "credhook.io/app-slug",
  /** Developer who owns the app. */
  developer: "credhook.io/developer",
  /** JSON `{ "<apiId>": ["<planId>", …] }` of the app's APIs and usage plans on this gateway. */
  usagePlans: "credhook.io/usage-plans",
} as const;

/** A target of `restrictions.apiTargets`: a service and, optionally, the methods allowed on it. */
export interface ApiTarget {
  service: string;
  /** Absent: every method of the service. */
  methods?: string[];
}

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** Lowercase base32 of `bytes` (RFC 4648 alphabet, no padding). */
function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/**
 * Deterministic keyId of a credential: `<prefix>` + 26 base32 characters of
 * sha256(credentialId) (130 bits). A retried create therefore lands on the key
 * a failed one left. Matches {@link KEY_ID_PATTERN} and is never UUID-like.
 */
export function keyIdFor(credentialId: string, prefix: string): string {
  return `${prefix}${base32(createHash("sha256").update(credentialId).digest()).slice(0, 26)}`;
}

/** Truncates to `max` characters (code points), ending in `…` when cut. */
function truncate(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join("")}…`;
}

/** Human-readable displayName (≤ 63 characters): `<appName> (<developer>)`, shortened to fit. */
export function displayNameFor(app: AppIdentity): string {
  const name = app.appName.trim() || app.appSlug || "app";
  const full = app.developer ? `${name} (${app.developer})` : name;
  if ([...full].length <= DISPLAY_NAME_MAX) return full;
  // keep the app name readable first; the developer is also in the annotations
  return truncate(name, DISPLAY_NAME_MAX);
}

/** The usage plans of each API, as recorded in the `credhook.io/usage-plans` annotation (sorted, deduplicated). */
export function plansRecord(apis: GatewayApi[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const api of [...apis].sort((a, b) => a.id.localeCompare(b.id))) {
    out[api.id] = [...new Set([...(out[api.id] ?? []), ...api.usagePlans])].sort();
  }
  return out;
}

/** credhook's annotations for a key (merged over the key's other annotations, which are kept). */
export function annotationsFor(
  credentialId: string,
  gateway: string,
  app: AppIdentity,
  apis: GatewayApi[],
): Record<string, string> {
  const a: Record<string, string> = {
    [ANNOTATIONS.gateway]: gateway,
    [ANNOTATIONS.app]: app.appName,
    [ANNOTATIONS.developer]: app.developer,
    [ANNOTATIONS.usagePlans]: JSON.stringify(plansRecord(apis)),
  };
  if (credentialId) a[ANNOTATIONS.credentialId] = credentialId;
  if (app.appSlug) a[ANNOTATIONS.appSlug] = app.appSlug;
  return a;
}

/** How API ids and usage plans map to Google services and methods (the provider's options). */
export interface TargetMapping {
  /** API id → service name. */
  services?: Record<string, string>;
  /** Service name for other API ids; `{apiId}` is replaced. */
  serviceTemplate?: string;
  /** Usage plan id → methods (`[]`: all). When present, an unlisted plan is unknown. */
  usagePlans?: Record<string, string[]>;
  /** The gateway's name, for its errors (`[gateway <name>] …`). */
  gateway: string;
  /** YAML path of the options, e.g. `gateways.gcp.options`, for hints. */
  configPath: string;
}

/** Service name of `apiId`. @throws InvalidReference when neither `services` nor `serviceTemplate` maps it */
export function serviceFor(apiId: string, m: TargetMapping): string {
  const direct = m.services?.[apiId];
  if (direct) return direct;
  if (m.serviceTemplate) return m.serviceTemplate.replaceAll("{apiId}", apiId);
  throw gatewayError(m.gateway, InvalidReference, `API '${apiId}' is not mapped to a Google service`, {
    messages: [`add it to ${m.configPath}.services, or set ${m.configPath}.serviceTemplate`],
  });
}

/**
 * `restrictions.apiTargets` for the app's APIs: one target per service (APIs
 * mapping to one service are merged), sorted by service. An API's methods are
 * the union of its usage plans' methods; it gets every method of its service
 * when it has no usage plan, when a plan maps to `[]`, or when no
 * `usagePlans` map is configured.
 * @throws InvalidReference an API id without a service, or (with a `usagePlans` map) a plan not in it
 */
export function apiTargetsFor(apis: GatewayApi[], m: TargetMapping): ApiTarget[] {
  const byService = new Map<string, Set<string> | "all">();
  for (const api of apis) {
    const service = serviceFor(api.id, m);
    let methods: Set<string> | "all" = "all";
    if (m.usagePlans && api.usagePlans.length > 0) {
      const set = new Set<string>();
      let all = false;
      for (const plan of api.usagePlans) {
        const planMethods = m.usagePlans[plan];
        if (planMethods === undefined) {
          throw gatewayError(m.gateway, InvalidReference, `usage plan '${plan}' of API '${api.id}' does not exist`, {
            messages: [`the usage plans this gateway knows are the keys of ${m.configPath}.usagePlans`],
          });
        }
        if (planMethods.length === 0) all = true; // a plan with [] allows every method: it wins over method lists
        for (const method of planMethods) set.add(method);
      }
      methods = all ? "all" : set;
    }
    const prev = byService.get(service);
    if (prev === "all" || methods === "all") byService.set(service, "all");
    else byService.set(service, new Set([...(prev ?? []), ...methods]));
  }
  return [...byService.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([service, methods]) => (methods === "all" ? { service } : { service, methods: [...methods].sort() }));
}

/** Method name that matches no real method: restricts a key with no API left on this gateway to nothing. */
export const NO_ACCESS_METHOD = "credhook.NoApiOnThisGateway";

/**
 * Targets that allow nothing, for a key whose app has no API left on this
 * gateway: an empty `apiTargets` would make the key unrestricted (valid for
 * every API of the project), so the key keeps one service with a method that
 * does not exist.
 */
export function noAccessTargets(service: string): ApiTarget[] {
  return [{ service, methods: [NO_ACCESS_METHOD] }];
}

/** The key's targets in a canonical, comparable form (sorted services and methods; empty methods = all). */
export function canonicalTargets(
  targets: ReadonlyArray<{ service?: string | null; methods?: string[] | null }> | null | undefined,
): ApiTarget[] {
  return [...(targets ?? [])]
    .map((t) => {
      const methods = [...(t.methods ?? [])].sort();
      return methods.length > 0 ? { service: t.service ?? "", methods } : { service: t.service ?? "" };
    })
    .sort(
      (a, b) =>
        a.service.localeCompare(b.service) ||
        JSON.stringify(a.methods ?? []).localeCompare(JSON.stringify(b.methods ?? [])),
    );
}
