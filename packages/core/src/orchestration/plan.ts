/**
 * Planning: what a create or an update must do on which gateway, and every
 * 422 credhook's multi-gateway rules raise (docs/architecture.md, "Credentials across
 * several gateways") — decided from the routes and the providers'
 * capabilities alone, before any store write or cloud call. No I/O.
 */
import type { CreateCredentialsRequest, CredentialType, UpdateCredentialsRequest } from "../contract.js";
import { PolicyViolation } from "../errors.js";
import type { AppIdentity, GatewayApi, ProviderUpdateInput } from "../provider.js";
import type { CredentialRecord, GatewayApiWithGateway } from "../credential-record.js";
import { appKeyOf, applyChanges, groupByGateway, heldByGateway, uniq } from "./api-sets.js";
import { assertNotRetired, type GatewayTopology } from "./context.js";

/** What a create must do: see {@link planCreate}. */
export interface CreatePlan {
  app: AppIdentity;
  /** The app's store identity ({@link appKeyOf}). */
  appKey: string;
  /** The request's APIs, duplicates merged, each with its gateway. */
  apis: GatewayApiWithGateway[];
  credentialType: CredentialType;
  /** Each gateway's slice of the APIs, gateways in first-seen order (the first is the primary: its native id is the public id). */
  groups: Map<string, GatewayApi[]>;
  /** The one gateway that generates its own API key value (created first; its value is imported elsewhere), if any. */
  generator?: string;
}

/** Routes a create request's APIs (duplicate ids merged, plan ids merged in order). @throws Unroutable (422) unrouted ids */
export function routeApis(topology: GatewayTopology, apis: CreateCredentialsRequest["apis"]): GatewayApiWithGateway[] {
  const routes = topology.resolveAll(uniq(apis.map((a) => a.id)));
  const byId = new Map<string, GatewayApiWithGateway>();
  for (const a of apis) {
    const entry = byId.get(a.id) ?? { id: a.id, gateway: routes.get(a.id)!, usagePlans: [] };
    for (const p of a.usagePlans ?? []) if (!entry.usagePlans.includes(p.id)) entry.usagePlans.push(p.id);
    byId.set(a.id, entry);
  }
  return [...byId.values()];
}

/** The single credential type of the gateways `apis` route to. @throws PolicyViolation (422) when they differ */
export function credentialTypeOf(topology: GatewayTopology, apis: GatewayApiWithGateway[]): CredentialType {
  const types = new Map<CredentialType, string[]>();
  for (const a of apis) {
    const t = topology.describe(a.gateway).credentialType;
    types.set(t, [...(types.get(t) ?? []), `'${a.id}' (gateway ${a.gateway})`]);
  }
  if (types.size > 1) {
    throw new PolicyViolation("the app's APIs need different credential types", {
      messages: [...types.entries()].map(([t, ids]) => `${t}: ${ids.join(", ")}`),
    });
  }
  return [...types.keys()][0]!;
}

/**
 * Checks that every value the generating gateway may produce can be imported
 * on each of `importers` (each character, at the generated length, against
 * each importer's value pattern).
 * @throws PolicyViolation (422) naming the gateways and the characters that do not fit
 */
export function checkImportable(topology: GatewayTopology, generator: string, importers: string[]): void {
  const format = topology.describe(generator).capabilities.generatedApiKeyFormat;
  if (!format) return;
  for (const g of importers) {
    const pattern = topology.describe(g).capabilities.apiKeyValuePattern;
    if (!pattern) continue;
    const re = new RegExp(pattern);
    const misfits = [...new Set(format.characters)].filter((c) => !re.test(c.repeat(format.length)));
    if (misfits.length > 0) {
      throw new PolicyViolation(
        `gateway '${g}' cannot import the API key values gateway '${generator}' generates: they may contain ${misfits.map((c) => `'${c}'`).join(", ")}, which '${g}' does not accept (${pattern})`,
        {
          messages: [
            `route the app's APIs on '${generator}' and '${g}' to gateways that can share one key, or split them across two apps`,
          ],
        },
      );
    }
  }
}

/**
 * Plans a create: routes the APIs, decides the credential type and which
 * gateway (if any) generates the key value.
 * @throws Unroutable (422) unrouted API ids
 * @throws PolicyViolation (422) mixed credential types, client credentials on several gateways, two gateways that generate their own key values, a generated value another gateway cannot import
 */
export function planCreate(topology: GatewayTopology, req: CreateCredentialsRequest): CreatePlan {
  const app: AppIdentity = {
    appName: req.appName,
    developer: req.developer,
    ...(req.appSlug ? { appSlug: req.appSlug } : {}),
  };
  const apis = routeApis(topology, req.apis);
  const credentialType = credentialTypeOf(topology, apis);
  const groups = groupByGateway(apis);
  const gatewayNames = [...groups.keys()];
  if (credentialType === "CLIENT_CREDENTIALS" && gatewayNames.length > 1) {
    throw new PolicyViolation(
      `client credentials are issued by one gateway per app, but the app's APIs route to ${gatewayNames.join(", ")}`,
      {
        messages: ["route all APIs of a CLIENT_CREDENTIALS app to one gateway"],
      },
    );
  }
  const generators = gatewayNames.filter(
    (g) => credentialType === "API_KEY" && !topology.describe(g).capabilities.importsApiKeyValue,
  );
  if (generators.length > 1) {
    throw new PolicyViolation(
      `gateways ${generators.map((g) => `'${g}'`).join(" and ")} both generate their own API key values, so one key cannot serve the app's APIs on both`,
      {
        messages: [
          "route the app's APIs so that at most one of its gateways is a key-generating one (Google Cloud API Keys)",
        ],
      },
    );
  }
  if (generators.length === 1)
    checkImportable(
      topology,
      generators[0]!,
      gatewayNames.filter((g) => g !== generators[0]),
    );
  return {
    app,
    appKey: appKeyOf(app),
    apis,
    credentialType,
    groups,
    ...(generators[0] ? { generator: generators[0] } : {}),
  };
}

/** What an update must do: see {@link planUpdate}. */
export interface UpdatePlan {
  /** The app's API set after the update. */
  desiredApis: GatewayApiWithGateway[];
  previousGroups: Map<string, GatewayApi[]>;
  desiredGroups: Map<string, GatewayApi[]>;
  /** Gateways the credential is on after the update (an app left with no API keeps its first gateway). */
  desiredGateways: string[];
  /** Gateways newly reached: the credential is created there (its key value imported). */
  toCreate: string[];
  /** Gateways that lost their last API: the credential is revoked there, last. */
  toRemove: string[];
  /** Gateways kept: updated with their slice of the changes. */
  toUpdate: string[];
  /** The app after a rename (slug kept once set). */
  newApp: AppIdentity;
  renamed: boolean;
  /** The request's changes that concern one gateway. */
  changesFor(gateway: string): ProviderUpdateInput["changes"];
  /** Each gateway's dual-homed API ids after the update (`GatewayBinding.dualHomed`); a gateway not here has none. */
  dualHomed: Map<string, string[]>;
}

/**
 * The dual-homed API ids of each of `rec`'s bindings that are still in `apis` on another gateway (a dual-homed API the
 * app no longer has, or that is routed back to that gateway, is no longer dual-homed there).
 */
export function dualHomedAfter(rec: CredentialRecord, apis: GatewayApiWithGateway[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const b of rec.bindings) {
    const ids = (b.dualHomed?.apiIds ?? []).filter((id) => apis.some((a) => a.id === id && a.gateway !== b.gateway));
    if (ids.length > 0) out.set(b.gateway, ids);
  }
  return out;
}

/**
 * Plans an update of a known credential: the API set after the request's
 * changes, the gateways to create on, update and remove from.
 * @throws Unroutable (422) added API ids that match no route
 * @throws PolicyViolation (422) added APIs of another credential type; client credentials reaching a second gateway; a newly reached gateway that generates its own key values or is retired
 */
export function planUpdate(
  topology: GatewayTopology,
  rec: CredentialRecord,
  req: UpdateCredentialsRequest,
): UpdatePlan {
  const newIds = req.apis
    .filter((c) => c.action !== "REMOVED" && !rec.apis.some((a) => a.id === c.id))
    .map((c) => c.id);
  const routes = topology.resolveAll(uniq(newIds));
  const desiredApis = applyChanges(rec.apis, req.apis, (id) => routes.get(id)!);
  if (desiredApis.length > 0) {
    const t = credentialTypeOf(topology, desiredApis);
    if (t !== rec.credentialType) {
      throw new PolicyViolation(
        `the added APIs route to gateways that issue ${t}, but the credential is ${rec.credentialType}`,
      );
    }
  }
  // A dual-homed binding grants its moved APIs too: they follow the app's API set (see heldByGateway).
  const previousGroups = heldByGateway(rec.apis, rec.bindings);
  const desiredGroups = heldByGateway(desiredApis, rec.bindings);
  const bound = rec.bindings.map((b) => b.gateway);
  let desiredGateways = [...desiredGroups.keys()];
  // An app with no API left keeps its credential on its first gateway, with no APIs.
  if (desiredGateways.length === 0 && bound.length > 0) {
    desiredGateways = [bound[0]!];
    desiredGroups.set(bound[0]!, []);
  }
  const toCreate = desiredGateways.filter((g) => !bound.includes(g));
  const toRemove = bound.filter((g) => !desiredGateways.includes(g));
  const toUpdate = bound.filter((g) => desiredGateways.includes(g));
  const newApp: AppIdentity = {
    appName: req.appName ?? rec.app.appName,
    developer: req.developer ?? rec.app.developer,
    ...(rec.app.appSlug ? { appSlug: rec.app.appSlug } : req.appSlug ? { appSlug: req.appSlug } : {}),
  };
  if (toCreate.length > 0) {
    assertNotRetired(topology, toCreate);
    if (rec.credentialType === "CLIENT_CREDENTIALS") {
      throw new PolicyViolation(
        `client credentials are issued by one gateway per app; the added APIs route to ${toCreate.join(", ")}`,
      );
    }
    const generating = toCreate.filter((g) => !topology.describe(g).capabilities.importsApiKeyValue);
    if (generating.length > 0) {
      throw new PolicyViolation(
        `gateway ${generating.map((g) => `'${g}'`).join(", ")} generates its own API key values, so the app's existing key cannot be imported there`,
        { messages: ["revoke the credential and create it again to get one key for all the app's APIs"] },
      );
    }
  }
  const changesFor = (gateway: string): ProviderUpdateInput["changes"] =>
    req.apis
      .filter(
        (c) =>
          (desiredApis.find((a) => a.id === c.id)?.gateway ?? rec.apis.find((a) => a.id === c.id)?.gateway) ===
            gateway || rec.bindings.some((b) => b.gateway === gateway && b.dualHomed?.apiIds.includes(c.id)),
      )
      .map((c) => ({
        id: c.id,
        action: c.action,
        usagePlans: (c.usagePlans ?? []).map((p) => ({ id: p.id, action: p.action })),
      }));
  return {
    desiredApis,
    previousGroups,
    desiredGroups,
    desiredGateways,
    toCreate,
    toRemove,
    toUpdate,
    newApp,
    renamed: newApp.appName !== rec.app.appName,
    changesFor,
    dualHomed: dualHomedAfter(rec, desiredApis),
  };
}

/**
 * Checks that the credential's existing key value can be imported on each
 * newly reached gateway (against its value pattern).
 * @throws PolicyViolation (422) naming the first gateway that cannot import it
 */
export function checkValueImportable(topology: GatewayTopology, gateways: string[], apiKey: string): void {
  for (const g of gateways) {
    const pattern = topology.describe(g).capabilities.apiKeyValuePattern;
    if (pattern && !new RegExp(pattern).test(apiKey)) {
      throw new PolicyViolation(
        `gateway '${g}' cannot import the credential's existing API key value (it does not match ${pattern})`,
        {
          messages: ["revoke the credential and create it again to get one key for all the app's APIs"],
        },
      );
    }
  }
}
