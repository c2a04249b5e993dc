/**
 * API_KEY on Amazon API Gateway (REST v1): one API key per credential,
 * attached to the usage plans of the app's APIs with usage plan keys.
 *
 * API reference: https://docs.aws.amazon.com/apigateway/latest/api/API_Operations.html
 */
import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  DeleteUsagePlanKeyCommand,
  GetApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanCommand,
  GetUsagePlanKeyCommand,
  TagResourceCommand,
  UpdateApiKeyCommand,
  type ApiKey,
  type PatchOperation,
} from "@aws-sdk/client-api-gateway";
import {
  Conflict,
  InvalidReference,
  NotFound,
  UpstreamError,
  type CredhookError,
  type GatewayApi,
  type OwnedResource,
  type ProviderCreateInput,
  type ProviderCredential,
  type ProviderCredentialRef,
  type ProviderUpdateInput,
  type ProviderUpdateResult,
} from "@credhook/core";
import { awsErrorName, isAwsConflict, isAwsNotFound, mapAwsError } from "./errors.js";
import { apiKeyName, apiKeyTags, describeCredential, TAGS, tagValue } from "./naming.js";
import { sdkConfig, type Runtime } from "./runtime.js";
import type { ApiKeyResources } from "./types.js";

/** Unique, sorted usage plan ids of `apis`. */
export function plansOf(apis: GatewayApi[]): string[] {
  return [...new Set(apis.flatMap((a) => a.usagePlans))].sort();
}

/** The API key half of the AWS provider. */
export class ApiKeyIssuer {
  private readonly client: APIGatewayClient;

  constructor(private readonly rt: Runtime) {
    this.client = new APIGatewayClient(sdkConfig(rt.options, "apiGateway", rt.gateway));
  }

  private get gw(): string {
    return this.rt.gateway;
  }

  /** A call subject to the shared 10 rps quota. */
  private other<T>(fn: () => Promise<T>): Promise<T> {
    return this.rt.limited(this.rt.limiters.apiGateway, fn);
  }

  private resources(key: { id: string; name: string }, usagePlans: string[]): ApiKeyResources {
    return { kind: "apiKey", region: this.rt.options.region, keyId: key.id, name: key.name, usagePlans: [...usagePlans].sort() };
  }

  /**
   * CreateApiKey (enabled, imported or generated value, name, description,
   * tags), then CreateUsagePlanKey for every plan in parallel. Any failure
   * after the key exists deletes the key before the error is thrown.
   * @throws InvalidReference an unknown usage plan, or two plans on one API stage
   * @throws Conflict the imported value belongs to another key in this account and region
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    const name = apiKeyName(this.rt.options.namePrefix, input.app);
    const secrets = [input.apiKeyValue];
    let key: ApiKey;
    try {
      key = await this.rt.limited(this.rt.limiters.createApiKey, () =>
        this.client.send(
          new CreateApiKeyCommand({
            name,
            description: describeCredential(input.app, this.gw, input.credentialId),
            enabled: true,
            ...(input.apiKeyValue !== undefined ? { value: input.apiKeyValue } : {}),
            tags: apiKeyTags(input.app, this.gw, input.credentialId),
          }),
        ),
      );
    } catch (err) {
      if (isAwsConflict(err) && input.apiKeyValue !== undefined) {
        // A retried create (timeout after AWS created it) finds its own key again by name, tag and value.
        const own = await this.findOwnKey(name, input.credentialId, input.apiKeyValue);
        if (!own) {
          throw new Conflict(`[gateway ${this.gw}] an API key with the imported value already exists in ${this.rt.options.region} (owned by another app)`, {
            gateway: this.gw,
            cause: err,
          });
        }
        this.rt.logger.warn({ keyId: own.id, credentialId: input.credentialId }, "adopting the API key a previous attempt of this create left");
        key = own;
      } else {
        throw mapAwsError(err, `CreateApiKey "${name}"`, this.gw, secrets);
      }
    }
    const keyId = key.id!;
    const value = key.value ?? input.apiKeyValue;
    const plans = plansOf(input.apis);
    try {
      if (!value) throw new UpstreamError(`[gateway ${this.gw}] CreateApiKey returned no key value`, { gateway: this.gw });
      await this.attachAll(keyId, plans, input.apis);
    } catch (err) {
      await this.rollback(keyId);
      throw err;
    }
    this.rt.logger.info({ keyId, usagePlans: plans, credentialId: input.credentialId }, "API key created");
    return { nativeId: keyId, apiKey: value, resources: this.resources({ id: keyId, name }, plans) };
  }

  /** Deletes a key created by a create that is failing; never throws (an orphan is logged with its id). */
  private async rollback(keyId: string): Promise<void> {
    try {
      await this.rt.limited(this.rt.limiters.deleteApiKey, () => this.client.send(new DeleteApiKeyCommand({ apiKey: keyId })));
      this.rt.logger.info({ keyId }, "rolled back the API key of a failed create");
    } catch (err) {
      if (isAwsNotFound(err)) return;
      this.rt.logger.error({ keyId, awsError: awsErrorName(err) }, "could not roll back the API key of a failed create: delete it by hand");
    }
  }

  private async findOwnKey(name: string, credentialId: string, value: string): Promise<ApiKey | undefined> {
    for await (const k of this.listKeys(name, true)) {
      if (k.name === name && k.value === value && k.tags?.[TAGS.credentialId] === credentialId) return k;
    }
    return undefined;
  }

  private async *listKeys(nameQuery: string, includeValues: boolean): AsyncGenerator<ApiKey> {
    let position: string | undefined;
    do {
      const page = await this.other(() =>
        this.client.send(new GetApiKeysCommand({ nameQuery, includeValues, limit: 500, ...(position ? { position } : {}) })),
      ).catch((err: unknown) => {
        throw mapAwsError(err, `GetApiKeys "${nameQuery}"`, this.gw);
      });
      yield* page.items ?? [];
      position = page.position;
    } while (position);
  }

  /** Attaches `keyId` to every plan in parallel (each call rate-limited); collects every failure, throws the most telling. */
  private async attachAll(keyId: string, plans: string[], apis: GatewayApi[]): Promise<void> {
    const results = await Promise.allSettled(plans.map((p) => this.attach(keyId, p, apis)));
    const errors = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => r.reason as CredhookError);
    if (errors.length === 0) return;
    const invalid = errors.filter((e) => e instanceof InvalidReference);
    if (invalid.length > 0) {
      throw new InvalidReference(invalid[0]!.message, { gateway: this.gw, messages: invalid.slice(1).map((e) => e.message), cause: invalid[0] });
    }
    throw errors[0];
  }

  /** CreateUsagePlanKey; already attached (409) is success. */
  private async attach(keyId: string, planId: string, apis: GatewayApi[]): Promise<void> {
    const apiIds = apis.filter((a) => a.usagePlans.includes(planId)).map((a) => a.id);
    const where = `usage plan ${planId}${apiIds.length ? ` (API ${apiIds.join(", ")})` : ""}`;
    try {
      await this.other(() => this.client.send(new CreateUsagePlanKeyCommand({ usagePlanId: planId, keyId, keyType: "API_KEY" })));
    } catch (err) {
      if (isAwsConflict(err)) return;
      if (isAwsNotFound(err)) {
        // 404 names either the plan or the key: ask which.
        if (!(await this.planExists(planId))) throw new InvalidReference(`[gateway ${this.gw}] ${where} does not exist`, { gateway: this.gw, cause: err });
        throw new NotFound(`[gateway ${this.gw}] API key ${keyId} does not exist`, { gateway: this.gw, cause: err });
      }
      if (awsErrorName(err) === "BadRequestException") {
        // e.g. two plans on one API stage, or more than 10 plans for one key
        throw new InvalidReference(`[gateway ${this.gw}] cannot attach the key to ${where}: ${(err as Error).message}`, { gateway: this.gw, cause: err });
      }
      throw mapAwsError(err, `CreateUsagePlanKey ${where}`, this.gw);
    }
  }

  /** DeleteUsagePlanKey; not attached (404) is success. */
  private async detach(keyId: string, planId: string): Promise<void> {
    try {
      await this.other(() => this.client.send(new DeleteUsagePlanKeyCommand({ usagePlanId: planId, keyId })));
    } catch (err) {
      if (isAwsNotFound(err)) return;
      throw mapAwsError(err, `DeleteUsagePlanKey usage plan ${planId}`, this.gw);
    }
  }

  /** GetUsagePlanKey, and CreateUsagePlanKey when the key is missing from the plan (drift). Returns true when it repaired. */
  private async ensureAttached(keyId: string, planId: string, apis: GatewayApi[]): Promise<boolean> {
    try {
      await this.other(() => this.client.send(new GetUsagePlanKeyCommand({ usagePlanId: planId, keyId })));
      return false;
    } catch (err) {
      if (!isAwsNotFound(err)) throw mapAwsError(err, `GetUsagePlanKey usage plan ${planId}`, this.gw);
    }
    await this.attach(keyId, planId, apis);
    this.rt.logger.warn({ keyId, usagePlanId: planId }, "API key was missing from a usage plan it should be in: re-attached (drift repaired)");
    return true;
  }

  private async planExists(planId: string): Promise<boolean> {
    try {
      await this.other(() => this.client.send(new GetUsagePlanCommand({ usagePlanId: planId })));
      return true;
    } catch (err) {
      if (isAwsNotFound(err)) return false;
      throw mapAwsError(err, `GetUsagePlan ${planId}`, this.gw);
    }
  }

  /** GetApiKey; a missing key, or a disabled one under `revokeMode: disable`, is NotFound. */
  private async liveKey(keyId: string, includeValue: boolean): Promise<ApiKey> {
    let key: ApiKey;
    try {
      key = await this.other(() => this.client.send(new GetApiKeyCommand({ apiKey: keyId, includeValue })));
    } catch (err) {
      if (isAwsNotFound(err)) throw new NotFound(`[gateway ${this.gw}] API key ${keyId} does not exist`, { gateway: this.gw, cause: err });
      throw mapAwsError(err, `GetApiKey ${keyId}`, this.gw);
    }
    if (key.enabled === false && this.rt.options.revokeMode === "disable") {
      throw new NotFound(`[gateway ${this.gw}] API key ${keyId} is disabled (revoked)`, { gateway: this.gw });
    }
    return key;
  }

  /**
   * Applies ADDED / REMOVED / NONE and a rename. ADDED plans are checked to
   * exist first (nothing changes when one is unknown); REMOVED plans are
   * detached before plans are attached (a key may be in one plan per API stage,
   * so moving between two plans of one stage needs that order); NONE plans are
   * read and re-attached when drifted.
   * @throws NotFound the key does not exist (or is disabled under revokeMode disable)
   * @throws InvalidReference an ADDED usage plan is unknown
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const keyId = input.nativeId;
    const key = await this.liveKey(keyId, false);
    const desiredPlans = plansOf(input.desired);
    const added = new Set<string>();
    const removed = new Set<string>([...plansOf(input.previous), ...((input.resources.usagePlans as string[] | undefined) ?? [])]);
    for (const c of input.changes) {
      for (const p of c.usagePlans) {
        if (c.action === "ADDED" || p.action === "ADDED") added.add(p.id);
        if (c.action === "REMOVED" || p.action === "REMOVED") removed.add(p.id);
      }
    }
    for (const p of desiredPlans) removed.delete(p);
    const toAdd = desiredPlans.filter((p) => added.has(p));
    const toCheck = desiredPlans.filter((p) => !added.has(p));

    const missing = (await Promise.all(toAdd.map(async (p) => ((await this.planExists(p)) ? undefined : p)))).filter((p): p is string => !!p);
    if (missing.length > 0) {
      const msgs = missing.map((p) => `[gateway ${this.gw}] usage plan ${p} does not exist`);
      throw new InvalidReference(msgs[0]!, { gateway: this.gw, messages: msgs.slice(1) });
    }

    await this.settleAll([...removed].map((p) => this.detach(keyId, p)));
    await this.settleAll([...toAdd.map((p) => this.attach(keyId, p, input.desired)), ...toCheck.map((p) => this.ensureAttached(keyId, p, input.desired))]);

    const name = apiKeyName(this.rt.options.namePrefix, input.app);
    const description = describeCredential(input.app, this.gw, input.credentialId || String(key.tags?.[TAGS.credentialId] ?? ""));
    const patch: PatchOperation[] = [];
    if (key.name !== name) patch.push({ op: "replace", path: "/name", value: name });
    if (input.previousAppName !== undefined && key.description !== description) patch.push({ op: "replace", path: "/description", value: description });
    if (patch.length > 0) {
      await this.other(() => this.client.send(new UpdateApiKeyCommand({ apiKey: keyId, patchOperations: patch }))).catch((err: unknown) => {
        throw mapAwsError(err, `UpdateApiKey ${keyId} (rename)`, this.gw);
      });
    }
    const appTag = tagValue(input.app.appName);
    if (key.tags?.[TAGS.app] !== appTag) {
      const arn = `arn:aws:apigateway:${this.rt.options.region}::/apikeys/${keyId}`;
      await this.other(() => this.client.send(new TagResourceCommand({ resourceArn: arn, tags: { [TAGS.app]: appTag } }))).catch((err: unknown) => {
        throw mapAwsError(err, `TagResource ${keyId}`, this.gw);
      });
    }
    this.rt.logger.info({ keyId, usagePlans: desiredPlans, detached: [...removed], renamed: patch.length > 0 }, "API key updated");
    return { resources: this.resources({ id: keyId, name }, desiredPlans) };
  }

  /** Waits for every promise; throws the first failure (an InvalidReference first) once all settled. */
  private async settleAll(promises: Array<Promise<unknown>>): Promise<void> {
    const results = await Promise.allSettled(promises);
    const errors = results.filter((r): r is PromiseRejectedResult => r.status === "rejected").map((r) => r.reason as CredhookError);
    if (errors.length > 0) throw errors.find((e) => e instanceof InvalidReference) ?? errors[0];
  }

  /** DeleteApiKey (or enabled=false under revokeMode disable); a key already gone is success. */
  async revoke(ref: ProviderCredentialRef): Promise<void> {
    const keyId = ref.nativeId;
    try {
      if (this.rt.options.revokeMode === "disable") {
        await this.other(() => this.client.send(new UpdateApiKeyCommand({ apiKey: keyId, patchOperations: [{ op: "replace", path: "/enabled", value: "false" }] })));
      } else {
        await this.rt.limited(this.rt.limiters.deleteApiKey, () => this.client.send(new DeleteApiKeyCommand({ apiKey: keyId })));
      }
      this.rt.logger.info({ keyId, mode: this.rt.options.revokeMode }, "API key revoked");
    } catch (err) {
      if (isAwsNotFound(err)) {
        this.rt.logger.info({ keyId }, "API key already gone: revoke is a no-op");
        return;
      }
      throw mapAwsError(err, `${this.rt.options.revokeMode === "disable" ? "UpdateApiKey (disable)" : "DeleteApiKey"} ${keyId}`, this.gw);
    }
  }

  /** GetApiKey includeValue=true. @throws NotFound the key is gone (or disabled under revokeMode disable) */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey: string }> {
    const key = await this.liveKey(ref.nativeId, true);
    if (!key.value) throw new UpstreamError(`[gateway ${this.gw}] GetApiKey ${ref.nativeId} returned no value`, { gateway: this.gw });
    return { apiKey: key.value };
  }

  /** Every key whose name starts with `<namePrefix>/` (GetApiKeys, paginated). */
  async listOwned(): Promise<OwnedResource[]> {
    const out: OwnedResource[] = [];
    for await (const k of this.listKeys(`${this.rt.options.namePrefix}/`, false)) {
      const credentialId = k.tags?.[TAGS.credentialId];
      out.push({ nativeId: k.id!, ...(credentialId ? { credentialId } : {}), description: `API key "${k.name}"${k.enabled ? "" : " (disabled)"}` });
    }
    return out;
  }

  /** One cheap read: GetApiKeys limit=1. */
  async probe(): Promise<void> {
    await this.other(() => this.client.send(new GetApiKeysCommand({ limit: 1 }))).catch((err: unknown) => {
      throw mapAwsError(err, "GetApiKeys (health)", this.gw);
    });
  }

  /** Releases the SDK client's sockets. */
  close(): void {
    this.client.destroy();
  }
}
