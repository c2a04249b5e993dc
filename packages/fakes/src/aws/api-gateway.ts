/**
 * An in-memory fake of the Amazon API Gateway REST (v1) control plane for API
 * keys and usage plans, speaking the restJson protocol the unmodified
 * `@aws-sdk/client-api-gateway` uses.
 *
 * Faithful to https://docs.aws.amazon.com/apigateway/latest/api/ in what
 * credhook relies on: key values (20–128 characters, unique per account and
 * region, 409 "API Key already exists"), one usage plan per API stage per key,
 * ≤ 10 plans per key, 10,000 keys per region, `GetApiKeys` name-prefix filter and
 * `position` pagination (limit ≤ 500, default 25), epoch-second timestamps,
 * errors in `x-amzn-ErrorType` + `{"message"}`, and the throttling quotas
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html):
 * CreateApiKey 5 rps, DeleteApiKey 5 rps, other operations 10 rps burst 40.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { type FakeClock, systemClock } from "../clock.js";
import {
  applyAndAnswer,
  AwsFakeError,
  decodeToken,
  encodeToken,
  randomId,
  SlidingWindow,
  TokenBucket,
  type FaultInjector,
  type OperationHook,
} from "./faults.js";

/** A stage of a REST API that a usage plan covers. */
export interface FakeApiStage {
  apiId: string;
  stage: string;
}

/** A usage plan as the fake holds it. */
export interface FakeUsagePlan {
  id: string;
  name: string;
  apiStages: FakeApiStage[];
  /** Key ids in the plan. */
  keys: Set<string>;
}

/** An API key as the fake holds it. */
export interface FakeApiKey {
  id: string;
  value: string;
  name: string;
  description?: string;
  enabled: boolean;
  customerId?: string;
  createdDate: number;
  lastUpdatedDate: number;
  tags: Record<string, string>;
}

/** Quota knobs of the fake (per account and region in AWS). */
export interface ApiGatewayFakeOptions {
  /** Enforce the documented throttling quotas. @default true */
  enforceQuotas?: boolean;
  /** Maximum keys per region (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html). @default 10000 */
  maxKeys?: number;
  /** AWS region used in ARNs. @default "us-east-1" */
  region?: string;
  /**
   * How the 5 rps quotas of CreateApiKey and DeleteApiKey are enforced:
   * `token-bucket` (5 tokens, refilled at 5/s) or `sliding-window` (strict: at
   * most 5 accepted calls in any sliding 1-second window, both ends
   * included). Other operations: a token bucket of 10/s, burst 40.
   * @default "token-bucket"
   */
  quotaModel?: "token-bucket" | "sliding-window";
  /**
   * The clock of the quotas, late applies (`lateApply`) and `createdDate`/`lastUpdatedDate`: a test
   * that checks "5 per second" holds or advances a `ManualClock` instead of racing the wall clock.
   * @default systemClock
   */
  clock?: FakeClock;
  /** Test control: at most this many items per GetApiKeys / GetUsagePlanKeys page whatever `limit` asks (to exercise `position` paging with few keys). */
  maxPageSize?: number;
}

const MAX_PLANS_PER_KEY = 10;
const VALUE_RE = /^[A-Za-z0-9]{20,128}$/;

/** Parses a restJson path into the API Gateway operation name and its path parameters. */
function route(method: string, path: string): { op: string; params: string[] } | undefined {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const [a, b, c, d] = parts;
  if (a === "apikeys") {
    if (parts.length === 1 && method === "POST") return { op: "CreateApiKey", params: [] };
    if (parts.length === 1 && method === "GET") return { op: "GetApiKeys", params: [] };
    if (parts.length === 2 && method === "GET") return { op: "GetApiKey", params: [b!] };
    if (parts.length === 2 && method === "PATCH") return { op: "UpdateApiKey", params: [b!] };
    if (parts.length === 2 && method === "DELETE") return { op: "DeleteApiKey", params: [b!] };
  }
  if (a === "usageplans") {
    if (parts.length === 2 && method === "GET") return { op: "GetUsagePlan", params: [b!] };
    if (parts.length === 3 && c === "keys" && method === "POST") return { op: "CreateUsagePlanKey", params: [b!] };
    if (parts.length === 3 && c === "keys" && method === "GET") return { op: "GetUsagePlanKeys", params: [b!] };
    if (parts.length === 4 && c === "keys" && method === "GET") return { op: "GetUsagePlanKey", params: [b!, d!] };
    if (parts.length === 4 && c === "keys" && method === "DELETE")
      return { op: "DeleteUsagePlanKey", params: [b!, d!] };
  }
  if (a === "tags" && parts.length === 2 && method === "PUT") return { op: "TagResource", params: [b!] };
  if (a === "account" && parts.length === 1 && method === "GET") return { op: "GetAccount", params: [] };
  return undefined;
}

function pageOf<T>(
  items: T[],
  limitRaw: string | null,
  position: string | null,
  maxPageSize = 500,
): { page: T[]; position?: string } {
  const asked = limitRaw === null ? 25 : Number(limitRaw);
  if (!Number.isInteger(asked) || asked < 1 || asked > 500)
    throw new AwsFakeError(400, "BadRequestException", "Invalid limit: must be between 1 and 500");
  const limit = Math.min(asked, maxPageSize);
  const start = position === null ? 0 : decodeToken(position);
  if (start === undefined) throw new AwsFakeError(400, "BadRequestException", "Invalid position parameter");
  const page = items.slice(start, start + limit);
  return start + limit < items.length ? { page, position: encodeToken(start + limit) } : { page };
}

/**
 * The API Gateway fake's state and request handler. Tests seed usage plans
 * with {@link ApiGatewayFake.addUsagePlan}, inspect keys and attachments, and
 * simulate drift with {@link ApiGatewayFake.detachKey}.
 */
export class ApiGatewayFake {
  /** Keys by id. */
  readonly keys = new Map<string, FakeApiKey>();
  /** Usage plans by id. */
  readonly plans = new Map<string, FakeUsagePlan>();
  private readonly region: string;
  private readonly enforceQuotas: boolean;
  private readonly maxKeys: number;
  private readonly maxPageSize: number | undefined;
  private readonly buckets: Record<"CreateApiKey" | "DeleteApiKey" | "other", { take(): number }>;
  private readonly clock: FakeClock;

  constructor(
    private readonly faults: FaultInjector,
    options: ApiGatewayFakeOptions = {},
  ) {
    this.region = options.region ?? "us-east-1";
    this.enforceQuotas = options.enforceQuotas ?? true;
    this.maxKeys = options.maxKeys ?? 10_000;
    const clock = (this.clock = options.clock ?? systemClock);
    this.maxPageSize = options.maxPageSize;
    const perSecond = () =>
      options.quotaModel === "sliding-window" ? new SlidingWindow(5, 1000, clock) : new TokenBucket(5, 5, clock);
    this.buckets = { CreateApiKey: perSecond(), DeleteApiKey: perSecond(), other: new TokenBucket(10, 40, clock) };
  }

  /** Creates a usage plan covering `apiStages` (id: 6 random characters unless given). */
  addUsagePlan(plan: { id?: string; name?: string; apiStages: FakeApiStage[] }): FakeUsagePlan {
    const id = plan.id ?? randomId(6);
    const p: FakeUsagePlan = { id, name: plan.name ?? `plan-${id}`, apiStages: plan.apiStages, keys: new Set() };
    this.plans.set(id, p);
    return p;
  }

  /** Usage plan ids `keyId` is attached to, sorted. */
  plansOfKey(keyId: string): string[] {
    return [...this.plans.values()]
      .filter((p) => p.keys.has(keyId))
      .map((p) => p.id)
      .sort();
  }

  /** Detaches a key from a plan behind the provider's back (simulates drift). */
  detachKey(planId: string, keyId: string): void {
    this.plans.get(planId)?.keys.delete(keyId);
  }

  /**
   * Handles one request already routed to API Gateway: the operation hook
   * (injected latency and faults), the quota, then the operation applied as
   * the fault injector directs (late, or followed by a failure).
   */
  async handle(req: IncomingMessage, res: ServerResponse, body: Buffer, operationHook: OperationHook): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const method = req.method ?? "GET";
    const r = route(method, url.pathname);
    if (!r) throw new AwsFakeError(404, "UnknownOperationException", `No operation for ${method} ${url.pathname}`);
    await operationHook(r.op, {
      action: `apigateway:${method}`,
      resource: `arn:aws:apigateway:${this.region}::${url.pathname}`,
    });
    if (this.enforceQuotas) {
      const bucket = r.op === "CreateApiKey" || r.op === "DeleteApiKey" ? this.buckets[r.op] : this.buckets.other;
      const wait = bucket.take();
      if (wait > 0) {
        this.faults.countThrottled(r.op);
        throw new AwsFakeError(429, "TooManyRequestsException", "Too Many Requests", {
          "retry-after": String(Math.max(1, Math.ceil(wait))),
        });
      }
    }
    const input = body.length > 0 ? (JSON.parse(body.toString("utf8")) as Record<string, unknown>) : {};
    await applyAndAnswer(
      this.faults.takeApply("apigateway", r.op),
      res,
      () => this.apply(r.op, r.params, input, url.searchParams),
      ({ status, payload }) => {
        res.writeHead(
          status,
          status === 204 ? {} : { "content-type": "application/json", "x-amzn-requestid": randomId(32) },
        );
        res.end(payload === undefined ? "" : JSON.stringify(payload));
      },
      this.clock,
    );
  }

  /** Applies one operation to the state; returns the HTTP status and body to answer with. */
  private apply(
    op: string,
    params: string[],
    input: Record<string, unknown>,
    q: URLSearchParams,
  ): { status: number; payload?: unknown } {
    const [p0, p1] = params;
    switch (op) {
      case "CreateApiKey":
        return { status: 201, payload: this.keyJson(this.createApiKey(input), true) };
      case "GetApiKey":
        return { status: 200, payload: this.keyJson(this.key(p0!), q.get("includeValue") === "true") };
      case "GetApiKeys": {
        const name = q.get("name");
        const customerId = q.get("customerId");
        const items = [...this.keys.values()]
          .filter(
            (k) => (name === null || k.name.startsWith(name)) && (customerId === null || k.customerId === customerId),
          )
          .sort((x, y) => x.createdDate - y.createdDate || x.id.localeCompare(y.id));
        const { page, position } = pageOf(items, q.get("limit"), q.get("position"), this.maxPageSize);
        const includeValues = q.get("includeValues") === "true";
        return {
          status: 200,
          payload: { item: page.map((k) => this.keyJson(k, includeValues)), ...(position ? { position } : {}) },
        };
      }
      case "UpdateApiKey":
        return { status: 200, payload: this.keyJson(this.updateApiKey(p0!, input), false) };
      case "DeleteApiKey": {
        this.key(p0!);
        this.keys.delete(p0!);
        // Deleting a key removes it from every usage plan.
        for (const plan of this.plans.values()) plan.keys.delete(p0!);
        return { status: 202 };
      }
      case "GetUsagePlan": {
        const plan = this.plan(p0!);
        return {
          status: 200,
          payload: {
            id: plan.id,
            name: plan.name,
            apiStages: plan.apiStages.map((s) => ({ apiId: s.apiId, stage: s.stage })),
          },
        };
      }
      case "CreateUsagePlanKey":
        return { status: 201, payload: this.createUsagePlanKey(p0!, input) };
      case "GetUsagePlanKey": {
        const plan = this.plan(p0!);
        const key = this.keys.get(p1!);
        if (!key || !plan.keys.has(p1!))
          throw new AwsFakeError(404, "NotFoundException", "Invalid Usage Plan Key ID specified");
        return { status: 200, payload: { id: key.id, type: "API_KEY", name: key.name } };
      }
      case "GetUsagePlanKeys": {
        const plan = this.plan(p0!);
        const name = q.get("nameQuery");
        const items = [...plan.keys]
          .map((id) => this.keys.get(id)!)
          .filter((k) => name === null || k.name.startsWith(name));
        const { page, position } = pageOf(items, q.get("limit"), q.get("position"), this.maxPageSize);
        return {
          status: 200,
          payload: {
            item: page.map((k) => ({ id: k.id, type: "API_KEY", name: k.name })),
            ...(position ? { position } : {}),
          },
        };
      }
      case "DeleteUsagePlanKey": {
        const plan = this.plan(p0!);
        if (!plan.keys.has(p1!))
          throw new AwsFakeError(404, "NotFoundException", "Invalid Usage Plan Key ID specified");
        plan.keys.delete(p1!);
        return { status: 202 };
      }
      case "TagResource": {
        const m = /^arn:aws:apigateway:([^:]+)::\/apikeys\/([^/]+)$/.exec(p0!);
        if (!m) throw new AwsFakeError(400, "BadRequestException", `Invalid resource ARN: ${p0}`);
        const key = this.key(m[2]!);
        const tags = (input.tags ?? {}) as Record<string, string>;
        this.validateTags(tags);
        if (Object.keys({ ...key.tags, ...tags }).length > 50)
          throw new AwsFakeError(400, "BadRequestException", "Too many tags: at most 50");
        key.tags = { ...key.tags, ...tags };
        return { status: 204 };
      }
      case "GetAccount":
        return {
          status: 200,
          payload: {
            cloudwatchRoleArn: null,
            throttleSettings: { burstLimit: 5000, rateLimit: 10000 },
            features: ["UsagePlans"],
            apiKeyVersion: "4",
          },
        };
      default:
        throw new AwsFakeError(404, "UnknownOperationException", `Unsupported operation ${op}`);
    }
  }

  private key(id: string): FakeApiKey {
    const key = this.keys.get(id);
    if (!key) throw new AwsFakeError(404, "NotFoundException", "Invalid API Key identifier specified");
    return key;
  }

  private plan(id: string): FakeUsagePlan {
    const plan = this.plans.get(id);
    if (!plan) throw new AwsFakeError(404, "NotFoundException", "Invalid Usage Plan ID specified");
    return plan;
  }

  private keyJson(k: FakeApiKey, includeValue: boolean) {
    return {
      id: k.id,
      ...(includeValue ? { value: k.value } : {}),
      name: k.name,
      ...(k.description !== undefined ? { description: k.description } : {}),
      ...(k.customerId !== undefined ? { customerId: k.customerId } : {}),
      enabled: k.enabled,
      createdDate: k.createdDate,
      lastUpdatedDate: k.lastUpdatedDate,
      stageKeys: [],
      tags: { ...k.tags },
    };
  }

  private validateTags(tags: Record<string, string>): void {
    for (const [k, v] of Object.entries(tags)) {
      if (k.length === 0 || k.length > 128 || k.toLowerCase().startsWith("aws:"))
        throw new AwsFakeError(400, "BadRequestException", `Invalid tag key: ${k}`);
      if (typeof v !== "string" || v.length > 256 || !/^[\p{L}\p{N}\s_.:/=+\-@]*$/u.test(v))
        throw new AwsFakeError(400, "BadRequestException", `Invalid tag value for key ${k}`);
    }
    if (Object.keys(tags).length > 50) throw new AwsFakeError(400, "BadRequestException", "Too many tags: at most 50");
  }

  private createApiKey(input: Record<string, unknown>): FakeApiKey {
    if (this.keys.size >= this.maxKeys)
      throw new AwsFakeError(429, "LimitExceededException", `API key quota of ${this.maxKeys} reached`);
    let value = input.value;
    if (value === undefined || value === null)
      value = randomId(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789");
    if (typeof value !== "string" || !VALUE_RE.test(value)) {
      throw new AwsFakeError(
        400,
        "BadRequestException",
        "API Key value should be at least 20 characters long and at most 128, alphanumeric",
      );
    }
    for (const k of this.keys.values())
      if (k.value === value) throw new AwsFakeError(409, "ConflictException", "API Key already exists");
    const name = input.name;
    if (name !== undefined && (typeof name !== "string" || name.length > 1024))
      throw new AwsFakeError(400, "BadRequestException", "Invalid API Key name");
    const description = input.description;
    if (description !== undefined && (typeof description !== "string" || description.length > 1024))
      throw new AwsFakeError(400, "BadRequestException", "Invalid API Key description");
    const tags = (input.tags ?? {}) as Record<string, string>;
    this.validateTags(tags);
    const now = Math.floor(this.clock.now() / 1000);
    const key: FakeApiKey = {
      id: randomId(10),
      value,
      name: (name as string | undefined) ?? "",
      ...(description !== undefined ? { description: description as string } : {}),
      ...(typeof input.customerId === "string" ? { customerId: input.customerId } : {}),
      enabled: input.enabled === true,
      createdDate: now,
      lastUpdatedDate: now,
      tags: { ...tags },
    };
    this.keys.set(key.id, key);
    return key;
  }

  private updateApiKey(id: string, input: Record<string, unknown>): FakeApiKey {
    const key = this.key(id);
    const ops = (input.patchOperations ?? []) as Array<{ op?: string; path?: string; value?: string }>;
    const next = { ...key };
    for (const o of ops) {
      if (o.op !== "replace")
        throw new AwsFakeError(
          400,
          "BadRequestException",
          `Invalid patch operation specified. Must be 'replace' for path ${o.path}`,
        );
      switch (o.path) {
        case "/name":
          next.name = o.value ?? "";
          break;
        case "/description":
          next.description = o.value ?? "";
          break;
        case "/customerId":
          next.customerId = o.value ?? "";
          break;
        case "/enabled":
          if (o.value !== "true" && o.value !== "false")
            throw new AwsFakeError(400, "BadRequestException", "Invalid value for /enabled: must be true or false");
          next.enabled = o.value === "true";
          break;
        default:
          throw new AwsFakeError(400, "BadRequestException", `Invalid patch path ${o.path}`);
      }
    }
    next.lastUpdatedDate = Math.floor(this.clock.now() / 1000);
    this.keys.set(id, next);
    return next;
  }

  private createUsagePlanKey(planId: string, input: Record<string, unknown>) {
    const plan = this.plan(planId);
    if (input.keyType !== "API_KEY")
      throw new AwsFakeError(400, "BadRequestException", "Invalid key type specified. Must be API_KEY");
    const key = this.key(String(input.keyId));
    if (plan.keys.has(key.id)) throw new AwsFakeError(409, "ConflictException", "Usage Plan Key already exists");
    const current = [...this.plans.values()].filter((p) => p.keys.has(key.id));
    if (current.length >= MAX_PLANS_PER_KEY)
      throw new AwsFakeError(
        400,
        "BadRequestException",
        `An API key can be in at most ${MAX_PLANS_PER_KEY} usage plans`,
      );
    for (const other of current) {
      for (const s of other.apiStages) {
        if (plan.apiStages.some((t) => t.apiId === s.apiId && t.stage === s.stage)) {
          throw new AwsFakeError(
            400,
            "BadRequestException",
            `Usage Plan ${plan.id} cannot be added because API Key ${key.id} cannot reference multiple Usage Plans with the same API Stage: ${s.apiId}:${s.stage}`,
          );
        }
      }
    }
    plan.keys.add(key.id);
    return { id: key.id, type: "API_KEY", name: key.name };
  }

  /** ARN of a key, as TagResource expects it. */
  keyArn(keyId: string): string {
    return `arn:aws:apigateway:${this.region}::/apikeys/${keyId}`;
  }
}
