/**
 * The logging surface core and providers use: a subset of pino's API, so the
 * server passes its pino logger straight through. Never pass a secret in either
 * argument.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  /** A child logger with `bindings` added to every line. */
  child(bindings: Record<string, unknown>): Logger;
}

/** A logger that drops everything (tests, library use without a server). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
