/**
 * `@credhook/fakes/aws`: one in-process HTTP server on 127.0.0.1 (port 0)
 * that fakes the AWS control planes the provider drives, for tests, the server's
 * integration tests and `credhook demo`:
 *
 * - API Gateway REST v1 (restJson: `/apikeys`, `/usageplans/…`, `/tags/…`),
 * - Cognito user pools (JSON 1.1: `POST /` with `X-Amz-Target`),
 * - the user pool domain's OAuth2 token endpoint (`POST /oauth2/token`),
 * - STS AssumeRole (awsQuery: form-encoded `POST /`), for the `roleArn` option.
 *
 * Point the unmodified SDK clients (or the provider's `endpoint` option) at
 * {@link AwsFake.url}; use static dummy credentials (requests must be SigV4-signed,
 * the signature is not checked).
 *
 * ```ts
 * const fake = await startAwsFake();
 * const plan = fake.apiGateway.addUsagePlan({ apiStages: [{ apiId: "a1b2c3d4e5", stage: "prod" }] });
 * fake.faults.throttle({ operation: "CreateApiKey", retryAfterS: 1 });
 * await fake.close();
 * ```
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { startFakeServer } from "@credhook/provider-testkit";
import { type FakeClock, systemClock } from "../clock.js";
import { ApiGatewayFake, type ApiGatewayFakeOptions } from "./api-gateway.js";
import { CognitoFake, type CognitoFakeOptions } from "./cognito.js";
import {
  accessDenied,
  AwsFakeError,
  FaultInjector,
  randomId,
  type FakeService,
  type FakeStats,
  type OperationHook,
} from "./faults.js";
import { StsFake, writeStsError } from "./sts.js";

export { ApiGatewayFake } from "./api-gateway.js";
export { CognitoFake } from "./cognito.js";
export { FaultInjector, AwsFakeError, TokenBucket, SlidingWindow } from "./faults.js";
export { StsFake } from "./sts.js";
export type { FakeAssumedRole } from "./sts.js";
export type { FakeApiKey, FakeUsagePlan, FakeApiStage, ApiGatewayFakeOptions } from "./api-gateway.js";
export type { FakeUserPool, FakeUserPoolClient, FakeResourceServer, FakeScope, CognitoFakeOptions } from "./cognito.js";
export type { FakeService, FakeStats, Fault, FaultMatch, ApplyDirective } from "./faults.js";

/** A resource made in the fake by "someone else" (no credhook mark), see {@link AwsFake.createForeign}. */
export interface ForeignResource {
  /** API key id or app client id: what revoke/update would take. */
  nativeId: string;
  /** True while the resource exists exactly as created (state, tags/name, plan memberships). */
  exists(): Promise<boolean>;
}

/** Options of {@link startAwsFake}. */
export interface AwsFakeOptions {
  /** AWS region the fake pretends to be (ARNs, pool ids). @default "us-east-1" */
  region?: string;
  /** Enforce the documented throttling quotas of both services. @default true */
  enforceQuotas?: boolean;
  /**
   * The clock of both services' quotas, injected latency, late applies, timestamps and expiries
   * (STS credentials, Cognito tokens): a `ManualClock` in a test that waits for them. @default systemClock
   */
  clock?: FakeClock;
  /** Extra API Gateway knobs. */
  apiGateway?: Omit<ApiGatewayFakeOptions, "region" | "enforceQuotas" | "clock">;
  /** Extra Cognito knobs. */
  cognito?: Omit<CognitoFakeOptions, "region" | "enforceQuotas" | "clock">;
}

/** A running AWS fake. */
export interface AwsFake {
  /** Base URL, `http://127.0.0.1:PORT`: the `endpoint` of both SDK clients. */
  url: string;
  port: number;
  /** The OAuth2 token endpoint URL (`${url}/oauth2/token`). */
  tokenEndpoint: string;
  /** API Gateway state and seeding. */
  apiGateway: ApiGatewayFake;
  /** Cognito state and seeding. */
  cognito: CognitoFake;
  /** STS AssumeRole: assumable roles and the calls seen. */
  sts: StsFake;
  /** Every signed request received: service, operation, and the access key id it was signed with. */
  requests(): Array<{ service: FakeService | "sts"; operation: string; accessKeyId: string }>;
  /** Fault injection (throttling with Retry-After, 5xx, latency) and per-operation counters. */
  faults: FaultInjector;
  /** Per-operation call and throttle counters. */
  stats(): FakeStats;
  /**
   * Creates, directly in the fake's state, a resource of `credentialType` as
   * another tool or a person would in the same account: an enabled API key
   * without credhook's tags (named `options.name`, default under another
   * tool's prefix; in `options.usagePlanIds`), or an app client with a secret
   * and no mark in its name in `options.userPoolId` (default: the first pool).
   */
  createForeign(
    credentialType: "API_KEY" | "CLIENT_CREDENTIALS",
    options?: { name?: string; usagePlanIds?: string[]; userPoolId?: string; tags?: Record<string, string> },
  ): ForeignResource;
  /** Ids of foreign resources ({@link AwsFake.createForeign}) that were changed or deleted since they were made. */
  foreignTouched(): string[];
  /** Stops the server. */
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function writeError(res: ServerResponse, service: FakeService | "token", err: AwsFakeError): void {
  if (res.destroyed || res.socket?.destroyed) return; // the client gave up (a late write's answer)
  if (res.headersSent) {
    res.end();
    return;
  }
  if (service === "token") {
    res.writeHead(err.status, { "content-type": "application/json", ...err.headers });
    res.end(
      JSON.stringify({
        error: err.status === 429 || err.errorType === "TooManyRequestsException" ? "slow_down" : "server_error",
      }),
    );
  } else if (service === "apigateway") {
    res.writeHead(err.status, {
      "content-type": "application/json",
      "x-amzn-errortype": err.errorType,
      ...err.headers,
    });
    res.end(JSON.stringify({ message: err.message }));
  } else {
    res.writeHead(err.status, { "content-type": "application/x-amz-json-1.1", ...err.headers });
    res.end(JSON.stringify({ __type: err.errorType, message: err.message }));
  }
}

/** Starts the AWS fake on 127.0.0.1, port 0. */
export async function startAwsFake(options: AwsFakeOptions = {}): Promise<AwsFake> {
  const region = options.region ?? "us-east-1";
  const clock = options.clock ?? systemClock;
  const faults = new FaultInjector();
  const apiGateway = new ApiGatewayFake(faults, {
    ...options.apiGateway,
    clock,
    region,
    ...(options.enforceQuotas !== undefined ? { enforceQuotas: options.enforceQuotas } : {}),
  });
  const cognito = new CognitoFake(faults, {
    ...options.cognito,
    clock,
    region,
    ...(options.enforceQuotas !== undefined ? { enforceQuotas: options.enforceQuotas } : {}),
  });

  const sts = new StsFake(clock);
  const log: Array<{ service: FakeService | "sts"; operation: string; accessKeyId: string }> = [];
  const hook =
    (service: FakeService, accessKeyId = ""): OperationHook =>
    async (operation, iam) => {
      if (accessKeyId) log.push({ service, operation, accessKeyId });
      const { delayMs, fault } = faults.take(service, operation);
      if (delayMs > 0) await clock.sleep(delayMs);
      if (!fault) return;
      if (fault.kind === "throttle") {
        faults.countThrottled(operation);
        throw new AwsFakeError(service === "apigateway" ? 429 : 400, "TooManyRequestsException", "Too Many Requests", {
          "retry-after": String(fault.retryAfterS),
        });
      }
      if (fault.kind === "deny") throw accessDenied(service === "apigateway" ? 403 : 400, iam.action, iam.resource);
      throw new AwsFakeError(fault.status, fault.errorType, fault.message);
    };

  const server = await startFakeServer(async (req, res) => {
    const target = req.headers["x-amz-target"];
    const url = new URL(req.url ?? "/", "http://fake");
    const contentType = String(req.headers["content-type"] ?? "");
    const service: FakeService | "token" | "sts" =
      typeof target === "string"
        ? "cognito"
        : url.pathname === "/oauth2/token" && req.method === "POST"
          ? "token"
          : url.pathname === "/" && req.method === "POST" && contentType.startsWith("application/x-www-form-urlencoded")
            ? "sts"
            : "apigateway";
    const accessKeyId = /Credential=([^/]+)\//.exec(String(req.headers.authorization ?? ""))?.[1] ?? "";
    try {
      const body = await readBody(req);
      if (service === "token") return await cognito.handleToken(req, body, res, hook("cognito"));
      if (!String(req.headers.authorization ?? "").startsWith("AWS4-HMAC-SHA256 ")) {
        throw new AwsFakeError(
          403,
          service === "apigateway" ? "MissingAuthenticationTokenException" : "MissingAuthenticationToken",
          "Missing Authentication Token",
        );
      }
      if (service === "sts") {
        log.push({ service, operation: "AssumeRole", accessKeyId });
        return sts.handle(new URLSearchParams(body.toString("utf8")), accessKeyId, res);
      }
      if (service === "cognito") {
        const [prefix, op] = String(target).split(".");
        if (prefix !== "AWSCognitoIdentityProviderService" || !op)
          throw new AwsFakeError(400, "UnknownOperationException", `Unknown target ${String(target)}`);
        return await cognito.handle(op, body, res, hook("cognito", accessKeyId));
      }
      return await apiGateway.handle(req, res, body, hook("apigateway", accessKeyId));
    } catch (err) {
      if (err instanceof AwsFakeError)
        return service === "sts" ? writeStsError(res, err) : writeError(res, service, err);
      if (err instanceof SyntaxError && service !== "sts")
        return writeError(
          res,
          service,
          new AwsFakeError(
            400,
            service === "cognito" ? "SerializationException" : "BadRequestException",
            "Invalid JSON",
          ),
        );
      throw err;
    }
  });

  const foreign: Array<{ nativeId: string; snapshot: () => string; initial: string }> = [];
  const createForeign: AwsFake["createForeign"] = (credentialType, o = {}) => {
    let nativeId: string;
    let snapshot: () => string;
    if (credentialType === "API_KEY") {
      const now = Math.floor(clock.now() / 1000);
      nativeId = randomId(10);
      apiGateway.keys.set(nativeId, {
        id: nativeId,
        value: randomId(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
        name: o.name ?? `other-portal/${randomId(6)}`,
        enabled: true,
        createdDate: now,
        lastUpdatedDate: now,
        tags: { ...(o.tags ?? {}) },
      });
      for (const p of o.usagePlanIds ?? []) apiGateway.plans.get(p)?.keys.add(nativeId);
      const id = nativeId;
      snapshot = () => JSON.stringify([apiGateway.keys.get(id) ?? null, apiGateway.plansOfKey(id)]);
    } else {
      const pool = o.userPoolId ? cognito.pools.get(o.userPoolId) : [...cognito.pools.values()][0];
      if (!pool) throw new Error("createForeign: no user pool");
      const now = clock.now() / 1000;
      nativeId = randomId(26);
      pool.clients.set(nativeId, {
        UserPoolId: pool.Id,
        ClientId: nativeId,
        ClientName: o.name ?? `web-frontend-${randomId(4)}`,
        ClientSecret: randomId(51),
        CreationDate: now,
        LastModifiedDate: now,
        AllowedOAuthFlows: ["client_credentials"],
        AllowedOAuthFlowsUserPoolClient: true,
        AllowedOAuthScopes: [],
      });
      const id = nativeId;
      snapshot = () => JSON.stringify(pool.clients.get(id) ?? null);
    }
    const entry = { nativeId, snapshot, initial: snapshot() };
    foreign.push(entry);
    return { nativeId, exists: async () => entry.snapshot() === entry.initial };
  };

  return {
    createForeign,
    foreignTouched: () => foreign.filter((f) => f.snapshot() !== f.initial).map((f) => f.nativeId),
    url: server.url,
    port: server.port,
    tokenEndpoint: `${server.url}/oauth2/token`,
    apiGateway,
    cognito,
    sts,
    requests: () => log.map((r) => ({ ...r })),
    faults,
    stats: () => faults.snapshot(),
    close: () => server.close(),
  };
}
