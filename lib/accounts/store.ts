/**
 * Accounts and API tokens, persisted in Redis. Tokens are shown once, stored only as SHA-256
 * hashes, revocable with immediate effect, and survive restarts of every component (the state
 * lives only in Redis; no process caches it). Layout of the keys (all under the configured
 * prefix, `cs:` by default):
 *
 * | key                          | type   | content                                               |
 * | ---------------------------- | ------ | ----------------------------------------------------- |
 * | `accounts`                   | set    | ids of all accounts                                   |
 * | `account:<id>`               | hash   | `id name email? createdAt disabled(0/1)`              |
 * | `account:<id>:tokens`        | set    | ids of the account's tokens (revoked ones included)   |
 * | `token:<sha256 hex>`         | string | token id; exists only while the token is not revoked  |
 * | `tokeninfo:<token id>`       | hash   | {@link TokenInfo} fields + `hash` (never returned)    |
 *
 * @module
 */

import { randomUUID } from "node:crypto";
import type { Config } from "../config/index.js";
import type { Logger } from "../logger.js";
import { type ConnectedStore, connectStore, type StoreConnectionOptions } from "../redis.js";
import { type Account, AccountError, isId, type TokenInfo, validateAccountInput, validateTokenInput } from "./model.js";
import { generateToken, hashToken, isWellFormedToken, tokenDisplayPrefix } from "./tokens.js";

/**
 * The Redis commands the store uses: a structural subset of a node-redis v5 client
 * (`createClient()` from `redis`), so any such client, or a test double, can be passed.
 */
export interface AccountRedis {
  get(key: string): Promise<string | null>;
  hGetAll(key: string): Promise<Record<string, string>>;
  hSet(key: string, field: string, value: string): Promise<number>;
  sMembers(key: string): Promise<string[]>;
  multi(): AccountRedisMulti;
}

/** The MULTI/EXEC transaction subset the store uses (commands queue, then run atomically on `exec`). */
export interface AccountRedisMulti {
  set(key: string, value: string): AccountRedisMulti;
  del(key: string): AccountRedisMulti;
  hSet(key: string, value: Record<string, string>): AccountRedisMulti;
  sAdd(key: string, member: string): AccountRedisMulti;
  pExpireAt(key: string, msTimestamp: number): AccountRedisMulti;
  exec(): Promise<unknown>;
}

/** Dependencies of {@link createAccountStore}. */
export interface AccountStoreDeps {
  /** A connected Redis client (see {@link AccountRedis}); the store does not close it. */
  redis: AccountRedis;
  /** Prepended to every key, e.g. `cs:` (config `redisKeyPrefix`); tests use a unique one. */
  keyPrefix: string;
  /** Clock (default `() => new Date()`); decides `createdAt`, `revokedAt` and whether a token has expired. */
  now?: () => Date;
  /**
   * How stale `lastUsedAt` may get, in ms (default 60000): a successful authentication writes it only
   * when the stored value is older, so a busy token costs one write a minute, not one per request. 0 = every time.
   */
  lastUsedResolutionMs?: number;
  /** Receives a `warn` when recording `lastUsedAt` fails (authentication still succeeds); default: ignored. Never given a token. */
  logger?: Logger;
}

/** Options of {@link AccountStore.issueToken}. */
export interface IssueTokenOptions {
  /** Label shown in listings (1–100 characters), default none. */
  name?: string | null;
  /** When the token stops authenticating: a `Date` or ISO 8601 string strictly in the future; default never. */
  expiresAt?: Date | string | null;
}

/** A newly issued token: the secret (returned exactly once, never stored) and its public info. */
export interface IssuedToken {
  /** The secret to hand to the client (`cs_` + 43 base64url chars). Not retrievable later. */
  token: string;
  info: TokenInfo;
}

/** A successful {@link AccountStore.authenticate}: who is calling and with which token. */
export interface Authenticated {
  account: Account;
  token: TokenInfo;
}

/** Accounts and tokens. Every method reads or writes Redis directly; nothing is cached, so changes are visible to all processes at once. */
export interface AccountStore {
  /**
   * Registers an account (names need not be unique; the generated id is the identity).
   * @throws {AccountError} `CS_ACCOUNT_INVALID` for a bad name or e-mail (see `validateAccountInput`).
   */
  createAccount(input: { name: string; email?: string | null }): Promise<Account>;
  /** The account with that id, or `null` (also for strings that are not UUIDs). */
  getAccount(id: string): Promise<Account | null>;
  /** All accounts, oldest first. */
  listAccounts(): Promise<Account[]>;
  /**
   * Disables an account: from the next request on, none of its tokens authenticates. Idempotent.
   * @returns the account as now stored (`disabled: true`).
   * @throws {AccountError} `CS_ACCOUNT_NOT_FOUND`.
   */
  disableAccount(id: string): Promise<Account>;
  /**
   * Issues a token for an account. The secret is in the result only; Redis receives its SHA-256.
   * @throws {AccountError} `CS_ACCOUNT_NOT_FOUND`, `CS_ACCOUNT_DISABLED`, or `CS_TOKEN_INVALID` (bad name, expiry not in the future).
   */
  issueToken(accountId: string, options?: IssueTokenOptions): Promise<IssuedToken>;
  /** The info of a token by id (never the secret or hash), or `null`. */
  getToken(tokenId: string): Promise<TokenInfo | null>;
  /**
   * An account's tokens, oldest first, revoked and expired ones included (see their `revokedAt`/`expiresAt`).
   * @throws {AccountError} `CS_ACCOUNT_NOT_FOUND`.
   */
  listTokens(accountId: string): Promise<TokenInfo[]>;
  /**
   * Revokes a token with immediate effect: in one MULTI/EXEC transaction, deletes its lookup key
   * and records `revokedAt`. Idempotent (a second call returns the first `revokedAt`).
   * @returns the token's info with `revokedAt` set.
   * @throws {AccountError} `CS_TOKEN_NOT_FOUND`.
   */
  revokeToken(tokenId: string): Promise<TokenInfo>;
  /**
   * Resolves a bearer token to its account. Returns `null` for a malformed, unknown, revoked or
   * expired token and for a token of a disabled account. Every well-formed token costs the same
   * three reads (lookup key, token info, account) whichever way it fails. Never logs the token.
   * @throws only Redis/connection errors (callers should answer 503, not 401).
   */
  authenticate(token: string): Promise<Authenticated | null>;
}

/** The Redis keys of the store under a prefix (exported for tests, cleanup and docs). */
export function accountKeys(prefix: string) {
  return {
    /** Set of all account ids. */
    accounts: `${prefix}accounts`,
    /** Hash of one account. */
    account: (id: string) => `${prefix}account:${id}`,
    /** Set of one account's token ids. */
    accountTokens: (id: string) => `${prefix}account:${id}:tokens`,
    /** String: SHA-256 hex of a live token → token id. */
    token: (sha256: string) => `${prefix}token:${sha256}`,
    /** Hash of one token's info. */
    tokenInfo: (id: string) => `${prefix}tokeninfo:${id}`,
  };
}

/**
 * After a token expires its lookup key lingers this long before Redis drops it. Expiry itself is
 * decided by the store's clock against `expiresAt`; the Redis TTL only collects garbage, and the
 * margin keeps a Redis clock running ahead from ending a token early.
 */
const EXPIRED_KEY_GRACE_MS = 60 * 60 * 1000;
/** A key segment no id can have (ids are UUIDs), read in place of a missing key so failures do the same work. */
const ABSENT = "-";

function toAccount(h: Record<string, string>): Account | null {
  if (!h.id || h.name === undefined || !h.createdAt) return null;
  return { id: h.id, name: h.name, email: h.email ? h.email : null, createdAt: h.createdAt, disabled: h.disabled === "1" };
}

function toTokenInfo(h: Record<string, string>): TokenInfo | null {
  if (!h.id || !h.accountId || !h.createdAt) return null;
  const info: TokenInfo = {
    id: h.id,
    accountId: h.accountId,
    name: h.name ? h.name : null,
    prefix: h.prefix ?? "",
    createdAt: h.createdAt,
    expiresAt: h.expiresAt ? h.expiresAt : null,
    revokedAt: h.revokedAt ? h.revokedAt : null,
  };
  if (h.lastUsedAt) info.lastUsedAt = h.lastUsedAt;
  return info;
}

function byCreation(a: { createdAt: string; id: string }, b: { createdAt: string; id: string }): number {
  return a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Creates the store over an existing, connected Redis client (no I/O until a method is called).
 * @param deps see {@link AccountStoreDeps}.
 */
export function createAccountStore(deps: AccountStoreDeps): AccountStore {
  const { redis } = deps;
  const now = deps.now ?? (() => new Date());
  const resolutionMs = deps.lastUsedResolutionMs ?? 60_000;
  const k = accountKeys(deps.keyPrefix);

  async function getAccount(id: string): Promise<Account | null> {
    if (!isId(id)) return null;
    return toAccount(await redis.hGetAll(k.account(id)));
  }

  async function requireAccount(id: string): Promise<Account> {
    const account = await getAccount(id);
    if (!account) throw new AccountError("CS_ACCOUNT_NOT_FOUND", `no account with id ${JSON.stringify(id)}`);
    return account;
  }

  async function readTokenRaw(tokenId: string): Promise<Record<string, string> | null> {
    if (!isId(tokenId)) return null;
    const h = await redis.hGetAll(k.tokenInfo(tokenId));
    return toTokenInfo(h) ? h : null;
  }

  return {
    async createAccount(input) {
      const { name, email } = validateAccountInput(input);
      const account: Account = { id: randomUUID(), name, email, createdAt: now().toISOString(), disabled: false };
      const fields: Record<string, string> = { id: account.id, name, createdAt: account.createdAt, disabled: "0" };
      if (email !== null) fields.email = email;
      await redis.multi().hSet(k.account(account.id), fields).sAdd(k.accounts, account.id).exec();
      return account;
    },

    getAccount,

    async listAccounts() {
      const ids = await redis.sMembers(k.accounts);
      const accounts = await Promise.all(ids.map((id) => getAccount(id)));
      return accounts.filter((a): a is Account => a !== null).sort(byCreation);
    },

    async disableAccount(id) {
      const account = await requireAccount(id);
      if (!account.disabled) await redis.hSet(k.account(id), "disabled", "1");
      return { ...account, disabled: true };
    },

    async issueToken(accountId, options) {
      const account = await requireAccount(accountId);
      const created = now();
      const { name, expiresAt } = validateTokenInput(options, created);
      if (account.disabled) throw new AccountError("CS_ACCOUNT_DISABLED", `account ${accountId} is disabled`);
      const token = generateToken();
      const hash = hashToken(token);
      const info: TokenInfo = {
        id: randomUUID(),
        accountId,
        name,
        prefix: tokenDisplayPrefix(token),
        createdAt: created.toISOString(),
        expiresAt: expiresAt ? expiresAt.toISOString() : null,
        revokedAt: null,
      };
      const fields: Record<string, string> = { id: info.id, accountId, prefix: info.prefix, createdAt: info.createdAt, hash };
      if (info.name !== null) fields.name = info.name;
      if (info.expiresAt !== null) fields.expiresAt = info.expiresAt;
      let tx = redis.multi().hSet(k.tokenInfo(info.id), fields).sAdd(k.accountTokens(accountId), info.id).set(k.token(hash), info.id);
      if (expiresAt) tx = tx.pExpireAt(k.token(hash), expiresAt.getTime() + EXPIRED_KEY_GRACE_MS);
      await tx.exec();
      return { token, info };
    },

    async getToken(tokenId) {
      const raw = await readTokenRaw(tokenId);
      return raw ? toTokenInfo(raw) : null;
    },

    async listTokens(accountId) {
      await requireAccount(accountId);
      const ids = await redis.sMembers(k.accountTokens(accountId));
      const infos = await Promise.all(ids.map(async (id) => (isId(id) ? toTokenInfo(await redis.hGetAll(k.tokenInfo(id))) : null)));
      return infos.filter((t): t is TokenInfo => t !== null).sort(byCreation);
    },

    async revokeToken(tokenId) {
      const raw = await readTokenRaw(tokenId);
      const info = raw ? toTokenInfo(raw) : null;
      if (!raw || !info) throw new AccountError("CS_TOKEN_NOT_FOUND", `no token with id ${JSON.stringify(tokenId)}`);
      if (info.revokedAt !== null) return info;
      const revokedAt = now().toISOString();
      const tx = redis.multi().hSet(k.tokenInfo(tokenId), { revokedAt });
      await (raw.hash ? tx.del(k.token(raw.hash)) : tx).exec();
      return { ...info, revokedAt };
    },

    async authenticate(token) {
      if (!isWellFormedToken(token)) return null;
      const hash = hashToken(token);
      const tokenId = await redis.get(k.token(hash));
      const raw = await redis.hGetAll(k.tokenInfo(isId(tokenId) ? tokenId : ABSENT));
      const accountId = isId(raw.accountId) ? raw.accountId : ABSENT;
      const accountRaw = await redis.hGetAll(k.account(accountId));
      const info = toTokenInfo(raw);
      const account = toAccount(accountRaw);
      const at = now();
      if (!tokenId || !info || !account) return null;
      if (info.id !== tokenId || raw.hash !== hash || account.id !== info.accountId) return null;
      if (info.revokedAt !== null || account.disabled) return null;
      if (info.expiresAt !== null && Date.parse(info.expiresAt) <= at.getTime()) return null;
      const last = info.lastUsedAt ? Date.parse(info.lastUsedAt) : Number.NaN;
      if (!(at.getTime() - last < resolutionMs)) {
        info.lastUsedAt = at.toISOString();
        // Best effort: bookkeeping must not turn a valid request into an error.
        await redis.hSet(k.tokenInfo(info.id), "lastUsedAt", info.lastUsedAt).catch((err: unknown) => {
          deps.logger?.warn({ err, tokenId: info.id }, "accounts: could not record lastUsedAt");
        });
      }
      return { account, token: info };
    },
  };
}

/** An {@link AccountStore} with the Redis connection it owns. */
export type ConnectedAccountStore = ConnectedStore<AccountStore>;

/** Options of {@link connectAccountStore}; the `logger` also receives failed `lastUsedAt` writes (as `warn`). */
export type ConnectAccountStoreOptions = StoreConnectionOptions;

/**
 * Connects a dedicated Redis client and returns a store over it.
 * The first connection must succeed (no retry, so a CLI fails fast); once connected, the client
 * reconnects with backoff (100 ms doubling, at most 5 s) and, while disconnected, commands fail at
 * once instead of queueing (so the API can answer 503 rather than hang).
 * @param config `redisUrl` (e.g. `redis://127.0.0.1:6379`) and `redisKeyPrefix` of a {@link Config}.
 * @throws the client's connection error when Redis cannot be reached.
 */
export function connectAccountStore(
  config: Pick<Config, "redisUrl" | "redisKeyPrefix">,
  options: ConnectAccountStoreOptions = {},
): Promise<ConnectedAccountStore> {
  return connectStore(config, "accounts", options, (connection) =>
    createAccountStore({ ...connection, ...(options.logger ? { logger: options.logger } : {}) }),
  );
}
