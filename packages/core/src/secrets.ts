/**
 * Generation and hashing of secrets. Values come from `crypto.randomBytes` with
 * rejection sampling (no modulo bias).
 */
import { hash, randomBytes, timingSafeEqual } from "node:crypto";

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

/** An API key value for import into every gateway: 40 base62 characters (AWS accepts 20–128 alphanumerics). */
export function generateApiKeyValue(): string {
  return randomBase62(40);
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
