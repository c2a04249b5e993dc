/**
 * API_KEY on Amazon API Gateway (REST v1): one API key per credential,
 * attached to the usage plans of the app's APIs with usage plan keys.
 *
 * Ownership: every key credhook creates carries the tags `credhook:gateway`
 * and `credhook:credential-id`; update, revoke and read-back read them first
 * and never touch a key without this gateway's (and the credential's) mark.
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
  ValidationError,
  type CredhookError,
} from "@credhook/core/errors";
import type {
  GatewayApi,
  OwnedResource,
  ProviderCreateInput,
  ProviderCredential,
  ProviderCredentialRef,
  ProviderUpdateInput,
  ProviderUpdateResult,
  RevokeOutcome,
} from "@credhook/core/provider";
import { gatewayError, gatewayMessage, rejectionsOf, settleAll } from "@credhook/core/provider-kit";
import { awsErrorName, isAwsConflict, isAwsNotFound, toTypedError, reportPartial } from "./errors.js";
import { apiKeyName, apiKeyTags, describeCredential, ownsApiKey, TAGS, tagValue } from "./naming.js";
import { limitEveryAttempt, mayHaveLanded, retryOnlyUnapplied, sdkConfig, type Runtime } from "./runtime.js";
import type { ApiKeyResources } from "./types.js";

/** Unique, sorted usage plan ids of `apis`. */
export function plansOf(apis: GatewayApi[]): string[] {
  return [...new Set(apis.flatMap((a) => a.usagePlans))].sort();
}

/** Number of HTTP attempts the SDK made for a call that failed (1 when unknown). */
function attemptsOf(err: unknown): number {
  return (err as { $metadata?: { attempts?: number } } | null)?.$metadata?.attempts ?? 1;
}

/** `apiId:stage` of every stage a usage plan covers. */
type Stages = Set<string>;

/** The API key half of the AWS provider. */
export class ApiKeyIssuer {
  /** Every call but CreateApiKey without an imported value; the SDK retries throttling, timeouts and 5xx. */
  private readonly client: APIGatewayClient;
  /** CreateApiKey without an imported value: not idempotent, so retried only when an attempt was certainly not applied. */
  private readonly createClient: APIGatewayClient;

  constructor(private readonly rt: Runtime) {
    const config = sdkConfig(rt.options, "apiGateway", rt.gateway);
    this.client = new APIGatewayClient(config);
    this.createClient = new APIGatewayClient({ ...config, retryStrategy: retryOnlyUnapplied(rt.options.maxAttempts) });
    for (const c of [this.client, this.createClient])
      limitEveryAttempt(c, rt, (op) => rt.limiters.apiGatewayOperation(op));
  }

  private get gw(): string {
    return this.rt.gateway;
  }

  private resources(key: { id: string; name: string }, usagePlans: string[]): ApiKeyResources {
    return {
      kind: "apiKey",
      region: this.rt.options.region,
      keyId: key.id,
      name: key.name,
      usagePlans: [...usagePlans].sort(),
    };
  }

  /**
   * CreateApiKey (enabled, imported or generated value, name, description,
   * tags with this gateway's and the credential's mark), then
   * CreateUsagePlanKey for every plan in parallel.
   *
   * Never deletes what it made: a failure after the key exists throws with
   * `partial` (the key), and a CreateApiKey that may have been applied unseen
   * (timeout, no answer, 5xx) throws with `outcomeUnknown: true`; core revokes
   * both. With an imported value the SDK retries CreateApiKey after a timeout
   * too (a second copy cannot exist: values are unique, and a 409 finds the
   * copy an earlier attempt made by its name, value and tags).
   * @throws InvalidReference an unknown usage plan, or two plans on one API stage (with `partial`)
   * @throws Conflict the imported value belongs to another key in this account and region
   * @throws Throttled | UpstreamError | UpstreamUnavailable | UpstreamTimeout AWS failures
   */
  async create(input: ProviderCreateInput): Promise<ProviderCredential> {
    const name = apiKeyName(this.rt.options.namePrefix, input.app);
    const imported = input.apiKeyValue !== undefined;
    let key: ApiKey;
    try {
      key = await (imported ? this.client : this.createClient).send(
        new CreateApiKeyCommand({
          name,
          description: describeCredential(input.app, this.gw, input.credentialId),
          enabled: true,
          ...(imported ? { value: input.apiKeyValue } : {}),
          tags: apiKeyTags(input.app, this.gw, input.credentialId),
        }),
      );
    } catch (err) {
      if (isAwsConflict(err) && imported) {
        key = await this.adoptEarlierAttempt(name, input.credentialId, input.apiKeyValue!, err);
      } else {
        // Imported values: earlier attempts (timeouts, 5xx) were retried and may land later.
        const unknown = mayHaveLanded(err) || (imported && attemptsOf(err) > 1);
        throw reportPartial(
          toTypedError(err, `CreateApiKey "${name}"`, this.gw, [input.apiKeyValue]),
          undefined,
          unknown,
        );
      }
    }
    const keyId = key.id!;
    const value = key.value ?? input.apiKeyValue;
    const plans = plansOf(input.apis);
    const attached: string[] = [];
    const partial = () => ({ nativeId: keyId, resources: this.resources({ id: keyId, name }, attached) });
    if (!value)
      throw gatewayError(this.gw, UpstreamError, `CreateApiKey returned no key value`, {
        partial: partial(),
        outcomeUnknown: false,
      });
    try {
      await this.attachAll(keyId, plans, input.apis, attached);
    } catch (err) {
      // The key exists and is known: core revokes it (its plan memberships go with it).
      throw reportPartial(err as CredhookError, partial(), false);
    }
    this.rt.logger.info({ keyId, usagePlans: plans, credentialId: input.credentialId }, "API key created");
    return { nativeId: keyId, apiKey: value, resources: this.resources({ id: keyId, name }, plans) };
  }

  /**
   * A CreateApiKey with an imported value answered 409: the value exists. An
   * earlier attempt of this create (a timeout whose write landed) made it when
   * the key has this name, value and marks; then it is this create's key.
   * @throws Conflict the value belongs to another key
   */
  private async adoptEarlierAttempt(
    name: string,
    credentialId: string,
    value: string,
    conflict: unknown,
  ): Promise<ApiKey> {
    let own: ApiKey | undefined;
    try {
      for await (const k of this.listKeys(name, true)) {
        if (k.name === name && k.value === value && ownsApiKey(k.tags, this.gw, credentialId)) own = k;
      }
    } catch (err) {
      // Whether the value is ours is unknown: core searches by the credential's mark.
      throw reportPartial(toTypedError(err, `GetApiKeys "${name}"`, this.gw, [value]), undefined, true);
    }
    if (!own) {
      throw gatewayError(
        this.gw,
        Conflict,
        `an API key with the imported value already exists in ${this.rt.options.region} (owned by another app)`,
        {
          cause: conflict,
          outcomeUnknown: false,
        },
      );
    }
    this.rt.logger.warn(
      { keyId: own.id, credentialId },
      "CreateApiKey answered 409: an earlier attempt of this create made the key; using it",
    );
    return own;
  }

  private async *listKeys(nameQuery: string, includeValues: boolean): AsyncGenerator<ApiKey> {
    let position: string | undefined;
    do {
      const page = await this.client
        .send(new GetApiKeysCommand({ nameQuery, includeValues, limit: 500, ...(position ? { position } : {}) }))
        .catch((err: unknown) => {
          throw toTypedError(err, `GetApiKeys "${nameQuery}"`, this.gw);
        });
      yield* page.items ?? [];
      position = page.position;
    } while (position);
  }

  /** Attaches `keyId` to every plan in parallel (each attempt rate-limited); records successes in `attached`; throws the most telling failure. */
  private async attachAll(keyId: string, plans: string[], apis: GatewayApi[], attached: string[] = []): Promise<void> {
    await this.allOrFirstFailure(
      plans.map(async (p) => {
        await this.attach(keyId, p, apis);
        attached.push(p);
      }),
    );
  }

  /**
   * CreateUsagePlanKey. A 409 is success only when GetUsagePlanKey confirms the
   * key is in the plan (already attached); otherwise — like a 400 — the plan
   * cannot take the key (another plan of the key covers one of its API
   * stages, or the key is in 10 plans): InvalidReference.
   */
  private async attach(keyId: string, planId: string, apis: GatewayApi[]): Promise<void> {
    const apiIds = apis.filter((a) => a.usagePlans.includes(planId)).map((a) => a.id);
    const where = `usage plan ${planId}${apiIds.length ? ` (API ${apiIds.join(", ")})` : ""}`;
    try {
      await this.client.send(new CreateUsagePlanKeyCommand({ usagePlanId: planId, keyId, keyType: "API_KEY" }));
    } catch (err) {
      if (isAwsConflict(err) && (await this.isAttached(keyId, planId))) return;
      if (isAwsNotFound(err)) {
        // 404 names either the plan or the key: ask which.
        if (!(await this.planStages(planId)))
          throw gatewayError(this.gw, InvalidReference, `${where} does not exist`, { cause: err });
        throw gatewayError(this.gw, NotFound, `API key ${keyId} does not exist`, { cause: err });
      }
      if (awsErrorName(err) === "BadRequestException" || isAwsConflict(err)) {
        // e.g. two plans on one API stage, or more than 10 plans for one key
        throw gatewayError(this.gw, InvalidReference, `cannot attach the key to ${where}: ${(err as Error).message}`, {
          cause: err,
        });
      }
      throw toTypedError(err, `CreateUsagePlanKey ${where}`, this.gw);
    }
  }

  /** DeleteUsagePlanKey; not attached (404) is success. */
  private async detach(keyId: string, planId: string): Promise<void> {
    try {
      await this.client.send(new DeleteUsagePlanKeyCommand({ usagePlanId: planId, keyId }));
    } catch (err) {
      if (isAwsNotFound(err)) return;
      throw toTypedError(err, `DeleteUsagePlanKey usage plan ${planId}`, this.gw);
    }
  }

  /** GetUsagePlanKey: is the key in the plan? */
  private async isAttached(keyId: string, planId: string): Promise<boolean> {
    try {
      await this.client.send(new GetUsagePlanKeyCommand({ usagePlanId: planId, keyId }));
      return true;
    } catch (err) {
      if (isAwsNotFound(err)) return false;
      throw toTypedError(err, `GetUsagePlanKey usage plan ${planId}`, this.gw);
    }
  }

  /** GetUsagePlan: the `apiId:stage` pairs the plan covers, or undefined when the plan does not exist. */
  private async planStages(planId: string): Promise<Stages | undefined> {
    try {
      const plan = await this.client.send(new GetUsagePlanCommand({ usagePlanId: planId }));
      return new Set((plan.apiStages ?? []).map((s) => `${s.apiId}:${s.stage}`));
    } catch (err) {
      if (isAwsNotFound(err)) return undefined;
      throw toTypedError(err, `GetUsagePlan ${planId}`, this.gw);
    }
  }

  /**
   * GetApiKey and the ownership check. A missing key, a key without this
   * gateway's (and the credential's) mark, and a disabled key under
   * `revokeMode: disable` are all NotFound.
   */
  private async ownedKey(ref: ProviderCredentialRef, includeValue: boolean): Promise<ApiKey> {
    const keyId = ref.nativeId;
    const key = await this.getKey(keyId, includeValue);
    if (!key) throw gatewayError(this.gw, NotFound, `API key ${keyId} does not exist`);
    if (!ownsApiKey(key.tags, this.gw, ref.credentialId)) {
      this.rt.logger.warn(
        { keyId, credentialId: ref.credentialId },
        "API key lacks this gateway's or this credential's mark: left untouched",
      );
      throw gatewayError(
        this.gw,
        NotFound,
        `API key ${keyId} is not credhook's key of this ${ref.credentialId ? "credential" : "gateway"} (no matching credhook:gateway / credhook:credential-id tags); bring it under credhook with \`credhook adopt\``,
      );
    }
    if (key.enabled === false && this.rt.options.revokeMode === "disable") {
      throw gatewayError(this.gw, NotFound, `API key ${keyId} is disabled (revoked)`);
    }
    return key;
  }

  /** GetApiKey, or undefined when there is no such key. */
  private async getKey(keyId: string, includeValue: boolean): Promise<ApiKey | undefined> {
    try {
      return await this.client.send(new GetApiKeyCommand({ apiKey: keyId, includeValue }));
    } catch (err) {
      if (isAwsNotFound(err)) return undefined;
      throw toTypedError(err, `GetApiKey ${keyId}`, this.gw);
    }
  }

  /**
   * Applies ADDED / REMOVED / NONE and a rename to a key carrying this
   * gateway's mark. ADDED plans are checked to exist first (nothing changes
   * when one is unknown); NONE plans are read and re-attached when drifted.
   *
   * Order — never less access than before on failure: every plan is attached
   * before any is detached. The one exception is a move between two plans
   * that cover the same API stage (AWS lets a key reference one plan per API
   * stage and refuses the second with 400/409): there the old plan is detached
   * just before the new one is attached; if that attach fails, core's inverse
   * update (this method, desired → previous) re-attaches the old plan. The
   * method is idempotent, so an inverse after any partial failure converges.
   * With an empty `credentialId` (core lost the record) the gateway's mark
   * suffices, and the result carries the credential id of the key's tag.
   * @throws NotFound the key does not exist, is not this gateway's/credential's, or is disabled under revokeMode disable
   * @throws InvalidReference an ADDED usage plan is unknown
   */
  async update(input: ProviderUpdateInput): Promise<ProviderUpdateResult> {
    const keyId = input.nativeId;
    const key = await this.ownedKey(input, false);
    const desiredPlans = plansOf(input.desired);
    const added = new Set<string>();
    const removed = new Set<string>([
      ...plansOf(input.previous),
      ...((input.resources.usagePlans as string[] | undefined) ?? []),
    ]);
    for (const c of input.changes) {
      for (const p of c.usagePlans) {
        if (c.action === "ADDED" || p.action === "ADDED") added.add(p.id);
        if (c.action === "REMOVED" || p.action === "REMOVED") removed.add(p.id);
      }
    }
    for (const p of desiredPlans) removed.delete(p);
    const toAdd = desiredPlans.filter((p) => added.has(p));
    const toCheck = desiredPlans.filter((p) => !added.has(p));

    const stages = new Map<string, Stages>();
    const addStages = await Promise.all(toAdd.map(async (p) => [p, await this.planStages(p)] as const));
    const missing = addStages.filter(([, s]) => !s).map(([p]) => p);
    if (missing.length > 0) {
      const msgs = missing.map((p) => gatewayMessage(this.gw, `usage plan ${p} does not exist`));
      throw new InvalidReference(msgs[0]!, { gateway: this.gw, messages: msgs.slice(1) });
    }
    for (const [p, s] of addStages) stages.set(p, s!);
    const drifted = (
      await Promise.all(toCheck.map(async (p) => ((await this.isAttached(keyId, p)) ? undefined : p)))
    ).filter((p): p is string => !!p);
    const targets = [...toAdd, ...drifted];

    // Which attaches must wait for a detach: a removed plan covering one of the target's API stages.
    const detachFirst = new Set<string>();
    const attachLate = new Set<string>();
    if (targets.length > 0 && removed.size > 0) {
      const missingStages = [...drifted, ...removed].filter((p) => !stages.has(p));
      for (const [p, s] of await Promise.all(missingStages.map(async (p) => [p, await this.planStages(p)] as const)))
        stages.set(p, s ?? new Set());
      for (const t of targets) {
        for (const r of removed) {
          if ([...stages.get(t)!].some((s) => stages.get(r)!.has(s))) {
            detachFirst.add(r);
            attachLate.add(t);
          }
        }
      }
    }

    await this.allOrFirstFailure(
      targets.filter((p) => !attachLate.has(p)).map((p) => this.attach(keyId, p, input.desired)),
    );
    await this.allOrFirstFailure([...detachFirst].map((p) => this.detach(keyId, p)));
    await this.allOrFirstFailure([...attachLate].map((p) => this.attach(keyId, p, input.desired)));
    await this.allOrFirstFailure([...removed].filter((p) => !detachFirst.has(p)).map((p) => this.detach(keyId, p)));
    if (drifted.length > 0)
      this.rt.logger.warn(
        { keyId, usagePlans: drifted },
        "API key was missing from usage plans it should be in: re-attached (drift repaired)",
      );

    const name = apiKeyName(this.rt.options.namePrefix, input.app);
    const description = describeCredential(
      input.app,
      this.gw,
      input.credentialId || String(key.tags?.[TAGS.credentialId] ?? ""),
    );
    const patch: PatchOperation[] = [];
    if (key.name !== name) patch.push({ op: "replace", path: "/name", value: name });
    if (input.previousAppName !== undefined && key.description !== description)
      patch.push({ op: "replace", path: "/description", value: description });
    if (patch.length > 0) {
      await this.client
        .send(new UpdateApiKeyCommand({ apiKey: keyId, patchOperations: patch }))
        .catch((err: unknown) => {
          throw toTypedError(err, `UpdateApiKey ${keyId} (rename)`, this.gw);
        });
    }
    const appTag = tagValue(input.app.appName);
    if (key.tags?.[TAGS.app] !== appTag) await this.tag(keyId, { [TAGS.app]: appTag });
    this.rt.logger.info(
      { keyId, usagePlans: desiredPlans, detached: [...removed], renamed: patch.length > 0 },
      "API key updated",
    );
    // A record the store lost (empty credential id): tell core the id the key's mark carries, so record and mark agree again.
    const marked = input.credentialId === "" ? key.tags?.[TAGS.credentialId] : undefined;
    return {
      resources: this.resources({ id: keyId, name }, desiredPlans),
      ...(marked ? { credentialId: marked } : {}),
    };
  }

  /** TagResource on the key (adds or replaces the given tags). */
  private async tag(keyId: string, tags: Record<string, string>): Promise<void> {
    const arn = `arn:aws:apigateway:${this.rt.options.region}::/apikeys/${keyId}`;
    await this.client.send(new TagResourceCommand({ resourceArn: arn, tags })).catch((err: unknown) => {
      throw toTypedError(err, `TagResource ${keyId}`, this.gw);
    });
  }

  /** Waits for every promise (core's settleAll); throws the first failure (an InvalidReference first, with the others' messages) once all settled. */
  private async allOrFirstFailure(promises: Array<Promise<unknown>>): Promise<void> {
    const errors = rejectionsOf(await settleAll(promises, (p) => p)) as CredhookError[];
    if (errors.length === 0) return;
    const invalid = errors.filter((e) => e instanceof InvalidReference);
    if (invalid.length > 1)
      throw new InvalidReference(invalid[0]!.message, {
        gateway: this.gw,
        messages: invalid.slice(1).map((e) => e.message),
        cause: invalid[0],
      });
    throw invalid[0] ?? errors[0];
  }

  /**
   * The API key of `ref` (GetApiKey, without its value) when it carries this gateway's mark (and, when
   * `ref.credentialId` is set, the credential's): `gone` when there is no such key, `not-owned` (logged at warn,
   * left untouched) when it is not ours. `what` names the operation in the log line.
   */
  private async markedKey(ref: ProviderCredentialRef, what: string): Promise<ApiKey | "gone" | "not-owned"> {
    const key = await this.getKey(ref.nativeId, false);
    if (!key) return "gone";
    if (ownsApiKey(key.tags, this.gw, ref.credentialId)) return key;
    this.rt.logger.warn(
      { keyId: ref.nativeId, credentialId: ref.credentialId },
      `${what} of an API key without this gateway's or this credential's mark: left untouched`,
    );
    return "not-owned";
  }

  /**
   * Reads the key's mark, then DeleteApiKey (or enabled=false under
   * revokeMode disable). A key without this gateway's (and, when
   * `ref.credentialId` is set, the credential's) mark is left untouched.
   * @returns `revoked`; `gone` when the key does not exist (or is already disabled under revokeMode disable); `not-owned` when it is not this gateway's/credential's
   */
  async revoke(ref: ProviderCredentialRef): Promise<RevokeOutcome> {
    const keyId = ref.nativeId;
    const mode = this.rt.options.revokeMode;
    const key = await this.markedKey(ref, "revoke");
    if (key === "gone") this.rt.logger.info({ keyId }, "API key already gone: revoke is a no-op");
    if (typeof key === "string") return key;
    if (mode === "disable" && key.enabled === false) return "gone";
    try {
      if (mode === "disable") {
        await this.client.send(
          new UpdateApiKeyCommand({
            apiKey: keyId,
            patchOperations: [{ op: "replace", path: "/enabled", value: "false" }],
          }),
        );
      } else {
        await this.client.send(new DeleteApiKeyCommand({ apiKey: keyId }));
      }
    } catch (err) {
      if (isAwsNotFound(err)) return "gone";
      throw toTypedError(err, `${mode === "disable" ? "UpdateApiKey (disable)" : "DeleteApiKey"} ${keyId}`, this.gw);
    }
    this.rt.logger.info({ keyId, mode }, "API key revoked");
    return "revoked";
  }

  /**
   * Reads the key's mark, then UpdateApiKey `replace /enabled` to `enabled`. A key without this gateway's
   * (and the credential's) mark is left untouched.
   * @returns `revoked` (the flag is now `enabled`), `gone` (no such key), `not-owned`
   */
  async setEnabled(ref: ProviderCredentialRef, enabled: boolean): Promise<RevokeOutcome> {
    const keyId = ref.nativeId;
    const key = await this.markedKey(ref, "enable/disable");
    if (typeof key === "string") return key;
    if (key.enabled === enabled) return "revoked"; // already so
    try {
      await this.client.send(
        new UpdateApiKeyCommand({
          apiKey: keyId,
          patchOperations: [{ op: "replace", path: "/enabled", value: String(enabled) }],
        }),
      );
    } catch (err) {
      if (isAwsNotFound(err)) return "gone";
      throw toTypedError(err, `UpdateApiKey (${enabled ? "enable" : "disable"}) ${keyId}`, this.gw);
    }
    this.rt.logger.info({ keyId, enabled }, enabled ? "API key enabled" : "API key disabled");
    return "revoked";
  }

  /** GetApiKey includeValue=true of a key with this gateway's and the credential's mark. @throws NotFound the key is gone, not ours, or disabled under revokeMode disable */
  async readSecret(ref: ProviderCredentialRef): Promise<{ apiKey: string }> {
    const key = await this.ownedKey(ref, true);
    if (!key.value) throw gatewayError(this.gw, UpstreamError, `GetApiKey ${ref.nativeId} returned no value`);
    return { apiKey: key.value };
  }

  /**
   * The keys carrying this gateway's mark and `credentialId`'s: GetApiKeys
   * with the name the credential's app gives (`nameQuery`), filtered by tags —
   * no scan of the account's keys. Disabled keys count only under
   * revokeMode delete (under disable they are revoked already).
   */
  async findByCredential(credentialId: string, app: ProviderCredentialRef["app"]): Promise<OwnedResource[]> {
    const out: OwnedResource[] = [];
    if (!credentialId) return out;
    for await (const k of this.listKeys(apiKeyName(this.rt.options.namePrefix, app), false)) {
      if (!ownsApiKey(k.tags, this.gw, credentialId)) continue;
      if (k.enabled === false && this.rt.options.revokeMode === "disable") continue;
      out.push({ nativeId: k.id!, credentialId, description: `API key "${k.name}"${k.enabled ? "" : " (disabled)"}` });
    }
    return out;
  }

  /**
   * Brings a key made outside credhook under this gateway: TagResource with
   * credhook's tags (this gateway, `ref.credentialId`, app and developer), then
   * attaches the key to the usage plans of `ref.apis` it is not in yet (adopt
   * never detaches). Idempotent.
   * @throws NotFound no key `ref.nativeId`
   * @throws Conflict the key carries another gateway's or another credential's mark
   */
  async adopt(ref: ProviderCredentialRef & { apis: GatewayApi[] }): Promise<ProviderUpdateResult> {
    if (!ref.credentialId)
      throw new ValidationError([gatewayMessage(this.gw, `adopt needs the credential id to mark the key with`)]);
    const keyId = ref.nativeId;
    const key = await this.getKey(keyId, false);
    if (!key) throw gatewayError(this.gw, NotFound, `API key ${keyId} does not exist`);
    const gatewayTag = key.tags?.[TAGS.gateway];
    const credentialTag = key.tags?.[TAGS.credentialId];
    if (
      (gatewayTag !== undefined && gatewayTag !== tagValue(this.gw)) ||
      (credentialTag !== undefined && credentialTag !== ref.credentialId)
    ) {
      throw gatewayError(
        this.gw,
        Conflict,
        `API key ${keyId} already carries credhook's mark of ${gatewayTag !== tagValue(this.gw) ? `gateway '${gatewayTag}'` : `credential ${credentialTag}`}: it is not free to adopt`,
      );
    }
    await this.tag(keyId, apiKeyTags(ref.app, this.gw, ref.credentialId));
    const plans = plansOf(ref.apis);
    const missing = (
      await Promise.all(plans.map(async (p) => ((await this.isAttached(keyId, p)) ? undefined : p)))
    ).filter((p): p is string => !!p);
    await this.attachAll(keyId, missing, ref.apis);
    this.rt.logger.info(
      { keyId, credentialId: ref.credentialId, attached: missing },
      "API key adopted: marked with credhook's tags",
    );
    return { resources: this.resources({ id: keyId, name: key.name ?? "" }, plans) };
  }

  /** Every key with this gateway's mark whose name starts with `<namePrefix>/` (GetApiKeys, paginated). */
  async listOwned(): Promise<OwnedResource[]> {
    const out: OwnedResource[] = [];
    for await (const k of this.listKeys(`${this.rt.options.namePrefix}/`, false)) {
      if (!ownsApiKey(k.tags, this.gw, "")) continue;
      const credentialId = k.tags?.[TAGS.credentialId];
      out.push({
        nativeId: k.id!,
        ...(credentialId ? { credentialId } : {}),
        description: `API key "${k.name}"${k.enabled ? "" : " (disabled)"}`,
      });
    }
    return out;
  }

  /** One cheap read: GetApiKeys limit=1. */
  async probe(): Promise<void> {
    await this.client.send(new GetApiKeysCommand({ limit: 1 })).catch((err: unknown) => {
      throw toTypedError(err, "GetApiKeys (health)", this.gw);
    });
  }

  /** Releases the SDK clients' sockets. */
  close(): void {
    this.client.destroy();
    this.createClient.destroy();
  }
}
