/**
 * Fixed account and token records (the shapes of lib/accounts/model.ts) for the tests of the
 * account store's callers: one account created on 2025-01-01 and one of its tokens, never expiring,
 * never revoked. Each call returns a new object; pass the fields a test cares about.
 * @module
 */
import type { Account, TokenInfo } from "../../lib/accounts/model.js";

/** The fixed account id (a UUID v4). */
export const ACCOUNT_ID = "11111111-1111-4111-8111-111111111111";

/** An enabled account {@link ACCOUNT_ID} without e-mail, created 2025-01-01T00:00:00.000Z, with `fields` over it. */
export function testAccount(fields: Partial<Account> = {}): Account {
  return { id: ACCOUNT_ID, name: "a", email: null, createdAt: "2025-01-01T00:00:00.000Z", disabled: false, ...fields };
}

/** Token `22222222-…` of account {@link ACCOUNT_ID} (prefix `abcdefgh`), created with the account, never expiring, with `fields` over it. */
export function testTokenInfo(fields: Partial<TokenInfo> = {}): TokenInfo {
  return {
    id: "22222222-2222-4222-8222-222222222222",
    accountId: ACCOUNT_ID,
    name: null,
    prefix: "abcdefgh",
    createdAt: "2025-01-01T00:00:00.000Z",
    expiresAt: null,
    revokedAt: null,
    ...fields,
  };
}
