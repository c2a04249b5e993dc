/**
 * credhook on AWS Lambda: the same express app as `credhook serve`, behind
 * API Gateway REST APIs (Lambda proxy integration, payload format 1.0), HTTP APIs
 * (payload format 2.0) and Lambda function URLs (the 2.0 shape), adapted by
 * `serverless-http` (https://github.com/dougmoscrop/serverless-http): base64
 * bodies are decoded, the caller's `sourceIp` is the client address (failed-login
 * limit), `requestContext.requestId` becomes the request id, and every answer —
 * ErrorResponse bodies included — is returned as the event format expects.
 *
 * Deploy `export { handler } from "@credhook/server/lambda"` (see docs/deploy.md, "AWS Lambda").
 * Configuration: `CREDHOOK_CONFIG` (a file in the bundle), else the embedded
 * default; `CREDHOOK_DATA_DIR` defaults to `/tmp/credhook` (the only writable
 * directory); `CREDHOOK_BASE_PATH` strips a stage or mapping prefix from paths.
 *
 * The store belongs on PostgreSQL (`store: { postgres: "${DATABASE_URL}" }`):
 * Lambda runs many execution environments at once and recycles them, so an
 * SQLite file in one environment's `/tmp` would lose its records and not share
 * them — fit for trying the handler only. Lambda runs no background loop:
 * schedule {@link reconcileHandler} (e.g. every minute with EventBridge
 * Scheduler) to finish what dead environments left and sweep abandoned creates.
 *
 * Event formats: https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html#api-gateway-simple-proxy-for-lambda-input-format,
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html
 */
import type { IncomingMessage } from "node:http";
import type {
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  Context,
} from "aws-lambda";
import { destination, type Logger as PinoLogger } from "pino";
import serverless from "serverless-http";
import { ConfigError, isCredhookError } from "@credhook/core/errors";
import { createApp, type CredhookApp } from "./app.js";
import { loadConfigFile, type LoadedConfig } from "./config.js";
import { errorBody } from "./http-errors.js";
import { createLogger, operatorMessage } from "./logging.js";
import { startTracing } from "./tracing.js";

/** An API Gateway (REST or HTTP API) or function URL event. */
export type LambdaHttpEvent = APIGatewayProxyEvent | APIGatewayProxyEventV2;
/** What the handler returns, in the shape of the event's format. */
export type LambdaHttpResult = APIGatewayProxyResult | APIGatewayProxyStructuredResultV2;
/** A Lambda handler for HTTP events. */
export type LambdaHttpHandler = (event: LambdaHttpEvent, context: Context) => Promise<LambdaHttpResult>;

/** Options of {@link createLambdaHandler}. */
export interface LambdaHandlerOptions {
  /** Environment (config interpolation, `CREDHOOK_*`). @default process.env */
  env?: Record<string, string | undefined>;
  /** Logger. @default pino at `server.logLevel` on stdout (CloudWatch Logs) */
  logger?: PinoLogger;
}

/** A ready handler, and the app behind it (close it to release the store). */
export interface LambdaApp {
  handler: LambdaHttpHandler;
  credhook: CredhookApp;
}

/**
 * Loads the configuration, builds the app and wraps it for Lambda.
 * @throws ConfigError an invalid configuration, or a portal user with no
 *   password: a generated one would be lost with the execution environment
 */
export async function createLambdaHandler(options: LambdaHandlerOptions = {}): Promise<LambdaApp> {
  const env = { ...(options.env ?? process.env) };
  env.CREDHOOK_DATA_DIR ||= "/tmp/credhook";
  const config: LoadedConfig = await loadConfigFile(env.CREDHOOK_CONFIG, {
    env,
    embeddedDefault: true,
    cwd: env.LAMBDA_TASK_ROOT ?? process.cwd(),
  });
  const unset = config.server.auth.users.flatMap((u, i) => (u.password || u.passwordHash ? [] : [i]));
  if (unset.length > 0) {
    throw new ConfigError(
      unset.map(
        (i) =>
          `server.auth.users[${i}]: no password; on AWS Lambda set CREDHOOK_PASSWORD (or CREDHOOK_PASSWORD_FILE, or a passwordHash) — a generated password would be lost with the execution environment`,
      ),
    );
  }
  // Synchronous stdout here: Lambda freezes the process once the handler returns, so a line must be written before.
  const logger = options.logger ?? createLogger(config.server.logLevel, destination({ dest: 1, sync: true }));
  const credhook = await createApp(config, { logger });
  const wrapped = serverless(credhook.app, {
    provider: "aws",
    requestId: "x-request-id",
    // serverless-http builds the request from the event's headers only; the HTTP edge also reads rawHeaders (one Host).
    request: (req: IncomingMessage) => {
      if (req.rawHeaders.length === 0)
        req.rawHeaders = Object.entries(req.headers).flatMap(([k, v]) =>
          Array.isArray(v) ? v.flatMap((x) => [k, x]) : v === undefined ? [] : [k, String(v)],
        );
    },
    ...(env.CREDHOOK_BASE_PATH ? { basePath: env.CREDHOOK_BASE_PATH } : {}),
  });
  return { handler: wrapped as unknown as LambdaHttpHandler, credhook };
}

/** What {@link reconcileHandler} reports (the counts of one reconcile-loop pass). */
export interface LambdaReconcileResult {
  /** False when another instance held the reconcile lock (nothing was done). */
  ran: boolean;
  /** Interrupted operations finished. */
  finished: number;
  /** Records left alone because a live instance holds their app. */
  inFlight: number;
  /** Abandoned creates swept. */
  swept: number;
}

/** The path of an event, for an ErrorResponse built outside the app. */
function eventPath(event: LambdaHttpEvent): string {
  return ("rawPath" in event ? event.rawPath : event.path) ?? "/";
}

let tracing: Promise<unknown> | undefined;
let ready: Promise<LambdaApp> | undefined;

/** The app of this execution environment, built on first use (cold start). @throws what {@link createLambdaHandler} throws; the next call tries again */
async function app(): Promise<LambdaApp> {
  if (!ready) {
    tracing ??= startTracing();
    ready = tracing.then(() => createLambdaHandler());
  }
  try {
    return await ready;
  } catch (err) {
    ready = undefined;
    throw err;
  }
}

/**
 * The Lambda entry point (`handler`). The first invocation of an execution
 * environment builds the app (cold start); later ones reuse it. When the app
 * cannot be built, the invocation answers 500 ErrorResponse and the reason goes
 * to the log; the next invocation tries again.
 */
export const handler: LambdaHttpHandler = async (event, context) => {
  let built: LambdaApp;
  try {
    built = await app();
  } catch (err) {
    const messages = isCredhookError(err) ? err.messages : [(err as Error)?.message ?? String(err)];
    operatorMessage(
      "error",
      "credhook could not start",
      { messages },
      `credhook: cannot start:\n${messages.map((m) => `  - ${m}`).join("\n")}`,
    );
    return {
      statusCode: 500,
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify(errorBody(500, ["credhook could not start; see the function's log"], eventPath(event))),
    };
  }
  return built.handler(event, context);
};

/**
 * A second Lambda entry point, for a schedule (EventBridge Scheduler, any
 * event): one pass of `credhook serve`'s reconcile loop — finishes the
 * interrupted operations no live instance holds and sweeps abandoned creates.
 * Needs a shared store (PostgreSQL); on SQLite it only sees its own environment.
 * @throws when the app cannot be built, or the pass fails (Lambda retries per its settings)
 */
export const reconcileHandler = async (): Promise<LambdaReconcileResult> => {
  const built = await app();
  const r = await built.credhook.orchestrator.reconcileLoopPass();
  const result = { ran: r.ran, finished: r.finished.length, inFlight: r.inFlight, swept: r.swept.swept };
  if (r.finished.length > 0 || r.swept.swept > 0) built.credhook.logger.info(result, "reconcile loop pass");
  return result;
};
