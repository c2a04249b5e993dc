/**
 * HTTP Basic authentication of the portal (RFC 7617) that holds under
 * concurrency and brute force: several users (for password rotation), each with
 * a plain password or a scrypt hash, compared in constant time; 401 with
 * `WWW-Authenticate`.
 *
 * The model (documented in docs/configuration.md, "Authentication under attack"):
 * 1. A credential verified once is **remembered** (by a SHA-256 digest of its
 *    header) for `rememberMs` after its last use, and passes at once, before any
 *    budget: other clients' failures never lock it out.
 * 2. Any other credential first **reserves** one failed attempt from its client
 *    address's budget (`maxFailures` per `failureWindowS`) and one from a
 *    **global** budget shared by all addresses (`maxGlobalFailures` per window),
 *    before it is checked; a success gives both back. An empty budget is a 429
 *    with `Retry-After`, answered without checking anything.
 * 3. At most `maxConcurrentChecks` password-hash (scrypt) checks run at once;
 *    beyond that the answer is an immediate 503 with `Retry-After: 1` (never a
 *    queue). Concurrent requests with the same header share one check.
 * Failure counters use rate-limiter-flexible (fixed windows in memory).
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { hash } from "node:crypto";
import type { ServerConfig } from "@credhook/core";
import type { ResolvedUser } from "./passwords.js";
import { sendError } from "./http-errors.js";

/** Options of {@link basicAuth}. */
export interface BasicAuthOptions {
  users: ResolvedUser[];
  /** Realm of `WWW-Authenticate`. */
  realm: string;
  /** Failed logins allowed per client address (`req.ip`, see express `trust proxy`) per window; then 429. */
  maxFailures: number;
  /** The failure window, seconds (a fixed window starting at the first failure). */
  failureWindowS: number;
  /** Failed logins allowed across all addresses per window; then 429 for every credential not remembered. @default 10 × maxFailures */
  maxGlobalFailures?: number;
  /** Password-hash (scrypt, ≈ 32 MiB and tens of ms each) checks allowed at once; more → 503. @default 1 (one core at most, whatever the attack) */
  maxConcurrentChecks?: number;
  /** How long a verified login is remembered after its last use, ms. @default 300000 (5 min) */
  rememberMs?: number;
  /** Most logins remembered at once (the oldest is forgotten first). @default 1000 */
  maxRemembered?: number;
}

/**
 * Limits of Basic auth that embedding code may set instead of the config file's `server.auth.*` (part of
 * `ServerLimits`, routes.ts). Undefined: the config's value.
 */
export interface AuthLimits {
  /** Failed logins across all client addresses per `server.auth.failureWindowS`; then 429. @default server.auth.maxGlobalFailures */
  maxGlobalFailures?: number;
  /** Password-hash (scrypt) checks at once; more → 503 with Retry-After: 1. @default server.auth.maxConcurrentPasswordChecks */
  maxConcurrentPasswordChecks?: number;
  /** How long a verified login is remembered after its last use, ms. @default server.auth.rememberLoginMs */
  rememberLoginMs?: number;
}

/** {@link basicAuth} as the config's `server.auth` block sets it, for `users`, with `limits` overriding the block's values. */
export function portalAuth(users: ResolvedUser[], auth: ServerConfig["auth"], limits: AuthLimits = {}): RequestHandler {
  return basicAuth({
    users,
    realm: auth.realm,
    maxFailures: auth.maxFailures,
    failureWindowS: auth.failureWindowS,
    maxGlobalFailures: limits.maxGlobalFailures ?? auth.maxGlobalFailures,
    maxConcurrentChecks: limits.maxConcurrentPasswordChecks ?? auth.maxConcurrentPasswordChecks,
    rememberMs: limits.rememberLoginMs ?? auth.rememberLoginMs,
    maxRemembered: auth.maxRememberedLogins,
  });
}

/** Parses `Authorization: Basic <b64>`; undefined when absent or malformed. */
export function parseBasic(header: string | undefined): { username: string; password: string } | undefined {
  if (!header) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=._~-]+)\s*$/i.exec(header);
  if (!m) return undefined;
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) return undefined;
  return { username: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

/** Seconds until a rate-limiter window ends (≥ 1), for `Retry-After`. */
const retryAfterS = (r: RateLimiterRes) => Math.max(1, Math.ceil(r.msBeforeNext / 1000));

/**
 * The Basic auth middleware (see the module comment for the model): sets
 * `res.locals.user` and calls `next()`, or answers 401 (wrong or missing
 * credentials, `WWW-Authenticate`), 429 (a failure budget is spent,
 * `Retry-After`) or 503 (too many hash checks at once, `Retry-After: 1`).
 */
export function basicAuth(options: BasicAuthOptions): RequestHandler {
  const rememberMs = options.rememberMs ?? 300_000;
  const maxRemembered = options.maxRemembered ?? 1000;
  const maxChecks = options.maxConcurrentChecks ?? 1;
  const perAddress = new RateLimiterMemory({ points: options.maxFailures, duration: options.failureWindowS });
  const global = new RateLimiterMemory({
    points: options.maxGlobalFailures ?? options.maxFailures * 10,
    duration: options.failureWindowS,
  });
  const hashed = options.users.some((u) => u.hashed);
  /** Header digest → user, in least-recently-used order (a Map keeps insertion order). */
  const remembered = new Map<string, { username: string; until: number }>();
  /** Header digest → the check in progress for it. */
  const checking = new Map<string, Promise<string | undefined>>();
  let hashChecks = 0;
  const challenge = { "WWW-Authenticate": `Basic realm="${options.realm}", charset="UTF-8"` };

  /** The user these credentials name, checking every user whatever matched, so timing does not tell which names exist. */
  const verify = async (creds: { username: string; password: string }): Promise<string | undefined> => {
    let match: string | undefined;
    for (const u of options.users) {
      if (await u.verify(creds.username, creds.password)) match ??= u.username;
    }
    return match;
  };

  const tooMany = (req: Request, res: Response, retry: number, who: string) => {
    res.locals.errorCode = "TOO_MANY_REQUESTS";
    sendError(res, req, 429, [`too many failed logins ${who}; try again in ${retry} s`], {
      "Retry-After": String(retry),
    });
  };

  /** Credentials not remembered (or no longer): parsed, budgeted and checked. */
  const check = async (
    req: Request,
    res: Response,
    next: NextFunction,
    header: string | undefined,
    key: string | undefined,
  ) => {
    const creds = parseBasic(header);
    if (!creds || key === undefined) {
      sendError(
        res,
        req,
        401,
        [
          header
            ? "the Authorization header is not valid Basic credentials"
            : "the Authorization header (Basic) is required",
        ],
        challenge,
      );
      return;
    }

    let pending = checking.get(key);
    if (!pending) {
      const address = req.ip ?? req.socket.remoteAddress ?? "unknown";
      try {
        await perAddress.consume(address);
      } catch (spent) {
        if (!(spent instanceof RateLimiterRes)) throw spent;
        return tooMany(req, res, retryAfterS(spent), "from this client");
      }
      try {
        await global.consume("all");
      } catch (spent) {
        await perAddress.reward(address);
        if (!(spent instanceof RateLimiterRes)) throw spent;
        return tooMany(req, res, retryAfterS(spent), "from all clients together");
      }
      if (hashed && hashChecks >= maxChecks) {
        await Promise.all([perAddress.reward(address), global.reward("all")]);
        res.locals.errorCode = "TOO_MANY_CHECKS";
        sendError(res, req, 503, [`${maxChecks} password checks are already running; retry in 1 s`], {
          "Retry-After": "1",
        });
        return;
      }
      if (hashed) hashChecks++;
      pending = verify(creds).finally(() => {
        if (hashed) hashChecks--;
        checking.delete(key);
      });
      checking.set(key, pending);
      const user = await pending;
      if (user) {
        await Promise.all([perAddress.reward(address), global.reward("all")]);
        if (remembered.size >= maxRemembered) remembered.delete(remembered.keys().next().value!);
        remembered.set(key, { username: user, until: Date.now() + rememberMs });
      }
    }
    const user = await pending;
    if (!user) {
      sendError(res, req, 401, ["the username or password is wrong"], challenge);
      return;
    }
    res.locals.user = user;
    next();
  };

  // The common case, synchronous: a remembered header passes with one SHA-256 and a map lookup.
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    const key = header === undefined ? undefined : hash("sha256", header, "base64");
    const known = key === undefined ? undefined : remembered.get(key);
    if (known) {
      const now = Date.now();
      if (known.until > now) {
        // Least recently used first: move it to the end.
        remembered.delete(key!);
        remembered.set(key!, known);
        known.until = now + rememberMs;
        res.locals.user = known.username;
        return next();
      }
      remembered.delete(key!);
    }
    return check(req, res, next, header, key);
  };
}
