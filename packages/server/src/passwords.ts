/**
 * Portal passwords: scrypt hashing (node:crypto), verification in constant
 * time, and the generated first-start password whose hash alone is kept in the
 * data directory.
 */
import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "@credhook/core/errors";
import { randomBase62 } from "@credhook/core/provider-kit";
import type { AuthUser } from "@credhook/core";
import { operatorMessage } from "./logging.js";

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))),
  );

/** scrypt cost parameters of new hashes: N=2^15, r=8, p=1 (≈ 32 MiB, OWASP's minimum is N=2^17 with r=8 p=1 for interactive logins; credhook caches verified logins). */
export const SCRYPT_PARAMS = { N: 32768, r: 8, p: 1, keylen: 32 } as const;

/**
 * Hashes `password` as `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>` (what `credhook hash-password` prints).
 * @param cost scrypt's cost parameter N (a power of two), {@link SCRYPT_PARAMS}'s by default; verification
 *   reads it from the hash. A lower N only where the hash guards nothing (tests that count checks, not time them).
 */
export async function hashPassword(password: string, cost: { N: number } = SCRYPT_PARAMS): Promise<string> {
  const salt = randomBytes(16);
  const { r, p, keylen } = SCRYPT_PARAMS;
  const { N } = cost;
  const key = await scrypt(password, salt, keylen, { N, r, p, maxmem: 128 * N * r * 2 });
  return `scrypt$${N}$${r}$${p}$${salt.toString("base64")}$${key.toString("base64")}`;
}

/** Checks `password` against a {@link hashPassword} string in constant time; false for a malformed hash. */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const parts = hash.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const salt = Buffer.from(parts[4]!, "base64");
  const expected = Buffer.from(parts[5]!, "base64");
  const key = await scrypt(password, salt, expected.length, { N, r, p, maxmem: 128 * N * r * 2 });
  return timingSafeEqual(key, expected);
}

/**
 * The fewest characters a portal password may have, wherever it comes from (`credhook
 * hash-password`, `CREDHOOK_PASSWORD`, `CREDHOOK_PASSWORD_FILE`, a `password:` in the config).
 */
export const MIN_PASSWORD_LENGTH = 12;

/** Why `password` is refused by the one password policy ({@link MIN_PASSWORD_LENGTH}), or undefined when it is accepted. */
export function passwordProblem(password: string): string | undefined {
  return [...password].length < MIN_PASSWORD_LENGTH
    ? `the password must have at least ${MIN_PASSWORD_LENGTH} characters`
    : undefined;
}

/**
 * Shows a generated password once, on stderr: a banner on a terminal, a JSON line (`"level":"warn"`,
 * with `username`, `password` and `hashFile`) otherwise — see {@link operatorMessage}.
 */
export function announceGeneratedPassword(username: string, password: string, file: string): void {
  operatorMessage(
    "warn",
    `no password is set for portal user '${username}', so one was generated; it is shown only now (only its scrypt hash is kept); set CREDHOOK_PASSWORD (and delete the hash file) to choose your own`,
    { username, password, hashFile: file },
    `\ncredhook: no password is set for portal user '${username}', so one was generated.\n` +
      `  It is shown only now; only its scrypt hash is kept, in ${file}.\n` +
      `  Basic credentials: ${username}:${password}\n` +
      `  To choose your own, set CREDHOOK_PASSWORD (and delete that file).\n`,
  );
}

/** SHA-256 digest, for constant-time comparison of strings of any length. */
export function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/** A user as the auth middleware checks it: a digest of the plain password, or a scrypt hash. */
export interface ResolvedUser {
  username: string;
  passwordDigest?: Buffer;
  passwordHash?: string;
}

/**
 * The configured plain passwords that break the password policy ({@link passwordProblem}),
 * checked by `credhook serve` and `credhook check-config` alike.
 * @returns one message per user, naming its YAML path (`server.auth.users[i]`); empty when none
 */
export function userPasswordProblems(users: AuthUser[]): string[] {
  return users.flatMap((u, i) => {
    const problem = u.password ? passwordProblem(u.password) : undefined;
    return problem
      ? [
          `server.auth.users[${i}] (${u.username}): ${problem} (CREDHOOK_PASSWORD, CREDHOOK_PASSWORD_FILE or password:, as for \`credhook hash-password\`)`,
        ]
      : [];
  });
}

/**
 * Resolves the configured users. A user whose password is empty (the shipped
 * config with `CREDHOOK_PASSWORD` unset) gets a generated password: on first
 * start it is created (24 base62 characters ≈ 143 bits), its scrypt hash written
 * to `<dataDir>/auth-<username>.scrypt` (mode 0600), and `announce` is called
 * once with it; later starts read the hash back. credhook never runs with a
 * known default password.
 * @throws ConfigError a configured plain password shorter than {@link MIN_PASSWORD_LENGTH} (the
 *   policy `credhook hash-password` applies)
 */
export async function resolveUsers(
  users: AuthUser[],
  dataDir: string,
  announce: (username: string, password: string, file: string) => void,
): Promise<ResolvedUser[]> {
  const short = userPasswordProblems(users);
  if (short.length > 0) throw new ConfigError(short);
  const out: ResolvedUser[] = [];
  for (const u of users) {
    if (u.passwordHash) out.push({ username: u.username, passwordHash: u.passwordHash });
    else if (u.password) out.push({ username: u.username, passwordDigest: digest(u.password) });
    else {
      const file = join(dataDir, `auth-${u.username.replace(/[^A-Za-z0-9_.-]/g, "_")}.scrypt`);
      let hash: string | undefined;
      try {
        hash = readFileSync(file, "utf8").trim();
      } catch {
        const password = randomBase62(24);
        hash = await hashPassword(password);
        mkdirSync(dataDir, { recursive: true, mode: 0o700 });
        writeFileSync(file, `${hash}\n`, { mode: 0o600, flag: "wx" });
        announce(u.username, password, file);
      }
      out.push({ username: u.username, passwordHash: hash });
    }
  }
  return out;
}
