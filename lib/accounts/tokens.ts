/**
 * API token secrets: generation, the stored hash, format checks. Pure (no Redis); see
 * `docs/accounts.md` for why a single SHA-256 is the right hash for these secrets.
 * @module
 */
import { createHash, randomBytes } from "node:crypto";
import { TOKEN_DISPLAY_PREFIX_LENGTH } from "./model.js";

/** Every token starts with this marker, so leaked tokens are recognisable (e.g. by secret scanners). */
export const TOKEN_PREFIX = "cs_";
/** Random bytes per token: 32 bytes = 256 bits of entropy (the issue asks for at least 128). */
export const TOKEN_BYTES = 32;
/** Length of a token: `cs_` + 43 base64url characters (unpadded encoding of 32 bytes). */
export const TOKEN_LENGTH = TOKEN_PREFIX.length + Math.ceil((TOKEN_BYTES * 8) / 6);

const TOKEN_PATTERN = new RegExp(`^${TOKEN_PREFIX}[A-Za-z0-9_-]{${TOKEN_LENGTH - TOKEN_PREFIX.length}}$`);

/**
 * Generates a new token secret: `cs_` + base64url (RFC 4648 §5, unpadded) of {@link TOKEN_BYTES}
 * bytes from a CSPRNG.
 * @param random source of random bytes (default `crypto.randomBytes`); tests may pass a fixed one.
 * @returns a {@link TOKEN_LENGTH}-character string, e.g. `cs_q2Xc…`.
 */
export function generateToken(random: (size: number) => Buffer = randomBytes): string {
  const bytes = random(TOKEN_BYTES);
  if (bytes.length !== TOKEN_BYTES) throw new Error(`random source returned ${bytes.length} bytes, expected ${TOKEN_BYTES}`);
  return `${TOKEN_PREFIX}${bytes.toString("base64url")}`;
}

/**
 * The only form in which a token is stored: lower-case hex SHA-256 of its UTF-8 bytes (64 chars).
 * A fast unsalted hash is sufficient (and right) here because the input is 256 bits of uniform
 * randomness: no dictionary exists to attack, so slow password hashing would only add latency to
 * every API request. See `docs/accounts.md` (NIST SP 800-63B §5.1.1.2 / OWASP Password Storage).
 */
export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Whether `token` has the exact shape {@link generateToken} produces (checked before any lookup; never throws). */
export function isWellFormedToken(token: unknown): token is string {
  return typeof token === "string" && token.length === TOKEN_LENGTH && TOKEN_PATTERN.test(token);
}

/** The display prefix of a token: the first 8 characters after `cs_` (48 of its 256 bits; the rest stays secret). */
export function tokenDisplayPrefix(token: string): string {
  return token.slice(TOKEN_PREFIX.length, TOKEN_PREFIX.length + TOKEN_DISPLAY_PREFIX_LENGTH);
}
