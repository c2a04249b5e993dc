/**
 * HTTP Basic authentication of the portal (RFC 7617): several users (for
 * password rotation), each with a plain password or a scrypt hash; constant-time
 * comparison; 401 with `WWW-Authenticate`; and a failed-login limit per client
 * address (rate-limiter-flexible) answered 429 with `Retry-After`.
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { timingSafeEqual } from "node:crypto";
import { digest, verifyPassword, type ResolvedUser } from "./passwords.js";
import { sendError } from "./http-errors.js";

/** Options of {@link basicAuth}. */
export interface BasicAuthOptions {
  users: ResolvedUser[];
  /** Realm of `WWW-Authenticate`. */
  realm: string;
  /** How long a verified scrypt login is remembered (by a digest of its header), ms. @default 300000 */
  cacheTtlMs?: number;
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

/** The Basic auth middleware: sets `res.locals.user` or answers 401. */
export function basicAuth(options: BasicAuthOptions): RequestHandler {
  const ttl = options.cacheTtlMs ?? 300_000;
  const verified = new Map<string, { username: string; until: number }>();
  const challenge = `Basic realm="${options.realm}", charset="UTF-8"`;
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    const creds = parseBasic(header);
    if (!creds) {
      sendError(res, req, 401, [header ? "the Authorization header is not valid Basic credentials" : "the Authorization header (Basic) is required"], {
        "WWW-Authenticate": challenge,
      });
      return;
    }
    const cacheKey = digest(header!).toString("base64");
    const hit = verified.get(cacheKey);
    if (hit && hit.until > Date.now()) {
      res.locals.user = hit.username;
      next();
      return;
    }
    const nameDigest = digest(creds.username);
    const passDigest = digest(creds.password);
    let match: string | undefined;
    for (const u of options.users) {
      // Every user is checked, whatever matched, so timing does not tell which names exist.
      const nameOk = timingSafeEqual(nameDigest, digest(u.username));
      const passOk = u.passwordDigest ? timingSafeEqual(passDigest, u.passwordDigest) : await verifyPassword(creds.password, u.passwordHash!);
      if (nameOk && passOk) match ??= u.username;
    }
    if (!match) {
      sendError(res, req, 401, ["the username or password is wrong"], { "WWW-Authenticate": challenge });
      return;
    }
    if (verified.size > 1000) verified.clear();
    verified.set(cacheKey, { username: match, until: Date.now() + ttl });
    res.locals.user = match;
    next();
  };
}

/**
 * Limits failed logins per client address (rate-limiter-flexible): each 401
 * consumes one point; after `maxFailures` within `windowS` seconds, every
 * request from that address is answered 429 with `Retry-After` (seconds) until
 * the window ends. Successful requests consume nothing, however many run at once.
 * Mount it before {@link basicAuth}.
 */
export function failedLoginLimit(maxFailures: number, windowS: number): RequestHandler {
  const limiter = new RateLimiterMemory({ points: maxFailures, duration: windowS });
  return async (req: Request, res: Response, next: NextFunction) => {
    const key = req.ip ?? "unknown";
    const state = await limiter.get(key);
    if (state && state.consumedPoints >= maxFailures) {
      const retry = Math.max(1, Math.ceil(state.msBeforeNext / 1000));
      res.locals.errorCode = "TOO_MANY_REQUESTS";
      sendError(res, req, 429, [`too many failed logins from this client; try again in ${retry} s`], { "Retry-After": String(retry) });
      return;
    }
    res.on("finish", () => {
      if (res.statusCode === 401) limiter.penalty(key, 1).catch(() => undefined);
    });
    next();
  };
}
