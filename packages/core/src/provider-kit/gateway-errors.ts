/**
 * Typed errors that say which gateway they came from: the message starts with
 * `[gateway <name>]` and {@link CredhookError.gateway} is set, built in this one
 * place instead of by hand in every provider.
 */
import { UpstreamUnavailable, type CredhookError } from "../errors.js";

/** `[gateway <name>]`, the prefix of every message a provider's error carries. */
export function gatewayPrefix(gateway: string): string {
  return `[gateway ${gateway}]`;
}

/** `text` prefixed with {@link gatewayPrefix}: `[gateway <name>] <text>` (for `messages` entries and ValidationError). */
export function gatewayMessage(gateway: string, text: string): string {
  return `${gatewayPrefix(gateway)} ${text}`;
}

/**
 * A constructor of a {@link CredhookError} whose first parameter is the
 * message (NotFound, Conflict, Throttled, UpstreamError …); `A` are the rest.
 */
export type MessageErrorClass<A extends unknown[], E extends CredhookError> = new (message: string, ...rest: A) => E;

/**
 * Builds a typed error of `gateway`: the message is `[gateway <name>] <text>`
 * and `gateway` is set (unless the options already name one).
 *
 * ```ts
 * throw gatewayError("aws-prod", NotFound, `API key ${id} does not exist`);
 * throw gatewayError("aws-prod", Throttled, "AWS is still throttling", 2, { cause: err });
 * ```
 *
 * @param gateway the gateway's name (its YAML key under `gateways:`)
 * @param ErrorClass the error's class; its first constructor parameter is the message
 * @param text the message without the prefix: what and where, never a secret
 * @param rest the class's other constructor arguments (options, Retry-After …)
 */
export function gatewayError<A extends unknown[], E extends CredhookError>(
  gateway: string,
  ErrorClass: MessageErrorClass<A, E>,
  text: string,
  ...rest: A
): E {
  const err = new ErrorClass(gatewayMessage(gateway, text), ...rest);
  err.gateway ??= gateway;
  return err;
}

/** {@link gatewayError} and {@link gatewayMessage} bound to one gateway, for a provider instance to keep. */
export class GatewayErrors {
  /** `[gateway <name>]`. */
  readonly prefix: string;

  /** @param gateway the gateway's name (its YAML key under `gateways:`) */
  constructor(readonly gateway: string) {
    this.prefix = gatewayPrefix(gateway);
  }

  /** `[gateway <name>] <text>`. */
  message(text: string): string {
    return gatewayMessage(this.gateway, text);
  }

  /** A typed error of this gateway (see {@link gatewayError}). */
  error<A extends unknown[], E extends CredhookError>(
    ErrorClass: MessageErrorClass<A, E>,
    text: string,
    ...rest: A
  ): E {
    return gatewayError(this.gateway, ErrorClass, text, ...rest);
  }
}

/**
 * A failed health check of `gateway` as what `Provider.health` must throw: `typed` itself when it
 * already is an {@link UpstreamUnavailable} (a throttled or unreachable cloud keeps its own
 * Retry-After), else an UpstreamUnavailable with `typed`'s message, Retry-After `retryAfterS`
 * seconds, and the original failure as its cause (a 403 or 404 on the probe says the gateway
 * cannot serve, whatever its type).
 * @param typed the probe's failure mapped to core's typed errors (the provider's `toTypedError`)
 * @param cause the failure as the SDK or fetch threw it
 * @param retryAfterS seconds a readiness check waits before it asks again, default 5
 */
export function unavailableFrom(
  gateway: string,
  typed: CredhookError,
  cause: unknown,
  retryAfterS = 5,
): UpstreamUnavailable {
  return typed instanceof UpstreamUnavailable
    ? typed
    : new UpstreamUnavailable(typed.message, retryAfterS, { cause, gateway });
}
