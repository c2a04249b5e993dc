/**
 * `MarkedResourceProvider`: the part of a provider that is the same for every gateway on which one
 * credential is one resource carrying credhook's mark (a Kong consumer, an Apigee developer app, a
 * cloud's API key with tags). It keeps the rules of `packages/core/src/provider.ts` in one place:
 *
 * - the ownership check before every change ({@link MarkedResourceProvider.owned}: `NotFound`
 *   otherwise) and before a delete ({@link MarkedResourceProvider.revoke}: `gone`, `not-owned`
 *   logged and left untouched, or `revoked`);
 * - `update` on what the mark says is this credential's, answering the mark's credential id when
 *   core lost the record (an empty `credentialId`);
 * - `findByCredential` and `listOwned` by the mark, `adopt`'s checks (a credential id, the
 *   resource, no other credhook mark), the create's claim of a resource a retried create finds
 *   by its deterministic name, and `partial` on a failure after the create's first write (core
 *   compensates; the provider never cleans up alone);
 * - core's typed errors from what a call threw (a `JsonApiClient`'s `HttpCallFailed` carries
 *   them), and the health probe cached for `healthCacheMs`.
 *
 * A gateway's provider extends it and writes what is the gateway's: `create`, how a resource is
 * found, read, described, changed and deleted, and where its mark lives ({@link Marker}).
 */
import { Conflict, type CredhookError, isCredhookError, NotFound, ValidationError } from "../errors.js";
import type { Logger } from "../logger.js";
import type {
  CredentialSearch,
  GatewayApi,
  OwnedResource,
  Provider,
  ProviderCapabilities,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderResources,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
} from "../provider.js";
import { GatewayErrors, unavailableFrom } from "./gateway-errors.js";
import { CachedHealthProbe } from "./health-cache.js";
import { HttpCallFailed } from "./http-json.js";
import { type Marker, ownsMark } from "./ownership.js";

/** The shape of credhook's credential ids (UUIDs, any case): `adopt` refuses another, `findByCredential` finds nothing for one. */
export const CREDENTIAL_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What a {@link MarkedResourceProvider} is told about its gateway and its resources. */
export interface MarkedResourceSettings<M> {
  /** The gateway's name (its YAML key under `gateways:`): messages start `[gateway <name>]`. */
  gateway: string;
  /** The gateway's logger (core's, with secret options redacted). */
  logger: Logger;
  /** What one resource is called in messages and log lines: `consumer`, `developer app`. */
  kind: string;
  /** The gateway's product in messages: `Kong`, `Apigee`. */
  product: string;
  /** How the mark is written on a resource and read back (`tagMarker`, `attributeMarker`, `keyValueMarker`, or the gateway's own). */
  marker: Marker<M>;
  /** How long a successful health probe is reused, ms (the `healthCacheMs` option); a failure for at most 5 s. */
  healthCacheMs: number;
  /** Frees what the provider holds (its client's limiter), on {@link MarkedResourceProvider.close}. */
  release?: () => Promise<void>;
}

/** What {@link MarkedResourceProvider.find} reads of a credential's reference. */
export type ResourceRef = Pick<ProviderCredentialRef, "nativeId" | "resources" | "credentialType">;

/** A resource as {@link MarkedResourceProvider.listOwned} and `partial` report it. */
export interface ResourceDescription {
  /** The credential's native id that names it (what `create` returned as `nativeId`). */
  nativeId: string;
  /** It in words, for messages and `credhook reconcile`: `consumer <username>`, `developer app <name>`. */
  description: string;
}

/**
 * The shared part of a provider whose credential is one marked resource (see the module comment).
 * @typeParam R the resource as the gateway's API answers it
 * @typeParam M the metadata on it that holds the mark (a tag list, name/value attributes, a tag map)
 */
export abstract class MarkedResourceProvider<R extends object, M> implements Provider {
  /** The provider's capabilities (the gateway's credential types, key import, read-back …). */
  abstract readonly capabilities: ProviderCapabilities;
  /** The gateway's name. */
  protected readonly gateway: string;
  /** The gateway's logger. */
  protected readonly logger: Logger;
  /** Typed errors whose messages name the gateway. */
  protected readonly errors: GatewayErrors;
  /** How the mark is written and read. */
  protected readonly marker: Marker<M>;
  /** What one resource is called in messages (`consumer`). */
  protected readonly kind: string;
  /** The gateway's product in messages (`Kong`). */
  protected readonly product: string;
  private readonly healthProbe: CachedHealthProbe;

  constructor(private readonly settings: MarkedResourceSettings<M>) {
    this.gateway = settings.gateway;
    this.logger = settings.logger;
    this.kind = settings.kind;
    this.product = settings.product;
    this.errors = new GatewayErrors(settings.gateway);
    this.marker = settings.marker;
    this.healthProbe = new CachedHealthProbe(
      async () => {
        try {
          await this.probe();
        } catch (err) {
          throw unavailableFrom(this.gateway, this.toTyped(err), err);
        }
      },
      { successTtlMs: settings.healthCacheMs },
    );
  }

  // ------------------------------------------------------------------ what the gateway's provider writes

  /** Creates the credential (see `Provider.create`); {@link claimed} and {@link afterFirstWrite} keep its rules. */
  abstract create(input: ProviderCreateInput): Promise<ProviderCredential>;
  /**
   * Update's writes: brings the resource (checked to be this gateway's and the credential's) to
   * `input.desired` and the app's name, add before remove.
   * @returns the resource as it is now, when the write answered it (its resources are what update reports), or nothing (the resource's did not change)
   * @throws InvalidReference | PolicyViolation before any write; what a call threw
   */
  protected abstract apply(resource: R, credentialId: string, input: ProviderUpdateInput): Promise<R | undefined>;

  // The resource's hooks, one line each in a provider (function properties: `protected readonly find = (ref: ResourceRef) => …`).
  /** The resource `ref` names, whoever made it; undefined when there is none. @throws what a call threw */
  protected abstract readonly find: (ref: ResourceRef) => Promise<R | undefined>;
  /** The metadata of a resource that holds the mark (its tags, its attributes). */
  protected abstract readonly marksOf: (resource: R) => M | null | undefined;
  /** A resource's native id and description. */
  protected abstract readonly describe: (resource: R) => ResourceDescription;
  /** What core keeps of a resource (ids, names: never a secret); `ref` is the reference it was found by, if any. */
  protected abstract readonly resourcesOf: (resource: R, ref?: ResourceRef) => ProviderResources;
  /** Revoke's write: deletes the resource (checked to be this gateway's and `ref`'s credential's). @throws what a call threw */
  protected abstract readonly remove: (resource: R, ref: ProviderCredentialRef) => Promise<unknown>;
  /** The resources that may be a credential's, found by its mark or a name derived from its id (filtered by the mark here). */
  protected abstract readonly findMarked: (credentialId: string, search: CredentialSearch) => Promise<R[]>;
  /** Every resource that may carry this gateway's mark, every page read (filtered by the mark here). */
  protected abstract readonly listMarked: () => Promise<R[]>;
  /** One cheap authenticated call for `health()`. @throws what the call threw */
  protected abstract readonly probe: () => Promise<unknown>;

  // ------------------------------------------------------------------ the shared rules

  /**
   * Core's typed error for what a call threw: a `JsonApiClient`'s {@link HttpCallFailed} carries it,
   * a typed error is itself. Override it to map an SDK's errors (`toTypedError`).
   * @throws err itself when it is neither: a fault of the code, not an answer of the gateway
   */
  protected toTyped(err: unknown): CredhookError {
    if (err instanceof HttpCallFailed) return err.typed;
    if (isCredhookError(err)) return err;
    throw err;
  }

  /** Runs `fn`; what it throws comes out as core's typed error ({@link toTyped}). */
  protected async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw this.toTyped(err);
    }
  }

  /** The credential id this gateway's mark on `resource` names (`""`: the gateway's mark alone), undefined: not this gateway's. */
  protected markOf(resource: R): string | undefined {
    return this.marker.credentialOf(this.marksOf(resource));
  }

  /**
   * The resource of `ref` when it carries this gateway's mark and, unless `ref.credentialId` is
   * empty, that credential's: what update, readSecret and rotateSecret change.
   * @returns it and the credential id its mark names
   * @throws NotFound it does not exist, or is not this gateway's (this credential's): nothing was changed
   */
  protected async owned(
    ref: ResourceRef & Pick<ProviderCredentialRef, "credentialId">,
  ): Promise<{ resource: R; credentialId: string }> {
    const resource = await this.run(() => this.find(ref));
    if (!resource) throw this.errors.error(NotFound, `${this.kind} ${ref.nativeId} does not exist on ${this.product}`);
    const credentialId = this.markOf(resource);
    if (!ownsMark(credentialId, ref.credentialId)) {
      const which = credentialId !== undefined ? ` for credential ${ref.credentialId}` : "";
      throw this.errors.error(
        NotFound,
        `${this.describe(resource).description} does not carry this gateway's mark${which}; nothing was changed`,
      );
    }
    return { resource, credentialId };
  }

  /**
   * The resource of `ref` when it is this gateway's (and, when `ref.credentialId` is set, that
   * credential's): what revoke and setEnabled act on. `gone` when there is none; `not-owned`
   * (logged, left untouched) when it is someone else's.
   * @throws what a call threw
   */
  protected async ownedOr(ref: ProviderCredentialRef): Promise<R | "gone" | "not-owned"> {
    const resource = await this.find(ref);
    if (!resource) return "gone";
    if (ownsMark(this.markOf(resource), ref.credentialId)) return resource;
    this.logger.info(
      { nativeId: ref.nativeId, credentialId: ref.credentialId },
      `${this.kind} is not this gateway's (or not this credential's); left untouched`,
    );
    return "not-owned";
  }

  /**
   * Applies the app's new API and plan set ({@link apply}) to the credential's resource.
   * @throws NotFound the resource is gone, or not this gateway's (this credential's)
   * @throws InvalidReference | PolicyViolation what {@link apply} refuses before any write
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const { resource, credentialId } = await this.owned(input);
    const now = (await this.run(() => this.apply(resource, credentialId, input))) ?? resource;
    return { resources: this.resourcesOf(now, input), ...(input.credentialId === "" ? { credentialId } : {}) };
  }

  /** Deletes the credential's resource ({@link remove}) when it is this gateway's and, unless `ref.credentialId` is empty, that credential's. */
  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    return this.run(async () => {
      const resource = await this.ownedOr(ref);
      if (typeof resource === "string") return resource;
      await this.remove(resource, ref);
      this.logger.info({ nativeId: ref.nativeId }, `credential revoked on ${this.product}`);
      return "revoked";
    });
  }

  /** What a create made for `search.credentialId` (nothing for an id that is not credhook's), by its mark. */
  async findByCredential(search: CredentialSearch): Promise<OwnedResource[]> {
    if (!CREDENTIAL_ID_PATTERN.test(search.credentialId)) return [];
    const found = await this.run(() => this.findMarked(search.credentialId, search));
    return this.ownedResources(found).filter((o) => o.credentialId === search.credentialId.toLowerCase());
  }

  /** Everything that carries this gateway's mark. */
  async listOwned(): Promise<OwnedResource[]> {
    return this.ownedResources(await this.run(() => this.listMarked()));
  }

  /** `resources` that carry this gateway's mark, as listOwned reports them. */
  private ownedResources(resources: R[]): OwnedResource[] {
    return resources.flatMap((r) => {
      const credentialId = this.markOf(r);
      return credentialId === undefined ? [] : [{ ...this.describe(r), ...(credentialId ? { credentialId } : {}) }];
    });
  }

  /**
   * `adopt` of a provider that offers it: checks that `ref.credentialId` is credhook's, that the
   * resource exists and that it carries no credhook mark but this credential's (already adopted:
   * its resources, nothing written), then calls `mark`, which adds the mark, and logs the adoption.
   * @param mark writes this gateway's and `ref.credentialId`'s mark on the resource (the resource itself last); answers its resources
   * @throws ValidationError `ref.credentialId` is not a UUID
   * @throws NotFound there is no such resource (`mark` may throw it too)
   * @throws Conflict it carries another gateway's or credential's mark
   */
  protected async adoptWith(
    ref: ProviderCredentialRef & { apis: GatewayApi[] },
    mark: (resource: R) => Promise<ProviderResources>,
  ): Promise<ProviderUpdateResult> {
    if (!CREDENTIAL_ID_PATTERN.test(ref.credentialId))
      throw new ValidationError([
        this.errors.message(`adopt needs credhook's credential id (a UUID), got '${ref.credentialId}'`),
      ]);
    return this.run(async () => {
      const resource = await this.find(ref);
      if (!resource)
        throw this.errors.error(NotFound, `there is no ${this.kind} ${ref.nativeId} on ${this.product} to adopt`);
      if (this.markOf(resource) === ref.credentialId.toLowerCase())
        return { resources: this.resourcesOf(resource, ref) };
      const other = this.marker.anyMarkOf(this.marksOf(resource));
      if (other)
        throw this.errors.error(
          Conflict,
          `${this.describe(resource).description} carries another credhook mark (${other}); it is not adopted`,
        );
      const resources = await mark(resource);
      this.logger.warn(
        { nativeId: ref.nativeId, credentialId: ref.credentialId },
        `${this.kind} made outside credhook adopted: credhook now updates and revokes it`,
      );
      return { resources };
    });
  }

  /**
   * The resource a create's first write made, or found under the credential's deterministic name
   * (a retried create's 409): it is this credential's when it carries its mark.
   * @param name the name it was created under, for the message
   * @throws Conflict the name is taken by a resource without this credential's mark
   */
  protected claimed(resource: R | undefined, credentialId: string, name: string): R {
    if (resource && this.markOf(resource) === credentialId.toLowerCase()) return resource;
    throw this.errors.error(Conflict, `the name ${name} is taken by a ${this.kind} without this credential's mark`);
  }

  /**
   * Runs a create's writes after its first one: what fails carries `partial` (`resource`, which
   * exists) as core's typed error, for core to compensate — the provider never cleans up alone.
   * @param resources what `partial` reports of it @default resourcesOf(resource)
   */
  protected async afterFirstWrite<T>(
    resource: R,
    fn: () => Promise<T>,
    resources: ProviderResources = this.resourcesOf(resource),
  ): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const typed = this.toTyped(err);
      typed.partial = { nativeId: this.describe(resource).nativeId, resources };
      throw typed;
    }
  }

  /** One cheap authenticated call ({@link probe}), reused for `healthCacheMs`. @throws UpstreamUnavailable */
  health(): Promise<void> {
    return this.healthProbe.check();
  }

  /** Frees what the provider holds (its client's rate limiter). */
  async close(): Promise<void> {
    await this.settings.release?.();
  }
}
