/**
 * Portal passwords: scrypt hashing (node:crypto), verification in constant
 * time, and the password generated on a first start for a user that has none:
 * handed over as Jenkins hands over its `initialAdminPassword`, in a file of the
 * data directory that only credhook's user can read (never in a log line), and
 * checked against its scrypt hash, kept beside it.
 */
import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "@credhook/core/errors";
import { randomBase62 } from "@credhook/core/provider-kit";
import type { AuthUser, Logger } from "@credhook/core";

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

/** SHA-256 digest, for constant-time comparison of strings of any length. */
export function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/**
 * A portal user as the Basic auth middleware (auth.ts) checks it. It keeps a SHA-256 digest of a plain password, or a
 * scrypt hash ({@link hashPassword}); how a password is held and compared is this module's business, not the middleware's.
 */
export interface ResolvedUser {
  username: string;
  /** True when a check costs a scrypt hash (tens of ms, ≈ 32 MiB): the middleware bounds how many run at once. */
  hashed: boolean;
  /**
   * Whether `username` and `password` are this user's. Both are compared in constant time and both are always
   * compared, so the time taken does not tell a wrong name from a wrong password.
   * @returns false for a malformed hash
   * @throws Error when scrypt refuses the hash's parameters
   */
  verify(username: string, password: string): Promise<boolean>;
}

/** A {@link ResolvedUser} whose password is `plain` (kept only as its digest) or `hash` (a {@link hashPassword} string). */
function resolvedUser(username: string, secret: { plain: string } | { hash: string }): ResolvedUser {
  const nameDigest = digest(username);
  const sameName = (name: string) => timingSafeEqual(digest(name), nameDigest);
  if ("plain" in secret) {
    const passwordDigest = digest(secret.plain);
    return {
      username,
      hashed: false,
      verify: async (name, password) => {
        const nameOk = sameName(name);
        return timingSafeEqual(digest(password), passwordDigest) && nameOk;
      },
    };
  }
  return {
    username,
    hashed: true,
    verify: async (name, password) => {
      const nameOk = sameName(name);
      return (await verifyPassword(password, secret.hash)) && nameOk;
    },
  };
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

/** A password credhook generated for a portal user that had none, and the two files that keep it. */
export interface GeneratedPassword {
  /** The portal user it is for. */
  username: string;
  /** The password: 24 base62 characters (≈ 143 bits). Never logged. */
  password: string;
  /**
   * `<dataDir>/initial-<username>-password`, mode 0600: the password and a line break, for the operator to
   * collect (it also serves as `CREDHOOK_PASSWORD_FILE`), then delete. Absolute when `dataDir` is.
   */
  passwordFile: string;
  /** `<dataDir>/auth-<username>.scrypt`, mode 0600: its scrypt hash, which logins are checked against. */
  hashFile: string;
}

/**
 * Where a generated password of `username` is kept in `dataDir` (the name's characters other than
 * `A-Z a-z 0-9 _ . -` as `_`): `initial-<name>-password` and `auth-<name>.scrypt`.
 */
export function generatedPasswordFiles(
  dataDir: string,
  username: string,
): Pick<GeneratedPassword, "passwordFile" | "hashFile"> {
  const name = username.replace(/[^A-Za-z0-9_.-]/g, "_");
  return { passwordFile: join(dataDir, `initial-${name}-password`), hashFile: join(dataDir, `auth-${name}.scrypt`) };
}

/** `file` as a shell word (quoted only when it needs to be), for the `rm` an operator copies from a log line. */
const shellWord = (file: string) => (/^[\w@%+=:,./-]+$/.test(file) ? file : `'${file.replaceAll("'", "'\\''")}'`);

/**
 * Tells the operator where a generated password is, one log line at `warn` with `username`,
 * `passwordFile` and `hashFile` — its path, never the password; and, only where stderr is a terminal
 * (a person reading, no log pipeline), the password itself once, on stderr (`Basic credentials:
 * portal:…`). What {@link resolveUsers}' `settle` calls unless `AppOptions.announcePassword` replaces it.
 * @param terminal where a person may read the password; written to only when it is a TTY. @default process.stderr
 */
export function announceGeneratedPassword(
  generated: GeneratedPassword,
  logger: Logger,
  terminal: NodeJS.WriteStream = process.stderr,
): void {
  const { username, password, passwordFile, hashFile } = generated;
  logger.warn(
    { username, passwordFile, hashFile },
    `no password is set for portal user '${username}', so one was generated: it is in ${passwordFile} (mode 0600, readable by this user only); store it where the portal's credentials belong, then delete that file (rm ${shellWord(passwordFile)}) — logins are checked against its scrypt hash in ${hashFile}; to choose your own, set CREDHOOK_PASSWORD`,
  );
  if (terminal.isTTY)
    terminal.write(
      `\ncredhook: no password is set for portal user '${username}', so one was generated.\n` +
        `  Basic credentials: ${username}:${password}\n` +
        `  It stays in ${passwordFile} (mode 0600) until you delete it; once it is stored, run\n` +
        `    rm ${shellWord(passwordFile)}\n` +
        `  To choose your own, set CREDHOOK_PASSWORD.\n\n`,
    );
}

/** The portal users of one start, as {@link resolveUsers} found them; nothing written yet. */
export interface PortalUsers {
  /** The users as the auth middleware checks them (a password this start generated by its hash). */
  users: ResolvedUser[];
  /**
   * Writes the passwords this start generated (the hash file, then the password file; both or
   * neither), then hands each to `announce` and logs what the operator should know about the
   * generated passwords of earlier starts. `credhook serve` calls it once every port is bound, so
   * that a start that fails leaves no password behind.
   * @throws Error when a file cannot be written (those this call wrote are removed again)
   */
  settle(logger: Logger, announce?: (generated: GeneratedPassword) => void): void;
}

/** A file's text, or undefined when there is none. @throws Error naming the file when it exists but cannot be read */
function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    if ((err as { code?: string }).code === "ENOENT") return undefined;
    throw new Error(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/** Whether a generated password (its file's text, or only its hash) is the one `user` now has configured. */
async function isConfiguredPassword(
  user: AuthUser,
  initial: string | undefined,
  hash: string | undefined,
): Promise<boolean> {
  try {
    if (initial !== undefined)
      return user.password ? initial === user.password : await verifyPassword(initial, user.passwordHash!);
    return user.password ? await verifyPassword(user.password, hash!) : hash === user.passwordHash;
  } catch {
    return false; // a hash whose parameters scrypt refuses: not this password
  }
}

/** Writes the generated passwords' files, hash first; on a failure removes what it wrote and throws. */
function writeGenerated(all: GeneratedPassword[], hashes: Map<GeneratedPassword, string>, dataDir: string): void {
  const written: string[] = [];
  let current = "";
  try {
    for (const g of all) {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      current = g.hashFile;
      // "wx": a hash another start wrote meanwhile is never replaced (its password file holds its password).
      writeFileSync(g.hashFile, `${hashes.get(g)}\n`, { mode: 0o600, flag: "wx" });
      written.push(g.hashFile);
      current = g.passwordFile;
      rmSync(g.passwordFile, { force: true }); // one a start that died before its hash landed left: it opens nothing
      writeFileSync(g.passwordFile, `${g.password}\n`, { mode: 0o600, flag: "wx" });
      written.push(g.passwordFile);
    }
  } catch (err) {
    for (const f of written) rmSync(f, { force: true });
    const g = all.find((x) => x.hashFile === current || x.passwordFile === current)!;
    throw new Error(
      (err as { code?: string }).code === "EEXIST" && current === g.hashFile
        ? `${current} appeared while credhook started: another credhook on this data directory generated the password of portal user '${g.username}' at the same moment; start again to use that one`
        : `cannot write the password generated for portal user '${g.username}' to ${current}: ${(err as Error).message}; make ${dataDir} writable by this user, or set CREDHOOK_PASSWORD`,
    );
  }
}

/**
 * Resolves the configured users. A user whose password is empty (the shipped config with
 * `CREDHOOK_PASSWORD` unset) logs in with a generated password: on its first start one is made
 * (24 base62 characters ≈ 143 bits) and, by `settle`, its scrypt hash written to
 * `<dataDir>/auth-<user>.scrypt` and the password itself to `<dataDir>/initial-<user>-password`
 * (both mode 0600, see {@link generatedPasswordFiles}); later starts read the hash back. credhook
 * never runs with a known default password. What `settle` says on a later start:
 * - the password file is still there: its path (warn), until the operator deletes it;
 * - it was deleted: that the hash in use is the generated one's, and how to start over (info);
 * - the user has a password of its own now (configured, and not the generated one): the generated
 *   password's files open nothing, so they are deleted (info).
 * @throws ConfigError a configured plain password shorter than {@link MIN_PASSWORD_LENGTH} (the
 *   policy `credhook hash-password` applies)
 * @throws Error a generated password's file that exists but cannot be read
 */
export async function resolveUsers(users: AuthUser[], dataDir: string): Promise<PortalUsers> {
  const short = userPasswordProblems(users);
  if (short.length > 0) throw new ConfigError(short);
  const resolved: ResolvedUser[] = [];
  const generated: GeneratedPassword[] = [];
  const hashes = new Map<GeneratedPassword, string>();
  const notes: Array<(logger: Logger) => void> = [];
  for (const u of users) {
    const { username } = u;
    const files = generatedPasswordFiles(dataDir, username);
    const initial = readIfExists(files.passwordFile)?.replace(/\r?\n$/, "");
    const hash = readIfExists(files.hashFile)?.trim();
    const stillThere = () =>
      notes.push((logger) =>
        logger.warn(
          { username, passwordFile: files.passwordFile },
          `the password generated for portal user '${username}' is still in ${files.passwordFile}: once it is stored where the portal's credentials belong, delete that file (rm ${shellWord(files.passwordFile)})`,
        ),
      );
    if (u.password || u.passwordHash) {
      resolved.push(resolvedUser(username, u.passwordHash ? { hash: u.passwordHash } : { plain: u.password! }));
      if (hash === undefined && initial === undefined) continue;
      if (await isConfiguredPassword(u, initial, hash)) {
        if (initial !== undefined) stillThere();
        continue;
      }
      notes.push((logger) => {
        for (const f of [files.passwordFile, files.hashFile]) rmSync(f, { force: true });
        logger.info(
          { username, passwordFile: files.passwordFile, hashFile: files.hashFile },
          `portal user '${username}' has a password of its own now, so the one generated on its first start opens nothing: deleted ${files.passwordFile} and ${files.hashFile}`,
        );
      });
    } else if (hash !== undefined) {
      resolved.push(resolvedUser(username, { hash }));
      if (initial !== undefined) stillThere();
      else
        notes.push((logger) =>
          logger.info(
            { username, hashFile: files.hashFile },
            `portal user '${username}' logs in with the password generated on its first start (its file is deleted; only its scrypt hash is kept, in ${files.hashFile}); to replace it, set CREDHOOK_PASSWORD, or delete that file and restart to generate a new one`,
          ),
        );
    } else {
      const g: GeneratedPassword = { username, password: randomBase62(24), ...files };
      hashes.set(g, await hashPassword(g.password));
      generated.push(g);
      resolved.push(resolvedUser(username, { hash: hashes.get(g)! }));
    }
  }
  let settled = false;
  return {
    users: resolved,
    settle(logger, announce = (g) => announceGeneratedPassword(g, logger)) {
      if (settled) return;
      settled = true;
      writeGenerated(generated, hashes, dataDir);
      for (const note of notes) note(logger);
      for (const g of generated) announce(g);
    },
  };
}
