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
import { ExponentialBackoff, handleAll, retry } from "cockatiel";
import { CredhookError, isCredhookError, NotFound, Unroutable, UpstreamError, UpstreamUnavailable } from "./errors.js";
import { KeyedLock } from "./keyed-lock.js";
import { silentLogger, type Logger } from "./logger.js";
import type { AppIdentity, GatewayApi, OwnedResource, ProviderCredentialRef, ProviderResources, ProviderUpdateInput, RevokeOutcome } from "./provider.js";
import type { Gateway } from "./registry.js";
import type { Router } from "./routing.js";
import { generateApiKeyValue } from "./secrets.js";
import type { CredentialRecord, CredentialStore, GatewayApiWithGateway, GatewayBinding, StoreLocks } from "./store.js";

/** Options of {@link Orchestrator}. */
export interface OrchestratorOptions {
  /** Gateways by name, from {@link loadGateways}. */
  gateways: Map<string, Gateway>;
  router: Router;
  store: CredentialStore;
  logger?: Logger;
  /** API key value generator. @default generateApiKeyValue (40 base62 characters) */
  generateApiKey?: () => string;
  /**
   * How long after a create was given up a search that finds nothing still
   * does not prove that nothing exists — a cloud may complete a write the
   * client gave up on (cloud-facts.md, "No cloud cancels work when the client
   * gives up"). An `abandoned` record is kept at least this long, ms.
   * @default 300000 (5 minutes: well beyond every provider's call timeout and the SDKs' retries)
   */
  abandonSettleMs?: number;
  /**
   * Attempts of each compensating call (a revoke, a search) within the
   * request, with exponential backoff from 200 ms up to 2 s, before the rest
   * is left to the sweep, the next request and `credhook reconcile`.
   * @default 3
   */
  compensationAttempts?: number;
}

/** What an operation did, for the request log (never a secret). */
export interface OperationOutcome {
  /** Gateways the operation touched, in order. */
  gateways: string[];
  /** credhook's credential id, when known. */
  credentialId?: string;
  /** Gateways that refused to revoke a resource under the request's id because it is not theirs (no credhook mark): left live, counted and logged at warn. */
  unowned?: string[];
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
  /** The interrupted operation (`create` also for an abandoned create's cleanup). */
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
  /** Abandoned creates cleaned up (or, with dryRun, to clean up): their records are kept until a search after the settle window finds nothing. */
  abandoned: ReconcileEntry[];
  /** Unfinished records skipped because they were written within `olderThanMs` (possibly a live request's); `--older-than 0` includes them. */
  skippedRecent: number;
  /** Resources marked as credhook's that belonged to an abandoned create, or to a live credential on a gateway it is not bound to: revoked (listed here) or, with dryRun, to revoke. */
  garbage: Array<OwnedResource & { gateway: string }>;
  /** Resources tagged as credhook's that no credential record owns (drift); never deleted automatically. */
  orphans: Array<OwnedResource & { gateway: string }>;
  /** Gateways whose provider cannot list its resources (or failed to). */
  unlistable: string[];
}

/**
 * One existing credential to bring under credhook (`credhook adopt`): the
 * portal app it belongs to, in the shape of a create request, plus the id the
 * portal holds (apiKeyId or clientId).
 */
export interface AdoptionRequest {
  credentialType: CredentialType;
  /** The API key id the portal holds (API_KEY). */
  apiKeyId?: string;
  /** The client id the portal holds (CLIENT_CREDENTIALS). */
  clientId?: string;
  appName: string;
  developer: string;
  appSlug?: string;
  /** The app's APIs (with usage plans); they must all route to one gateway issuing `credentialType`. */
  apis: CreateCredentialsRequest["apis"];
}

/** What {@link Orchestrator.adopt} did (or would do) with one {@link AdoptionRequest}. */
export interface AdoptionResult {
  /** The apiKeyId / clientId. */
  publicId: string;
  /** `adopted`, `would adopt` (dry run), or `skipped` with a reason. */
  action: "adopted" | "would adopt" | "skipped";
  gateway?: string;
  /** The new credential id (adopted). */
  credentialId?: string;
  /** Why it was skipped. */
  reason?: string;
}

/** Result of {@link Orchestrator.create}. */
export interface CreateOutcome extends OperationOutcome {
  response: CreateCredentialsResponse;
  /** True when an existing live credential was returned (replayed create). */
  replayed: boolean;
}

type ChangeSlice = ProviderUpdateInput["changes"];

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
 * The contract changes that take an app's API set from `from` to `to` (a
 * replayed create with another API set): per API id NONE / ADDED / REMOVED,
 * and per usage plan likewise; empty when the sets are equal.
 */
export function changesForReplay(from: GatewayApiWithGateway[], to: GatewayApiWithGateway[]): ApiChange[] {
  const changes = changesBetween(from, to);
  const same = changes.every((c) => c.action === "NONE" && c.usagePlans.every((p) => p.action === "NONE"));
  return same ? [] : changes;
}

/** What one cleanup pass over an abandoned create did. */
interface AbandonedCleanup {
  /** Every resource revoked in this pass: the record's bindings and what the searches found. */
  revoked: Array<OwnedResource & { gateway: string }>;
  /** Of those, the ones only a search found (not in the record): reported as garbage by reconcile. */
  found: Array<OwnedResource & { gateway: string }>;
  /** The record is gone (settled, or deleted meanwhile by another pass). */
  deleted: boolean;
  /** Per-gateway failures, secret-free; the record stays for the next pass. */
  errors: string[];
}

/** What one pass of {@link Orchestrator.reconcileLoopPass} did. */
export interface ReconcileLoopResult {
  /** False when another instance's runner held the turn. */
  ran: boolean;
  /** Interrupted operations finished (their instance is gone). */
  finished: ReconcileEntry[];
  /** Interrupted operations left alone because a live instance holds their app. */
  inFlight: number;
  /** The abandoned-create sweep of the same pass. */
  swept: { swept: number; deleted: number; revoked: number };
}

/**
 * Runs create / update / revoke / health for the server. One instance per process.
 * Requests for the same app are serialised — across every instance when the
 * store has cross-instance locks (PostgreSQL) — and different apps run in parallel.
 */
export class Orchestrator {
  private readonly gateways: Map<string, Gateway>;
  private readonly router: Router;
  private readonly store: CredentialStore;
  private readonly logger: Logger;
  private readonly generateApiKey: () => string;
  /** Per-app serialisation: the store's cross-instance locks, or in-process ones. */
  private readonly lock: StoreLocks;
  private readonly settleMs: number;
  private readonly compensationAttempts: number;

  constructor(options: OrchestratorOptions) {
    this.gateways = options.gateways;
    this.router = options.router;
    this.store = options.store;
    this.logger = options.logger ?? silentLogger;
    this.generateApiKey = options.generateApiKey ?? generateApiKeyValue;
    this.settleMs = options.abandonSettleMs ?? 300_000;
    this.lock = options.store.locks ?? new KeyedLock();
    this.compensationAttempts = options.compensationAttempts ?? 3;
  }

  /** Runs a compensating call with the request's bounded retries (exponential backoff 200 ms → 2 s). */
  private compensating<T>(fn: () => Promise<T>, retries = true): Promise<T> {
    if (!retries || this.compensationAttempts <= 1) return fn();
    const policy = retry(handleAll, {
      maxAttempts: this.compensationAttempts - 1,
      backoff: new ExponentialBackoff({ initialDelay: 200, maxDelay: 2000 }),
    });
    return policy.execute(fn);
  }

  /**
   * True when a failed provider call may still have taken effect: the provider
   * said so, or — unset — it failed with a 5xx (timeout, no answer, an upstream
   * error after the request was sent).
   */
  private mayHaveLanded(err: CredhookError): boolean {
    return err.outcomeUnknown ?? err.status >= 500;
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
    return { credentialId: b.markId ?? rec.id, credentialType: rec.credentialType, nativeId: b.nativeId, resources: b.resources, app: rec.app };
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
      // What an earlier, failed create of this app may have left: clean it up first (best effort; the sweep retries).
      await this.sweepApp(appKey);
      let existing = await this.store.findByAppKey(appKey, credentialType);
      if (existing && existing.status !== "active") {
        // Left unfinished by a crash (requests of this app in this process hold the lock): finish it first.
        existing = await this.finishBeforeUse(existing);
      }
      if (existing) {
        // A replayed create whose API set differs applies the difference first, as an update would.
        const changes = changesForReplay(existing.apis, apis);
        if (changes.length > 0) {
          await this.updateKnown(existing, {
            credentialType,
            ...(credentialType === "API_KEY" ? { apiKeyId: existing.publicId } : { clientId: existing.publicId }),
            appName: req.appName,
            developer: req.developer,
            apis: changes,
          } as UpdateCredentialsRequest);
          existing = (await this.store.get(existing.id)) ?? existing;
        }
        return this.replay(existing);
      }
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
        // With one gateway the final save follows at once and records the binding; a crash before it leaves
        // the pending intent, whose gateway reconcile searches by the credential's mark, as after a crash mid-call.
        if (gatewayNames.length > 1) await saver();
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
      await this.abandonCreate(rec, failures);
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

  /**
   * Gives up a failed create: the portal never receives this credential. The
   * record turns `abandoned` (durably, before any cleanup), keeping every hint
   * to find what exists — the bindings, what failing gateways reported as
   * `partial`, and the gateways where a write may have landed unseen — and
   * cleanup runs at once with the request's bounded retries. The record is
   * deleted only when nothing can be left (see {@link cleanupAbandoned}).
   */
  private async abandonCreate(rec: CredentialRecord, failures: CredhookError[]): Promise<void> {
    for (const f of failures) {
      if (f.partial && f.gateway && !rec.bindings.some((b) => b.gateway === f.gateway && b.nativeId === f.partial!.nativeId)) {
        rec.bindings.push({ gateway: f.gateway, nativeId: f.partial.nativeId, resources: f.partial.resources as ProviderResources });
      }
    }
    const uncertain = uniq(failures.filter((f) => f.gateway && this.mayHaveLanded(f)).map((f) => f.gateway!));
    this.markAbandoned(rec, failures[0]!.messages[0] ?? failures[0]!.message, uncertain, Date.now());
    await this.store.save(structuredClone(rec));
    await this.cleanupAbandoned(rec, true);
  }

  /** Turns `rec` into an abandoned create (in memory): `startedMs` is when its cloud writes may have begun. */
  private markAbandoned(rec: CredentialRecord, reason: string, uncertain: string[], startedMs: number): void {
    const now = new Date();
    const lateWrites = uncertain.some((g) => this.gateways.get(g)?.provider.capabilities.writesLandLate !== false);
    rec.status = "abandoned";
    delete rec.pending;
    rec.abandoned = {
      at: now.toISOString(),
      reason,
      uncertain,
      settleUntil: new Date(lateWrites ? Math.max(startedMs + this.settleMs, now.getTime()) : now.getTime()).toISOString(),
      attempts: 0,
    };
    rec.updatedAt = now.toISOString();
  }

  /**
   * One cleanup pass over an abandoned create: revokes every binding, searches
   * each gateway where a write may have landed for resources carrying the
   * credential's mark ({@link Provider.findByCredential}) and revokes them.
   * The record is deleted when the pass failed nowhere and the settle window
   * is over; otherwise it is saved with what is left, for the next pass.
   * @param inRequest retry each call (bounded) within this call
   * @returns the resources revoked in this pass, and whether the record is gone
   */
  private async cleanupAbandoned(rec: CredentialRecord, inRequest: boolean): Promise<AbandonedCleanup> {
    const info = rec.abandoned!;
    const errors: string[] = [];
    const revoked: Array<OwnedResource & { gateway: string }> = [];
    const left = await this.revokeBindings(rec, inRequest);
    for (const l of left) errors.push(`${l.binding.gateway}: ${l.error.messages[0]}`);
    for (const b of rec.bindings) if (!left.some((l) => l.binding === b)) revoked.push({ gateway: b.gateway, nativeId: b.nativeId, credentialId: rec.id, description: "recorded binding" });
    /** What the searches found and revoked (not in the record: garbage a late write or a crash left). */
    const searched: Array<OwnedResource & { gateway: string }> = [];
    rec.bindings = left.map((l) => l.binding);
    const apisOf = groupByGateway(rec.pending?.desiredApis ?? rec.apis);
    await Promise.all(
      info.uncertain.map(async (gateway) => {
        try {
          const found = await this.compensating(() => this.findByCredential(gateway, rec, apisOf.get(gateway) ?? []), inRequest);
          for (const r of found) {
            if (rec.bindings.some((b) => b.gateway === gateway && b.nativeId === r.nativeId)) continue;
            const outcome = await this.compensating(
              () => this.revokeOne(gateway, { credentialId: rec.id, credentialType: rec.credentialType, nativeId: r.nativeId, resources: {}, app: rec.app }),
              inRequest,
            ).catch((err: unknown) => {
              rec.bindings.push({ gateway, nativeId: r.nativeId, resources: {} });
              throw err;
            });
            if (outcome !== "not-owned") {
              revoked.push({ gateway, ...r });
              searched.push({ gateway, ...r });
            }
          }
        } catch (err) {
          errors.push(`${gateway}: ${this.asTyped(err, gateway).messages[0]}`);
        }
      }),
    );
    const now = new Date();
    info.attempts += 1;
    info.lastAttemptAt = now.toISOString();
    if (errors.length > 0) info.lastErrors = errors;
    else delete info.lastErrors;
    if (revoked.length > 0) {
      this.logger.warn({ credentialId: rec.id, revoked: revoked.map((r) => `${r.gateway}:${r.nativeId}`) }, "abandoned create: revoked what it had left");
    }
    if (errors.length === 0 && rec.bindings.length === 0 && now.toISOString() >= info.settleUntil) {
      await this.store.delete(rec.id);
      return { revoked, found: searched, deleted: true, errors };
    }
    rec.updatedAt = now.toISOString();
    try {
      await this.store.save(structuredClone(rec));
    } catch (err) {
      // Deleted meanwhile by another cleanup of the same record (reconcile in another process): nothing left to do.
      if (!(isCredhookError(err) && err.status === 404)) throw err;
      return { revoked, found: searched, deleted: true, errors };
    }
    if (errors.length > 0) {
      this.logger.error({ credentialId: rec.id, errors }, "abandoned create: cleanup incomplete, retried by the sweep, the next request of the app and `credhook reconcile`");
    }
    return { revoked, found: searched, deleted: false, errors };
  }

  /** The resources `gateway` holds with the credential's mark: its {@link Provider.findByCredential}, else its listOwned filtered by credential id. */
  private async findByCredential(gateway: string, rec: CredentialRecord, apis: GatewayApi[]): Promise<OwnedResource[]> {
    const provider = this.gateway(gateway).provider;
    if (provider.findByCredential) {
      return provider.findByCredential({ credentialId: rec.id, credentialType: rec.credentialType, app: rec.app, apis });
    }
    if (provider.listOwned) return (await provider.listOwned()).filter((r) => r.credentialId === rec.id);
    return [];
  }

  /** One provider revoke, typed, with its outcome (`revoked` when the provider returns nothing). */
  private async revokeOne(gateway: string, ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    try {
      return (await this.gateway(gateway).provider.revoke(ref)) ?? "revoked";
    } catch (err) {
      throw this.asTyped(err, gateway);
    }
  }

  /**
   * Revokes every binding in parallel (each with the request's bounded retries
   * when `inRequest`); returns the ones that failed, with their errors. A
   * binding whose resource no longer carries the credential's mark is left
   * alone (logged): credhook never revokes what is not its own.
   */
  private async revokeBindings(rec: CredentialRecord, inRequest = false): Promise<Array<{ binding: GatewayBinding; error: CredhookError }>> {
    const results = await Promise.allSettled(
      rec.bindings.map(async (b) => {
        const outcome = await this.compensating(() => this.revokeOne(b.gateway, this.ref(rec, b)), inRequest);
        if (outcome === "not-owned") {
          this.logger.error({ credentialId: rec.id, gateway: b.gateway, nativeId: b.nativeId }, "a recorded resource no longer carries this credential's mark: left untouched");
        }
      }),
    );
    return results.flatMap((r, i) => (r.status === "rejected" ? [{ binding: rec.bindings[i]!, error: this.asTyped(r.reason, rec.bindings[i]!.gateway) }] : []));
  }

  /**
   * One sweep over abandoned creates (all, or one app's): a cleanup pass each,
   * under the app's lock. The server runs it every `reconcile.abandonedIntervalS`;
   * a create runs it for its own app first. Never throws: failures stay on the
   * records for the next pass.
   * @returns how many records were swept and how many are gone
   */
  async sweepAbandoned(): Promise<{ swept: number; deleted: number; revoked: number }> {
    const out = { swept: 0, deleted: 0, revoked: 0 };
    for (const rec of await this.store.listAbandoned()) {
      const r = await this.lock.run(rec.appKey, () => this.sweepOne(rec.id));
      if (!r) continue;
      out.swept += 1;
      out.revoked += r.revoked.length;
      if (r.deleted) out.deleted += 1;
    }
    return out;
  }

  /**
   * One pass of `credhook serve`'s reconcile loop, run by one instance at a
   * time (the store's lock `credhook:reconcile`): every `pending` or
   * `revoking` record whose app lock is free — no live instance is working on
   * it, so its instance died — is finished as `credhook reconcile` would,
   * whatever its age; a record whose app a live instance holds is left alone.
   * Then the abandoned creates are swept. No drift listing (that stays with
   * `credhook reconcile`: it lists whole accounts).
   */
  async reconcileLoopPass(): Promise<ReconcileLoopResult> {
    const turn = await this.lock.tryRun("credhook:reconcile", async () => {
      const result: ReconcileLoopResult = { ran: true, finished: [], inFlight: 0, swept: { swept: 0, deleted: 0, revoked: 0 } };
      for (const rec of await this.store.listUnfinished(new Date(Date.now() + 1000).toISOString())) {
        const r = await this.lock.tryRun(rec.appKey, async () => {
          const fresh = await this.store.get(rec.id);
          if (!fresh || (fresh.status !== "pending" && fresh.status !== "revoking")) return undefined;
          return this.finishUnfinished(fresh, false);
        });
        if (!r.ran) result.inFlight += 1;
        else if (r.value) {
          result.finished.push(r.value);
          this.logger.warn({ credentialId: r.value.credentialId, op: r.value.op, action: r.value.action, errors: r.value.errors }, "reconcile loop finished an interrupted operation");
        }
      }
      result.swept = await this.sweepAbandoned();
      return result;
    });
    return turn.ran ? turn.value : { ran: false, finished: [], inFlight: 0, swept: { swept: 0, deleted: 0, revoked: 0 } };
  }

  /** Sweeps one app's abandoned creates (caller holds the app's lock); never throws. */
  private async sweepApp(appKey: string): Promise<void> {
    for (const rec of await this.store.listAbandoned(appKey)) await this.sweepOne(rec.id);
  }

  private async sweepOne(id: string): Promise<AbandonedCleanup | undefined> {
    try {
      const fresh = await this.store.get(id);
      if (!fresh || fresh.status !== "abandoned") return undefined;
      return await this.cleanupAbandoned(fresh, false);
    } catch (err) {
      this.logger.error({ credentialId: id, err: isCredhookError(err) ? err.messages[0] : String(err) }, "abandoned create: cleanup pass failed");
      return undefined;
    }
  }

  /**
   * Finishes a record a crash left `pending` or `revoking`, the way
   * `reconcile` would, before a new request uses it (an interrupted create
   * becomes `abandoned` and is cleaned up on its own).
   * @returns the record, active again (an interrupted update rolled back), or undefined when it is gone
   * @throws the first gateway error when it cannot be finished now
   */
  private async finishBeforeUse(rec: CredentialRecord): Promise<CredentialRecord | undefined> {
    const entry = await this.finishUnfinished(rec, false);
    // An interrupted create is now an abandoned record that carries its own cleanup: it never blocks the app's new request.
    if (entry.errors.length > 0 && entry.op !== "create") {
      throw new UpstreamUnavailable(`an earlier, interrupted ${entry.op} of this credential could not be finished: ${entry.errors[0]}`, 5);
    }
    this.logger.warn({ credentialId: rec.id, op: entry.op, action: entry.action }, "finished an interrupted operation before this request");
    const after = await this.store.get(rec.id);
    return after?.status === "active" ? after : undefined;
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
    const uncertain: string[] = [];
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
          // It may have applied part of the change (a plan attached, another not): the inverse update undoes that too.
          updated.push({ gateway: g, before: { ...b } });
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
          const typed = this.asTyped(err, g);
          failures.push(typed);
          if (typed.partial) {
            const binding = { gateway: g, nativeId: typed.partial.nativeId, resources: typed.partial.resources as ProviderResources };
            rec.bindings.push(binding);
            created.push(binding);
          }
          if (this.mayHaveLanded(typed)) uncertain.push(g);
        }
      }),
    ]);

    if (failures.length > 0) {
      await this.compensateUpdate(rec, updated, created, uncertain, previousGroups, desiredGroups, newApp, oldApp);
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

  /**
   * Undoes a failed update: inverse updates on every gateway it updated (the
   * failed one too: it may have applied part of the change), revokes of what it
   * created on new gateways, and — where a create's outcome is unknown — a
   * search for the credential's mark there, revoking what is found. Each call
   * has the request's bounded retries; what still fails is logged, and
   * `credhook reconcile` revokes marked resources on gateways the credential is
   * not bound to.
   */
  private async compensateUpdate(
    rec: CredentialRecord,
    updated: Array<{ gateway: string; before: GatewayBinding }>,
    created: GatewayBinding[],
    uncertain: string[],
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
        const res = await this.compensating(() =>
          this.gateway(gateway).provider.update({
            ...this.ref(rec, b),
            app: oldApp,
            previous: desired,
            desired: previous,
            changes: changesBetween(desired, previous),
            ...(newApp.appName !== oldApp.appName ? { previousAppName: newApp.appName } : {}),
          }),
        );
        b.resources = res.resources ?? before.resources;
      }),
      ...created.map(async (b) => {
        await this.compensating(() => this.revokeOne(b.gateway, this.ref(rec, b)));
        rec.bindings = rec.bindings.filter((x) => x !== b);
      }),
      ...uncertain.map(async (g) => {
        const found = await this.compensating(() => this.findByCredential(g, rec, desiredGroups.get(g) ?? []));
        for (const r of found) {
          if (created.some((b) => b.gateway === g && b.nativeId === r.nativeId)) continue;
          await this.compensating(() => this.revokeOne(g, { ...this.ref(rec, { gateway: g, nativeId: r.nativeId, resources: {} }) }));
        }
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

  /**
   * Update of a credential the store does not know (the store was lost or
   * restored from an old backup): find it by the request's id on the gateway
   * its APIs route to and, when the resource carries that gateway's mark (it
   * was credhook's), record it again. A resource without the mark is not
   * credhook's: 404, and the operator brings it under credhook explicitly
   * with `credhook adopt`.
   */
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
    let result;
    try {
      result = await gw.provider.update({
        credentialId: "",
        credentialType: req.credentialType,
        nativeId: publicId,
        resources: {},
        app,
        previous: groupByGateway(previous).get(gateway) ?? [],
        desired: groupByGateway(desired).get(gateway) ?? [],
        changes: req.apis.map((c) => ({ id: c.id, action: c.action, usagePlans: (c.usagePlans ?? []).map((p) => ({ ...p })) })),
      });
    } catch (err) {
      const typed = this.asTyped(err, gateway);
      if (typed.status === 404) {
        throw new NotFound(`credential ${req.credentialType} '${publicId}' is not known to credhook, and gateway '${gateway}' holds no credential of credhook's with that id`, {
          cause: err,
          gateway,
          messages: ["a credential made outside credhook is brought under it explicitly, with `credhook adopt`"],
        });
      }
      throw typed;
    }
    const resources = result.resources;
    const markedId = result.credentialId && !(await this.store.get(result.credentialId)) ? result.credentialId : undefined;
    const id = markedId ?? randomUUID();
    const now = new Date().toISOString();
    await this.store.insert({
      id,
      credentialType: req.credentialType,
      appKey: appKeyOf(app),
      app,
      publicId,
      status: "active",
      apis: desired,
      bindings: [{ gateway, nativeId: publicId, resources, ...(markedId ? {} : { markId: "" }) }],
      createdAt: now,
      updatedAt: now,
    });
    this.logger.warn({ credentialId: id, gateway }, "credential unknown to the store was found on its gateway, under its mark, and recorded again");
    return { gateways: [gateway], credentialId: id };
  }

  // ------------------------------------------------------------------- adopt

  /**
   * Brings credentials made outside credhook (by hand, or by the webhook
   * credhook replaces) under it — explicitly, never from a portal request:
   * for each entry, the gateway its APIs route to puts credhook's mark on the
   * resource ({@link Provider.adopt}) and an `active` record is stored, so
   * later updates and revokes from the portal reach it.
   * Entries the store already knows, whose app already has a credential, whose
   * APIs span several gateways, or whose gateway cannot adopt are skipped with
   * a reason; a gateway's refusal (NotFound, Conflict: another mark) too.
   * @param options.dryRun check and report; change nothing
   * @throws only store failures; per-entry problems are results
   */
  async adopt(entries: AdoptionRequest[], options: { dryRun?: boolean } = {}): Promise<AdoptionResult[]> {
    const out: AdoptionResult[] = [];
    for (const e of entries) {
      const publicId = (e.credentialType === "API_KEY" ? e.apiKeyId : e.clientId) ?? "";
      const skip = (reason: string, gateway?: string) => out.push({ publicId, action: "skipped", reason, ...(gateway ? { gateway } : {}) });
      if (!publicId) {
        skip(`${e.credentialType === "API_KEY" ? "apiKeyId" : "clientId"} is missing`);
        continue;
      }
      let apis: GatewayApiWithGateway[];
      try {
        apis = this.routeCreate({ appName: e.appName, developer: e.developer, apis: e.apis });
      } catch (err) {
        skip(isCredhookError(err) ? err.messages.join("; ") : String(err));
        continue;
      }
      const gateways = uniq(apis.map((a) => a.gateway));
      if (gateways.length !== 1) {
        skip(`its APIs route to ${gateways.length} gateways (${gateways.join(", ")}); adopt a credential of one gateway at a time`);
        continue;
      }
      const gateway = gateways[0]!;
      const gw = this.gateway(gateway);
      if (gw.credentialType !== e.credentialType) {
        skip(`gateway '${gateway}' issues ${gw.credentialType}, not ${e.credentialType}`, gateway);
        continue;
      }
      if (!gw.provider.adopt) {
        skip(`gateway '${gateway}' (provider ${gw.providerType}) cannot adopt existing credentials`, gateway);
        continue;
      }
      const app: AppIdentity = { appName: e.appName, developer: e.developer, ...(e.appSlug ? { appSlug: e.appSlug } : {}) };
      const appKey = appKeyOf(app);
      const result = await this.lock.run(appKey, async (): Promise<AdoptionResult> => {
        if (await this.store.findByPublicId(e.credentialType, publicId)) return { publicId, action: "skipped", gateway, reason: "credhook already holds this credential" };
        if (await this.store.findByAppKey(appKey, e.credentialType)) return { publicId, action: "skipped", gateway, reason: `the app already has a ${e.credentialType} credential in credhook` };
        if (options.dryRun) return { publicId, action: "would adopt", gateway };
        const id = randomUUID();
        let resources: ProviderResources;
        try {
          ({ resources } = await gw.provider.adopt!({ credentialId: id, credentialType: e.credentialType, nativeId: publicId, resources: {}, app, apis: groupByGateway(apis).get(gateway)! }));
        } catch (err) {
          return { publicId, action: "skipped", gateway, reason: this.asTyped(err, gateway).messages.join("; ") };
        }
        const now = new Date().toISOString();
        await this.store.insert({ id, credentialType: e.credentialType, appKey, app, publicId, status: "active", apis, bindings: [{ gateway, nativeId: publicId, resources }], createdAt: now, updatedAt: now });
        this.logger.info({ credentialId: id, gateway, publicId }, "existing credential adopted");
        return { publicId, action: "adopted", gateway, credentialId: id };
      });
      out.push(result);
    }
    return out;
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
        // Unknown to the store (it was lost, or the id was never credhook's): each gateway of the type revokes
        // the id only when the resource carries that gateway's own mark.
        const candidates = [...this.gateways.values()].filter((g) => g.credentialType === req.credentialType);
        const app: AppIdentity = { appName: req.appName ?? "", developer: req.developer ?? "" };
        const results = await Promise.allSettled(
          candidates.map((g) => this.revokeOne(g.name, { credentialId: "", credentialType: req.credentialType, nativeId: publicId, resources: {}, app })),
        );
        const failed = results.find((r) => r.status === "rejected");
        if (failed) throw (failed as PromiseRejectedResult).reason;
        const outcomes = results.map((r) => (r as PromiseFulfilledResult<RevokeOutcome>).value);
        // Someone else's resource under that id was left live — unless another of credhook's gateways revoked its own under that id.
        const unowned = outcomes.includes("revoked") ? [] : candidates.filter((_, i) => outcomes[i] === "not-owned").map((g) => g.name);
        if (unowned.length > 0) {
          this.logger.warn(
            { credentialType: req.credentialType, publicId, gateways: unowned },
            "revoke of an id credhook does not know: a resource with that id exists but is not credhook's, so it was left live (bring it under credhook with `credhook adopt`, or remove it where it was made)",
          );
        }
        return { gateways: candidates.map((g) => g.name), ...(unowned.length > 0 ? { unowned } : {}) };
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
    const report: ReconcileReport = { dryRun, unfinished: [], abandoned: [], skippedRecent: await this.store.countUnfinishedSince(before), orphans: [], garbage: [], unlistable: [] };
    for (const rec of await this.store.listUnfinished(before)) {
      const entry = await this.lock.run(rec.appKey, async () => {
        const fresh = await this.store.get(rec.id);
        if (!fresh || fresh.updatedAt >= before || (fresh.status !== "pending" && fresh.status !== "revoking")) return undefined;
        return this.finishUnfinished(fresh, dryRun);
      });
      if (entry) report.unfinished.push(entry);
    }
    // Abandoned creates: no request owns them any more, whatever their age.
    for (const rec of await this.store.listAbandoned()) {
      const entry: ReconcileEntry = { credentialId: rec.id, appKey: rec.appKey, op: "create", action: "", gateways: uniq([...rec.bindings.map((b) => b.gateway), ...(rec.abandoned?.uncertain ?? [])]), errors: [] };
      if (dryRun) {
        entry.action = `would revoke ${rec.bindings.length} recorded resource(s) and search ${rec.abandoned?.uncertain.length ?? 0} gateway(s) for the credential's mark`;
      } else {
        const r = await this.lock.run(rec.appKey, () => this.sweepOne(rec.id));
        if (!r) continue;
        entry.errors.push(...r.errors);
        report.garbage.push(...r.found);
        entry.action = r.deleted
          ? `cleaned up (${r.revoked.length} resource(s) revoked), record deleted`
          : r.errors.length > 0
            ? "cleanup incomplete; run reconcile again"
            : `cleaned up (${r.revoked.length} resource(s) revoked); record kept until ${(await this.store.get(rec.id))?.abandoned?.settleUntil ?? "settled"} in case a late write lands`;
      }
      report.abandoned.push(entry);
    }
    // Drift: what gateways hold under credhook's mark that no credential record explains (listed afresh).
    const records = await this.store.list();
    const held = new Set(records.flatMap((r) => r.bindings.map((b) => `${b.gateway}\u0000${b.nativeId}`)));
    const byId = new Map(records.map((r) => [r.id, r]));
    for (const gw of this.gateways.values()) {
      if (!gw.provider.listOwned) {
        report.unlistable.push(gw.name);
        continue;
      }
      try {
        for (const r of await gw.provider.listOwned()) {
          if (held.has(`${gw.name}\u0000${r.nativeId}`)) continue;
          const owner = r.credentialId ? byId.get(r.credentialId) : undefined;
          if (owner && !this.isGarbageOf(owner, gw.name, before)) continue; // one resource of several, or an operation in flight
          if (!owner) {
            report.orphans.push({ gateway: gw.name, ...r });
            continue;
          }
          // Marked with a credential whose record says it is not there: an abandoned create's late write, or a failed update's.
          report.garbage.push({ gateway: gw.name, ...r });
          if (dryRun) continue;
          await this.lock.run(owner.appKey, async () => {
            const fresh = await this.store.get(owner.id);
            if (!fresh || !this.isGarbageOf(fresh, gw.name, before)) return;
            await this.revokeOne(gw.name, { credentialId: owner.id, credentialType: owner.credentialType, nativeId: r.nativeId, resources: {}, app: owner.app }).catch((err: unknown) => {
              report.unlistable.push(`${gw.name}: ${this.asTyped(err, gw.name).messages[0]}`);
            });
          });
        }
      } catch (err) {
        report.unlistable.push(`${gw.name}: ${this.asTyped(err, gw.name).messages[0]}`);
      }
    }
    return report;
  }

  /**
   * True when a resource marked with `rec`'s credential id on `gateway`, and not
   * bound to it, is garbage: the record is abandoned, or it is settled
   * (`active`, last written before `before`) and holds nothing on that gateway.
   */
  private isGarbageOf(rec: CredentialRecord, gateway: string, before: string): boolean {
    if (rec.status === "abandoned") return true;
    return rec.status === "active" && rec.updatedAt < before && !rec.bindings.some((b) => b.gateway === gateway);
  }

  private async finishUnfinished(rec: CredentialRecord, dryRun: boolean): Promise<ReconcileEntry> {
    const op = rec.status === "revoking" ? "revoke" : (rec.pending?.op ?? "create");
    const entry: ReconcileEntry = { credentialId: rec.id, appKey: rec.appKey, op, action: "", gateways: [], errors: [] };
    // Resources of this credential a gateway holds but the record does not (the crash came between the cloud call and the store write).
    const strays = async (gateways: string[], apis: GatewayApiWithGateway[]) => {
      const out: GatewayBinding[] = [];
      const groups = groupByGateway(apis);
      for (const g of gateways) {
        for (const r of await this.findByCredential(g, rec, groups.get(g) ?? []).catch(() => [] as OwnedResource[])) {
          if (!rec.bindings.some((b) => b.gateway === g && b.nativeId === r.nativeId)) out.push({ gateway: g, nativeId: r.nativeId, resources: {} });
        }
      }
      return out;
    };

    if (op === "create") {
      // An interrupted create: the portal never received it, and writes in flight at the crash may still land. Abandon it and clean up.
      const uncertain = rec.pending?.createOn ?? rec.bindings.map((b) => b.gateway);
      entry.gateways = uniq([...rec.bindings.map((b) => b.gateway), ...uncertain]);
      if (dryRun) {
        entry.action = `would abandon it: revoke ${rec.bindings.length} recorded resource(s) and search ${uncertain.length} gateway(s) for its mark`;
        return entry;
      }
      this.markAbandoned(rec, "interrupted create (the process stopped before it finished)", uncertain, Date.parse(rec.pending?.startedAt ?? rec.createdAt));
      await this.store.save(structuredClone(rec));
      const result = await this.cleanupAbandoned(rec, false);
      entry.errors.push(...result.errors);
      entry.action = result.deleted ? "abandoned, cleaned up, record deleted" : result.errors.length > 0 ? "abandoned; cleanup incomplete, run reconcile again" : `abandoned and cleaned up; record kept until ${rec.abandoned!.settleUntil} (a late write may still land)`;
      return entry;
    }

    if (op === "revoke") {
      const bindings = [...rec.bindings, ...(await strays(rec.bindings.map((b) => b.gateway), rec.apis))];
      entry.gateways = uniq(bindings.map((b) => b.gateway));
      if (dryRun) {
        entry.action = `would revoke on ${bindings.length} gateway resource(s) and delete the record`;
        return entry;
      }
      const left = await this.revokeBindings({ ...rec, bindings });
      entry.errors.push(...left.map((l) => `${l.binding.gateway}: ${l.error.messages[0]}`));
      if (left.length === 0) {
        await this.store.delete(rec.id);
        entry.action = "revoked and deleted";
      } else {
        rec.bindings = left.map((l) => l.binding);
        rec.updatedAt = new Date().toISOString();
        await this.store.save(rec);
        entry.action = "partly revoked; run reconcile again";
      }
      return entry;
    }

    // An interrupted update: roll back to the API set before it.
    const pending = rec.pending!;
    const createdHere = [...rec.bindings.filter((b) => pending.createOn.includes(b.gateway)), ...(await strays(pending.createOn, pending.desiredApis ?? rec.apis))];
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
