/**
 * The orchestration of one portal request across gateways (design.md, "One
 * request, end to end" and "Credentials across several gateways"):
 *
 * route each API id to its gateway, decide the credential type, record intent
 * in the store, call each gateway's provider in parallel with only its slice,
 * compensate (roll back) what succeeded when any gateway fails, and record
 * what each gateway holds.
 */
import { randomUUID } from "node:crypto";
import type {
  ApiChange,
  CreateCredentialsRequest,
  CreateCredentialsResponse,
  CredentialType,
  RevokeCredentialsRequest,
  UpdateCredentialsRequest,
} from "./contract.js";
import { CredhookError, isCredhookError, NotFound, Unroutable, UpstreamError, UpstreamUnavailable } from "./errors.js";
import { KeyedLock } from "./keyed-lock.js";
import { silentLogger, type Logger } from "./logger.js";
import type { AppIdentity, GatewayApi, OwnedResource, ProviderCredentialRef, ProviderUpdateInput } from "./provider.js";
import type { Gateway } from "./registry.js";
import type { Router } from "./routing.js";
import { generateApiKeyValue } from "./secrets.js";
import type { CredentialRecord, CredentialStore, GatewayApiWithGateway, GatewayBinding } from "./store.js";

/** Options of {@link Orchestrator}. */
export interface OrchestratorOptions {
  /** Gateways by name, from {@link loadGateways}. */
  gateways: Map<string, Gateway>;
  router: Router;
  store: CredentialStore;
  logger?: Logger;
  /** API key value generator. @default generateApiKeyValue (40 base62 characters) */
  generateApiKey?: () => string;
}

/** What an operation did, for the request log (never a secret). */
export interface OperationOutcome {
  /** Gateways the operation touched, in order. */
  gateways: string[];
  /** credhook's credential id, when known. */
  credentialId?: string;
}

/** Options of {@link Orchestrator.reconcile}. */
export interface ReconcileOptions {
  /** Report only; change nothing. @default false */
  dryRun?: boolean;
  /** Only records last written longer ago than this, ms. @default 60000 */
  olderThanMs?: number;
}

/** What reconcile did (or would do) with one unfinished credential. */
export interface ReconcileEntry {
  credentialId: string;
  appKey: string;
  /** The interrupted operation. */
  op: "create" | "update" | "revoke";
  /** What was done, in words. */
  action: string;
  gateways: string[];
  /** Per-gateway failures; the record stays for the next run. */
  errors: string[];
}

/** Result of {@link Orchestrator.reconcile}. */
export interface ReconcileReport {
  dryRun: boolean;
  unfinished: ReconcileEntry[];
  /** Resources tagged as credhook's that no credential record owns (drift); never deleted automatically. */
  orphans: Array<OwnedResource & { gateway: string }>;
  /** Gateways whose provider cannot list its resources (or failed to). */
  unlistable: string[];
}

/** Result of {@link Orchestrator.create}. */
export interface CreateOutcome extends OperationOutcome {
  response: CreateCredentialsResponse;
  /** True when an existing live credential was returned (replayed create). */
  replayed: boolean;
}

type ChangeSlice = ProviderUpdateInput["changes"];

/** Identity of an app in the store: its slug when the portal sends one, else developer + name. */
export function appKeyOf(app: AppIdentity): string {
  return app.appSlug ? `slug:${app.appSlug}` : `app:${app.developer}/${app.appName}`;
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

const uniq = <T>(xs: T[]) => [...new Set(xs)];

/**
 * The app's API set after an update: REMOVED drops an API; ADDED adds it (or
 * merges its plans); NONE keeps it. Within an API, a plan marked REMOVED is
 * dropped and any other plan is kept or added. APIs the request does not
 * mention are kept. New APIs get their gateway from `route`.
 */
export function applyChanges(current: GatewayApiWithGateway[], changes: ApiChange[], route: (apiId: string) => string): GatewayApiWithGateway[] {
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
        action: want?.usagePlans.includes(p) && had?.usagePlans.includes(p) ? "NONE" : want?.usagePlans.includes(p) ? "ADDED" : "REMOVED",
      })),
    };
  });
}


/**
 * Runs create / update / revoke / health for the server. One instance per process.
 * Requests for the same app are serialised; different apps run in parallel.
 */
export class Orchestrator {
  private readonly gateways: Map<string, Gateway>;
  private readonly router: Router;
  private readonly store: CredentialStore;
  private readonly logger: Logger;
  private readonly generateApiKey: () => string;
  private readonly lock = new KeyedLock();

  constructor(options: OrchestratorOptions) {
    this.gateways = options.gateways;
    this.router = options.router;
    this.store = options.store;
    this.logger = options.logger ?? silentLogger;
    this.generateApiKey = options.generateApiKey ?? generateApiKeyValue;
  }

  private gateway(name: string): Gateway {
    const gw = this.gateways.get(name);
    if (!gw) throw new Unroutable(`gateway '${name}' is not configured (it is named by a route or by the stored credential)`);
    return gw;
  }

  /** Wraps anything a provider threw into a typed error tagged with the gateway. */
  private asTyped(err: unknown, gateway: string): CredhookError {
    if (isCredhookError(err)) {
      err.gateway ??= gateway;
      return err;
    }
    this.logger.error({ gateway, err }, "provider threw an untyped error");
    return new UpstreamError(`gateway '${gateway}' failed unexpectedly`, { cause: err, gateway });
  }

  /** The single credential type of a set of gateways. @throws Unroutable (422) when they differ */
  private credentialTypeOf(apis: GatewayApiWithGateway[]): CredentialType {
    const types = new Map<CredentialType, string[]>();
    for (const a of apis) {
      const t = this.gateway(a.gateway).credentialType;
      types.set(t, [...(types.get(t) ?? []), `'${a.id}' (gateway ${a.gateway})`]);
    }
    if (types.size > 1) {
      throw new Unroutable("the app's APIs need different credential types", {
        messages: [...types.entries()].map(([t, ids]) => `${t}: ${ids.join(", ")}`),
      });
    }
    return [...types.keys()][0]!;
  }

  /**
   * Checks that every value the generating gateway may produce can be imported
   * on each of `importers` (each character, at the generated length, against
   * each importer's value pattern).
   * @throws Unroutable (422) naming the gateways and the characters that do not fit
   */
  private checkImportable(generator: string, importers: string[]): void {
    const format = this.gateway(generator).provider.capabilities.generatedApiKeyFormat;
    if (!format) return;
    for (const g of importers) {
      const pattern = this.gateway(g).provider.capabilities.apiKeyValuePattern;
      if (!pattern) continue;
      const re = new RegExp(pattern);
      const misfits = [...new Set(format.characters)].filter((c) => !re.test(c.repeat(format.length)));
      if (misfits.length > 0) {
        throw new Unroutable(
          `gateway '${g}' cannot import the API key values gateway '${generator}' generates: they may contain ${misfits.map((c) => `'${c}'`).join(", ")}, which '${g}' does not accept (${pattern})`,
          { messages: [`route the app's APIs on '${generator}' and '${g}' to gateways that can share one key, or split them across two apps`] },
        );
      }
    }
  }

  /** Routes the create request's APIs (duplicates merged). */
  private routeCreate(req: CreateCredentialsRequest): GatewayApiWithGateway[] {
    const routes = this.router.resolveAll(uniq(req.apis.map((a) => a.id)));
    const byId = new Map<string, GatewayApiWithGateway>();
    for (const a of req.apis) {
      const entry = byId.get(a.id) ?? { id: a.id, gateway: routes.get(a.id)!, usagePlans: [] };
      for (const p of a.usagePlans ?? []) if (!entry.usagePlans.includes(p.id)) entry.usagePlans.push(p.id);
      byId.set(a.id, entry);
    }
    return [...byId.values()];
  }

  private ref(rec: CredentialRecord, b: GatewayBinding): ProviderCredentialRef {
    return { credentialId: rec.id, credentialType: rec.credentialType, nativeId: b.nativeId, resources: b.resources, app: rec.app };
  }

  // ------------------------------------------------------------------ create

  /**
   * Creates the app's credential on every gateway its APIs route to, or returns
   * the live one of a replayed create.
   * @throws Unroutable (422) unrouted API ids, mixed credential types, two gateways that generate their own key values, client credentials on several gateways
   * @throws InvalidReference (422) | Throttled (503) | UpstreamError (502) | UpstreamTimeout (504) from a gateway, after rolling back the others
   */
  async create(req: CreateCredentialsRequest): Promise<CreateOutcome> {
    const app: AppIdentity = { appName: req.appName, developer: req.developer, ...(req.appSlug ? { appSlug: req.appSlug } : {}) };
    const apis = this.routeCreate(req);
    const credentialType = this.credentialTypeOf(apis);
    const groups = groupByGateway(apis);
    const gatewayNames = [...groups.keys()];
    if (credentialType === "CLIENT_CREDENTIALS" && gatewayNames.length > 1) {
      throw new Unroutable(`client credentials are issued by one gateway per app, but the app's APIs route to ${gatewayNames.join(", ")}`, {
        messages: ["route all APIs of a CLIENT_CREDENTIALS app to one gateway"],
      });
    }
    const generators = gatewayNames.filter((g) => credentialType === "API_KEY" && !this.gateway(g).provider.capabilities.importsApiKeyValue);
    if (generators.length > 1) {
      throw new Unroutable(
        `gateways ${generators.map((g) => `'${g}'`).join(" and ")} both generate their own API key values, so one key cannot serve the app's APIs on both`,
        { messages: ["route the app's APIs so that at most one of its gateways is a key-generating one (Google Cloud API Keys)"] },
      );
    }
    if (generators.length === 1) this.checkImportable(generators[0]!, gatewayNames.filter((g) => g !== generators[0]));
    const appKey = appKeyOf(app);
    return this.lock.run(appKey, async () => {
      let existing = await this.store.findByAppKey(appKey, credentialType);
      if (existing && existing.status !== "active") {
        // Left unfinished by a crash (requests of this app in this process hold the lock): finish it first.
        existing = await this.finishBeforeUse(existing);
      }
      if (existing) return this.replay(existing);
      return this.createFresh(app, appKey, credentialType, apis, groups, generators[0], req.customCredentials);
    });
  }

  private async createFresh(
    app: AppIdentity,
    appKey: string,
    credentialType: CredentialType,
    apis: GatewayApiWithGateway[],
    groups: Map<string, GatewayApi[]>,
    generator: string | undefined,
    customCredentials: Record<string, unknown> | undefined,
  ): Promise<CreateOutcome> {
    const now = new Date().toISOString();
    const gatewayNames = [...groups.keys()];
    const rec: CredentialRecord = {
      id: randomUUID(),
      credentialType,
      appKey,
      app,
      publicId: "",
      status: "pending",
      apis,
      bindings: [],
      pending: { op: "create", startedAt: now, createOn: gatewayNames, removeFrom: [], previousApis: [], desiredApis: apis },
      createdAt: now,
      updatedAt: now,
    };
    await this.store.insert(rec); // intent, before any cloud call
    const saver = this.serialSaver(rec);
    let apiKey: string | undefined;
    let clientSecret: string | undefined;
    const extras: Record<string, string> = {};
    const createOn = async (gateway: string, value: string | undefined) => {
      const gw = this.gateway(gateway);
      try {
        const cred = await gw.provider.create({
          credentialId: rec.id,
          credentialType,
          app,
          apis: groups.get(gateway)!,
          ...(value !== undefined ? { apiKeyValue: value } : {}),
          ...(customCredentials ? { customCredentials } : {}),
        });
        rec.bindings.push({ gateway, nativeId: cred.nativeId, resources: cred.resources });
        await saver();
        for (const [k, v] of Object.entries(cred.customCredentials ?? {})) extras[k] ??= v;
        return cred;
      } catch (err) {
        throw this.asTyped(err, gateway);
      }
    };

    const failures: CredhookError[] = [];
    if (generator) {
      // The gateway that generates its own key value goes first; its value is imported elsewhere.
      try {
        apiKey = (await createOn(generator, undefined)).apiKey;
      } catch (err) {
        failures.push(err as CredhookError);
      }
    } else if (credentialType === "API_KEY") {
      apiKey = this.generateApiKey();
    }
    if (failures.length === 0) {
      const rest = gatewayNames.filter((g) => g !== generator);
      const results = await Promise.allSettled(rest.map((g) => createOn(g, credentialType === "API_KEY" ? apiKey : undefined)));
      results.forEach((r) => {
        if (r.status === "rejected") failures.push(r.reason as CredhookError);
        else if (credentialType === "CLIENT_CREDENTIALS") clientSecret = r.value.clientSecret;
        else if (r.value.apiKey !== undefined && r.value.apiKey !== apiKey) {
          failures.push(new UpstreamError(`gateway returned a different API key value than the one imported`));
        }
      });
    }
    if (failures.length > 0) {
      await this.compensateCreate(rec);
      throw this.firstByGatewayOrder(failures, gatewayNames);
    }
    const primary = rec.bindings.find((b) => b.gateway === gatewayNames[0])!;
    rec.publicId = primary.nativeId;
    rec.status = "active";
    delete rec.pending;
    if (Object.keys(extras).length > 0) rec.customCredentials = extras;
    await saver();
    this.logger.info({ credentialId: rec.id, gateways: gatewayNames }, "credential created");
    return { response: this.response(rec, apiKey, clientSecret), replayed: false, gateways: gatewayNames, credentialId: rec.id };
  }

  /** Saves `rec` one write at a time, in call order (parallel gateway completions write the same record). */
  private serialSaver(rec: CredentialRecord): () => Promise<void> {
    let chain: Promise<void> = Promise.resolve();
    return () => {
      const next = chain.then(() => {
        rec.updatedAt = new Date().toISOString();
        return this.store.save(structuredClone(rec));
      });
      chain = next.catch(() => undefined);
      return next;
    };
  }

  private firstByGatewayOrder(failures: CredhookError[], order: string[]): CredhookError {
    return [...failures].sort((a, b) => order.indexOf(a.gateway ?? "") - order.indexOf(b.gateway ?? ""))[0]!;
  }

  private response(rec: CredentialRecord, apiKey?: string, clientSecret?: string): CreateCredentialsResponse {
    const out: CreateCredentialsResponse =
      rec.credentialType === "API_KEY"
        ? { credentialType: "API_KEY", apiKeyId: rec.publicId, apiKey: apiKey! }
        : { credentialType: "CLIENT_CREDENTIALS", clientId: rec.publicId, clientSecret: clientSecret! };
    if (rec.customCredentials) out.customCredentials = { ...rec.customCredentials };
    return out;
  }

  /** Revokes every binding of a failed create; deletes the record when all are gone, else leaves it for reconcile. */
  private async compensateCreate(rec: CredentialRecord): Promise<void> {
    const left = await this.revokeBindings(rec);
    if (left.length === 0) {
      await this.store.delete(rec.id);
      return;
    }
    rec.bindings = left.map((l) => l.binding);
    rec.updatedAt = new Date().toISOString();
    await this.store.save(rec);
    this.logger.error(
      { credentialId: rec.id, gateways: left.map((l) => l.binding.gateway), errors: left.map((l) => l.error.message) },
      "compensation failed: credential left pending for `credhook reconcile`",
    );
  }

  /** Revokes every binding in parallel; returns the ones that failed, with their errors. */
  private async revokeBindings(rec: CredentialRecord): Promise<Array<{ binding: GatewayBinding; error: CredhookError }>> {
    const results = await Promise.allSettled(
      rec.bindings.map(async (b) => {
        try {
          await this.gateway(b.gateway).provider.revoke(this.ref(rec, b));
        } catch (err) {
          throw this.asTyped(err, b.gateway);
        }
      }),
    );
    return results.flatMap((r, i) => (r.status === "rejected" ? [{ binding: rec.bindings[i]!, error: r.reason as CredhookError }] : []));
  }

  /**
   * Finishes a record a crash (or a failed compensation) left `pending` or
   * `revoking`, the way `reconcile` would, before a new request uses it.
   * @returns the record, active again (an interrupted update rolled back), or undefined when it is gone
   * @throws the first gateway error when it cannot be finished now
   */
  private async finishBeforeUse(rec: CredentialRecord): Promise<CredentialRecord | undefined> {
    const entry = await this.finishUnfinished(rec, this.ownedLister(), false);
    if (entry.errors.length > 0) {
      throw new UpstreamUnavailable(`an earlier, interrupted ${entry.op} of this credential could not be finished: ${entry.errors[0]}`, 5);
    }
    this.logger.warn({ credentialId: rec.id, op: entry.op, action: entry.action }, "finished an interrupted operation before this request");
    const after = await this.store.get(rec.id);
    return after?.status === "active" ? after : undefined;
  }

  /** A per-call cache of each gateway's {@link Provider.listOwned}. */
  private ownedLister(): (gateway: string) => Promise<OwnedResource[]> {
    const cache = new Map<string, Promise<OwnedResource[]>>();
    return (gateway) => {
      let p = cache.get(gateway);
      if (!p) {
        const gw = this.gateways.get(gateway);
        p = gw?.provider.listOwned ? gw.provider.listOwned() : Promise.resolve([]);
        cache.set(gateway, p);
      }
      return p;
    };
  }

  /** Returns the live credential of a replayed create: secret read back, or rotated where it cannot be read. */
  private async replay(rec: CredentialRecord): Promise<CreateOutcome> {
    const gateways = rec.bindings.map((b) => b.gateway);
    const reader = rec.bindings.find((b) => this.gateway(b.gateway).provider.capabilities.readsBackSecret);
    if (reader) {
      const gw = this.gateway(reader.gateway);
      try {
        const secret = await gw.provider.readSecret!(this.ref(rec, reader));
        return { response: this.response(rec, secret.apiKey, secret.clientSecret), replayed: true, gateways, credentialId: rec.id };
      } catch (err) {
        throw this.asTyped(err, reader.gateway);
      }
    }
    // No gateway can read the secret back: rotate it everywhere, to one new value.
    const value = rec.credentialType === "API_KEY" ? this.generateApiKey() : undefined;
    let clientSecret: string | undefined;
    for (const b of rec.bindings) {
      const gw = this.gateway(b.gateway);
      if (!gw.provider.rotateSecret) {
        throw new CredhookError(409, "CONFLICT", `the app already has a credential on gateway '${b.gateway}', whose secret can be neither read back nor rotated`, {
          messages: ["revoke the credential first, then create it again"],
          gateway: b.gateway,
        });
      }
      try {
        const rotated = await gw.provider.rotateSecret(this.ref(rec, b), value);
        b.resources = rotated.resources;
        clientSecret ??= rotated.clientSecret;
      } catch (err) {
        throw this.asTyped(err, b.gateway);
      }
    }
    rec.updatedAt = new Date().toISOString();
    await this.store.save(rec);
    this.logger.info({ credentialId: rec.id, gateways }, "replayed create: secret rotated");
    return { response: this.response(rec, value, clientSecret), replayed: true, gateways, credentialId: rec.id };
  }

  // ------------------------------------------------------------------ update

  /**
   * Applies the request's ADDED/REMOVED/NONE changes (and a rename) to every
   * gateway of the credential; creates it on gateways newly reached and removes
   * it from gateways that lost their last API. Rolls back on partial failure.
   * @throws NotFound (404) neither the store nor the request's ids find the credential
   * @throws Unroutable | InvalidReference (422), Throttled (503), UpstreamError (502), UpstreamTimeout (504)
   */
  async update(req: UpdateCredentialsRequest): Promise<OperationOutcome> {
    const publicId = (req.credentialType === "API_KEY" ? req.apiKeyId : req.clientId)!;
    const found = await this.store.findByPublicId(req.credentialType, publicId);
    if (!found) return this.lock.run(`id:${req.credentialType}:${publicId}`, () => this.adoptAndUpdate(req, publicId));
    return this.lock.run(found.appKey, async () => {
      let rec = await this.store.findByPublicId(req.credentialType, publicId);
      if (rec && rec.status !== "active") rec = await this.finishBeforeUse(rec);
      if (!rec) throw new NotFound(`credential ${req.credentialType} '${publicId}' does not exist (it was revoked)`);
      return this.updateKnown(rec, req);
    });
  }

  private async updateKnown(rec: CredentialRecord, req: UpdateCredentialsRequest): Promise<OperationOutcome> {
    const newIds = req.apis.filter((c) => c.action !== "REMOVED" && !rec.apis.some((a) => a.id === c.id)).map((c) => c.id);
    const routes = this.router.resolveAll(uniq(newIds));
    const desiredApis = applyChanges(rec.apis, req.apis, (id) => routes.get(id)!);
    if (desiredApis.length > 0) {
      const t = this.credentialTypeOf(desiredApis);
      if (t !== rec.credentialType) {
        throw new Unroutable(`the added APIs route to gateways that issue ${t}, but the credential is ${rec.credentialType}`);
      }
    }
    const previousGroups = groupByGateway(rec.apis);
    const desiredGroups = groupByGateway(desiredApis);
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
    const renamed = newApp.appName !== rec.app.appName;

    let apiKey: string | undefined;
    if (toCreate.length > 0) {
      if (rec.credentialType === "CLIENT_CREDENTIALS") {
        throw new Unroutable(`client credentials are issued by one gateway per app; the added APIs route to ${toCreate.join(", ")}`);
      }
      const generating = toCreate.filter((g) => !this.gateway(g).provider.capabilities.importsApiKeyValue);
      if (generating.length > 0) {
        throw new Unroutable(
          `gateway ${generating.map((g) => `'${g}'`).join(", ")} generates its own API key values, so the app's existing key cannot be imported there`,
          { messages: ["revoke the credential and create it again to get one key for all the app's APIs"] },
        );
      }
      apiKey = await this.readKeyValue(rec, toCreate);
      for (const g of toCreate) {
        const pattern = this.gateway(g).provider.capabilities.apiKeyValuePattern;
        if (pattern && !new RegExp(pattern).test(apiKey)) {
          throw new Unroutable(`gateway '${g}' cannot import the credential's existing API key value (it does not match ${pattern})`, {
            messages: ["revoke the credential and create it again to get one key for all the app's APIs"],
          });
        }
      }
    }

    const changesFor = (gateway: string): ChangeSlice =>
      req.apis
        .filter((c) => (desiredApis.find((a) => a.id === c.id)?.gateway ?? rec.apis.find((a) => a.id === c.id)?.gateway) === gateway)
        .map((c) => ({ id: c.id, action: c.action, usagePlans: (c.usagePlans ?? []).map((p) => ({ id: p.id, action: p.action })) }));

    const previousApis = rec.apis;
    rec.status = "pending";
    rec.pending = { op: "update", startedAt: new Date().toISOString(), createOn: toCreate, removeFrom: toRemove, previousApis, desiredApis };
    const saver = this.serialSaver(rec);
    await saver(); // intent, before any cloud call

    const oldApp = rec.app;
    const updated: Array<{ gateway: string; before: GatewayBinding }> = [];
    const created: GatewayBinding[] = [];
    const failures: CredhookError[] = [];
    await Promise.all([
      ...toUpdate.map(async (g) => {
        const b = rec.bindings.find((x) => x.gateway === g)!;
        const input: ProviderUpdateInput = {
          ...this.ref(rec, b),
          app: newApp,
          previous: previousGroups.get(g) ?? [],
          desired: desiredGroups.get(g) ?? [],
          changes: changesFor(g),
          ...(renamed ? { previousAppName: oldApp.appName } : {}),
          ...(req.customCredentials ? { customCredentials: req.customCredentials } : {}),
        };
        try {
          const res = await this.gateway(g).provider.update(input);
          updated.push({ gateway: g, before: { ...b } });
          b.resources = res.resources;
          await saver();
        } catch (err) {
          failures.push(this.asTyped(err, g));
        }
      }),
      ...toCreate.map(async (g) => {
        try {
          const cred = await this.gateway(g).provider.create({
            credentialId: rec.id,
            credentialType: rec.credentialType,
            app: newApp,
            apis: desiredGroups.get(g)!,
            apiKeyValue: apiKey!,
          });
          const binding = { gateway: g, nativeId: cred.nativeId, resources: cred.resources };
          rec.bindings.push(binding);
          created.push(binding);
          await saver();
        } catch (err) {
          failures.push(this.asTyped(err, g));
        }
      }),
    ]);

    if (failures.length > 0) {
      await this.compensateUpdate(rec, updated, created, previousGroups, desiredGroups, newApp, oldApp);
      rec.status = "active";
      delete rec.pending;
      await saver();
      throw this.firstByGatewayOrder(failures, desiredGateways);
    }

    // Removal last: it cannot be undone, so it runs only once everything else held.
    const removeFailures: CredhookError[] = [];
    await Promise.all(
      toRemove.map(async (g) => {
        const b = rec.bindings.find((x) => x.gateway === g)!;
        try {
          await this.gateway(g).provider.revoke(this.ref(rec, b));
          rec.bindings = rec.bindings.filter((x) => x !== b);
        } catch (err) {
          removeFailures.push(this.asTyped(err, g));
        }
      }),
    );
    rec.app = newApp;
    rec.apis = desiredApis;
    // Without a slug the app's identity is developer + name: a rename moves it, unless another credential holds the new one.
    const newKey = appKeyOf(newApp);
    if (newKey !== rec.appKey && !(await this.store.findByAppKey(newKey, rec.credentialType))) rec.appKey = newKey;
    rec.status = "active";
    delete rec.pending;
    await saver();
    if (removeFailures.length > 0) throw removeFailures[0]!; // the binding stays: the next update or revoke retries
    const gateways = uniq([...toUpdate, ...toCreate, ...toRemove]);
    this.logger.info({ credentialId: rec.id, gateways, created: toCreate, removed: toRemove }, "credential updated");
    return { gateways, credentialId: rec.id };
  }

  /** The credential's API key value, read back from one of its gateways (to import it on `targets`). */
  private async readKeyValue(rec: CredentialRecord, targets: string[]): Promise<string> {
    const reader = rec.bindings.find((b) => this.gateway(b.gateway).provider.capabilities.readsBackSecret);
    if (!reader) {
      throw new Unroutable(
        `the credential cannot be extended to gateway ${targets.map((t) => `'${t}'`).join(", ")}: none of its gateways (${rec.bindings.map((b) => b.gateway).join(", ")}) can read its key value back`,
        { messages: ["revoke the credential and create it again to get one key for all the app's APIs"] },
      );
    }
    try {
      const { apiKey } = await this.gateway(reader.gateway).provider.readSecret!(this.ref(rec, reader));
      if (!apiKey) throw new UpstreamError(`gateway '${reader.gateway}' returned no key value`);
      return apiKey;
    } catch (err) {
      throw this.asTyped(err, reader.gateway);
    }
  }

  /** Undoes the successful parts of a failed update: inverse updates, and revokes of new gateways. */
  private async compensateUpdate(
    rec: CredentialRecord,
    updated: Array<{ gateway: string; before: GatewayBinding }>,
    created: GatewayBinding[],
    previousGroups: Map<string, GatewayApi[]>,
    desiredGroups: Map<string, GatewayApi[]>,
    newApp: AppIdentity,
    oldApp: AppIdentity,
  ): Promise<void> {
    const results = await Promise.allSettled([
      ...updated.map(async ({ gateway, before }) => {
        const b = rec.bindings.find((x) => x.gateway === gateway)!;
        const previous = previousGroups.get(gateway) ?? [];
        const desired = desiredGroups.get(gateway) ?? [];
        const res = await this.gateway(gateway).provider.update({
          ...this.ref(rec, b),
          app: oldApp,
          previous: desired,
          desired: previous,
          changes: changesBetween(desired, previous),
          ...(newApp.appName !== oldApp.appName ? { previousAppName: newApp.appName } : {}),
        });
        b.resources = res.resources ?? before.resources;
      }),
      ...created.map(async (b) => {
        await this.gateway(b.gateway).provider.revoke(this.ref(rec, b));
        rec.bindings = rec.bindings.filter((x) => x !== b);
      }),
    ]);
    const failed = results.filter((r) => r.status === "rejected");
    if (failed.length > 0) {
      this.logger.error(
        { credentialId: rec.id, errors: failed.map((f) => String((f as PromiseRejectedResult).reason?.message ?? f)) },
        "update rollback incomplete: see `credhook reconcile`",
      );
    }
  }

  /** Update of a credential the store does not know: find it by the request's id on its gateway, and adopt it. */
  private async adoptAndUpdate(req: UpdateCredentialsRequest, publicId: string): Promise<OperationOutcome> {
    const again = await this.store.findByPublicId(req.credentialType, publicId);
    if (again) return this.updateKnown(again, req);
    const unknown = new NotFound(`credential ${req.credentialType} '${publicId}' is not known to credhook`);
    if (req.apis.length === 0) throw unknown;
    const routes = this.router.resolveAll(uniq(req.apis.map((a) => a.id)));
    const gateways = uniq([...routes.values()]);
    if (gateways.length > 1) throw unknown;
    const gateway = gateways[0]!;
    const gw = this.gateway(gateway);
    if (gw.credentialType !== req.credentialType) throw unknown;
    const previous: GatewayApiWithGateway[] = req.apis
      .filter((c) => c.action !== "ADDED")
      .map((c) => ({ id: c.id, gateway, usagePlans: (c.usagePlans ?? []).filter((p) => p.action !== "ADDED").map((p) => p.id) }));
    const desired = applyChanges(previous, req.apis, () => gateway);
    const app: AppIdentity = {
      appName: req.appName ?? publicId,
      developer: req.developer ?? "",
      ...(req.appSlug ? { appSlug: req.appSlug } : {}),
    };
    const id = randomUUID();
    let resources;
    try {
      ({ resources } = await gw.provider.update({
        credentialId: id,
        credentialType: req.credentialType,
        nativeId: publicId,
        resources: {},
        app,
        previous: groupByGateway(previous).get(gateway) ?? [],
        desired: groupByGateway(desired).get(gateway) ?? [],
        changes: req.apis.map((c) => ({ id: c.id, action: c.action, usagePlans: (c.usagePlans ?? []).map((p) => ({ ...p })) })),
      }));
    } catch (err) {
      const typed = this.asTyped(err, gateway);
      if (typed.status === 404) throw new NotFound(`credential ${req.credentialType} '${publicId}' is known neither to credhook nor to gateway '${gateway}'`, { cause: err, gateway });
      throw typed;
    }
    const now = new Date().toISOString();
    await this.store.insert({
      id,
      credentialType: req.credentialType,
      appKey: appKeyOf(app),
      app,
      publicId,
      status: "active",
      apis: desired,
      bindings: [{ gateway, nativeId: publicId, resources }],
      createdAt: now,
      updatedAt: now,
    });
    this.logger.warn({ credentialId: id, gateway }, "credential unknown to the store was found on its gateway and adopted");
    return { gateways: [gateway], credentialId: id };
  }

  // ------------------------------------------------------------------ revoke

  /**
   * Revokes the credential on every gateway the store knows, or — when the store
   * does not know it — on every gateway of its type by the request's id.
   * Idempotent: an unknown or already-gone credential is success.
   * @throws Throttled (503) | UpstreamError (502) | UpstreamTimeout (504); what failed stays recorded for a retry
   */
  async revoke(req: RevokeCredentialsRequest): Promise<OperationOutcome> {
    const publicId = (req.credentialType === "API_KEY" ? req.apiKeyId : req.clientId)!;
    const found = await this.store.findByPublicId(req.credentialType, publicId);
    if (!found) {
      return this.lock.run(`id:${req.credentialType}:${publicId}`, async () => {
        const candidates = [...this.gateways.values()].filter((g) => g.credentialType === req.credentialType);
        const app: AppIdentity = { appName: req.appName ?? "", developer: req.developer ?? "" };
        const results = await Promise.allSettled(
          candidates.map((g) =>
            g.provider
              .revoke({ credentialId: "", credentialType: req.credentialType, nativeId: publicId, resources: {}, app })
              .catch((err: unknown) => {
                throw this.asTyped(err, g.name);
              }),
          ),
        );
        const failed = results.find((r) => r.status === "rejected");
        if (failed) throw (failed as PromiseRejectedResult).reason;
        return { gateways: candidates.map((g) => g.name) };
      });
    }
    return this.lock.run(found.appKey, async () => {
      const rec = await this.store.get(found.id);
      if (!rec) return { gateways: [], credentialId: found.id };
      rec.status = "revoking";
      rec.updatedAt = new Date().toISOString();
      await this.store.save(rec);
      const gateways = rec.bindings.map((b) => b.gateway);
      const left = await this.revokeBindings(rec);
      if (left.length > 0) {
        rec.bindings = left.map((l) => l.binding);
        rec.updatedAt = new Date().toISOString();
        await this.store.save(rec);
        throw this.firstByGatewayOrder(left.map((l) => l.error), gateways);
      }
      await this.store.delete(rec.id);
      this.logger.info({ credentialId: rec.id, gateways }, "credential revoked");
      return { gateways, credentialId: rec.id };
    });
  }

  // ------------------------------------------------------------------ health

  /**
   * Checks the store and every gateway in parallel.
   * @throws UpstreamUnavailable (503) naming every part that failed
   */
  async health(): Promise<OperationOutcome> {
    const names = [...this.gateways.keys()];
    const results = await Promise.allSettled([this.store.health(), ...names.map((n) => this.gateway(n).provider.health())]);
    const problems = results.flatMap((r, i) => {
      if (r.status === "fulfilled") return [];
      const what = i === 0 ? "store" : `gateway '${names[i - 1]}'`;
      const reason = isCredhookError(r.reason) ? r.reason.messages[0] : "unavailable";
      return [`${what}: ${reason}`];
    });
    if (problems.length > 0) throw new UpstreamUnavailable(problems[0]!, 5, { messages: problems.slice(1) });
    return { gateways: names };
  }

  // --------------------------------------------------------------- reconcile

  /**
   * Finishes what a crash (or a failed compensation) left unfinished, then
   * reports drift:
   * - a `revoking` record is revoked everywhere and deleted;
   * - a `pending` create is removed: its bindings, and any resource a gateway
   *   lists as owned by that credential id (created, but the crash came before
   *   the store heard of it), are revoked, and the record deleted — the portal
   *   never received that credential;
   * - a `pending` update is rolled back to the API set before it: gateways it
   *   was adding are revoked, the others updated back.
   * Then every gateway that can list credhook's resources is compared with the
   * store: a resource no live credential owns is reported (never deleted).
   *
   * @param options.dryRun report what would be done, change nothing
   * @param options.olderThanMs only records last written longer ago than this, ms (default 60000: leaves in-flight requests alone)
   */
  async reconcile(options: ReconcileOptions = {}): Promise<ReconcileReport> {
    const dryRun = options.dryRun ?? false;
    const before = new Date(Date.now() - (options.olderThanMs ?? 60_000)).toISOString();
    const report: ReconcileReport = { dryRun, unfinished: [], orphans: [], unlistable: [] };
    let owned = this.ownedLister();
    for (const rec of await this.store.listUnfinished(before)) {
      const entry = await this.lock.run(rec.appKey, async () => {
        const fresh = await this.store.get(rec.id);
        if (!fresh || fresh.updatedAt >= before || fresh.status === "active") return undefined;
        return this.finishUnfinished(fresh, owned, dryRun);
      });
      if (entry) report.unfinished.push(entry);
    }
    // Drift: what gateways hold that no credential record owns (listed afresh).
    owned = this.ownedLister();
    const records = await this.store.list();
    const held = new Set(records.flatMap((r) => r.bindings.map((b) => `${b.gateway}\u0000${b.nativeId}`)));
    const ids = new Set(records.map((r) => r.id));
    for (const gw of this.gateways.values()) {
      if (!gw.provider.listOwned) {
        report.unlistable.push(gw.name);
        continue;
      }
      try {
        for (const r of await owned(gw.name)) {
          if (held.has(`${gw.name}\u0000${r.nativeId}`)) continue;
          if (r.credentialId && ids.has(r.credentialId)) continue; // belongs to a record (e.g. one subscription of several)
          report.orphans.push({ gateway: gw.name, ...r });
        }
      } catch (err) {
        report.unlistable.push(`${gw.name}: ${this.asTyped(err, gw.name).messages[0]}`);
      }
    }
    return report;
  }

  private async finishUnfinished(
    rec: CredentialRecord,
    owned: (gateway: string) => Promise<OwnedResource[]>,
    dryRun: boolean,
  ): Promise<ReconcileEntry> {
    const op = rec.status === "revoking" ? "revoke" : (rec.pending?.op ?? "create");
    const entry: ReconcileEntry = { credentialId: rec.id, appKey: rec.appKey, op, action: "", gateways: [], errors: [] };
    // Resources of this credential a gateway holds but the record does not (the crash came between the cloud call and the store write).
    const strays = async (gateways: string[]) => {
      const out: GatewayBinding[] = [];
      for (const g of gateways) {
        for (const r of await owned(g).catch(() => [] as OwnedResource[])) {
          if (r.credentialId === rec.id && !rec.bindings.some((b) => b.gateway === g && b.nativeId === r.nativeId)) {
            out.push({ gateway: g, nativeId: r.nativeId, resources: {} });
          }
        }
      }
      return out;
    };
    const revokeAll = async (bindings: GatewayBinding[]) => {
      entry.gateways = uniq(bindings.map((b) => b.gateway));
      if (dryRun) return true;
      const left = await this.revokeBindings({ ...rec, bindings });
      entry.errors.push(...left.map((l) => `${l.binding.gateway}: ${l.error.messages[0]}`));
      return left;
    };

    if (op === "revoke" || op === "create") {
      const bindings = [...rec.bindings, ...(await strays(op === "create" ? (rec.pending?.createOn ?? []) : rec.bindings.map((b) => b.gateway)))];
      entry.action = dryRun ? `would revoke on ${bindings.length} gateway resource(s) and delete the record` : "revoked and deleted";
      const left = await revokeAll(bindings);
      if (left === true) return entry;
      if (left.length === 0) await this.store.delete(rec.id);
      else {
        rec.bindings = left.map((l) => l.binding);
        rec.updatedAt = new Date().toISOString();
        await this.store.save(rec);
        entry.action = "partly revoked; run reconcile again";
      }
      return entry;
    }

    // An interrupted update: roll back to the API set before it.
    const pending = rec.pending!;
    const createdHere = [...rec.bindings.filter((b) => pending.createOn.includes(b.gateway)), ...(await strays(pending.createOn))];
    const keep = rec.bindings.filter((b) => !pending.createOn.includes(b.gateway));
    entry.gateways = uniq([...createdHere, ...keep].map((b) => b.gateway));
    if (dryRun) {
      entry.action = `would roll the update back: revoke on ${createdHere.length} new gateway resource(s), restore ${keep.length}`;
      return entry;
    }
    const left = await this.revokeBindings({ ...rec, bindings: createdHere });
    entry.errors.push(...left.map((l) => `${l.binding.gateway}: ${l.error.messages[0]}`));
    const oldGroups = groupByGateway(rec.apis);
    const newGroups = groupByGateway(pending.desiredApis ?? rec.apis);
    await Promise.all(
      keep.map(async (b) => {
        const target = oldGroups.get(b.gateway) ?? [];
        const from = newGroups.get(b.gateway) ?? [];
        try {
          const res = await this.gateway(b.gateway).provider.update({
            ...this.ref(rec, b),
            previous: from,
            desired: target,
            changes: changesBetween(from, target),
          });
          b.resources = res.resources;
        } catch (err) {
          entry.errors.push(`${b.gateway}: ${this.asTyped(err, b.gateway).messages[0]}`);
        }
      }),
    );
    rec.bindings = [...keep, ...left.map((l) => l.binding)];
    if (entry.errors.length === 0) {
      rec.status = "active";
      delete rec.pending;
      entry.action = "update rolled back";
    } else {
      entry.action = "rollback incomplete; run reconcile again";
    }
    rec.updatedAt = new Date().toISOString();
    await this.store.save(rec);
    return entry;
  }

  /** Closes every provider (not the store: its owner closes it). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.gateways.values()].map((g) => g.provider.close?.()));
  }
}
