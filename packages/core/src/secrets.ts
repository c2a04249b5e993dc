/**
 * Generation and hashing of secrets. Values come from `crypto.randomBytes` with
 * rejection sampling (no modulo bias).
 */
import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import { crc32 } from "node:zlib";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * Random bytes drawn from the operating system's CSPRNG 4 KiB at a time (as
 * `crypto.randomUUID` buffers its entropy), instead of one `getrandom` call per
 * secret: each byte is used once and zeroed as it is taken.
 */
const ENTROPY_BYTES = 4096;
let entropy = Buffer.alloc(0);
let entropyAt = 0;

/** The next unused byte of the buffer (refilled when spent), zeroed as it is taken. */
function nextRandomByte(): number {
  if (entropyAt >= entropy.length) {
    entropy = randomBytes(ENTROPY_BYTES);
    entropyAt = 0;
  }
  const byte = entropy[entropyAt]!;
  entropy[entropyAt++] = 0;
  return byte;
}

/** `length` random bytes from the same buffer (for ids: each call one `getrandom` less). */
export function pooledRandomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = nextRandomByte();
  return out;
}

/**
 * A random base62 string of `length` characters (default 40 ≈ 238 bits).
 * Bytes ≥ 248 are discarded so every character is equally likely.
 */
export function randomBase62(length = 40): string {
  let out = "";
  while (out.length < length) {
    const byte = nextRandomByte();
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

/**
 * The prefix of the API key values credhook generates unless `keys.prefix` says otherwise (docs/leak-response.md).
 */
export const DEFAULT_API_KEY_PREFIX = "credhook";

/**
 * What a key prefix may be (`keys.prefix`): a lowercase letter, then 1 to 15 lowercase letters or digits. Letters
 * and digits only, since the whole value must match every gateway's value pattern (AWS API Gateway:
 * `^[A-Za-z0-9]{20,128}$`, docs/cloud-facts.md), which leaves no room for a separator such as `_`.
 */
export const API_KEY_PREFIX_PATTERN = "^[a-z][a-z0-9]{1,15}$";

/** Random base62 characters of a generated key's body (≈ 238 bits). */
export const API_KEY_BODY_LENGTH = 40;

/** Base62 characters of a generated key's checksum: CRC32 (< 2^32 < 62^6), left-padded with `0`, as GitHub's tokens. */
export const API_KEY_CHECKSUM_LENGTH = 6;

/** The checksum of a key's prefix and body: their CRC32 (node:zlib, Node 22.2 or later) in base62, 6 characters. */
function keyChecksum(prefixAndBody: string): string {
  let n = crc32(prefixAndBody);
  let out = "";
  for (let i = 0; i < API_KEY_CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62]! + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/**
 * An API key value for import into every gateway, in credhook's recognisable format (docs/leak-response.md):
 * `prefix`, then {@link API_KEY_BODY_LENGTH} random base62 characters, then a {@link API_KEY_CHECKSUM_LENGTH}-character
 * base62 CRC32 of the two — 54 alphanumerics with the default prefix (AWS accepts 20–128, Azure APIM 1–256,
 * Apigee `[A-Za-z0-9_-]{1,2048}`, Kong's key-auth and the embedded gateway any string). A secret scanner finds it
 * with {@link apiKeyScanPattern} and drops false positives with {@link isCredhookKey}.
 * @param prefix the key prefix (`keys.prefix`), matching {@link API_KEY_PREFIX_PATTERN} @default DEFAULT_API_KEY_PREFIX
 * @throws Error the prefix does not match {@link API_KEY_PREFIX_PATTERN} (the config schema checks it first)
 */
export function generateApiKeyValue(prefix: string = DEFAULT_API_KEY_PREFIX): string {
  if (!new RegExp(API_KEY_PREFIX_PATTERN).test(prefix))
    throw new Error(`an API key prefix must match ${API_KEY_PREFIX_PATTERN} (got '${prefix}')`);
  const head = prefix + randomBase62(API_KEY_BODY_LENGTH);
  return head + keyChecksum(head);
}

/**
 * Whether `value` is an API key credhook generated ({@link generateApiKeyValue}): its prefix (`prefix`, or with
 * none given any that {@link API_KEY_PREFIX_PATTERN} allows), a base62 body of the right length and a checksum
 * that matches. A scanner's false-positive filter: a random match of {@link apiKeyScanPattern} passes the CRC32
 * check about once in 2^32. Says nothing of whether the key is live: look it up by its fingerprint for that.
 */
export function isCredhookKey(value: string, prefix?: string): boolean {
  const tail = API_KEY_BODY_LENGTH + API_KEY_CHECKSUM_LENGTH;
  if (!/^[A-Za-z0-9]+$/.test(value) || value.length <= tail) return false;
  const head = value.slice(0, -API_KEY_CHECKSUM_LENGTH);
  const found = value.slice(0, -tail);
  if (prefix !== undefined ? found !== prefix : !new RegExp(API_KEY_PREFIX_PATTERN).test(found)) return false;
  return keyChecksum(head) === value.slice(-API_KEY_CHECKSUM_LENGTH);
}

/**
 * The regular expression (a string, for JavaScript's, PCRE's and RE2's syntax alike) a secret scanner uses to find
 * credhook's keys with `prefix` in text: the prefix and 46 base62 characters between word boundaries.
 * @param prefix the key prefix (`keys.prefix`) @default DEFAULT_API_KEY_PREFIX
 */
export function apiKeyScanPattern(prefix: string = DEFAULT_API_KEY_PREFIX): string {
  return `\\b${prefix}[0-9A-Za-z]{${API_KEY_BODY_LENGTH + API_KEY_CHECKSUM_LENGTH}}\\b`;
}

/**
 * SHA-256 hex digest of a high-entropy secret (a generated API key or client
 * secret: ≥ 238 bits, so a fast hash is safe; passwords use scrypt instead).
 */
export function hashSecret(secret: string): string {
  return hash("sha256", secret, "hex");
}

/** Constant-time comparison of a secret with a {@link hashSecret} digest. */
export function verifySecretHash(secret: string, hexDigest: string): boolean {
  const a = Buffer.from(hashSecret(secret), "hex");
  const b = Buffer.from(hexDigest, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}
