/**
 * The account and token model: the shapes the store returns, the {@link AccountError} it throws,
 * and the pure input validation (no Redis, no I/O). See `docs/accounts.md`.
 * @module
 */
import { isEmailAddress, MAX_EMAIL_LENGTH } from "../email.js";
import { ChainsiftError } from "../errors.js";

/** A registered account. Every search API request is made on behalf of one, through one of its tokens. */
export interface Account {
  /** Identity of the account: a random UUID v4. Names are not unique; ids are. */
  id: string;
  /** Display name, 1–{@link MAX_NAME_LENGTH} characters, trimmed, no control characters. */
  name: string;
  /** Contact address, or `null` when none was given. */
  email: string | null;
  /** Creation time, ISO 8601 in UTC with milliseconds (`2025-01-31T12:00:00.000Z`). */
  createdAt: string;
  /** `true` once disabled: none of the account's tokens authenticates any more (immediately). */
  disabled: boolean;
}

/**
 * What is known about an issued API token. Never contains the secret or its hash, so it is safe to
 * list, log and return from admin endpoints.
 */
export interface TokenInfo {
  /** Identity of the token (a random UUID v4); what `tokens revoke` takes. */
  id: string;
  /** The account the token authenticates as. */
  accountId: string;
  /** Optional label given at issue time (e.g. `ci`, `laptop`), or `null`. */
  name: string | null;
  /** The first {@link TOKEN_DISPLAY_PREFIX_LENGTH} characters after `cs_` of the secret, to recognise a token in a list (too short to help guess it). */
  prefix: string;
  /** Issue time, ISO 8601 UTC. */
  createdAt: string;
  /** Expiry time, ISO 8601 UTC (the token stops authenticating at that instant), or `null` for no expiry. */
  expiresAt: string | null;
  /** Revocation time, ISO 8601 UTC, or `null` while not revoked. */
  revokedAt: string | null;
  /** Last successful authentication, ISO 8601 UTC, with a resolution of about a minute; absent until first used. */
  lastUsedAt?: string;
}

/** Longest account or token name, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 100;
/** Longest e-mail address, in characters (RFC 5321 path limit; `lib/email.ts`). */
export { MAX_EMAIL_LENGTH };
/** Number of secret characters shown as {@link TokenInfo.prefix}. */
export const TOKEN_DISPLAY_PREFIX_LENGTH = 8;

/**
 * Stable machine-readable codes of {@link AccountError} (the API answers each with the status of
 * its code in api/errors.ts `ERROR_CODES`, see `ACCOUNT_ERROR_HTTP_STATUS` there):
 * - `CS_ACCOUNT_NOT_FOUND`: no account has that id
 * - `CS_TOKEN_NOT_FOUND`: no token has that id
 * - `CS_ACCOUNT_INVALID`: bad account name or e-mail
 * - `CS_TOKEN_INVALID`: bad token name or expiry
 * - `CS_ACCOUNT_DISABLED`: a token cannot be issued to a disabled account
 */
export const ACCOUNT_ERROR_CODES = [
  "CS_ACCOUNT_NOT_FOUND",
  "CS_TOKEN_NOT_FOUND",
  "CS_ACCOUNT_INVALID",
  "CS_TOKEN_INVALID",
  "CS_ACCOUNT_DISABLED",
] as const;

/** One of {@link ACCOUNT_ERROR_CODES}. */
export type AccountErrorCode = (typeof ACCOUNT_ERROR_CODES)[number];

/** A refused account or token operation. Redis/connection failures are not wrapped: they surface as the client's own errors. */
export class AccountError extends ChainsiftError<AccountErrorCode> {
  constructor(
    /** Stable code, see {@link AccountErrorCode}. */
    readonly code: AccountErrorCode,
    message: string,
    /** The offending input field (`name`, `email`, `expiresAt`, …) for `*_INVALID` codes. */
    readonly field?: string,
  ) {
    super(message);
    this.name = "AccountError";
  }
}

/** Whether `err` is an {@link AccountError}, optionally with the given code. */
export function isAccountError(err: unknown, code?: AccountErrorCode): err is AccountError {
  return err instanceof AccountError && (code === undefined || err.code === code);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Whether `id` is a lower-case UUID v4, the form of every account and token id (other strings can never name one). */
export function isId(id: unknown): id is string {
  return typeof id === "string" && UUID_V4.test(id);
}

function validName(value: unknown, code: AccountErrorCode, what: string): string {
  if (typeof value !== "string") throw new AccountError(code, `${what} name must be a string`, "name");
  const name = value.trim();
  if (name === "") throw new AccountError(code, `${what} name must not be empty`, "name");
  if (name.length > MAX_NAME_LENGTH) throw new AccountError(code, `${what} name is longer than ${MAX_NAME_LENGTH} characters`, "name");
  if (CONTROL_CHARS.test(name)) throw new AccountError(code, `${what} name contains control characters`, "name");
  return name;
}

/**
 * Validates and normalises the input of `createAccount`.
 * @param input `name` (required; trimmed; 1–100 characters; no control characters) and optional
 *   `email` (`undefined`/`null` = none; otherwise `local@domain.tld`, at most 254 characters, trimmed).
 * @returns the normalised `{ name, email }` (`email` is `null` when none).
 * @throws {AccountError} `CS_ACCOUNT_INVALID` with `field` `name` or `email`.
 */
export function validateAccountInput(input: { name: unknown; email?: unknown }): { name: string; email: string | null } {
  const name = validName(input?.name, "CS_ACCOUNT_INVALID", "account");
  const raw = input.email;
  if (raw === undefined || raw === null) return { name, email: null };
  if (typeof raw !== "string") throw new AccountError("CS_ACCOUNT_INVALID", "email must be a string", "email");
  const email = raw.trim();
  if (email.length > MAX_EMAIL_LENGTH)
    throw new AccountError("CS_ACCOUNT_INVALID", `email is longer than ${MAX_EMAIL_LENGTH} characters`, "email");
  if (CONTROL_CHARS.test(email) || !isEmailAddress(email)) {
    throw new AccountError("CS_ACCOUNT_INVALID", `email ${JSON.stringify(email)} is not an address of the form name@domain.tld`, "email");
  }
  return { name, email };
}

/**
 * Validates and normalises the options of `issueToken`.
 * @param input optional `name` (`undefined`/`null` = none; else as an account name) and optional
 *   `expiresAt` (`undefined`/`null` = never; else a `Date` or an ISO 8601 string, strictly after `now`).
 * @param now the current time (the store's clock).
 * @returns `{ name, expiresAt }` with `expiresAt` a `Date` or `null`.
 * @throws {AccountError} `CS_TOKEN_INVALID` with `field` `name` or `expiresAt`.
 */
export function validateTokenInput(
  input: { name?: unknown; expiresAt?: unknown } | undefined,
  now: Date,
): { name: string | null; expiresAt: Date | null } {
  const name = input?.name === undefined || input.name === null ? null : validName(input.name, "CS_TOKEN_INVALID", "token");
  const raw = input?.expiresAt;
  if (raw === undefined || raw === null) return { name, expiresAt: null };
  const expiresAt = raw instanceof Date ? new Date(raw.getTime()) : typeof raw === "string" ? new Date(raw) : new Date(Number.NaN);
  if (Number.isNaN(expiresAt.getTime()))
    throw new AccountError("CS_TOKEN_INVALID", "expiresAt must be a Date or an ISO 8601 time", "expiresAt");
  if (expiresAt.getTime() <= now.getTime()) throw new AccountError("CS_TOKEN_INVALID", "expiresAt must be in the future", "expiresAt");
  return { name, expiresAt };
}
